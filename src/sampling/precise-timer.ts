// A one-shot timer that runs its callback at its due time to within ~0.1 ms, not up to 1 ms
// after it: the scheduler's only timer (src/sampling/clock.ts systemClock).
//
// Node's timers count in whole milliseconds of libuv's loop time, which is itself truncated to
// the millisecond and read at the start of a loop turn. A timer set for the fraction of a
// millisecond left to a deadline therefore fires anywhere up to ~1 ms after it: the bare
// scheduler alone on a core ran its slots 0.6-0.8 ms late at the median and 1.3-1.9 ms at p99
// (bench counters --timer-floor), most of issue 13's 2 ms budget for p99 spent before the
// gateway did anything. So the timer is set to fire up to a millisecond early, and the rest is
// waited out on the main thread with Atomics.wait, which sleeps in the kernel (futex) with
// microsecond resolution and takes no CPU. The wait goes in pieces of at most WAIT_PIECE_MS with
// a turn of the event loop between them (setImmediate: libuv then polls its sockets without
// blocking), so a client request that arrives meanwhile waits at most that long, and on a busy
// loop the requests' own work fills the time until the deadline instead of a wait.

import { monotonicNow } from "./monotonic.js";

/** Sleeps at most this long at a time before giving the event loop a turn, ms. */
const WAIT_PIECE_MS = 0.25;

/**
 * After a socket read or a request this recent, ms, the loop is taken to be serving clients:
 * the timer then does not wait but lets the loop turn, since their reads run the due slots
 * themselves (src/server/loop-governor.ts) and a wait would hold their requests.
 */
const CLIENT_WORK_MS = 1;
let lastClientWork = -Infinity;

/** The event loop is serving clients now (a socket read or a request was handled), `now` on the monotonic clock. */
export function noteClientWork(now = monotonicNow()): void {
  lastClientWork = now;
}

/** The cell Atomics.wait sleeps on: nothing ever notifies it, so every wait ends by its timeout. */
const sleepCell = new Int32Array(new SharedArrayBuffer(4));

export class PreciseTimer {
  /** monotonicNow() time at or after which the callback runs. */
  readonly dueAt: number;
  private readonly callback: () => void;
  private timeout: NodeJS.Timeout | undefined = undefined;
  private immediate: NodeJS.Immediate | undefined = undefined;
  private cancelled = false;

  constructor(callback: () => void, delayMs: number) {
    this.callback = callback;
    this.dueAt = monotonicNow() + Math.max(0, delayMs);
    // Even a deadline that is close is waited for in a later turn of the loop, not inside
    // the caller's.
    if (delayMs >= 1) this.sleep(delayMs);
    else this.yieldTurn();
  }

  cancel(): void {
    this.cancelled = true;
    if (this.timeout !== undefined) clearTimeout(this.timeout);
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.timeout = undefined;
    this.immediate = undefined;
  }

  private next(): void {
    this.timeout = undefined;
    this.immediate = undefined;
    if (this.cancelled) return;
    const left = this.dueAt - monotonicNow();
    if (left <= 0) {
      this.callback();
      return;
    }
    if (left >= 1) {
      this.sleep(left);
      return;
    }
    if (monotonicNow() - lastClientWork < CLIENT_WORK_MS) {
      this.yieldTurn();
      return;
    }
    if (left <= WAIT_PIECE_MS) {
      Atomics.wait(sleepCell, 0, 0, left);
      this.callback();
      return;
    }
    Atomics.wait(sleepCell, 0, 0, WAIT_PIECE_MS);
    this.yieldTurn();
  }

  private sleep(left: number): void {
    // Whole milliseconds only, rounded down: libuv fires at or after them (or up to the
    // truncated fraction of its loop time early), never more than a millisecond past.
    this.timeout = setTimeout(runNext, Math.floor(left), this);
    // The scheduler must not keep a stopping process alive on its own.
    this.timeout.unref();
  }

  private yieldTurn(): void {
    // Kept referenced (unlike the timeout): libuv polls without blocking only while a
    // referenced immediate is pending, and an unreferenced one waits for the next I/O. It
    // holds a stopping process for at most a millisecond.
    this.immediate = setImmediate(runNext, this);
  }

  /** @internal the timers' entry point (one function for every timer: no closure per arming). */
  static run(timer: PreciseTimer): void {
    timer.next();
  }
}

function runNext(timer: PreciseTimer): void {
  PreciseTimer.run(timer);
}
