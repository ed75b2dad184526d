// Runs one scenario with the options it parsed: builds the targets (and the peer), places server
// and load on their cores, alternates the targets round by round (A B A B), and summarizes.
// Shared by `npm run bench`, `npm run bench:report` and the smoke mode.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { NodeOpcuaTarget, NODE_OPCUA_PEER } from "../peers/node-opcua.js";
import { EchoTarget, FLOOR_TARGET, floorTarget } from "../targets/echo.js";
import { FieldgateTarget, fieldgateCli, shippedRuntime } from "../targets/fieldgate.js";
import { summarize, type CaseSummary } from "./compare.js";
import { allowedCpus, findTaskset } from "./proc.js";
import type { CaseResult } from "./report.js";
import type { BenchContext, CommonOptions, Scenario } from "./scenario.js";
import type { ServerTarget } from "./target.js";

export interface ScenarioRun {
  results: CaseResult[];
  summaries: CaseSummary[];
  notes: string[];
  /** The first target (compared with the peer) and the peer, when there was one. */
  first: string;
  peer: string | undefined;
}

/** Server on the first allowed CPU, load on the second, when taskset exists and there are two. */
export function placement(options: CommonOptions, notes: string[]): Pick<BenchContext, "serverCpu" | "load"> {
  const inline = options.inline;
  if (inline) notes.push("load ran inline, in the harness process");
  if (!options.pin) {
    notes.push("not pinned (--no-pin)");
    return { serverCpu: undefined, load: { inline } };
  }
  if (findTaskset() === null) {
    notes.push("taskset not found (util-linux): server and load ran unpinned");
    return { serverCpu: undefined, load: { inline } };
  }
  const cpus = allowedCpus();
  if (cpus.length < 2) {
    notes.push(`only ${cpus.length} CPU available: server and load ran unpinned on the same core`);
    return { serverCpu: undefined, load: { inline } };
  }
  return { serverCpu: cpus[0], load: { inline, cpu: inline ? undefined : cpus[1] } };
}

export function makeTarget(name: string, root: string, options: CommonOptions): ServerTarget {
  if (name.startsWith("fieldgate@")) {
    // Another checkout built beside this one (a scratch clone of main, say): both in one run.
    const other = resolve(name.slice("fieldgate@".length));
    if (!existsSync(fieldgateCli(other))) throw new Error(`${fieldgateCli(other)} is missing: build that checkout first (npm ci && npm run build there)`);
    return new FieldgateTarget({ root: other, name, config: options.config ? resolve(options.config) : undefined, ...shippedRuntime(other) });
  }
  switch (name) {
    case "fieldgate":
      if (!existsSync(fieldgateCli(root))) throw new Error(`${fieldgateCli(root)} is missing: npm run bench builds it; after a failed build, fix that first`);
      return new FieldgateTarget({ root, config: options.config ? resolve(options.config) : undefined });
    case "echo":
      return new EchoTarget(root);
    case FLOOR_TARGET:
      return floorTarget(root);
    case NODE_OPCUA_PEER:
      return new NodeOpcuaTarget(root);
    default:
      throw new Error(`unknown target "${name}": fieldgate, fieldgate@DIR, echo, ${FLOOR_TARGET} or ${NODE_OPCUA_PEER}`);
  }
}

export async function runScenario(scenario: Scenario<CommonOptions>, options: CommonOptions, root: string, log: (line: string) => void): Promise<ScenarioRun> {
  const names = [...options.targets];
  if (options.peer !== undefined && !names.includes(options.peer)) names.push(options.peer);
  const targets = names.map((n) => makeTarget(n, root, options));
  const notes: string[] = [];
  const base = { root, ...placement(options, notes), notes, log };
  for (const note of notes) log(note);
  const results: CaseResult[] = [];
  const rounds = options.rounds;
  for (let round = 1; round <= rounds; round++) {
    // A B A B: each round runs every case on each target in turn, so slow drifts of a shared
    // machine (other jobs, thermal) fall on both sides alike.
    for (const target of targets) {
      if (rounds > 1) log(`round ${round}/${rounds}: ${target.name}`);
      const ctx: BenchContext = { ...base, targets: [target] };
      const rs = await scenario.run(ctx, options);
      for (const r of rs) if (rounds > 1) r.round = round;
      results.push(...rs);
    }
  }
  const first = names[0];
  return { results, summaries: summarize(results, first, options.peer), notes, first, peer: options.peer };
}
