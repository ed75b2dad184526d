// Work that grows with the data (a Publish of 16,384 notifications, CreateMonitoredItems of as
// many items, their deletion, a Browse of a big folder, a HistoryRead's response, a device map of
// 16,384 tags starting or reloading) runs in slices with a turn of the event loop between them
// (DESIGN: the event loop is a shared resource).
//
// A slice also ends before the next sampling deadline: one that starts 0.3 ms before a poll is
// due holds that poll back by the rest of the slice (bench counters, 16,384 items: the Publish's
// 1 ms slices made 23-26 slots a window more than 2 ms late). The SliceGate reads the scheduler's
// next deadline (read-only) and cuts the slice DEADLINE_MARGIN_MS before it; between two slices
// it runs the slots that came due (as the loop governor does between socket reads) and, when the
// next deadline is too near for a slice, waits until it has passed. It waits for one deadline at
// most: with many groups in many phases the deadlines may be too dense for any slice, and the work
// must still go on.

import { systemClock, type Clock } from "./clock.js";
import { loopTrace } from "./loop-trace.js";

/** Monitored items of one slice at most: ~3 µs each to create on this machine. */
export const ITEMS_PER_SLICE = 256;
/** Tags of one slice of a device's start: ~1-2 µs each per step (cache slots, nodes, poller). */
export const TAGS_PER_SLICE = 1024;
/**
 * Tags of one slice of a device's start on a reload, where each costs more (~8-18 µs on one core:
 * an old node removed and a new one added, a kept one retargeted, the poller made again beside
 * the running ones) and the loop is shared with polls and clients: a 1,000-tag device's sync was
 * one task of ~18 ms (cpu profile of a 10 x 1,000-tag reload).
 */
export const RELOAD_TAGS_PER_SLICE = 256;
/** A slice's length when no deadline is nearer, ms. */
export const SLICE_MS = 1;
/**
 * Room a slice leaves before the next sampling deadline, ms: its work after its last look at the
 * clock and its closing (a Publish: the last chunk sealed and queued, the copy kept for
 * Republish, the values taken off the queues: 0.1-0.5 ms at 16,384 items, measured).
 */
export const DEADLINE_MARGIN_MS = 0.5;
/** A slice is not started with less room than this before the next deadline (unless it waited already). */
export const MIN_SLICE_MS = 0.25;
/** Items done between two looks at the clock by inSlices. */
const ITEMS_PER_CHECK = 32;

/** What a slicer reads of the scheduler (DeadlineScheduler has both). */
export interface DeadlineSource {
  /** The earliest deadline of any scheduled group, in the clock's ms (Infinity: none). */
  readonly nextDeadline: number;
  /** Runs the slots that are due now (nothing while slots are running). */
  runDue(): void;
}

export class SliceGate {
  readonly clock: Clock;
  private readonly deadlines: DeadlineSource | undefined;

  /** Without `deadlines`, slices are cut by their length only. */
  constructor(deadlines?: DeadlineSource, clock: Clock = systemClock) {
    this.deadlines = deadlines;
    this.clock = clock;
  }

  now(): number {
    return this.clock.now();
  }

  /**
   * When a slice of at most `ms` that starts now must end, in the clock's ms: `ms` from now, or
   * DEADLINE_MARGIN_MS before the next sampling deadline, but not less than MIN_SLICE_MS from
   * now for that (a slice always gets some work done). `tail`: what the slicer's work after its
   * end took last time (SliceTail), cut off the room before the deadline too.
   */
  end(ms = SLICE_MS, tail = 0): number {
    const now = this.clock.now();
    const byLength = now + ms;
    const d = this.deadlines;
    if (d === undefined) return byLength;
    const byDeadline = Math.max(now + MIN_SLICE_MS, d.nextDeadline - DEADLINE_MARGIN_MS - tail);
    return byDeadline < byLength ? byDeadline : byLength;
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
   * the timers that wait), with the slots due by then run first, and, when the next deadline
   * leaves less than `need` ms, once it has passed and its slot has run.
   */
  later<A>(fn: (arg: A) => void, arg: A, need = MIN_SLICE_MS): void {
    setImmediate(gateTurn<A>, this, fn, arg, need, false);
  }

  /** later() as a promise. */
  next(need = MIN_SLICE_MS): Promise<void> {
    return new Promise((resolve) => this.later(callResolve, resolve, need));
  }

  /** @internal One look: go on now, or wait for the next deadline (once). */
  turn<A>(fn: (arg: A) => void, arg: A, need: number, waited: boolean): void {
    const d = this.deadlines;
    d?.runDue();
    if (deliveriesPending > 0) {
      // A poll's values are still going into the cache, a slice a turn: they go first. A slice
      // between two of theirs would make that poll last past its group's next slot, which is
      // then skipped (bench counters, 16,384 items: 10-17 slots a window, ~1.5 % of the samples).
      setImmediate(gateTurn<A>, this, fn, arg, need, waited);
      return;
    }
    if (waited || d === undefined || this.open(need)) {
      fn(arg);
      return;
    }
    // The deadline and its slot first: the scheduler's own timer, or runDue above, runs it.
    this.clock.setTimer(() => this.turn(fn, arg, need, true), Math.max(0, d.nextDeadline - this.clock.now()));
  }
}

/** Deliveries of polled values that go on over several turns (poll-group.ts), now. */
let deliveriesPending = 0;

/**
 * A poll's delivery that will take more turns starts (each turn one slice of its tags); the
 * gate's slicers wait for the turns after it until `deliveryEnded`. Deliveries are bounded
 * (a block's tags, each slice a few thousand), so the wait is too.
 */
export function deliveryStarted(): void {
  deliveriesPending++;
}

export function deliveryEnded(): void {
  deliveriesPending--;
}

function gateTurn<A>(gate: SliceGate, fn: (arg: A) => void, arg: A, need: number, waited: boolean): void {
  gate.turn(fn, arg, need, waited);
}

function callResolve(resolve: () => void): void {
  resolve();
}

/**
 * How far a slicer's slices run past their end (its work after the last look at the clock, and
 * its closing: a Publish seals its last chunk, queues it to the socket, keeps a copy for
 * Republish and takes the values off their queues, measured 0.2-1.5 ms at 16,384 items): the
 * next slices end that much earlier before a deadline. Rises at once, falls by a quarter a slice.
 */
export class SliceTail {
  ms = 0;

  /** A slice that was to end at `end` ended at `now` (both in the gate's clock). */
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

/** A tail longer than this is not the slicer's own (a GC pause, the core taken away): it counts as this much. */
const MAX_TAIL_MS = 3;

/** The gate of work that has no scheduler at hand: cut by length only, until the server attaches its own. */
let processGate = new SliceGate();

/** The server's gate: the slicers that are not handed one use it (one scheduler per process). */
export function attachSliceGate(gate: SliceGate): void {
  processGate = gate;
}

/** Back to slices cut by length only (the server that attached its gate stops). */
export function detachSliceGate(gate: SliceGate): void {
  if (processGate === gate) processGate = new SliceGate();
}

export function sliceGate(): SliceGate {
  return processGate;
}

/** A turn of the event loop: timers (the sampling deadlines) and I/O run before the promise settles. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * `op` over `items` in slices of at most `size` (each also ending at the gate's slice end, looked
 * at every ITEMS_PER_CHECK items), the next slice when the gate opens: the results in order.
 * `op` runs at once for a request of one slice (the result is then not a promise).
 */
export function inSlices<I, R>(items: readonly I[], size: number, label: string, op: (part: readonly I[]) => R[], gate: SliceGate = processGate): R[] | Promise<R[]> {
  if (items.length <= size) return op(items);
  return (async () => {
    const out: R[] = [];
    let i = 0;
    while (i < items.length) {
      if (i > 0) await gate.next();
      const start = performance.now();
      const end = gate.end();
      const stop = Math.min(items.length, i + size);
      while (i < stop) {
        const to = Math.min(stop, i + ITEMS_PER_CHECK);
        const part = op(items.slice(i, to));
        for (const r of part) out.push(r);
        i = to;
        if (gate.now() >= end) break;
      }
      loopTrace.end(label, start);
    }
    return out;
  })();
}

/**
 * Runs `steps` (a generator that yields where a slice may end) to its end: at once when `small`,
 * else one step per slice, each when the gate has room for as long as the step before took,
 * timed for the loop trace under `label`.
 */
export function runSteps(steps: Generator<void, void, void>, small: boolean, label: string, gate: SliceGate = processGate): void | Promise<void> {
  if (small) {
    while (!steps.next().done);
    return;
  }
  return (async () => {
    let last = 0;
    for (;;) {
      const start = performance.now();
      const done = steps.next().done;
      loopTrace.end(label, start);
      if (done) return;
      last = performance.now() - start;
      await gate.next(last);
    }
  })();
}
