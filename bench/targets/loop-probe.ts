// Preload of the fieldgate target for the reload scenario: `node --import <this module>` before
// the CLI (FIELDGATE_BENCH_NODE_FLAGS), so the gateway runs as shipped while the probe watches
// its event loop from inside. It
// - ticks every millisecond and keeps the longest gap between two ticks (any task, GC pause or
//   compile that held the loop, timed or not), as wall time and as the main thread's own CPU
//   time (Linux schedstat): on a machine shared with other work, the wall gap also holds the
//   time the thread waited for its core, the CPU gap only what the loop itself did;
// - wraps FieldgateServer.prototype.start of the checkout under test to reach the server's loop
//   trace (the scheduler's), and reloadDevices to time a reload and, as it begins, to start the
//   window: the longest gap and the loop trace (its longest task per label, its GC pauses) are
//   reset there;
// - on SIGUSR2 (which the harness sends for its diagnostics line too) prints one line
//   `loop-probe: {json}` with what the window saw.
//
// FIELDGATE_BENCH_LOOP_PROBE holds the checkout's root (its dist/ is what the CLI runs). Worker
// threads see the same environment and load preloads too: only the main thread acts.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { isMainThread } from "node:worker_threads";
import { serverModule } from "./server-module.js";

export const LOOP_PROBE_ENV = "FIELDGATE_BENCH_LOOP_PROBE";
export const LOOP_PROBE_PREFIX = "loop-probe: ";

/** What the probe prints: the window from the last reload's start to the SIGUSR2. */
export interface LoopProbeReport {
  /** Reloads begun so far. */
  readonly reloads: number;
  /** The last reload's time from its start to its end, ms (NaN while it runs). */
  readonly reloadMs: number;
  /** Of it, the device runtime's apply of the new map (after the map was read and validated), ms. */
  readonly applyMs: number;
  /** The longest gap between two 1 ms ticks in the window, ms. */
  readonly maxGapMs: number;
  /** The most CPU time the main thread ran between two 1 ms ticks in the window, ms (NaN without schedstat). */
  readonly maxCpuGapMs: number;
  /** The loop trace's longest task per label in the window, ms, longest first (at most 8). */
  readonly longestTasks: readonly [string, number][];
  readonly gcPauseMaxMs: number;
  readonly gcCount: number;
  /** When the last reload began, µs of the monotonic clock (a --cpu-prof profile's time base). */
  readonly reloadStartUs: number;
}

interface TraceLike {
  reset(): void;
  longestByTask(): [string, number][];
  gcPauseMax: number;
  gcCount: number;
}

interface ServerLike {
  readonly scheduler: { readonly trace?: TraceLike };
  readonly deviceRuntime: { apply(map: unknown): Promise<unknown> };
  start(): Promise<void>;
  reloadDevices(): Promise<unknown>;
}

async function install(root: string): Promise<void> {
  const { FieldgateServer } = (await import(serverModule(root))) as { FieldgateServer: { prototype: ServerLike } };
  const { openThreadTimes } = (await import(pathToFileURL(join(root, "dist", "src", "sampling", "thread-times.js")).href)) as {
    openThreadTimes(): { read(): boolean; ranMs: number } | undefined;
  };
  const times = openThreadTimes();
  let server: ServerLike | undefined;
  let last = performance.now();
  let maxGap = 0;
  let lastRan = times?.read() ? times.ranMs : NaN;
  let maxCpuGap = times === undefined ? NaN : 0;
  let reloads = 0;
  let reloadStart = NaN;
  let reloadMs = NaN;
  let reloadStartUs = NaN;
  setInterval(() => {
    const now = performance.now();
    if (now - last > maxGap) maxGap = now - last;
    last = now;
    if (times?.read()) {
      if (times.ranMs - lastRan > maxCpuGap) maxCpuGap = times.ranMs - lastRan;
      lastRan = times.ranMs;
    }
  }, 1).unref();

  const start = FieldgateServer.prototype.start;
  let applyMs = NaN;
  FieldgateServer.prototype.start = function (this: ServerLike): Promise<void> {
    server = this;
    const runtime = this.deviceRuntime;
    const apply = runtime.apply.bind(runtime);
    runtime.apply = async (map: unknown): Promise<unknown> => {
      const t0 = performance.now();
      applyMs = NaN;
      try {
        return await apply(map);
      } finally {
        applyMs = performance.now() - t0;
      }
    };
    return start.call(this);
  };
  const reload = FieldgateServer.prototype.reloadDevices;
  FieldgateServer.prototype.reloadDevices = async function (this: ServerLike): Promise<unknown> {
    reloads++;
    this.scheduler.trace?.reset();
    maxGap = 0;
    if (times !== undefined) maxCpuGap = 0;
    reloadStart = performance.now();
    reloadStartUs = Number(process.hrtime.bigint() / 1000n);
    reloadMs = NaN;
    try {
      return await reload.call(this);
    } finally {
      reloadMs = performance.now() - reloadStart;
    }
  };
  process.on("SIGUSR2", () => {
    const trace = server?.scheduler.trace;
    const report: LoopProbeReport = {
      reloads,
      reloadMs,
      applyMs,
      maxGapMs: maxGap,
      maxCpuGapMs: maxCpuGap,
      longestTasks: trace?.longestByTask().slice(0, 8) ?? [],
      gcPauseMaxMs: trace?.gcPauseMax ?? NaN,
      gcCount: trace?.gcCount ?? NaN,
      reloadStartUs,
    };
    process.stdout.write(`${LOOP_PROBE_PREFIX}${JSON.stringify(report)}\n`);
  });
}

const root = process.env[LOOP_PROBE_ENV];
if (isMainThread && root !== undefined) {
  delete process.env[LOOP_PROBE_ENV];
  await install(root);
}
