// Is the gateway healthy? The trial boot of a new version is confirmed only when fieldgate.service
// is active (it reports READY=1 after it loaded the device map and listens), its OPC UA endpoint
// answers GetEndpoints, and both still hold a while later in the same process (a gateway that
// crashes a second after it started is not healthy).
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { probeEndpoints } from "./probe.js";

const run = promisify(execFile);

export interface UnitState {
  readonly active: string;
  readonly sub: string;
  readonly mainPid: number;
  readonly restarts: number;
  readonly result: string;
}

export interface HealthDeps {
  unit(): Promise<UnitState>;
  probe(host: string, port: number): Promise<string[]>;
  sleep(ms: number): Promise<void>;
  now(): number;
}

export const systemHealthDeps: HealthDeps = {
  async unit() {
    const { stdout } = await run("systemctl", ["show", "fieldgate.service", "-p", "ActiveState,SubState,MainPID,NRestarts,Result"]);
    const v: Record<string, string> = {};
    for (const line of stdout.split("\n")) {
      const i = line.indexOf("=");
      if (i > 0) v[line.slice(0, i)] = line.slice(i + 1);
    }
    return { active: v.ActiveState ?? "", sub: v.SubState ?? "", mainPid: Number(v.MainPID ?? 0), restarts: Number(v.NRestarts ?? 0), result: v.Result ?? "" };
  },
  probe: (host, port) => probeEndpoints(host, port),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  now: () => Date.now(),
};

export type Health = { readonly ok: true; readonly detail: string } | { readonly ok: false; readonly reason: string };

export interface HealthOptions {
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;
  /** How long the gateway must stay up, in one process, after it first answered. */
  readonly settleMs?: number;
  /** Starts that failed, after which waiting longer is pointless. */
  readonly maxRestarts?: number;
  readonly log?: (line: string) => void;
}

export async function waitHealthy(opts: HealthOptions, deps: HealthDeps = systemHealthDeps): Promise<Health> {
  const settle = opts.settleMs ?? 10_000;
  const maxRestarts = opts.maxRestarts ?? 3;
  const start = deps.now();
  const deadline = start + opts.timeoutMs;
  let firstGood: { at: number; pid: number } | undefined;
  let last = "no observation yet";
  const secs = (): string => `${((deps.now() - start) / 1000).toFixed(0)} s`;
  for (;;) {
    const u = await deps.unit();
    if (u.active === "active" && u.mainPid > 0) {
      try {
        const policies = await deps.probe(opts.host, opts.port);
        if (firstGood === undefined || firstGood.pid !== u.mainPid) {
          firstGood = { at: deps.now(), pid: u.mainPid };
          opts.log?.(`fieldgate.service active (pid ${u.mainPid}) and opc.tcp://${opts.host}:${opts.port} answers GetEndpoints (${policies.join(", ")}) after ${secs()}; checking again in ${settle / 1000} s`);
        } else if (deps.now() - firstGood.at >= settle) {
          return { ok: true, detail: `fieldgate.service active in one process (pid ${u.mainPid}) and its endpoint answering for ${((deps.now() - firstGood.at) / 1000).toFixed(0)} s` };
        }
        last = `active, endpoint answering`;
      } catch (err) {
        firstGood = undefined;
        last = `fieldgate.service active but its endpoint does not answer: ${err instanceof Error ? err.message : String(err)}`;
      }
    } else {
      firstGood = undefined;
      last = `fieldgate.service is ${u.active} (${u.sub}${u.result && u.result !== "success" ? `, last result ${u.result}` : ""}), restarted ${u.restarts} times`;
      if (u.restarts >= maxRestarts) return { ok: false, reason: `fieldgate.service did not start: ${last} within ${secs()}` };
    }
    if (deps.now() >= deadline) return { ok: false, reason: `not healthy within ${opts.timeoutMs / 1000} s: ${last}` };
    await deps.sleep(2000);
  }
}
