// Scenario `read`: pipelined Read requests of one (or --values) value, for each case of
// connections x outstanding. Every case gets a fresh server, so start-to-listening and idle
// RSS are measured per case and no case inherits another's heap.
import { parseArgs } from "node:util";
import { Histogram } from "../client/histogram.js";
import { DEFAULT_READ_NODE } from "../client/nodes.js";
import { runLoad } from "../harness/load-process.js";
import { memoryOf } from "../harness/proc.js";
import type { CaseResult, Figures } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, sleep, type BenchContext, type CommonOptions, type Scenario } from "../harness/scenario.js";
import type { ServerTarget } from "../harness/target.js";
import type { ReadLoadResult, TimestampsName } from "./read-load.js";

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
}

/** Issue 2: 10 connections x 100 outstanding, and 1 x 1. */
export const DEFAULT_READ_CASES: readonly ReadCase[] = [
  { connections: 10, outstanding: 100 },
  { connections: 1, outstanding: 1 },
];

/** Idle RSS is read this long after the listening line, once start-up garbage has settled. */
const IDLE_SETTLE_MS = 500;

const USAGE = `npm run bench -- read [options]
  --connections N     connections (one case; with --outstanding, default 10)
  --outstanding N     requests in flight per connection (one case; default 100)
  --cases LIST        cases as CxO,CxO... (default 10x100,1x1: the matrix of issue 2)
  --values N          values read per request (default 1)
  --node ID           node to read, repeatable, round robin over the values
                      (default ${DEFAULT_READ_NODE}; ns=2;s=..., nsu=<uri>;s=... also work)
  --timestamps T      source | server | both | neither (default both)
  --warmup S          seconds before the window (default 2)
  --duration S        seconds of the measurement window (default 10)
${COMMON_USAGE}`;

function parseCases(text: string): ReadCase[] {
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
  return {
    ...commonFrom(values),
    cases,
    values: positive("values", values.values, 1),
    nodes: values.node?.length ? values.node : [DEFAULT_READ_NODE],
    timestampsToReturn: timestamps as TimestampsName,
    warmupSeconds: values.warmup === "0" ? 0 : positive("warmup", values.warmup, 2, false),
    durationSeconds: positive("duration", values.duration, 10, false),
  };
}

function figuresOf(load: ReadLoadResult, idleRss: number, startMs: number): Figures {
  const h = Histogram.from(load.latencyMicros);
  const windowMicros = load.windowSeconds * 1e6;
  const serverCpu = load.server?.cpuMicros ?? NaN;
  return {
    requests: load.requests,
    windowSeconds: load.windowSeconds,
    requestsPerSecond: load.requests / load.windowSeconds,
    latencyMicros: {
      p50: h.percentile(50),
      p90: h.percentile(90),
      p99: h.percentile(99),
      p999: h.percentile(99.9),
      max: h.count ? h.max : NaN,
      mean: h.mean(),
    },
    serverCpuMicrosPerRequest: load.requests > 0 ? serverCpu / load.requests : NaN,
    serverCpuShare: serverCpu / windowMicros,
    loadCpuShare: load.loadCpuMicros / windowMicros,
    serverRssIdleBytes: idleRss,
    serverRssEndBytes: load.server?.rssBytesAtEnd ?? NaN,
    serverPeakRssBytes: load.server?.peakRssBytes ?? NaN,
    startToListeningMs: startMs,
    errors: load.errors,
    errorsTotal: load.errorsTotal,
    channelFaults: load.channelFaults,
    lostInFlight: load.lostInFlight,
    verifiedResponses: load.verifiedResponses,
  };
}

export async function runReadCase(ctx: BenchContext, target: ServerTarget, options: ReadScenarioOptions, c: ReadCase): Promise<CaseResult> {
  const name = `${c.connections}x${c.outstanding}${options.values > 1 ? ` ${options.values} values` : ""}`;
  ctx.log(`read ${name} on ${target.name}: starting the server`);
  const server = await target.start({ cpu: ctx.serverCpu });
  const notes: string[] = [];
  let run: Awaited<ReturnType<typeof runLoad<"read">>> | undefined;
  try {
    await sleep(IDLE_SETTLE_MS);
    const idle = memoryOf(server.pid);
    ctx.log(`read ${name} on ${target.name}: listening after ${server.startToListeningMs.toFixed(0)} ms, pid ${server.pid}; ${options.warmupSeconds} s warm-up, ${options.durationSeconds} s window`);
    run = await runLoad(
      "read",
      {
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
      },
      ctx.load,
    );
    if (server.exited) notes.push("the server exited during the run");
    const load = run.result;
    if (load.lostInFlight > 0) notes.push(`${load.lostInFlight} requests unanswered after the window`);
    if (load.channelFaults > 0) notes.push(`${load.channelFaults} channels closed under load`);
    if (Number.isFinite(load.loadCpuMicros) && load.loadCpuMicros / (load.windowSeconds * 1e6) > 0.9) {
      notes.push("the load process used over 90 % of its core: the client may be the limit");
    }
    return {
      scenario: "read",
      case: name,
      target: target.name,
      figures: figuresOf(load, idle.rss, server.startToListeningMs),
      conditions: {
        connections: c.connections,
        outstanding: c.outstanding,
        values: options.values,
        nodes: options.nodes,
        timestampsToReturn: options.timestampsToReturn,
        warmupSeconds: options.warmupSeconds,
        durationSeconds: options.durationSeconds,
        serverCpu: server.pinnedCpu ?? null,
        loadCpu: run.pinnedCpu ?? null,
        loadInline: run.inline,
        requestBytes: load.requestBytes,
        idleRssAfterMs: IDLE_SETTLE_MS,
      },
      errorKinds: load.errorKinds,
      notes,
    };
  } finally {
    const exit = await server.stop();
    // Issue 2: SIGTERM closes channels and sessions cleanly and exits 0.
    // `notes` is the array of the returned result, so this lands in the report.
    if (exit.code !== 0) notes.push(`server stopped with exit code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ""} (expected 0 on SIGTERM)`);
  }
}

export const readScenario: Scenario<ReadScenarioOptions> = {
  name: "read",
  summary: "pipelined single-value Reads (10 x 100 and 1 x 1 in flight)",
  usage: USAGE,
  parse: parseReadOptions,
  async run(ctx, options) {
    const results: CaseResult[] = [];
    for (const c of options.cases) {
      for (const target of ctx.targets) results.push(await runReadCase(ctx, target, options, c));
    }
    return results;
  },
};
