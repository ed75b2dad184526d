// Slicers for tests (src/sampling/slices.ts). On a FakeClock time stands still inside a task, so a
// slice is never spent: sliced work runs whole in its first slice, as exactly as the test's clock.
// A WorkClock instead moves by `step` ms at every look, so sliced work is cut after a number of
// looks at the clock: as many slices, and turns of the event loop, on every machine.
import { FakeClock, type Clock } from "../../src/sampling/clock.js";
import { Slicer, type DeadlineSource } from "../../src/sampling/slices.js";

/** A budget for tests; production's is set by the composition root. */
export const TEST_BUDGET_MS = 1;

export function testSlicer(clock: Clock = new FakeClock(), deadlines?: DeadlineSource): Slicer {
  return new Slicer({ budgetMs: TEST_BUDGET_MS, clock, deadlines });
}

/**
 * A clock whose time moves by `step` ms every time it is read (the work between two looks took
 * that long), and whose timers fire only in `fire()`, in deadline order.
 */
export class WorkClock implements Clock {
  t = 0;
  private timers: { at: number; cb: () => void; id: number }[] = [];
  private nextId = 1;

  /** `step`: ms a look at the clock takes (a test may change it). */
  constructor(public step: number) {}

  now(): number {
    this.t += this.step;
    return this.t;
  }

  wallNow(): number {
    return Date.UTC(2026, 0, 1) + this.t;
  }

  setTimer(cb: () => void, delayMs: number): unknown {
    const id = this.nextId++;
    this.timers.push({ at: this.t + Math.max(0, delayMs), cb, id });
    return id;
  }

  clearTimer(handle: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== handle);
  }

  /** `ms` go by (a turn of the loop, waiting), then the timers due by then fire. */
  pass(ms: number): void {
    this.t += ms;
    this.fire();
  }

  /** Fires the timers due by now, earliest first (time does not move for it). */
  fire(): void {
    for (;;) {
      let next: { at: number; cb: () => void; id: number } | undefined;
      for (const x of this.timers) if (x.at <= this.t && (next === undefined || x.at < next.at)) next = x;
      if (next === undefined) return;
      this.timers = this.timers.filter((x) => x !== next);
      next.cb();
    }
  }
}
