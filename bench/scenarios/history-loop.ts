// The `history` scenario's loop case (issue 13): what HistoryRead in a loop and the history
// writer's flushes do to the event loop, before and after they moved to worker threads, in one
// run. Three phases, each on a fresh server (history-loop-server.ts, pinned to the server core):
//   read   one client reads 100,000 stored values in a loop (history-read-load.ts, in the
//          load process), nothing else stored
//   write  `tags` historized tags sampled every 10 ms and stored with the default flush settings
//          (flushCount 10,000, 1 s), no reads
//   both   the two at once
// Each phase runs the code of `--before DIR` (a built checkout of the commit compared with;
// its dist/ is run) and of this checkout, in turn. Figures: event-loop delay (p99, max), the
// longest synchronous task of a HistoryRead and of a flush, HistoryRead values/s and server CPU
// per value, skipped sampling slots and the largest gap between two runs of the 10 ms group.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { GATEWAY_NODE_FLAGS } from "../../src/runtime-flags.js";
import { Histogram } from "../client/histogram.js";
import { runModuleLoad } from "../harness/load-process.js";
import { findTaskset } from "../harness/proc.js";
import type { CaseResult, Figures } from "../harness/report.js";
import { sleep, type BenchContext } from "../harness/scenario.js";
import { HISTORY_READ_LOAD, type HistoryReadLoadParams, type HistoryReadLoadResult } from "./history-read-load.js";
import type { LoopServerFigures, LoopServerParams, LoopServerReady } from "./history-loop-server.js";

export const LOOP_PHASES = ["read", "write", "both"] as const;
export type LoopPhase = (typeof LOOP_PHASES)[number];

export interface LoopOptions {
  /** A built checkout to compare with (its dist/ runs), or undefined for this checkout only. */
  before?: string;
  phases: readonly LoopPhase[];
  tags: number;
  /** The tags' sampling interval, ms (default 10). */
  rateMs?: number;
  storedValues: number;
  duration: number;
  warmup: number;
}

interface LoopServer {
  child: ChildProcess;
  next(what: string): Promise<Record<string, unknown>>;
  done: Promise<number>;
}

function startServer(ctx: BenchContext, params: LoopServerParams): LoopServer {
  const script = join(ctx.root, "dist/bench/scenarios/history-loop-server.js");
  // The gateway's own V8 flags (src/runtime-flags.ts), for both checkouts alike: the figures
  // compare the history, not the flags; FIELDGATE_BENCH_NODE_FLAGS adds some, as for the target.
  const extra = (process.env.FIELDGATE_BENCH_NODE_FLAGS ?? "").split(" ").filter((f) => f !== "");
  const node = [process.execPath, ...GATEWAY_NODE_FLAGS, ...extra, script, JSON.stringify(params)];
  const taskset = ctx.serverCpu !== undefined ? findTaskset() : null;
  const cmd = taskset ? [taskset, "-c", String(ctx.serverCpu), ...node] : node;
  const child = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const lines: Record<string, unknown>[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  createInterface({ input: child.stdout! }).on("line", (l) => {
    if (l.trim() === "") return;
    lines.push(JSON.parse(l) as Record<string, unknown>);
    wake?.();
  });
  const done = new Promise<number>((r) =>
    child.on("exit", (code) => {
      ended = true;
      wake?.();
      r(code ?? 1);
    }),
  );
  return {
    child,
    done,
    async next(what) {
      while (lines.length === 0) {
        if (ended) throw new Error(`history loop server ended before ${what} (exit ${await done})`);
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
      }
      return lines.shift()!;
    },
  };
}

const DESCRIPTIONS: Record<LoopPhase, (o: LoopOptions) => string> = {
  read: (o) => `loop read: HistoryRead of ${o.storedValues.toLocaleString("en-US")} values in a loop`,
  write: (o) => `loop write: ${o.tags.toLocaleString("en-US")} tags at ${o.rateMs ?? 10} ms stored`,
  both: (o) => `loop both: ${o.tags.toLocaleString("en-US")} tags at ${o.rateMs ?? 10} ms stored, HistoryRead in a loop`,
};

async function runPhase(ctx: BenchContext, o: LoopOptions, variant: string, root: string, phase: LoopPhase, figures: (over: Partial<Figures>) => Figures): Promise<CaseResult> {
  const load0 = loadavg()[0];
  const server = startServer(ctx, { root, tags: phase === "read" ? 0 : o.tags, rateMs: o.rateMs ?? 10, storedValues: o.storedValues });
  try {
    const ready = (await server.next("listening")) as unknown as LoopServerReady;
    let load: HistoryReadLoadResult | undefined;
    if (phase === "write") {
      await sleep(o.warmup * 1000);
      process.kill(ready.pid, "SIGUSR2");
      await sleep(o.duration * 1000);
      process.kill(ready.pid, "SIGUSR2");
    } else {
      const params: HistoryReadLoadParams = {
        host: "127.0.0.1",
        port: ready.port,
        endpointUrl: `opc.tcp://127.0.0.1:${ready.port}`,
        node: ready.node,
        startTime: ready.startTime,
        endTime: ready.endTime,
        valuesPerRead: o.storedValues,
        warmupSeconds: o.warmup,
        durationSeconds: o.duration,
        serverPid: ready.pid,
        serverDiagnostics: true,
      };
      load = (await runModuleLoad<HistoryReadLoadParams, HistoryReadLoadResult>(HISTORY_READ_LOAD, "runHistoryReadLoad", params, ctx.load)).result;
    }
    const f = (await server.next("the figures")) as unknown as LoopServerFigures;
    server.child.stdin!.end("stop\n");
    const exit = await server.done;
    const window = f.windowSeconds;
    const values = load?.values ?? 0;
    const lat = load ? Histogram.from(load.latencyMicros) : undefined;
    const serverCpu = load?.server?.cpuMicros ?? f.cpuMicros;
    return {
      scenario: "history",
      case: DESCRIPTIONS[phase](o),
      target: `fieldgate ${variant}`,
      unit: load ? "values/s" : "samples/s",
      figures: figures({
        requests: load ? values : f.history.stored,
        windowSeconds: window,
        requestsPerSecond: (load ? values : f.history.stored) / window,
        latencyMicros: lat
          ? { p50: lat.percentile(50), p90: lat.percentile(90), p99: lat.percentile(99), p999: lat.percentile(99.9), max: load!.latencyMicros.max, mean: lat.mean() }
          : figures({}).latencyMicros,
        serverCpuMicrosPerRequest: serverCpu / Math.max(1, load ? values : f.history.stored),
        serverCpuShare: serverCpu / (window * 1e6),
        loadCpuShare: load ? load.loadCpuMicros / (load.windowSeconds * 1e6) : NaN,
        serverRssEndBytes: f.rssBytes,
        errors: load?.errors ?? 0,
        errorsTotal: load?.errorsTotal ?? 0,
        channelFaults: load?.channelFaults ?? 0,
        verifiedResponses: load?.verifiedResponses ?? 0,
      }),
      conditions: {
        warmupSeconds: o.warmup,
        durationSeconds: window,
        serverCpu: ctx.serverCpu ?? null,
        loadCpu: load && !ctx.load.inline ? (ctx.load.cpu ?? null) : null,
        loadInline: ctx.load.inline === true,
        idleRssAfterMs: 0,
        tags: phase === "read" ? 0 : o.tags,
        storedValues: o.storedValues,
        historyReads: load?.reads ?? 0,
        loopDelayP99Ms: f.loopDelay.p99,
        loopDelayMaxMs: f.loopDelay.max,
        gcPauseMaxMs: f.gc.max,
        readTaskMaxMs: f.readTask.max,
        readTaskP99Ms: f.readTask.p99,
        readTaskOwnMaxMs: f.readTask.ownMax,
        readTaskOwnP99Ms: f.readTask.ownP99,
        flushTaskMaxMs: f.flushTask.max,
        flushTaskP99Ms: f.flushTask.p99,
        flushTaskOwnMaxMs: f.flushTask.ownMax,
        flushTaskOwnP99Ms: f.flushTask.ownP99,
        flushTasks: f.flushTask.count,
        slots: f.sampling.slots,
        skippedSlots: f.sampling.skipped,
        largestGapMs: f.sampling.largestGapMs,
        latenessP99Ms: f.sampling.latenessP99Ms,
        storedPerSecond: f.history.stored / window,
        dropped: f.history.dropped,
        loadAverage1m: load0,
      },
      errorKinds: load?.errorKinds ?? {},
      notes: [
        `event loop delay p99 ${f.loopDelay.p99.toFixed(1)} ms, max ${f.loopDelay.max.toFixed(1)} ms; longest task of a HistoryRead ${f.readTask.max.toFixed(2)} ms (p99 ${f.readTask.p99.toFixed(2)}; own ${f.readTask.ownMax.toFixed(2)}, p99 ${f.readTask.ownP99.toFixed(2)}), of a flush ${f.flushTask.max.toFixed(2)} ms (p99 ${f.flushTask.p99.toFixed(2)}; own ${f.flushTask.ownMax.toFixed(2)}, p99 ${f.flushTask.ownP99.toFixed(2)})`,
        `by method, max/p99 ms wall, own (less the waits for the core), preempted of all: ${Object.entries(f.byMethod)
          .filter(([, t]) => t.count > 0)
          .map(([k, t]) => `${k} ${t.max.toFixed(2)}/${t.p99.toFixed(2)}, own ${t.ownMax.toFixed(2)}/${t.ownP99.toFixed(2)}, ${t.preempted}/${t.count}`)
          .join("; ")}; GC pauses ${f.gc.count} (${Object.entries(f.gc.kinds).map(([k, n]) => `${n} ${k}`).join(", ")}), max ${f.gc.max.toFixed(2)} ms, ${f.gc.total.toFixed(0)} ms in all`,
        `CPU ms by thread: ${Object.entries(f.threads).filter(([, ms]) => ms > 0).map(([k, ms]) => `${k}: ${ms}`).join(", ")}`,
        `10 ms group: ${f.sampling.skipped} of ${f.sampling.slots + f.sampling.skipped} slots skipped, largest gap ${f.sampling.largestGapMs.toFixed(1)} ms, lateness p99 ${f.sampling.latenessP99Ms.toFixed(1)} ms; ${Math.round(f.history.stored / window)} samples/s stored, ${f.history.dropped} dropped; ${load ? `${load.reads} HistoryReads, ` : ""}load average ${load0.toFixed(2)} at the start${exit !== 0 ? `; server exit ${exit}` : ""}`,
      ],
    };
  } finally {
    if (server.child.exitCode === null) server.child.kill("SIGKILL");
  }
}

/** Every phase on `before` (when given) and on this checkout, in turn. */
export async function runLoopCases(ctx: BenchContext, o: LoopOptions, figures: (over: Partial<Figures>) => Figures): Promise<CaseResult[]> {
  const variants: [string, string][] = [];
  if (o.before !== undefined) {
    const dir = resolve(o.before);
    if (!existsSync(join(dir, "dist/src/server/server.js"))) throw new Error(`--before ${dir}: no dist/src/server/server.js there (build it: npx tsc -p tsconfig.json)`);
    variants.push(["before", dir]);
  }
  variants.push(["after", ctx.root]);
  const results: CaseResult[] = [];
  for (const phase of o.phases) {
    for (const [name, root] of variants) {
      ctx.log(`history loop ${phase}, ${name}`);
      results.push(await runPhase(ctx, o, name, root, phase, figures));
    }
  }
  return results;
}
