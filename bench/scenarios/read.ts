// Scenario `read`: pipelined Read requests of one (or --values) value, for each case of
// connections x outstanding. Every case gets a fresh server, so start-to-listening and idle
// RSS are measured per case and no case inherits another's heap.
import { parseArgs } from "node:util";
import { DEFAULT_READ_NODE } from "../client/nodes.js";
import { runWindowCase } from "../harness/case.js";
import type { CaseResult } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, type BenchContext, type CommonOptions, type Scenario } from "../harness/scenario.js";
import type { ServerTarget } from "../harness/target.js";
import type { TimestampsName } from "./read-load.js";

export interface ReadCase {
  connections: number;
  outstanding: number;
}

export interface ReadScenarioOptions extends CommonOptions {
  cases: ReadCase[];
  values: number;
  nodes: string[];
  timestampsToReturn: TimestampsName;
  warmupSeconds: number;
  durationSeconds: number;
  /** Reported scenario name (the `echo` scenario runs this one against the echo target). */
  scenarioName?: string;
}

/** Issue 7: 1 x 1, 10 connections x 100 outstanding, and 10 x 1000 (backpressure). */
export const DEFAULT_READ_CASES: readonly ReadCase[] = [
  { connections: 1, outstanding: 1 },
  { connections: 10, outstanding: 100 },
  { connections: 10, outstanding: 1000 },
];

/**
 * The nodes of a many-value Read: the scalar variables of the test namespace that both fieldgate
 * and the node-opcua peer have (round robin over the values).
 */
export const MULTI_READ_NODES: readonly string[] = ["Boolean", "SByte", "Byte", "Int16", "UInt16", "Int32", "UInt32", "Float", "Double", "String", "DateTime"].map(
  (t) => `nsu=urn:fieldgate:test;s=Scalar.${t}`,
);

const USAGE = `npm run bench -- read [options]
  --connections N     connections (one case; with --outstanding, default 10)
  --outstanding N     requests in flight per connection (one case; default 100)
  --cases LIST        cases as CxO,CxO... (default 1x1,10x100,10x1000)
  --values N          values read per request (default 1)
  --node ID           node to read, repeatable, round robin over the values (default
                      ${DEFAULT_READ_NODE} for 1 value, the test namespace's scalars for more;
                      ns=2;s=..., nsu=<uri>;s=... also work)
  --timestamps T      source | server | both | neither (default both)
  --warmup S          seconds before the window (default 2)
  --duration S        seconds of the measurement window (default 10)
${COMMON_USAGE}`;

export function parseCases(text: string): ReadCase[] {
  return text.split(",").map((part) => {
    const m = /^\s*(\d+)\s*x\s*(\d+)\s*$/.exec(part);
    if (!m || Number(m[1]) < 1 || Number(m[2]) < 1) throw new Error(`--cases: "${part}" is not CONNECTIONSxOUTSTANDING`);
    return { connections: Number(m[1]), outstanding: Number(m[2]) };
  });
}

export function parseReadOptions(argv: readonly string[]): ReadScenarioOptions | null {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...COMMON_OPTIONS,
      connections: { type: "string" },
      outstanding: { type: "string" },
      cases: { type: "string" },
      values: { type: "string" },
      node: { type: "string", multiple: true },
      timestamps: { type: "string" },
      warmup: { type: "string" },
      duration: { type: "string" },
    },
  });
  if (values.help) return null;
  let cases: ReadCase[];
  if (values.connections !== undefined || values.outstanding !== undefined) {
    if (values.cases !== undefined) throw new Error("--cases and --connections/--outstanding exclude each other");
    cases = [{ connections: positive("connections", values.connections, 10), outstanding: positive("outstanding", values.outstanding, 100) }];
  } else {
    cases = values.cases !== undefined ? parseCases(values.cases) : DEFAULT_READ_CASES.map((c) => ({ ...c }));
  }
  const timestamps = values.timestamps ?? "both";
  if (!["source", "server", "both", "neither"].includes(timestamps)) {
    throw new Error(`--timestamps: expected source, server, both or neither, got "${timestamps}"`);
  }
  const count = positive("values", values.values, 1);
  return {
    ...commonFrom(values),
    cases,
    values: count,
    nodes: values.node?.length ? values.node : count > 1 ? [...MULTI_READ_NODES] : [DEFAULT_READ_NODE],
    timestampsToReturn: timestamps as TimestampsName,
    warmupSeconds: values.warmup === "0" ? 0 : positive("warmup", values.warmup, 2, false),
    durationSeconds: positive("duration", values.duration, 10, false),
  };
}

export async function runReadCase(ctx: BenchContext, target: ServerTarget, options: ReadScenarioOptions, c: ReadCase): Promise<CaseResult> {
  const name = `${c.connections}x${c.outstanding}${options.values > 1 ? ` ${options.values} values` : ""}`;
  return runWindowCase(ctx, target, {
    scenario: options.scenarioName ?? "read",
    caseName: name,
    load: "read",
    params: (server) => ({
      host: server.host,
      port: server.port,
      endpointUrl: server.endpointUrl,
      connections: c.connections,
      outstanding: c.outstanding,
      values: options.values,
      nodes: options.nodes,
      timestampsToReturn: options.timestampsToReturn,
      warmupSeconds: options.warmupSeconds,
      durationSeconds: options.durationSeconds,
      serverPid: server.pid,
      serverDiagnostics: server.diagnostics,
    }),
    conditions: {
      connections: c.connections,
      outstanding: c.outstanding,
      values: options.values,
      nodes: options.nodes,
      timestampsToReturn: options.timestampsToReturn,
    },
    warmupSeconds: options.warmupSeconds,
    durationSeconds: options.durationSeconds,
  });
}

export const readScenario: Scenario<ReadScenarioOptions> = {
  name: "read",
  summary: "pipelined Reads of 1 (or --values) values: 1 x 1, 10 x 100, 10 x 1000 in flight",
  usage: USAGE,
  parse: parseReadOptions,
  // The peer too: the smoke run checks that node-opcua starts and answers the same load.
  smokeArgs: ["--cases", "1x1,2x10", "--duration", "1", "--warmup", "0.2", "--peer", "node-opcua", "--rounds", "1"],
  async run(ctx, options) {
    const results: CaseResult[] = [];
    for (const c of options.cases) {
      for (const target of ctx.targets) results.push(await runReadCase(ctx, target, options, c));
    }
    return results;
  },
};
