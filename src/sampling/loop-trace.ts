// What held the event loop when a sampling slot was late (DESIGN: the event loop is a shared
// resource, its delay measured, not assumed). Three sources, all cheap enough to stay on:
// - the event-loop delay (perf_hooks monitorEventLoopDelay, a native timer),
// - GC pauses (perf_hooks 'gc' entries),
// - the tasks that can hold the loop, timed where they start and end: scheduler slots (a poll,
//   a sampling pass, a publishing cycle), a poll's delivery of its values, a socket read of
//   client requests (the service of its last request named). Two performance.now() per task;
//   nothing per request or per value.
// The scheduler reports every slot run more than STALL_MS late; the trace names the longest
// task (or GC pause) that ended in the slot's lateness window and keeps the last STALLS of them.
// What no timed task explains, the main thread's own clock does (Linux schedstat, read once per
// firing of the scheduler): since the previous firing, how long the thread ran, how long it
// waited for its core while other threads or processes had it, and how long it slept: the
// causes of the late slots no task explains (bench/RESULTS.md).
import { monitorEventLoopDelay, PerformanceObserver, type IntervalHistogram, type PerformanceEntry } from "node:perf_hooks";
import { LatenessHistogram } from "./lateness.js";
import { monotonicNow } from "./monotonic.js";
import { openThreadTimes, type ThreadTimes } from "./thread-times.js";

/** A slot this late (ms) is a stall worth naming. */
export const STALL_MS = 2;
/** Tasks at least this long (ms) are remembered for attribution. */
const NOTABLE_MS = 0.5;
const TASKS = 256;
const STALLS = 32;

/** One stall: a slot that ran late, and what held the loop. */
export interface Stall {
  /** Wall clock when the slot ran, ms since 1970. */
  readonly at: number;
  /** The slot's task (its label). */
  readonly slot: string;
  readonly lateMs: number;
  /** The longest task or GC pause that ended while the slot waited; "" when none was seen. */
  readonly cause: string;
  readonly causeMs: number;
  /**
   * The main thread since the previous firing of the scheduler, ms (NaN where the thread's
   * times cannot be read): on its core, waiting for it, asleep.
   */
  readonly ranMs: number;
  readonly waitedMs: number;
  readonly sleptMs: number;
}

/** Causes a late slot can have beside a timed task (Stall.cause). */
export const WAITED_FOR_CORE = "other threads or processes on its core (the main thread waited for the CPU)";
export const SLEPT_PAST = "nothing: the loop slept past the deadline (timer resolution, or the core woke late)";
export const UNTIMED_WORK = "untimed work of its own";

/** Task labels are made once per task kind (a poll group's, a subscription's), never per run. */
export class LoopTrace {
  readonly gcPauses = new LatenessHistogram();
  gcPauseMax = 0;
  gcCount = 0;
  /** The longest task since start. */
  longestTask = "";
  longestTaskMs = 0;
  stallCount = 0;
  /** The service of the last request a socket read carried (set by the dispatcher: one store). */
  lastService = "";
  private readonly readLabels = new Map<string, string>();
  /** readLabel's last answer, and the service it was for (most reads carry one service's requests). */
  private labelFor = "";
  private label = "client requests";
  private delay: IntervalHistogram | undefined;
  private observer: PerformanceObserver | undefined;
  // Ring of notable tasks: label, end time (on `now`'s clock), duration.
  private readonly taskLabel: string[] = new Array<string>(TASKS).fill("");
  private readonly taskEnd = new Float64Array(TASKS);
  private readonly taskMs = new Float64Array(TASKS);
  private taskNext = 0;
  private readonly stalls: Stall[] = [];
  /** The longest run of each task label seen (labels are few: one per task kind). */
  private readonly longest = new Map<string, number>();
  private running = 0;
  private times: ThreadTimes | undefined;
  private readonly ownTimes: boolean;
  // The main thread's times at the end of the scheduler's last firing (mark()).
  private markAt = 0;
  private markRan = NaN;
  private markWaited = NaN;

  /**
   * `times`: the main thread's clock (tests hand in their own); default /proc/thread-self/schedstat,
   * opened by start(). `now`: what tasks are timed on, ms (a test's fake clock); a task's start
   * given to end() is read from it too.
   */
  constructor(
    times?: ThreadTimes,
    readonly now: () => number = monotonicNow,
  ) {
    this.times = times;
    this.ownTimes = times === undefined;
  }

  /** Starts the event-loop delay probe and the GC observer (idempotent; counted). */
  start(): void {
    if (this.running++ > 0) return;
    if (this.ownTimes) this.times = openThreadTimes();
    this.delay = monitorEventLoopDelay({ resolution: 1 });
    this.delay.enable();
    this.observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) this.gc(e);
    });
    this.observer.observe({ entryTypes: ["gc"] });
  }

  stop(): void {
    if (this.running === 0 || --this.running > 0) return;
    this.delay?.disable();
    this.delay = undefined;
    this.observer?.disconnect();
    this.observer = undefined;
    if (this.ownTimes) {
      this.times?.close();
      this.times = undefined;
    }
    this.markRan = NaN;
  }

  /** The scheduler has run its due slots and armed its timer: what the next late slot is measured from. */
  mark(): void {
    const t = this.times;
    if (t === undefined || !t.read()) return;
    this.markAt = this.now();
    this.markRan = t.ranMs;
    this.markWaited = t.waitedMs;
  }

  /** Event-loop delay at percentile p (0..100), ms; 0 before the probe has data. */
  delayPercentile(p: number): number {
    const d = this.delay;
    return d === undefined || d.count === 0 ? 0 : d.percentile(p) / 1e6;
  }

  get delayMax(): number {
    const d = this.delay;
    return d === undefined || d.count === 0 ? 0 : d.max / 1e6;
  }

  /** The label of a socket read of client requests, naming the last request's service (made once per service). */
  readLabel(): string {
    const service = this.lastService;
    if (service === this.labelFor) return this.label;
    let label = this.readLabels.get(service);
    if (label === undefined) this.readLabels.set(service, (label = service === "" ? "client requests" : `client requests (the last a ${service})`));
    this.labelFor = service;
    this.label = label;
    return label;
  }

  /** A task ran from `start` until `now` (both on `now`'s clock: the caller may have read it already). */
  end(label: string, start: number, now = this.now()): void {
    const ms = now - start;
    if (ms < NOTABLE_MS) return;
    const i = this.taskNext;
    this.taskLabel[i] = label;
    this.taskEnd[i] = now;
    this.taskMs[i] = ms;
    this.taskNext = (i + 1) % TASKS;
    if (ms > this.longestTaskMs) {
      this.longestTaskMs = ms;
      this.longestTask = label;
    }
    if (ms > (this.longest.get(label) ?? 0)) this.longest.set(label, ms);
  }

  /** The longest run of every task label of at least 0.5 ms, ms, longest first. */
  longestByTask(): [string, number][] {
    return [...this.longest].sort((a, b) => b[1] - a[1]);
  }

  /** A slot ran `lateMs` late (its due time was `lateMs` before now): name what held the loop. */
  stall(slot: string, lateMs: number, wallNow: number): void {
    this.stallCount++;
    const now = this.now();
    const since = now - lateMs;
    let cause = "";
    let causeMs = 0;
    for (let i = 0; i < TASKS; i++) {
      const ms = this.taskMs[i]!;
      if (ms > causeMs && this.taskEnd[i]! > since) {
        causeMs = ms;
        cause = this.taskLabel[i]!;
      }
    }
    let ranMs = NaN;
    let waitedMs = NaN;
    let sleptMs = NaN;
    const t = this.times;
    if (t !== undefined && !Number.isNaN(this.markRan) && t.read()) {
      ranMs = t.ranMs - this.markRan;
      waitedMs = t.waitedMs - this.markWaited;
      sleptMs = Math.max(0, now - this.markAt - ranMs - waitedMs);
      // Which part of the time since the last firing fell in the lateness is not known: before
      // its deadline the loop mostly sleeps, so waiting and work are charged to the lateness
      // first, the rest of it to sleep.
      const waited = Math.min(waitedMs, lateMs);
      const own = Math.min(Math.max(0, ranMs - causeMs), lateMs - waited);
      const slept = lateMs - waited - own - Math.min(causeMs, lateMs);
      if (waited > causeMs && waited >= own && waited >= slept) {
        cause = WAITED_FOR_CORE;
        causeMs = waited;
      } else if (own > causeMs && own >= slept) {
        cause = UNTIMED_WORK;
        causeMs = own;
      } else if (slept > causeMs) {
        cause = SLEPT_PAST;
        causeMs = slept;
      }
    }
    if (this.stalls.length === STALLS) this.stalls.shift();
    this.stalls.push({ at: wallNow, slot, lateMs, cause, causeMs, ranMs, waitedMs, sleptMs });
  }

  /** The last stalls, oldest first. */
  recentStalls(): readonly Stall[] {
    return this.stalls;
  }

  reset(): void {
    this.delay?.reset();
    this.gcPauses.reset();
    this.gcPauseMax = 0;
    this.gcCount = 0;
    this.longestTask = "";
    this.longestTaskMs = 0;
    this.stallCount = 0;
    this.taskMs.fill(0);
    this.stalls.length = 0;
    this.longest.clear();
  }

  private gc(e: PerformanceEntry): void {
    const ms = e.duration;
    this.gcCount++;
    this.gcPauses.record(ms);
    if (ms > this.gcPauseMax) this.gcPauseMax = ms;
    if (ms < NOTABLE_MS) return;
    const i = this.taskNext;
    this.taskLabel[i] = "garbage collection";
    this.taskEnd[i] = e.startTime + ms;
    this.taskMs[i] = ms;
    this.taskNext = (i + 1) % TASKS;
  }
}

/** The process's trace: every scheduler and connection of the process reports to it. */
export const loopTrace = new LoopTrace();

/** A stall as a line for the diagnostics namespace and the log. */
export function formatStall(s: Stall): string {
  const cause = s.cause === "" ? "nothing this process timed (an untimed task of its own, or another process had the CPU)" : `${s.cause} (${s.causeMs.toFixed(1)} ms)`;
  return `${new Date(s.at).toISOString()}: ${s.slot} ran ${s.lateMs.toFixed(1)} ms late; the loop was busy with ${cause}`;
}
