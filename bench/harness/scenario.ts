// What a scenario is to the harness: a name, its own command-line options, and a run that
// starts the server under test as often as its cases need and returns one result per case.
// Targets are handed in, so the node-opcua peer (issue 7) runs the same scenario unchanged.
import type { LoadPlacement } from "./load-process.js";
import type { CaseResult } from "./report.js";
import type { ServerTarget } from "./target.js";

export interface BenchContext {
  /** Repository root. */
  root: string;
  targets: readonly ServerTarget[];
  /** CPU for the server under test, or undefined to leave it unpinned. */
  serverCpu: number | undefined;
  /** Where the load runs (own process pinned to a CPU, or inline). */
  load: LoadPlacement;
  /** Conditions that hold for the whole run (no taskset, one CPU, ...). */
  notes: string[];
  log(line: string): void;
}

/** Options every scenario takes; run.ts acts on them, the scenario on the rest. */
export interface CommonOptions {
  /** Write the report as JSON to this file too. */
  json?: string;
  /** gateway.yaml for fieldgate (default config/gateway.yaml). */
  config?: string;
  /** Run the load in the harness process instead of its own pinned process. */
  inline: boolean;
  /** Pin server and load to cores with taskset (default when taskset and 2 CPUs exist). */
  pin: boolean;
  /** Servers under test, by name (default fieldgate; `echo` is the client's ceiling). */
  targets: string[];
  /** A peer to compare with, run after each target in every round (`node-opcua`). */
  peer?: string;
  /** Rounds, alternating the targets A B A B (default 1; 3 with a peer). */
  rounds: number;
}

export const COMMON_OPTIONS = {
  json: { type: "string" },
  config: { type: "string" },
  inline: { type: "boolean", default: false },
  "no-pin": { type: "boolean", default: false },
  target: { type: "string", multiple: true },
  peer: { type: "string" },
  rounds: { type: "string" },
  help: { type: "boolean", short: "h", default: false },
} as const;

export function commonFrom(values: {
  json?: string;
  config?: string;
  inline?: boolean;
  "no-pin"?: boolean;
  target?: string[];
  peer?: string;
  rounds?: string;
}): CommonOptions {
  if (values.peer !== undefined && values.peer !== "node-opcua" && values.peer !== "floor" && !/^fieldgate@./.test(values.peer)) {
    throw new Error(`--peer: node-opcua, floor or fieldgate@DIR (another built checkout), got "${values.peer}"`);
  }
  return {
    peer: values.peer,
    rounds: positive("rounds", values.rounds, values.peer !== undefined ? 3 : 1),
    json: values.json,
    config: values.config,
    inline: values.inline ?? false,
    pin: !values["no-pin"],
    targets: values.target?.length ? values.target : ["fieldgate"],
  };
}

/** Usage lines of the common options, for every scenario's --help. */
export const COMMON_USAGE = `  --target NAME       server under test, repeatable: fieldgate (default), fieldgate@DIR (the
                      built checkout in DIR, e.g. main beside this branch), echo (a canned
                      UA-TCP responder: the ceiling of the client and Node's I/O), floor (the
                      same responder with the gateway's node flags: what Node costs), node-opcua
  --peer node-opcua   also run every case against a node-opcua server with the same nodes,
                      alternating rounds A B A B; prints medians and fieldgate / node-opcua
  --peer fieldgate@DIR  the same against another built checkout of fieldgate (e.g. main)
  --peer floor        the same against the floor target: fieldgate / floor per figure
  --rounds N          rounds (default 1, or 3 with --peer)
  --json FILE         also write the report as JSON
  --config FILE       gateway.yaml for fieldgate (default config/gateway.yaml)
  --inline            run the load in this process instead of a pinned load process
  --no-pin            do not pin server and load with taskset`;

export interface Scenario<O extends CommonOptions> {
  readonly name: string;
  /** One line for the usage text. */
  readonly summary: string;
  readonly usage: string;
  /** Parses the arguments after the scenario name (common options too); throws on a bad one; null for --help. */
  parse(argv: readonly string[]): O | null;
  run(ctx: BenchContext, options: O): Promise<CaseResult[]>;
  /**
   * Arguments of the CI smoke mode (`npm run bench -- smoke`): a few seconds at most, small
   * cases. Default: `--duration 1 --warmup 0.2`. Null leaves the scenario out of the smoke run.
   */
  readonly smokeArgs?: readonly string[] | null;
  /**
   * Runs of `npm run bench:report` (bench/RESULTS.md): each entry is one argument list, run with
   * `--peer node-opcua --rounds <report rounds>` appended unless it has its own `--peer`/`--rounds`.
   * Absent: the scenario is not in the report (report.ts lists the built-in scenarios' runs itself).
   */
  readonly reportRuns?: ReadonlyArray<{ title: string; args: readonly string[]; /** No node-opcua rounds (a case the peer cannot run, or none is measured on). */ withoutPeer?: boolean }>;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A positive number option, or the default. */
export function positive(name: string, text: string | undefined, fallback: number, integer = true): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new Error(`--${name}: expected a positive ${integer ? "integer" : "number"}, got "${text}"`);
  }
  return n;
}
