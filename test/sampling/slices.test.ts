// Slices that end before the next sampling deadline (src/sampling/slices.ts), on a FakeClock:
// the scheduler's next deadline as a slicer reads it, where a slice is cut, and a slicer that
// waits for a deadline too near to start before it.
import { describe, expect, it } from "vitest";
import { FakeClock, type Clock } from "../../src/sampling/clock.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { DEADLINE_MARGIN_MS, inSlices, MIN_SLICE_MS, SliceGate, SliceTail } from "../../src/sampling/slices.js";

/**
 * A clock whose time moves only when the test says (`t`) and whose timers fire only in fire(),
 * in order: work of the fake clock's duration can run inside a task without the timers running
 * in the middle of it (FakeClock.stall fires them), as on the real event loop.
 */
class ManualClock implements Clock {
  t = 0;
  private timers: { at: number; cb: () => void; id: number }[] = [];
  private nextId = 1;
  now(): number {
    return this.t;
  }
  wallNow(): number {
    return this.t;
  }
  setTimer(cb: () => void, delayMs: number): unknown {
    const id = this.nextId++;
    this.timers.push({ at: this.t + delayMs, cb, id });
    return id;
  }
  clearTimer(handle: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== handle);
  }
  /** Moves to `t` and fires the timers due by then, earliest first (the first set first among equals). */
  to(t: number): void {
    this.t = t;
    for (;;) {
      let next: { at: number; cb: () => void; id: number } | undefined;
      // (A nanosecond of slack: a delay worked out as deadline - now lands a rounding error past it.)
      for (const x of this.timers) if (x.at <= this.t + 1e-6 && (next === undefined || x.at < next.at)) next = x;
      if (next === undefined) return;
      this.timers = this.timers.filter((x) => x !== next);
      next.cb();
    }
  }
}

function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

describe("DeadlineScheduler.nextDeadline", () => {
  it("is the earliest deadline of any group, also read from inside a running slot", () => {
    const clock = new FakeClock(0);
    const s = new DeadlineScheduler(clock);
    expect(s.nextDeadline).toBe(Infinity);
    const seen: number[] = [];
    // The slow group runs at 10 and asks then: its own next slot (110) is set already, the
    // heap below it is not restored yet; the next deadline is the fast group's, 12.
    s.every(100, { sample: () => void seen.push(s.nextDeadline) }, 10);
    s.every(10, { sample: () => {} }, 12);
    s.every(50, { sample: () => {} }, 30);
    expect(s.nextDeadline).toBe(10);
    clock.advance(10);
    expect(seen).toEqual([12]);
    expect(s.nextDeadline).toBe(12);
    s.stop();
    expect(s.nextDeadline).toBe(Infinity);
  });
});

describe("SliceGate", () => {
  it("ends a slice by its length, or DEADLINE_MARGIN_MS (and the slicer's tail) before the next deadline", () => {
    const clock = new FakeClock(0);
    const s = new DeadlineScheduler(clock);
    const gate = new SliceGate(s, clock);
    s.every(10, { sample: () => {} }, 10);
    clock.advance(5);
    expect(gate.end(1)).toBe(6);
    clock.advance(4); // 9: the poll at 10 comes first
    expect(gate.end(1)).toBe(10 - DEADLINE_MARGIN_MS);
    expect(gate.end(1, 0.2)).toBeCloseTo(10 - DEADLINE_MARGIN_MS - 0.2, 9);
    expect(gate.open()).toBe(true);
    expect(gate.open(0.6)).toBe(false);
    clock.advance(0.4); // 9.4: too near for any slice, but one that must run still gets MIN_SLICE_MS
    expect(gate.open()).toBe(false);
    expect(gate.end(1)).toBeCloseTo(9.4 + MIN_SLICE_MS, 9);
    // Without a scheduler, only the length counts.
    expect(new SliceGate(undefined, clock).end(1)).toBeCloseTo(10.4, 9);
    s.stop();
  });

  it("starts the next slice only after a deadline that is too near has passed and its slot has run", async () => {
    const clock = new ManualClock();
    const s = new DeadlineScheduler(clock);
    const gate = new SliceGate(s, clock);
    const order: string[] = [];
    s.every(10, { sample: () => void order.push(`poll ${clock.now()}`) }, 10);
    clock.to(9.7);
    gate.later(() => order.push(`slice ${clock.now()}`), undefined);
    await turn();
    await turn();
    expect(order).toEqual([]);
    clock.to(10);
    expect(order).toEqual(["poll 10", "slice 10"]);
    // With room, the next slice comes after one turn.
    clock.to(15);
    gate.later(() => order.push(`slice ${clock.now()}`), undefined);
    await turn();
    expect(order).toEqual(["poll 10", "slice 10", "slice 15"]);
    // The loop was held past the poll at 20 and its timer has not run yet: the slot runs first.
    clock.t = 20.2;
    gate.later(() => order.push(`slice ${clock.now()}`), undefined);
    await turn();
    expect(order.slice(3)).toEqual(["poll 20.2", "slice 20.2"]);
    s.stop();
  });

  it("waits for one deadline at most: with deadlines too dense for a slice the work still goes on", async () => {
    const clock = new ManualClock();
    const s = new DeadlineScheduler(clock);
    const gate = new SliceGate(s, clock);
    // Twenty groups 0.5 ms apart: never 0.75 ms of room.
    for (let k = 0; k < 20; k++) s.every(10, { sample: () => {} }, 10 + k * 0.5);
    clock.to(9.9);
    let ran = 0;
    gate.later(() => ran++, undefined);
    await turn();
    expect(ran).toBe(0);
    clock.to(10); // the first deadline passes; the next is 0.5 ms away, and the slice goes
    expect(ran).toBe(1);
    s.stop();
  });

  it("cuts inSlices' slices before the deadline, the slot running between them", async () => {
    const clock = new ManualClock();
    const s = new DeadlineScheduler(clock);
    const gate = new SliceGate(s, clock);
    const polls: number[] = [];
    s.every(10, { sample: () => void polls.push(clock.now()) }, 10);
    clock.to(9);
    // Each item takes 0.01 ms of the fake clock: a slice of 256 would run 2.56 ms, past the poll.
    const made: number[] = [];
    const done = inSlices(
      Array.from({ length: 300 }, (_, i) => i),
      256,
      "test (a slice)",
      (part) => {
        const out = part.map((i) => {
          clock.t += 0.01;
          return i;
        });
        made.push(clock.now());
        return out;
      },
      gate,
    );
    expect(done).toBeInstanceOf(Promise);
    // The first slice ended at its first look at the clock past 9.5 (32 items at a time), before the poll.
    expect(made.at(-1)!).toBeLessThan(10);
    expect(made.at(-1)!).toBeGreaterThanOrEqual(10 - DEADLINE_MARGIN_MS);
    const firstSlice = made.length;
    await turn();
    expect(made.length).toBe(firstSlice);
    clock.to(10);
    const results = await done;
    expect(results).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(polls[0]).toBe(10);
    // The rest was made after the poll.
    expect(made.slice(firstSlice).every((t) => t > 10)).toBe(true);
    s.stop();
  });
});

describe("SliceTail", () => {
  it("rises at once with an overrun and falls by a quarter per slice that ended in time", () => {
    const t = new SliceTail();
    t.note(10, 11.2);
    expect(t.ms).toBeCloseTo(1.2, 9);
    t.note(20, 20.4);
    expect(t.ms).toBeCloseTo(1.2 * 0.75 + 0.4 * 0.25, 9);
    t.note(30, 29);
    expect(t.ms).toBeCloseTo((1.2 * 0.75 + 0.4 * 0.25) * 0.75, 9);
    t.note(40, 400); // not the slicer's own: counted as 3 ms
    expect(t.ms).toBe(3);
  });
});
