// Scenario `history`: the history store's figures (issue 5). Each case runs history-worker.js in
// its own process pinned to the server core:
//   ingest     samples/s the writer commits while the same process serves Reads to a client
//              on the other core (target 200,000/s), and the server CPU per sample
//   bytes      bytes per stored sample on disk, Double and UInt16 tags (target < 24)
//   raw        one HistoryRead of 100,000 raw values: handler + response encoding, ms and heap
//              bytes allocated (target < 300 ms)
//   processed  Average over one day of 1 s samples (24 hourly intervals, and one daily)
//   loop       HistoryRead of 100,000 values in a loop, 1000 tags at 10 ms stored, and both:
//              event-loop delay and the longest tasks, before (--before DIR) and after
//              (history-loop.ts)
import { spawn } from "node:child_process";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { AttributeIds, MessageSecurityMode, OPCUAClient, SecurityPolicy } from "node-opcua-client";
import { findTaskset } from "../harness/proc.js";
import { figuresWithoutRequests as figures, type CaseResult } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, type BenchContext, type CommonOptions, type Scenario } from "../harness/scenario.js";
import { LOOP_PHASES, runLoopCases, type LoopPhase } from "./history-loop.js";

export interface HistoryScenarioOptions extends CommonOptions {
  cases: string[];
  duration: number;
  warmup: number;
  rate: number;
  before?: string;
  phases: LoopPhase[];
  tags: number;
  tagInterval: number;
  stored: number;
}

const CASES = ["ingest", "bytes", "raw", "processed", "loop"];

const USAGE = `npm run bench -- history [options]
  --case NAME         ingest, bytes, raw, processed, loop (repeatable; default all)
  --duration S        ingest and loop windows in seconds (default 10)
  --warmup S          ingest and loop warm-up in seconds (default 2)
  --rate N            samples/s offered to the writer in the ingest case (default 300000)
  --before DIR        loop: also run a built checkout of an earlier commit (its dist/), in turn
  --phase NAME        loop: read, write, both (repeatable; default all)
  --tags N            loop: historized tags sampled every 10 ms (default 1000)
  --tag-interval MS   loop: the tags' sampling interval instead (1000: a gateway's 1 s poll)
  --stored N          loop: stored values read by each HistoryRead (default 100000)
${COMMON_USAGE}`;

export function parseHistoryOptions(argv: readonly string[]): HistoryScenarioOptions | null {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...COMMON_OPTIONS,
      case: { type: "string", multiple: true },
      duration: { type: "string" },
      warmup: { type: "string" },
      rate: { type: "string" },
      before: { type: "string" },
      phase: { type: "string", multiple: true },
      tags: { type: "string" },
      "tag-interval": { type: "string" },
      stored: { type: "string" },
    },
  });
  if (values.help) return null;
  const cases = values.case?.length ? values.case : CASES;
  for (const c of cases) if (!CASES.includes(c)) throw new Error(`--case: expected one of ${CASES.join(", ")}, got "${c}"`);
  const phases = (values.phase?.length ? values.phase : [...LOOP_PHASES]) as LoopPhase[];
  for (const p of phases) if (!LOOP_PHASES.includes(p)) throw new Error(`--phase: expected one of ${LOOP_PHASES.join(", ")}, got "${p}"`);
  return {
    ...commonFrom(values),
    cases,
    duration: positive("duration", values.duration, 10, false),
    warmup: values.warmup === "0" ? 0 : positive("warmup", values.warmup, 2, false),
    rate: positive("rate", values.rate, 300_000),
    before: values.before,
    phases,
    tags: positive("tags", values.tags, 1000),
    tagInterval: positive("tag-interval", values["tag-interval"], 10),
    stored: positive("stored", values.stored, 100_000),
  };
}

interface Worker {
  lines: AsyncIterableIterator<Record<string, number>>;
  done: Promise<number>;
}

/** Starts history-worker.js MODE pinned to the server CPU; its stdout is JSON lines. */
function startWorker(ctx: BenchContext, args: string[]): Worker {
  const script = join(ctx.root, "dist/bench/scenarios/history-worker.js");
  const node = [process.execPath, "--expose-gc", "--max-semi-space-size=256", script, ...args];
  const taskset = ctx.serverCpu !== undefined ? findTaskset() : null;
  const cmd = taskset ? [taskset, "-c", String(ctx.serverCpu), ...node] : node;
  const child = spawn(cmd[0], cmd.slice(1), { stdio: ["ignore", "pipe", "inherit"] });
  const queue: Record<string, number>[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  let buffer = "";
  child.stdout.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split("\n");
    buffer = parts.pop()!;
    for (const p of parts) if (p.trim() !== "") queue.push(JSON.parse(p) as Record<string, number>);
    wake?.();
  });
  const done = new Promise<number>((resolve) =>
    child.on("exit", (code) => {
      ended = true;
      wake?.();
      resolve(code ?? 1);
    }),
  );
  async function* lines(): AsyncGenerator<Record<string, number>> {
    for (;;) {
      if (queue.length > 0) {
        yield queue.shift()!;
        continue;
      }
      if (ended) return;
      await new Promise<void>((r) => (wake = r));
      wake = undefined;
    }
  }
  return { lines: lines(), done };
}

async function next(w: Worker, what: string): Promise<Record<string, number>> {
  const r = await w.lines.next();
  if (r.done) throw new Error(`history worker ended before ${what} (exit ${await w.done})`);
  return r.value;
}

/** Reads from the server while the writer ingests: 8 loops of 10-node Reads. */
async function readLoad(port: number, until: Promise<unknown>): Promise<{ reads: number; errors: number }> {
  const client = OPCUAClient.create({
    endpointMustExist: false,
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
  });
  await client.connect(`opc.tcp://127.0.0.1:${port}`);
  const session = await client.createSession();
  let stop = false;
  void until.then(() => (stop = true));
  let reads = 0;
  let errors = 0;
  const nodes = Array.from({ length: 10 }, () => ({ nodeId: "i=2258", attributeId: AttributeIds.Value }));
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (!stop) {
        try {
          await session.read(nodes);
          reads++;
        } catch {
          errors++;
          if (errors > 100) return;
        }
      }
    }),
  );
  await session.close();
  await client.disconnect();
  return { reads, errors };
}

function conditions(ctx: BenchContext, extra: Record<string, number | string>): CaseResult["conditions"] {
  return { warmupSeconds: 0, durationSeconds: 0, serverCpu: ctx.serverCpu ?? null, loadCpu: null, loadInline: true, idleRssAfterMs: 0, ...extra };
}

export const historyScenario: Scenario<HistoryScenarioOptions> = {
  name: "history",
  summary: "history ingest, bytes per sample, 100,000 raw values, a day's Average, HistoryRead and flushes beside sampling",
  usage: USAGE,
  parse: parseHistoryOptions,
  async run(ctx, options) {
    const results: CaseResult[] = [];
    const target = "fieldgate";
    for (const c of options.cases) {
      ctx.log(`history ${c}`);
      if (c === "ingest") {
        const w = startWorker(ctx, ["ingest", String(options.duration), String(options.warmup), String(options.rate)]);
        const { port } = await next(w, "its port");
        const resultLine = next(w, "the ingest figures");
        const load = await readLoad(port, resultLine);
        const r = await resultLine;
        await w.done;
        results.push({
          scenario: "history",
          case: `ingest, ${options.rate} samples/s offered, 1000 tags`,
          target,
          unit: "samples/s",
          figures: figures({
            requests: Math.round(r.flushedPerSecond * r.windowSeconds),
            windowSeconds: r.windowSeconds,
            requestsPerSecond: r.flushedPerSecond,
            serverCpuShare: r.cpuShare,
            serverCpuMicrosPerRequest: r.cpuMicrosPerSample,
            errors: load.errors,
          }),
          conditions: { ...conditions(ctx, { offeredSamplesPerSecond: Math.round(r.offered), flushes: r.flushes }), warmupSeconds: options.warmup, durationSeconds: r.windowSeconds },
          errorKinds: {},
          notes: [
            `served ${Math.round(load.reads / r.windowSeconds)} Reads/s (10 nodes each) meanwhile`,
            `dropped ${Math.round(r.droppedPerSecond)} samples/s; ${r.queuedAtEnd} queued at the end`,
          ],
        });
      } else if (c === "bytes") {
        const w = startWorker(ctx, ["bytes"]);
        const r = await next(w, "the byte figures");
        await w.done;
        for (const kind of ["Double", "UInt16"]) {
          results.push({
            scenario: "history",
            case: `bytes per sample, ${kind}, 100 tags x 10,000 s`,
            target,
            unit: "bytes/sample",
            figures: figures({ requests: 1_000_000, requestsPerSecond: r[`${kind}FileBytesPerSample`] }),
            conditions: conditions(ctx, { usedBytesPerSample: r[`${kind}UsedBytesPerSample`], writtenBytesPerSample: r[`${kind}WrittenBytesPerSample`] }),
            errorKinds: {},
            notes: [
              "file size after a checkpoint / samples stored (one 1 s flush per second)",
              `${r[`${kind}WrittenBytesPerSample`].toFixed(0)} bytes written (WAL and checkpoints) per sample stored`,
            ],
          });
        }
      } else if (c === "loop") {
        const o = { before: options.before, phases: options.phases, tags: options.tags, rateMs: options.tagInterval, storedValues: options.stored, duration: options.duration, warmup: options.warmup };
        results.push(...(await runLoopCases(ctx, o, figures)));
      } else if (c === "raw") {
        const w = startWorker(ctx, ["raw"]);
        const r = await next(w, "the raw read figures");
        await w.done;
        results.push({
          scenario: "history",
          case: "HistoryRead of 100,000 raw values",
          target,
          unit: "ms",
          figures: figures({ requests: r.values, requestsPerSecond: r.ms, latencyMicros: { p50: r.ms * 1000, p90: NaN, p99: NaN, p999: NaN, max: NaN, mean: r.ms * 1000 } }),
          conditions: conditions(ctx, { heapBytesAllocated: r.heapBytes, responseBytes: r.responseBytes, firstRunMs: r.firstMs }),
          errorKinds: {},
          notes: ["handler + response encoding in one process, median of 5 runs after a warm-up run; heap bytes = heapUsed growth with GC held off"],
        });
      } else {
        const w = startWorker(ctx, ["processed"]);
        const r = await next(w, "the processed figures");
        await w.done;
        for (const [name, ms] of [["24 hourly intervals", r.hourlyMs], ["one daily interval", r.dailyMs]] as const) {
          results.push({
            scenario: "history",
            case: `Average over a day of 1 s samples, ${name}`,
            target,
            unit: "ms",
            figures: figures({ requests: r.samples, requestsPerSecond: ms }),
            conditions: conditions(ctx, {}),
            errorKinds: {},
            notes: ["median of 5 runs"],
          });
        }
      }
    }
    return results;
  },
};

// The CI smoke run (bench/scenarios/smoke.ts): one short ingest case. Set apart from the literal
// so the Scenario interface needs no smoke fields.
Object.assign(historyScenario, { smokeArgs: ["--case", "ingest", "--duration", "1", "--warmup", "0.2", "--rate", "20000"] });
