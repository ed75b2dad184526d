// The one way to slice work (DESIGN: the event loop is a shared resource; one way to slice).
// Work that grows with the data (a device map's start or reload, a Browse of many folders,
// CreateMonitoredItems / DeleteMonitoredItems of many items, the rest of a Publish, the later
// slices of a large response, the status page's updates, a poll's delivery of many values, the
// Sparkplug births) runs in slices of one time budget with a turn of the event loop between
// them. The composition root makes the one Slicer of the process and hands it to every part that
// slices; nothing else sets a budget.
//
// A slice ends when its budget is spent, its closing included: a job whose work after its last
// look at the clock took longer than nothing (SliceTail) has that much less of the budget. A
// slice also ends before the next sampling deadline: one that starts just before a poll is due
// holds that poll back by the rest of the slice. So the Slicer reads the scheduler's next
// deadline (read-only) and cuts the slice DEADLINE_MARGIN_MS (and the job's tail) before it;
// between two slices it runs the slots that came due (as the loop governor does between socket
// reads) and, when the next deadline is too near for a slice, waits until it has passed. It
// waits for one deadline at most: with many groups in many phases the deadlines may be too dense
// for any slice, and the work must still go on.
//
// A poll's delivery of its values (devices/poll-group.ts) goes first: while one goes on over
// several turns, every other job's next slice waits for it, since a slice between two of its
// slices would make that poll last past its group's next slot, which is then skipped.
//
// The rest of a Publish goes before client requests (`soon`): a turn of the loop first serves
// every connection whose socket has data, so with clients reading flat out a message of many
// parts would get one slice per turn and its items' queues would fill before it is sent. Its
// next slice may start after any client socket read instead (the loop governor calls
// `runSoon` there, as it runs the sampling slots that came due), the deadline rules unchanged;
// the turn still runs it when no read comes. A poll's delivery gets its next slice there too,
// before them.
//
// Two forms, one rule:
// - SlicedTask, for code that awaits: `task.over()` says the slice is spent (one look at the
//   clock), `await task.next()` ends it and starts the next one; `loop()` runs an index loop
//   in slices. Functions that take a task are async, whatever the size of their work.
// - `later(fn, arg)` (or `soon`) with `end()` and `open()`, for callback code on a hot path that
//   allocates nothing per slice (a Publish's next message, a response's next slice).
// Loops over the data stay functions of their own that take the task (`from` in, where they
// stopped out), not bodies of a generator or of an async function: V8 compiles a generator or an
// async function whole, and with the gateway's --no-concurrent-recompilation it does so on the
// event loop (runtime-flags.ts).
import { systemClock, type Clock } from "./clock.js";
import { monotonicNow } from "./monotonic.js";

/**
 * Room a slice leaves before the next sampling deadline, ms: its work after its last look at the
 * clock and its closing (a Publish: the last chunk sealed and queued, the copy kept for
 * Republish, the values taken off the queues).
 */
export const DEADLINE_MARGIN_MS = 0.5;
/** A slice cut by a deadline is never shorter than this, ms, and is not started with less room before the deadline (unless it waited already). */
export const MIN_SLICE_MS = 0.25;
/** A tail longer than this is not the job's own (a GC pause, the core taken away): it counts as this much. */
const MAX_TAIL_MS = 3;

/** What a slicer reads of the scheduler (DeadlineScheduler has both). */
export interface DeadlineSource {
  /** The earliest deadline of any scheduled group, in the clock's ms (Infinity: none). */
  readonly nextDeadline: number;
  /** Runs the slots that are due now (nothing while slots are running). */
  runDue(): void;
}

/** Where each slice's time on the loop goes (the loop trace). */
export interface SliceTimer {
  end(label: string, start: number): void;
}

export interface SlicerOptions {
  /** What one slice may hold the event loop, ms, its closing included. */
  readonly budgetMs: number;
  /** The scheduler whose deadlines slices end before; none: slices end by the budget only. */
  readonly deadlines?: DeadlineSource;
  /** The clock of the budget and the deadlines (default the system's). */
  readonly clock?: Clock;
  /** Where slices are timed, under their job's label. */
  readonly trace?: SliceTimer;
}

/**
 * How far a job's slices run past their end (its work after the last look at the clock, and its
 * closing: a Publish seals its last chunk, queues it to the socket, keeps a copy for Republish
 * and takes the values off their queues): the next slices end that much earlier. Rises at once,
 * falls by a quarter a slice.
 */
export class SliceTail {
  ms = 0;

  /** A slice that was to end at `end` ended at `now` (both in the slicer's clock). */
  note(end: number, now: number): void {
    const over = now - end;
    if (!(over > 0)) {
      this.ms *= 0.75;
      return;
    }
    const v = over < MAX_TAIL_MS ? over : MAX_TAIL_MS;
    this.ms = v > this.ms ? v : this.ms * 0.75 + v * 0.25;
  }
}

/** A job waiting in Slicer.soon (kept for reuse: nothing is allocated per slice). */
class SoonJob {
  fn: (arg: never) => void = noop;
  arg: unknown = undefined;
  label: string | undefined = undefined;
  need = MIN_SLICE_MS;
}

export class Slicer {
  readonly budgetMs: number;
  readonly clock: Clock;
  private readonly deadlines: DeadlineSource | undefined;
  private readonly trace: SliceTimer | undefined;
  /** Jobs that go first (a poll's delivery) with a slice still to come. */
  private firstPending = 0;
  /** Those of them waiting for their next slice (firstTurn). */
  private readonly firstWaiting: (() => void)[] = [];
  /** Jobs of `soon`, waiting: soonJobs[0, soonCount). */
  private readonly soonJobs: SoonJob[] = [];
  private soonCount = 0;
  /** A turn is asked for the jobs of `soon` that no client socket read runs first. */
  private soonTurnAsked = false;
  private runningSoon = false;

  constructor(options: SlicerOptions) {
    this.budgetMs = options.budgetMs;
    this.deadlines = options.deadlines;
    this.clock = options.clock ?? systemClock;
    this.trace = options.trace;
  }

  now(): number {
    return this.clock.now();
  }

  /**
   * When a slice that starts now must end, in the clock's ms: the budget less `tail` (what the
   * job's work after its end took lately) from now, or DEADLINE_MARGIN_MS and `tail` before the
   * next sampling deadline (MIN_SLICE_MS from now at the least).
   */
  end(tail = 0): number {
    const now = this.clock.now();
    const room = this.budgetMs - tail;
    const byBudget = now + (room > 0 ? room : 0);
    const d = this.deadlines;
    if (d === undefined) return byBudget;
    const byDeadline = Math.max(now + MIN_SLICE_MS, d.nextDeadline - DEADLINE_MARGIN_MS - tail);
    return byDeadline < byBudget ? byDeadline : byBudget;
  }

  /**
   * Whether a slice of `need` ms (at least MIN_SLICE_MS) fits before the next sampling deadline
   * now. Also when that deadline has come already: its slot runs right after the task that asks
   * (later in the same firing of the scheduler, or the loop governor's after a socket read), so
   * putting the slice off would not run it sooner; end() cuts the slice to MIN_SLICE_MS then.
   */
  open(need = MIN_SLICE_MS): boolean {
    const d = this.deadlines;
    if (d === undefined) return true;
    const room = d.nextDeadline - this.clock.now();
    return room <= 0 || room - DEADLINE_MARGIN_MS >= Math.max(need, MIN_SLICE_MS);
  }

  /**
   * Calls fn(arg) when the next slice may start: after a turn of the event loop (the I/O and
   * the timers that wait), with the slots due by then run first, after any poll's delivery that
   * is going on, and, when the next deadline leaves less than `need` ms, once it has passed and
   * its slot has run. With a `label`, fn's run is timed under it for the loop trace.
   */
  later<A>(fn: (arg: A) => void, arg: A, label?: string, need = MIN_SLICE_MS): void {
    setImmediate(slicerTurn<A>, this, fn, arg, label, need, false);
  }

  /**
   * later() for work that goes before client requests (the rest of a Publish): fn(arg) may also
   * run after the next client socket read (runSoon), when the next deadline leaves `need` ms and
   * no poll's delivery is going on; else on the turn, by later()'s rules.
   */
  soon<A>(fn: (arg: A) => void, arg: A, label?: string, need = MIN_SLICE_MS): void {
    let job = this.soonJobs[this.soonCount];
    if (job === undefined) {
      job = new SoonJob();
      this.soonJobs.push(job);
    }
    job.fn = fn as (arg: never) => void;
    job.arg = arg;
    job.label = label;
    job.need = need;
    this.soonCount++;
    if (!this.soonTurnAsked) {
      this.soonTurnAsked = true;
      setImmediate(soonTurn, this);
    }
  }

  /** After a client socket read (the loop governor, once the due slots have run): the jobs of `soon` that may start now. */
  runSoon(): void {
    if (this.firstWaiting.length > 0) {
      this.releaseFirst();
      return;
    }
    if (this.soonCount > 0 && this.firstPending === 0 && !this.runningSoon) this.runSoonJobs(false);
  }

  /** @internal The turn asked by `soon`: the jobs no read has run go by later()'s rules. */
  soonTurnCame(): void {
    this.soonTurnAsked = false;
    if (this.soonCount > 0 && !this.runningSoon) this.runSoonJobs(true);
  }

  /**
   * Runs the jobs waiting now (not those they queue meanwhile); on a read, only those whose slice
   * fits before the next deadline, the others keep their place.
   */
  private runSoonJobs(onTurn: boolean): void {
    this.runningSoon = true;
    const jobs = this.soonJobs;
    const n = this.soonCount;
    let kept = 0;
    try {
      for (let i = 0; i < n; i++) {
        const job = jobs[i]!;
        if (!onTurn && (this.firstPending > 0 || !this.open(job.need))) {
          jobs[i] = jobs[kept]!;
          jobs[kept] = job;
          kept++;
          continue;
        }
        const fn = job.fn as (arg: unknown) => void;
        const arg = job.arg;
        const label = job.label;
        const need = job.need;
        job.fn = noop;
        job.arg = undefined;
        if (onTurn) this.turn(fn, arg, label, need, false);
        else this.run(fn, arg, label);
      }
    } finally {
      // What the jobs queued meanwhile, [n, soonCount), moves up behind those kept.
      const added = this.soonCount - n;
      for (let k = 0; k < added; k++) {
        const job = jobs[n + k]!;
        jobs[n + k] = jobs[kept + k]!;
        jobs[kept + k] = job;
      }
      this.soonCount = kept + added;
      this.runningSoon = false;
      if (this.soonCount > 0 && !this.soonTurnAsked) {
        this.soonTurnAsked = true;
        setImmediate(soonTurn, this);
      }
    }
  }

  private run<A>(fn: (arg: A) => void, arg: A, label: string | undefined): void {
    if (label === undefined) {
      fn(arg);
      return;
    }
    const start = monotonicNow();
    fn(arg);
    this.trace?.end(label, start);
  }

  /** later() as a promise. */
  next(need = MIN_SLICE_MS): Promise<void> {
    return new Promise((resolve) => this.later(callResolve, resolve, undefined, need));
  }

  /** A job of many slices, its first slice from now; its slices are timed under `label`. */
  task(label: string): SlicedTask {
    return new SlicedTask(this, label, false);
  }

  /**
   * A job whose slices go before every other job's (a poll's delivery of its values): its next
   * slice comes after the next client socket read or one turn of the loop, whichever is first,
   * deadline or not, and the others wait until it is done.
   */
  firstTask(label: string): SlicedTask {
    return new SlicedTask(this, label, true);
  }

  /** @internal Times a slice that ran from `start` (monotonicNow()). */
  timed(label: string, start: number): void {
    this.trace?.end(label, start);
  }

  /** @internal A first job's next slice: after the next client socket read (runSoon) or one turn, the other jobs waiting meanwhile. */
  firstTurn(): Promise<void> {
    this.firstPending++;
    return new Promise((resolve) => {
      this.firstWaiting.push(resolve);
      if (this.firstWaiting.length === 1) setImmediate(firstTurnCame, this);
    });
  }

  /** @internal The turn came, or a client socket read did: the first jobs' next slices go now. */
  releaseFirst(): void {
    const waiting = this.firstWaiting;
    // Their slices run in the microtasks after this task, the others' later.
    for (let i = 0; i < waiting.length; i++) {
      this.firstPending--;
      waiting[i]!();
    }
    waiting.length = 0;
  }

  /** @internal One look: go on now, or wait for the next deadline (once). */
  turn<A>(fn: (arg: A) => void, arg: A, label: string | undefined, need: number, waited: boolean): void {
    const d = this.deadlines;
    d?.runDue();
    if (this.firstPending > 0) {
      setImmediate(slicerTurn<A>, this, fn, arg, label, need, waited);
      return;
    }
    if (waited || d === undefined || this.open(need)) {
      this.run(fn, arg, label);
      return;
    }
    // The deadline and its slot first: the scheduler's own timer, or runDue above, runs it.
    this.clock.setTimer(() => this.turn(fn, arg, label, need, true), Math.max(0, d.nextDeadline - this.clock.now()));
  }
}

/**
 * One job in slices, for code that awaits between them. Its first slice starts when it is made;
 * each slice is timed under its label, and what the job ran past a slice's end is taken off the
 * next ones (SliceTail).
 */
export class SlicedTask {
  /** Slices begun so far. */
  slices = 0;
  /** Time its slices held the loop, ms: their sum, and the longest. */
  busyMs = 0;
  longestMs = 0;
  private readonly tail = new SliceTail();
  private startedAt = 0;
  private endAt = 0;
  private running = false;

  constructor(
    readonly slicer: Slicer,
    readonly label: string,
    private readonly first: boolean,
  ) {
    this.begin();
  }

  /** When the current slice ends, in the slicer's clock. */
  get end(): number {
    return this.endAt;
  }

  /** Whether the current slice is spent (one look at the clock). */
  over(): boolean {
    return this.slicer.now() >= this.endAt;
  }

  /** Ends the current slice and resolves when the next one may start (a turn of the loop at least). */
  async next(): Promise<void> {
    this.close();
    await (this.first ? this.slicer.firstTurn() : this.slicer.next());
    this.begin();
  }

  /** A next slice when the current one is spent; else nothing to wait for. */
  async yield(): Promise<void> {
    if (this.over()) await this.next();
  }

  /**
   * Runs part(from) over [from, n): part does what fits in the current slice and returns where it
   * stopped (at `n` when done); a next slice before each call that finds the slice spent.
   */
  async loop(n: number, part: (from: number) => number, from = 0): Promise<void> {
    while (from < n) {
      if (this.over()) await this.next();
      from = part(from);
    }
  }

  /** The job is over: its last slice is timed. */
  done(): void {
    this.close();
  }

  private begin(): void {
    this.slices++;
    this.running = true;
    this.startedAt = monotonicNow();
    this.endAt = this.slicer.end(this.tail.ms);
  }

  private close(): void {
    if (!this.running) return;
    this.running = false;
    const ms = monotonicNow() - this.startedAt;
    this.busyMs += ms;
    if (ms > this.longestMs) this.longestMs = ms;
    this.slicer.timed(this.label, this.startedAt);
    this.tail.note(this.endAt, this.slicer.now());
  }
}

function slicerTurn<A>(slicer: Slicer, fn: (arg: A) => void, arg: A, label: string | undefined, need: number, waited: boolean): void {
  slicer.turn(fn, arg, label, need, waited);
}

function soonTurn(slicer: Slicer): void {
  slicer.soonTurnCame();
}

function noop(): void {}

function firstTurnCame(slicer: Slicer): void {
  slicer.releaseFirst();
}

function callResolve(resolve: () => void): void {
  resolve();
}
