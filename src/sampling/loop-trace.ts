// What held the event loop when a sampling slot was late (DESIGN: the event loop is a shared
// resource; issue 13 "measure first"). Three sources, all cheap enough to stay on:
// - the event-loop delay (perf_hooks monitorEventLoopDelay, a native timer),
// - GC pauses (perf_hooks 'gc' entries),
// - the tasks that can hold the loop, timed where they start and end: scheduler slots (a poll,
//   a sampling pass, a publishing cycle), a poll's delivery of its values, a socket read of
//   client requests (the service of its last request named). Two performance.now() per task;
//   nothing per request or per value.
// The scheduler reports every slot run more than STALL_MS late; the trace names the longest
// task (or GC pause) that ended in the slot's lateness window and keeps the last STALLS of them.
import { monitorEventLoopDelay, PerformanceObserver, type IntervalHistogram, type PerformanceEntry } from "node:perf_hooks";
import { LatenessHistogram } from "./lateness.js";

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
}

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
  private delay: IntervalHistogram | undefined;
  private observer: PerformanceObserver | undefined;
  // Ring of notable tasks: label, end time (performance.now()), duration.
  private readonly taskLabel: string[] = new Array<string>(TASKS).fill("");
  private readonly taskEnd = new Float64Array(TASKS);
  private readonly taskMs = new Float64Array(TASKS);
  private taskNext = 0;
  private readonly stalls: Stall[] = [];
  /** The longest run of each task label seen (labels are few: one per task kind). */
  private readonly longest = new Map<string, number>();
  private running = 0;

  /** Starts the event-loop delay probe and the GC observer (idempotent; counted). */
  start(): void {
    if (this.running++ > 0) return;
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
    let label = this.readLabels.get(service);
    if (label === undefined) this.readLabels.set(service, (label = service === "" ? "client requests" : `client requests (the last a ${service})`));
    return label;
  }

  /** A task ran from `start` (performance.now()) until now. */
  end(label: string, start: number): void {
    const now = performance.now();
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
    const now = performance.now();
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
    if (this.stalls.length === STALLS) this.stalls.shift();
    this.stalls.push({ at: wallNow, slot, lateMs, cause, causeMs });
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
