// The server process of the `history` scenario's loop case (issue 13), pinned to the server
// core: a FieldgateServer of the code under `root` (this checkout, or a build of an earlier
// commit, so that before and after run in one bench run), with
//   - 100,000 stored values of one node (history-read-load.ts: fillHistory, before the start),
//     readable as nsu=urn:fieldgate:bench-history;s=bench.history,
//   - `tags` historized tags sampled every `rateMs` on the server's own deadline scheduler (a
//     group that records a new DataValue per tag into the server's HistorySink, as a poll group
//     hands its samples on), or with tags 0 the same group as a probe that only keeps time,
// and figures measured inside the process over the window that SIGUSR2 opens and closes (the
// load sends them, or the scenario for a case without a load):
//   loopDelay   perf_hooks monitorEventLoopDelay (1 ms resolution): p50, p99, max, ms
//   readTask    the longest synchronous pieces of a HistoryRead on the event loop: the request
//               (decode, checks and, before the read worker, the whole read), the response
//               (encoding and chunking), and the read worker's answer; max and p99, ms
//   flushTask   the history writer's ticks on the event loop (before: flush, compaction and
//               retention themselves; after: handing a batch over and taking the answer)
//   sampling    slots run and skipped by the group, its largest gap between two runs, the
//               scheduler's lateness p99 and max
//   history     samples stored and dropped; process CPU (all threads) over the window
// The timings wrap prototype methods of the loaded modules from the outside: nothing in src/
// knows it is measured. Module code runs only when this file is the main script.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { BENCH_HISTORY_NODE as NODE, BENCH_HISTORY_URI, fillHistory } from "./history-read-load.js";
import { runQueueWaitMicros } from "../harness/proc.js";

export interface LoopServerParams {
  /** Checkout whose dist/ is run. */
  root: string;
  tags: number;
  rateMs: number;
  /** Stored values of the read node, one every 10 ms, ending an hour ago. */
  storedValues: number;
}

/** What the process prints once the server listens. */
export interface LoopServerReady {
  port: number;
  pid: number;
  node: string;
  startTime: number;
  endTime: number;
}

export interface TaskFigures {
  count: number;
  p99: number;
  max: number;
  /** The same less the time the thread waited for the core meanwhile (schedstat run_delay). */
  ownP99: number;
  ownMax: number;
  /** Tasks during which the thread waited more than 0.1 ms for the core. */
  preempted: number;
}

export interface LoopServerFigures {
  windowSeconds: number;
  loopDelay: { p50: number; p99: number; max: number };
  readTask: TaskFigures;
  flushTask: TaskFigures;
  /** The same by method timed (Dispatcher.onRequest, HistoryWriteThread.timerTick, ...). */
  byMethod: Record<string, TaskFigures>;
  /** CPU ms of the process's threads in the window, by kind (thread name, nice value). */
  threads: Record<string, number>;
  /** GC pauses of the main thread in the window (perf_hooks gc entries), ms. */
  gc: { count: number; max: number; total: number; kinds: Record<string, number> };
  sampling: { slots: number; skipped: number; largestGapMs: number; latenessP99Ms: number; latenessMaxMs: number };
  history: { stored: number; dropped: number; queuedAtEnd: number };
  cpuMicros: number;
  rssBytes: number;
}

export const URI = BENCH_HISTORY_URI;

/** Durations of one kind of task, ms; a few thousand are kept (the window is seconds long). */
class Tasks {
  private times: number[] = [];
  private own: number[] = [];
  private preempted = 0;
  measuring = false;

  add(ms: number, waitedMs: number): void {
    if (!this.measuring || this.times.length >= 1_000_000) return;
    this.times.push(ms);
    this.own.push(Math.max(0, ms - waitedMs));
    if (waitedMs > 0.1) this.preempted++;
  }

  reset(): void {
    this.times = [];
    this.own = [];
    this.preempted = 0;
  }

  figures(): TaskFigures {
    const q = (a: number[]) => {
      const s = [...a].sort((x, y) => x - y);
      return { p99: s.length ? s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] : 0, max: s.length ? s[s.length - 1] : 0 };
    };
    const wall = q(this.times);
    const own = q(this.own);
    return { count: this.times.length, p99: wall.p99, max: wall.max, ownP99: own.p99, ownMax: own.max, preempted: this.preempted };
  }
}

/** CPU ms and nice value of every thread of this process, by thread id (/proc/self/task). */
function threadTimes(): Map<string, { comm: string; nice: number; cpuMs: number }> {
  const out = new Map<string, { comm: string; nice: number; cpuMs: number }>();
  try {
    for (const tid of readdirSync("/proc/self/task")) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "latin1");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      // utime and stime (fields 14 and 15, here 11 and 12) in clock ticks of 10 ms.
      out.set(tid, { comm, nice: Number(f[16]), cpuMs: (Number(f[11]) + Number(f[12])) * 10 });
    }
  } catch {
    // no /proc
  }
  return out;
}

/**
 * ms this thread has waited on a run queue (runnable, another thread or process on the core);
 * NaN without /proc. The task durations subtract it: on a shared machine they would otherwise
 * measure the neighbours.
 */
function runDelayMs(): number {
  return runQueueWaitMicros("thread-self") / 1000;
}

type Method = (this: unknown, ...args: unknown[]) => unknown;

const byMethod = new Map<string, Tasks>();

/** Times every call of `proto[name]` (when it exists) into `tasks` and its own, if `when` says so. */
function timeMethod(proto: object | undefined, label: string, name: string, tasks: Tasks, when?: (args: unknown[]) => boolean): boolean {
  const p = proto as Record<string, Method> | undefined;
  const original = p?.[name];
  if (typeof original !== "function") return false;
  const own = new Tasks();
  byMethod.set(`${label}.${name}`, own);
  p![name] = function (this: unknown, ...args: unknown[]): unknown {
    if (when !== undefined && !when(args)) return original.apply(this, args);
    const d0 = runDelayMs();
    const t0 = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      const ms = performance.now() - t0;
      const waited = runDelayMs() - d0;
      const w = waited === waited ? waited : 0;
      tasks.add(ms, w);
      own.measuring = tasks.measuring;
      own.add(ms, w);
    }
  };
  return true;
}

const HISTORY_READ_REQUEST = 664;
/** perf_hooks constants.NODE_PERFORMANCE_GC_*: 1 minor, 2 major, 4 incremental, 8 weak callbacks. */
const GC_KINDS: Record<number, string> = { 1: "minor", 2: "major", 4: "incremental", 8: "weakcb" };

/** The request body starts with its encoding NodeId: i=664 in the FourByte form. */
function isHistoryRead(args: unknown[]): boolean {
  const body = args[2] as Buffer;
  const start = args[3] as number;
  return body[start] === 0x01 && body[start + 1] === 0 && body.readUInt16LE(start + 2) === HISTORY_READ_REQUEST;
}

interface ServerLike {
  readonly port: number;
  readonly registry: { register(uri: string, manager?: unknown): number };
  readonly scheduler: { every(interval: number, task: { sample(deadline: number, now: number): void }): { samples: number; skipped: number }; resetLateness(): void; latencyQuantile(q: number): number; latenessHistogram(): Readonly<Uint32Array> };
  readonly history: { writer: { declare(id: object): void; record(id: object, dv: object): void; stats: { flushed: number; dropped: number }; queued: number }; close(): unknown };
  start(): Promise<void>;
  stop(): Promise<void>;
}

async function main(p: LoopServerParams): Promise<void> {
  const dist = (f: string) => pathToFileURL(join(p.root, "dist", f)).href;
  const { loadGatewayConfig } = (await import(dist("src/config/load.js"))) as { loadGatewayConfig(file: string): { dataDir: string } };
  const { FieldgateServer } = (await import(dist("src/server/server.js"))) as { FieldgateServer: new (config: unknown, log: unknown) => ServerLike };
  const { MemoryNamespace } = (await import(dist("src/address-space/memory-namespace.js"))) as {
    MemoryNamespace: new (ns: number, registry: unknown) => { addVariable(o: object): unknown };
  };
  const { AccessLevel } = (await import(dist("src/address-space/ua-node.js"))) as { AccessLevel: { CurrentRead: number; HistoryRead: number } };
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-bench-history-loop-"));
  const file = join(dir, "gateway.yaml");
  writeFileSync(file, "server:\n  host: 127.0.0.1\n  port: 0\n  testNamespace: false\ndataDir: ./data\nsecurity:\n  securityPolicies: [None]\n");
  const log = { info() {}, warn: (m: string) => process.stderr.write(`${m}\n`) };
  // The read node's namespace index is the server's to give: ask a server that never starts.
  const probe = new FieldgateServer(loadGatewayConfig(file), log);
  const ns = probe.registry.register(URI);
  await probe.history.close();
  rmSync(join(dir, "data"), { recursive: true, force: true });
  const endTime = Date.now() - 3_600_000;
  const filled = await fillHistory({ dataDir: join(dir, "data"), node: `ns=${ns};s=${NODE}`, samples: p.storedValues, startTime: endTime - p.storedValues * 10, intervalMs: 10 });

  const server = new FieldgateServer(loadGatewayConfig(file), log);
  if (server.registry.register(URI) !== ns) throw new Error("the bench namespace got another index than the probe's");
  const mem = new MemoryNamespace(ns, server.registry);
  server.registry.register(URI, mem);
  mem.addVariable({ nodeId: NODE, browseName: NODE, dataType: 11, accessLevel: AccessLevel.CurrentRead | AccessLevel.HistoryRead, historizing: true });

  const readTasks = new Tasks();
  const flushTasks = new Tasks();
  const { Dispatcher } = (await import(dist("src/server/dispatcher.js"))) as { Dispatcher: { prototype: object } };
  timeMethod(Dispatcher.prototype, "Dispatcher", "onRequest", readTasks, isHistoryRead);
  timeMethod(Dispatcher.prototype, "Dispatcher", "send", readTasks, (args) => (args[3] as { name?: string }).name === "HistoryRead");
  const { HistoryWriteThread } = (await import(dist("src/history/write-thread.js"))) as { HistoryWriteThread: { prototype: object } };
  const { HistoryReadThread } = (await import(dist("src/history/read-thread.js"))) as { HistoryReadThread: { prototype: object } };
  timeMethod(HistoryWriteThread.prototype, "HistoryWriteThread", "timerTick", flushTasks);
  timeMethod(HistoryWriteThread.prototype, "HistoryWriteThread", "ticked", flushTasks);
  timeMethod(HistoryReadThread.prototype, "HistoryReadThread", "finish", readTasks);
  const gcPauses: number[] = [];
  const gcKinds: Record<string, number> = {};
  let measuringGc = false;
  new PerformanceObserver((list) => {
    if (!measuringGc) return;
    for (const e of list.getEntries()) {
      gcPauses.push(e.duration);
      const kind = GC_KINDS[(e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0] ?? "other";
      gcKinds[kind] = (gcKinds[kind] ?? 0) + 1;
    }
  }).observe({ entryTypes: ["gc"] });

  await server.start();
  const w = server.history.writer;
  const ids = Array.from({ length: p.tags }, (_, k) => ({ namespace: ns, idType: 1, value: `tag${k}` }));
  for (const id of ids) w.declare(id);
  let lastRun = NaN;
  let largestGap = 0;
  let measuring = false;
  let i = 0;
  const group = server.scheduler.every(p.rateMs, {
    sample(deadline: number, now: number) {
      if (measuring && now - lastRun > largestGap) largestGap = now - lastRun;
      lastRun = now;
      for (let k = 0; k < ids.length; k++, i++) {
        w.record(ids[k], { value: { dataType: 11, arrayType: 0, value: Math.sin(i / 977) * 100 }, sourceTimestamp: deadline });
      }
    },
  });
  const ready: LoopServerReady = { port: server.port, pid: process.pid, node: `nsu=${URI};s=${NODE}`, startTime: filled.startTime, endTime: filled.endTime };
  process.stdout.write(`${JSON.stringify(ready)}\n`);

  const eld = monitorEventLoopDelay({ resolution: 1 });
  let t0 = 0;
  let cpu0 = process.cpuUsage();
  let threads0 = threadTimes();
  let slots0 = 0;
  let skipped0 = 0;
  let stored0 = 0;
  let dropped0 = 0;
  process.on("SIGUSR2", () => {
    if (!measuring) {
      measuring = readTasks.measuring = flushTasks.measuring = measuringGc = true;
      readTasks.reset();
      flushTasks.reset();
      for (const t of byMethod.values()) t.reset();
      gcPauses.length = 0;
      for (const k of Object.keys(gcKinds)) delete gcKinds[k];
      largestGap = 0;
      server.scheduler.resetLateness();
      eld.reset();
      eld.enable();
      t0 = performance.now();
      cpu0 = process.cpuUsage();
      threads0 = threadTimes();
      slots0 = group.samples;
      skipped0 = group.skipped;
      stored0 = w.stats.flushed;
      dropped0 = w.stats.dropped;
      return;
    }
    measuring = readTasks.measuring = flushTasks.measuring = measuringGc = false;
    eld.disable();
    const cpu = process.cpuUsage(cpu0);
    const threads: Record<string, number> = {};
    for (const [tid, t] of threadTimes()) {
      const key = `${tid === String(process.pid) ? "main" : t.comm} nice ${t.nice}`;
      threads[key] = (threads[key] ?? 0) + t.cpuMs - (threads0.get(tid)?.cpuMs ?? 0);
    }
    const hist = server.scheduler.latenessHistogram();
    let last = 0;
    for (let b = 0; b < hist.length; b++) if (hist[b] > 0) last = b;
    const figures: LoopServerFigures = {
      windowSeconds: (performance.now() - t0) / 1000,
      loopDelay: { p50: eld.percentile(50) / 1e6, p99: eld.percentile(99) / 1e6, max: eld.max / 1e6 },
      readTask: readTasks.figures(),
      flushTask: flushTasks.figures(),
      byMethod: Object.fromEntries([...byMethod].map(([k, t]) => [k, t.figures()])),
      gc: { count: gcPauses.length, max: Math.max(0, ...gcPauses), total: gcPauses.reduce((a, b) => a + b, 0), kinds: { ...gcKinds } },
      sampling: { slots: group.samples - slots0, skipped: group.skipped - skipped0, largestGapMs: largestGap, latenessP99Ms: server.scheduler.latencyQuantile(0.99), latenessMaxMs: last / 10 },
      history: { stored: w.stats.flushed - stored0, dropped: w.stats.dropped - dropped0, queuedAtEnd: w.queued },
      cpuMicros: cpu.user + cpu.system,
      threads,
      rssBytes: process.memoryUsage().rss,
    };
    process.stdout.write(`${JSON.stringify(figures)}\n`);
  });
  // "stop" on stdin (or stdin closing) ends the server.
  for await (const line of createInterface({ input: process.stdin })) if (line.trim() === "stop") break;
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main(JSON.parse(process.argv[2]) as LoopServerParams).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
