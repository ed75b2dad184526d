// Scenario `sub`: data-change throughput. A subscriber monitors the 100 BenchmarkValues of the
// bench namespace (sampling interval 0, queues large enough to lose nothing) while a writer
// changes all of them with every Write; the figure is notifications received per second, and
// server CPU per notification (the writes' cost included). fieldgate runs with a generated
// config that turns the bench namespace on; the node-opcua peer has the same NodeIds.
import { parseArgs } from "node:util";
import { runWindowCase } from "../harness/case.js";
import type { CaseResult } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, type CommonOptions, type Scenario } from "../harness/scenario.js";

export interface SubScenarioOptions extends CommonOptions {
  items: number;
  writesInFlight: number;
  publishingIntervalMs: number;
  queueSize: number;
  publishesInFlight: number;
  warmupSeconds: number;
  durationSeconds: number;
}

/** The BenchmarkValues: urn:fieldgate:bench i=1001..1100 (fieldgate's bench namespace and the peer). */
export const BENCHMARK_VALUE_NODES: readonly string[] = Array.from({ length: 100 }, (_, i) => `nsu=urn:fieldgate:bench;i=${1001 + i}`);

const USAGE = `npm run bench -- sub [options]
  --items N           monitored items, on the 100 BenchmarkValues round robin (default 100)
  --writes N          Write requests in flight, each changing every item (default 4)
  --publishing MS     publishing interval (default 50)
  --queue N           queue size per item (default 100)
  --publishes N       Publish requests kept outstanding (default 4)
  --warmup S          seconds before the window (default 2)
  --duration S        seconds of the measurement window (default 10)
${COMMON_USAGE}`;

export function parseSubOptions(argv: readonly string[]): SubScenarioOptions | null {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...COMMON_OPTIONS,
      items: { type: "string" },
      writes: { type: "string" },
      publishing: { type: "string" },
      queue: { type: "string" },
      publishes: { type: "string" },
      warmup: { type: "string" },
      duration: { type: "string" },
    },
  });
  if (values.help) return null;
  return {
    ...commonFrom(values),
    items: positive("items", values.items, 100),
    writesInFlight: positive("writes", values.writes, 4),
    publishingIntervalMs: positive("publishing", values.publishing, 50),
    queueSize: positive("queue", values.queue, 100),
    publishesInFlight: positive("publishes", values.publishes, 4),
    warmupSeconds: values.warmup === "0" ? 0 : positive("warmup", values.warmup, 2, false),
    durationSeconds: positive("duration", values.duration, 10, false),
  };
}

export const subScenario: Scenario<SubScenarioOptions> = {
  name: "sub",
  summary: "data-change notifications per second: 100 monitored items, a writer changing them all",
  usage: USAGE,
  parse: parseSubOptions,
  smokeArgs: ["--items", "10", "--writes", "2", "--duration", "1", "--warmup", "0.5"],
  reportRuns: [{ title: "Subscriptions: data changes with a writer", args: ["--duration", "5", "--warmup", "2"] }],
  async run(ctx, options) {
    const results: CaseResult[] = [];
    for (const target of ctx.targets) {
      results.push(
        await runWindowCase(ctx, target, {
          scenario: "sub",
          caseName: `${options.items} items, ${options.writesInFlight} writes in flight`,
          load: "sub",
          unit: "notifications/s",
          start: { nodes: { benchValues: 100 } },
          params: (server) => ({
            host: server.host,
            port: server.port,
            endpointUrl: server.endpointUrl,
            nodes: [...BENCHMARK_VALUE_NODES],
            items: options.items,
            writesInFlight: options.writesInFlight,
            publishingIntervalMs: options.publishingIntervalMs,
            queueSize: options.queueSize,
            publishesInFlight: options.publishesInFlight,
            warmupSeconds: options.warmupSeconds,
            durationSeconds: options.durationSeconds,
            serverPid: server.pid,
            serverDiagnostics: server.diagnostics,
          }),
          conditions: {
            items: options.items,
            writesInFlight: options.writesInFlight,
            publishingIntervalMs: options.publishingIntervalMs,
            queueSize: options.queueSize,
            publishesInFlight: options.publishesInFlight,
          },
          warmupSeconds: options.warmupSeconds,
          durationSeconds: options.durationSeconds,
        }),
      );
    }
    return results;
  },
};
