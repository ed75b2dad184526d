// Scenario `connect`: sessions opened per second, and the server's RSS while they are held.
// Each cycle opens --sessions sessions (one connection each), --parallel at a time, holds them,
// then closes them; cycles repeat over the window. One fresh server per case.
import { parseArgs } from "node:util";
import { runWindowCase } from "../harness/case.js";
import type { CaseResult } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, type CommonOptions, type Scenario } from "../harness/scenario.js";

export interface ConnectScenarioOptions extends CommonOptions {
  sessions: number;
  parallel: number;
  warmupSeconds: number;
  durationSeconds: number;
}

const USAGE = `npm run bench -- connect [options]
  --sessions N        sessions opened and held at once per cycle (default 50; fieldgate's
                      default limits allow 100 sessions and 100 channels)
  --parallel N        opens under way at once (default 10)
  --warmup S          seconds before the window (default 1)
  --duration S        seconds of the measurement window (default 10)
${COMMON_USAGE}`;

export function parseConnectOptions(argv: readonly string[]): ConnectScenarioOptions | null {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: { ...COMMON_OPTIONS, sessions: { type: "string" }, parallel: { type: "string" }, warmup: { type: "string" }, duration: { type: "string" } },
  });
  if (values.help) return null;
  return {
    ...commonFrom(values),
    sessions: positive("sessions", values.sessions, 50),
    parallel: positive("parallel", values.parallel, 10),
    warmupSeconds: values.warmup === "0" ? 0 : positive("warmup", values.warmup, 1, false),
    durationSeconds: positive("duration", values.duration, 10, false),
  };
}

export const connectScenario: Scenario<ConnectScenarioOptions> = {
  name: "connect",
  summary: "sessions opened per second (connect, channel, create, activate) and RSS while held",
  usage: USAGE,
  parse: parseConnectOptions,
  smokeArgs: ["--sessions", "5", "--parallel", "2", "--duration", "1", "--warmup", "0"],
  async run(ctx, options) {
    const results: CaseResult[] = [];
    for (const target of ctx.targets) {
      results.push(
        await runWindowCase(ctx, target, {
          scenario: "connect",
          caseName: `${options.sessions} held, ${options.parallel} parallel`,
          load: "connect",
          unit: "sessions/s",
          params: (server) => ({
            host: server.host,
            port: server.port,
            endpointUrl: server.endpointUrl,
            sessions: options.sessions,
            parallel: options.parallel,
            warmupSeconds: options.warmupSeconds,
            durationSeconds: options.durationSeconds,
            serverPid: server.pid,
            serverDiagnostics: server.diagnostics,
          }),
          conditions: { sessions: options.sessions, parallel: options.parallel },
          warmupSeconds: options.warmupSeconds,
          durationSeconds: options.durationSeconds,
        }),
      );
    }
    return results;
  },
};
