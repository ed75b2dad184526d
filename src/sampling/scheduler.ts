// One scheduler for the whole process (DESIGN: Sampling; STYLE habit 5): a min-heap of absolute
// deadlines and one re-armed timer. Group k's sample n is due at t0 + n*interval, never one
// interval after the previous sample finished. A late group does not replay the slots it missed:
// they are skipped and counted. An async task (a device poll) still running at its next
// deadline is an overrun: that slot is skipped too.
import type { Clock } from "./clock.js";
import { systemClock } from "./clock.js";
import { STALL_MS, type LoopTrace } from "./loop-trace.js";

/** What a scheduled group runs. `deadline` is the slot's due time, `now` when it actually ran. */
export interface SampleTask {
  sample(deadline: number, now: number): void | Promise<void>;
  /** What the loop trace calls it ("poll boiler @1000 ms"); made once, not per run. */
  readonly label?: string;
}

export interface GroupStats {
  readonly interval: number;
  /** Slots run. */
  samples: number;
  /** Slots not run because the process was late by more than one interval. */
  skipped: number;
  /** Slots not run because the previous async run had not finished. */
  overruns: number;
}

export class ScheduledGroup implements GroupStats {
  readonly interval: number;
  readonly t0: number;
  readonly task: SampleTask;
  samples = 0;
  skipped = 0;
  overruns = 0;
  /** Index of the next slot to run. */
  slot = 0;
  deadline: number;
  busy = false;
  cancelled = false;
  heapIndex = -1;

  constructor(interval: number, t0: number, task: SampleTask) {
    this.interval = interval;
    this.t0 = t0;
    this.task = task;
    this.deadline = t0;
  }
}

/** Lateness histogram in 0.1 ms buckets up to 1 s (and one overflow bucket). */
const BUCKETS = 10_001;
/** Width of one lateness bucket, ms. */
export const LATENESS_BUCKET_MS = 0.1;

/** Counts over every group since the scheduler started, cancelled groups included. */
export interface SchedulerTotals {
  samples: number;
  skipped: number;
  overruns: number;
}

export class DeadlineScheduler {
  private readonly clock: Clock;
  private readonly heap: ScheduledGroup[] = [];
  private timer: unknown = undefined;
  private armedFor = Infinity;
  /** The timer's callback, made once (the scheduler arms a timer for every firing). */
  private readonly onTimer = (): void => this.fire();
  private firing = false;
  private readonly lateness = new Uint32Array(BUCKETS);
  private latenessCount = 0;
  /** For diagnostics: a group's own counts vanish with it when it is cancelled, these do not. */
  readonly totals: SchedulerTotals = { samples: 0, skipped: 0, overruns: 0 };
  /** Errors thrown by tasks; a task's failure never stops the scheduler. */
  onError: ((err: unknown) => void) | undefined;
  /** Where slot durations and late slots are reported (the process's loop trace); none in tests on a fake clock. */
  private readonly trace: LoopTrace | undefined;

  constructor(clock: Clock = systemClock, trace?: LoopTrace) {
    this.clock = clock;
    this.trace = trace;
  }

  get now(): number {
    return this.clock.now();
  }

  /** Schedules `task` every `interval` ms, first at `t0` (default: now). */
  every(interval: number, task: SampleTask, t0 = this.clock.now()): ScheduledGroup {
    if (!(interval > 0)) throw new RangeError(`interval must be positive, got ${interval}`);
    const g = new ScheduledGroup(interval, t0, task);
    this.push(g);
    this.arm();
    return g;
  }

  cancel(g: ScheduledGroup): void {
    if (g.cancelled) return;
    g.cancelled = true;
    if (g.heapIndex >= 0) this.removeAt(g.heapIndex);
    if (this.heap.length === 0) this.disarm();
  }

  get size(): number {
    return this.heap.length;
  }

  /**
   * The earliest deadline of any group (Infinity with none), read-only: work cut into slices
   * (src/sampling/slices.ts) ends its slice before it. Also right while a slot runs, when the
   * running group's next deadline is already set but the heap is not yet restored below it.
   */
  get nextDeadline(): number {
    const h = this.heap;
    const n = h.length;
    if (n === 0) return Infinity;
    let d = h[0].deadline;
    if (n > 1 && h[1].deadline < d) d = h[1].deadline;
    if (n > 2 && h[2].deadline < d) d = h[2].deadline;
    return d;
  }

  /** Lateness of run slots, in ms, at quantile q (0..1). */
  latencyQuantile(q: number): number {
    if (this.latenessCount === 0) return 0;
    const target = Math.ceil(q * this.latenessCount);
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.lateness[i];
      if (seen >= target) return i / 10;
    }
    return (BUCKETS - 1) / 10;
  }

  /**
   * The lateness histogram itself (bucket i counts slots run i*0.1 ms late; the last bucket
   * everything from 1 s on). A live view: copy it to keep a snapshot.
   */
  latenessHistogram(): Readonly<Uint32Array> {
    return this.lateness;
  }

  resetLateness(): void {
    this.lateness.fill(0);
    this.latenessCount = 0;
  }

  stop(): void {
    for (const g of this.heap) {
      g.cancelled = true;
      g.heapIndex = -1;
    }
    this.heap.length = 0;
    this.disarm();
  }

  /**
   * Runs the slots that are due now, from wherever the event loop is between two tasks (a
   * socket read of client requests): the timer would run them only after every other ready
   * I/O callback, so on a busy loop their lateness would be the sum of those callbacks.
   * Returns at once when nothing is due (one clock read) or while slots are running.
   */
  runDue(now = this.clock.now()): void {
    if (this.firing || this.heap.length === 0 || this.heap[0].deadline > now) return;
    this.disarm();
    this.fire();
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Infinity;
    this.firing = true;
    const now = this.clock.now();
    // Run every group whose deadline has come, each at most once per firing.
    try {
      while (this.heap.length > 0 && this.heap[0].deadline <= now) {
        const g = this.heap[0];
        this.runSlot(g, now);
        if (!g.cancelled) this.siftDown(g.heapIndex);
      }
    } finally {
      this.firing = false;
    }
    this.arm();
    this.trace?.mark();
  }

  private runSlot(g: ScheduledGroup, now: number): void {
    const late = now - g.deadline;
    if (late > STALL_MS && this.trace !== undefined) this.trace.stall(g.task.label ?? "a scheduled task", late, this.clock.wallNow());
    // Slots that were due before `now` beyond this one are missed: skip to the current slot.
    const behind = Math.floor(late / g.interval);
    if (behind > 0) {
      g.skipped += behind;
      this.totals.skipped += behind;
      g.slot += behind;
    }
    const deadline = g.t0 + g.slot * g.interval;
    g.slot++;
    g.deadline = g.t0 + g.slot * g.interval;
    if (g.busy) {
      g.overruns++;
      this.totals.overruns++;
      return;
    }
    g.samples++;
    this.totals.samples++;
    const bucket = Math.min(BUCKETS - 1, Math.round((now - deadline) * 10));
    this.lateness[bucket]++;
    this.latenessCount++;
    let result: void | Promise<void>;
    const start = this.trace === undefined ? 0 : this.trace.now();
    try {
      result = g.task.sample(deadline, now);
    } catch (err) {
      this.onError?.(err);
      return;
    } finally {
      this.trace?.end(g.task.label ?? "a scheduled task", start);
    }
    if (result instanceof Promise) {
      g.busy = true;
      result.then(
        () => {
          g.busy = false;
        },
        (err: unknown) => {
          g.busy = false;
          this.onError?.(err);
        },
      );
    }
  }

  private arm(): void {
    if (this.heap.length === 0) return;
    const next = this.heap[0].deadline;
    if (this.timer !== undefined && next >= this.armedFor) return;
    this.disarm();
    this.armedFor = next;
    this.timer = this.clock.setTimer(this.onTimer, Math.max(0, next - this.clock.now()));
  }

  private disarm(): void {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.armedFor = Infinity;
  }

  // ---- binary min-heap by deadline ---------------------------------------------------------

  private push(g: ScheduledGroup): void {
    g.heapIndex = this.heap.length;
    this.heap.push(g);
    this.siftUp(g.heapIndex);
  }

  private removeAt(i: number): void {
    const last = this.heap.pop()!;
    const removed = this.heap[i] ?? last;
    removed.heapIndex = -1;
    if (i < this.heap.length) {
      this.heap[i] = last;
      last.heapIndex = i;
      this.siftDown(i);
      this.siftUp(i);
    }
  }

  private siftUp(i: number): void {
    const h = this.heap;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p].deadline <= h[i].deadline) break;
      this.swap(i, p);
      i = p;
    }
  }

  private siftDown(i: number): void {
    const h = this.heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && h[l].deadline < h[m].deadline) m = l;
      if (r < h.length && h[r].deadline < h[m].deadline) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }

  private swap(a: number, b: number): void {
    const h = this.heap;
    const t = h[a];
    h[a] = h[b];
    h[b] = t;
    h[a].heapIndex = a;
    h[b].heapIndex = b;
  }
}
