// Memory taken by a burst comes back (issue 14; DESIGN "Memory has one bound"). The transport's
// pool gives its slabs back by itself (transport/buffer-pool.ts trim). What a burst leaves in V8's
// heap does not always: the objects an attack made (decoded requests of 10,000 nodes, their
// results, the state of hundreds of channels) are freed by the ordinary mark-compacts, but the
// old generation keeps its pages, each holding a few survivors: 23-27 MB committed 60 s after
// bench hostile. Only a compacting GC moves the survivors together and unmaps the emptied pages.
// V8's memory reducer runs one when the allocation rate is low, but only if the heap grew since
// its own last run; when that run came during the burst (a lull between attackers), nothing arms
// it again, and the pages stay: RSS 60 s after the attack was +9.5 to +10.1 MB above the
// baseline in one round of three, +0.3 to +2.7 MB when the reducer had run (bench/RESULTS.md).
//
// So the server asks for that GC itself, once a burst is over: the pool had grown past
// BURST_SLABS and is back to at most IDLE_SLABS, and the heap holds more than WASTE_BYTES it does
// not use. It is one atomic pause, longer than the reducer's (whose marking runs in steps), so it
// runs at most once every MIN_INTERVAL_MS, never during traffic that keeps the pool up, not when
// there is nothing to give back, and not on a heap above MAX_USED_BYTES. Node 20 has no API for a memory-reducing GC (gc({type}) options do not run one, a
// plain gc() does not compact): --expose-gc's gc() runs with V8's --compact-on-every-full-gc set
// for that one call.
import { setFlagsFromString, getHeapStatistics } from "node:v8";
import type { ServerLog } from "../log.js";

/** The pool's slabs (256 KiB each) that make a burst: 2 MiB of transport memory at once. */
export const BURST_SLABS = 8;
/** The pool is back to idle at this many slabs (its floor, or one more while a client polls). */
export const IDLE_SLABS = 2;
/** Heap committed and not used, above which a compacting GC is worth its pause. */
export const WASTE_BYTES = 8 * 1024 * 1024;
/** At most one compacting GC this often. */
export const MIN_INTERVAL_MS = 60_000;
/**
 * Above this much heap in use, no compacting GC: it moves every live object, so its pause grows
 * with them (bench hostile: 58.8 ms with 12.6 MB in use, on a machine shared with an emulator);
 * a gateway that large (16,384 monitored items: ~40 MB) is left to V8's reducer, whose marking
 * runs in steps.
 */
export const MAX_USED_BYTES = 24 * 1024 * 1024;

/** What HeapReturn reads of V8's heap. */
export interface HeapFigures {
  /** Bytes committed for the heap (v8 total_heap_size). */
  committed: number;
  /** Bytes of it in use (v8 used_heap_size). */
  used: number;
}

export interface HeapReturnOptions {
  /** A full GC (default: --expose-gc's gc(), when the process has it; without one HeapReturn does nothing). */
  gc?: () => void;
  /** Runs `gc` so that it compacts (default: with --compact-on-every-full-gc set around it). */
  compacting?: (gc: () => void) => void;
  heap?: () => HeapFigures;
  now?: () => number;
  log?: ServerLog;
}

function v8Heap(): HeapFigures {
  const h = getHeapStatistics();
  return { committed: h.total_heap_size, used: h.used_heap_size };
}

function withCompaction(gc: () => void): void {
  setFlagsFromString("--compact-on-every-full-gc");
  try {
    gc();
  } finally {
    setFlagsFromString("--no-compact-on-every-full-gc");
  }
}

function exposedGc(): (() => void) | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === "function" ? () => (gc as () => void)() : undefined;
}

const MB = 1024 * 1024;

export class HeapReturn {
  /** Compacting GCs run, and bytes of committed heap they gave back in all (diagnostics, tests). */
  runs = 0;
  returnedBytes = 0;
  private readonly gc: (() => void) | undefined;
  private readonly compacting: (gc: () => void) => void;
  private readonly heap: () => HeapFigures;
  private readonly now: () => number;
  private readonly log: ServerLog | undefined;
  private burst = false;
  private last = -Infinity;

  constructor(options: HeapReturnOptions = {}) {
    this.gc = options.gc ?? exposedGc();
    this.compacting = options.compacting ?? withCompaction;
    this.heap = options.heap ?? v8Heap;
    this.now = options.now ?? Date.now;
    this.log = options.log;
  }

  /** Whether this process can compact its heap (gc exposed). */
  get enabled(): boolean {
    return this.gc !== undefined;
  }

  /** Called after each trim of the pool (once a second) with its live slabs. */
  trimmed(slabs: number): void {
    if (this.gc === undefined) return;
    if (slabs >= BURST_SLABS) {
      this.burst = true;
      return;
    }
    if (!this.burst || slabs > IDLE_SLABS) return;
    const before = this.heap();
    if (before.committed - before.used < WASTE_BYTES || before.used > MAX_USED_BYTES) {
      // The reducer (or the burst's own GCs) gave it back already, or the pause would be too long.
      this.burst = false;
      return;
    }
    const now = this.now();
    if (now - this.last < MIN_INTERVAL_MS) return;
    this.last = now;
    this.burst = false;
    const t0 = performance.now();
    this.compacting(this.gc);
    const pause = performance.now() - t0;
    const after = this.heap();
    const returned = Math.max(0, before.committed - after.committed);
    this.runs++;
    this.returnedBytes += returned;
    this.log?.info(
      `memory: the heap gave back ${(returned / MB).toFixed(1)} MB after a burst (committed ${(before.committed / MB).toFixed(1)} -> ${(after.committed / MB).toFixed(1)} MB, ${(after.used / MB).toFixed(1)} MB in use; one compacting GC, ${pause.toFixed(1)} ms)`,
    );
  }
}
