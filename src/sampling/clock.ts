// The clock that sampling and polling read (STYLE habit 6: a plug point, so deadline tests are
// exact and take no wall time).
import { existsSync } from "node:fs";
import { monotonicNow } from "./monotonic.js";
import { PreciseTimer } from "./precise-timer.js";

export interface Clock {
  /** Milliseconds, monotonic within the process, comparable to deadlines. */
  now(): number;
  /** Wall-clock time for timestamps, ms since 1970. */
  wallNow(): number;
  /** One-shot timer; the scheduler keeps at most one armed. */
  setTimer(callback: () => void, delayMs: number): unknown;
  clearTimer(handle: unknown): void;
}

/** The real clock: performance.now() for deadlines (immune to wall-clock steps), Date.now() for stamps. */
export const systemClock: Clock = {
  now: monotonicNow,
  wallNow: () => Date.now(),
  // Node truncates a timer's delay to whole ms, and libuv counts in whole ms of a loop time that
  // is itself truncated: set for a deadline, a timer fired up to ~1 ms after it (or before it,
  // which made the scheduler arm again and come in late). PreciseTimer fires at the deadline,
  // never before it.
  setTimer: (callback, delayMs) => new PreciseTimer(callback, delayMs),
  clearTimer: (handle) => (handle as PreciseTimer).cancel(),
};

/** A clock tests drive by hand: timers fire only inside `advance`, in deadline order. */
export class FakeClock implements Clock {
  private time: number;
  private readonly wallOffset: number;
  private timers: { at: number; cb: () => void; id: number }[] = [];
  private nextId = 1;

  constructor(start = 0, wallStart = Date.UTC(2026, 0, 1)) {
    this.time = start;
    this.wallOffset = wallStart - start;
  }

  now(): number {
    return this.time;
  }

  wallNow(): number {
    return this.time + this.wallOffset;
  }

  setTimer(callback: () => void, delayMs: number): unknown {
    const id = this.nextId++;
    this.timers.push({ at: this.time + Math.max(0, delayMs), cb: callback, id });
    return id;
  }

  clearTimer(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  /** Moves time forward by `ms`, firing due timers at their own times. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      let next: { at: number; cb: () => void; id: number } | undefined;
      for (const t of this.timers) if (t.at <= end && (!next || t.at < next.at)) next = t;
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.time = Math.max(this.time, next.at);
      next.cb();
    }
    this.time = end;
  }

  /** A synchronous task of `ms`: time passes, and timers wait for the next advance(). */
  hold(ms: number): void {
    this.time += ms;
  }

  /** Jumps time without firing timers in between (a stalled event loop), then fires what is due. */
  stall(ms: number): void {
    this.hold(ms);
    this.advance(0);
  }

  get pendingTimers(): number {
    return this.timers.length;
  }
}

let clockKnownGood = false;

/**
 * Whether systemd-timesyncd has synchronised the clock since boot: it creates
 * /run/systemd/timesync/synchronized on its first successful sync (systemd-timesyncd.service(8)).
 * Gateways without a real-time clock boot with a wrong date, so samples taken before this are to
 * be flagged by whoever stores them (the image does not hold the service back until
 * time-sync.target: a plant network without NTP would then never serve data). Where timesyncd is
 * not installed (a developer's machine), the host's clock is trusted. Two stat calls until true,
 * then none: callers may ask per flush.
 */
export function clockSynchronized(): boolean {
  if (clockKnownGood) return true;
  if (existsSync("/run/systemd/timesync/synchronized") || !existsSync("/usr/lib/systemd/systemd-timesyncd")) {
    clockKnownGood = true;
  }
  return clockKnownGood;
}
