// The one way to slice (src/sampling/slices.ts), on clocks the tests drive: where a slice is cut
// (its budget less the job's tail, or before the next sampling deadline), a next slice that
// waits for a deadline too near to start before it, a job's slices in an index loop, and a poll's
// delivery going before other jobs.
import { describe, expect, it } from "vitest";
import { FakeClock, type Clock } from "../../src/sampling/clock.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { DEADLINE_MARGIN_MS, MIN_SLICE_MS, Slicer, SliceTail } from "../../src/sampling/slices.js";

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

describe("Slicer", () => {
  it("ends a slice by its budget less the job's tail, or DEADLINE_MARGIN_MS (and the tail) before the next deadline", () => {
    const clock = new FakeClock(0);
    const s = new DeadlineScheduler(clock);
    const slicer = new Slicer({ budgetMs: 1, deadlines: s, clock });
    s.every(10, { sample: () => {} }, 10);
    clock.advance(5);
    expect(slicer.end()).toBe(6);
    // What the job ran past its slices lately comes off the budget.
    expect(slicer.end(0.3)).toBeCloseTo(5.7, 9);
    expect(slicer.end(2)).toBe(5);
    clock.advance(4); // 9: the poll at 10 comes first
    expect(slicer.end()).toBe(10 - DEADLINE_MARGIN_MS);
    expect(slicer.end(0.2)).toBeCloseTo(10 - DEADLINE_MARGIN_MS - 0.2, 9);
    expect(slicer.open()).toBe(true);
    expect(slicer.open(0.6)).toBe(false);
    clock.advance(0.4); // 9.4: too near for any slice, but one that must run still gets MIN_SLICE_MS
    expect(slicer.open()).toBe(false);
    expect(slicer.end()).toBeCloseTo(9.4 + MIN_SLICE_MS, 9);
    // Without a scheduler, only the budget counts.
    expect(new Slicer({ budgetMs: 1, clock }).end()).toBeCloseTo(10.4, 9);
    s.stop();
  });

  it("starts the next slice only after a deadline that is too near has passed and its slot has run", async () => {
    const clock = new ManualClock();
    const s = new DeadlineScheduler(clock);
    const slicer = new Slicer({ budgetMs: 1, deadlines: s, clock });
    const order: string[] = [];
    s.every(10, { sample: () => void order.push(`poll ${clock.now()}`) }, 10);
    clock.to(9.7);
    slicer.later(() => order.push(`slice ${clock.now()}`), undefined);
    await turn();
    await turn();
    expect(order).toEqual([]);
    clock.to(10);
    expect(order).toEqual(["poll 10", "slice 10"]);
    // With room, the next slice comes after one turn.
    clock.to(15);
    slicer.later(() => order.push(`slice ${clock.now()}`), undefined);
    await turn();
    expect(order).toEqual(["poll 10", "slice 10", "slice 15"]);
    // The loop was held past the poll at 20 and its timer has not run yet: the slot runs first.
    clock.t = 20.2;
    slicer.later(() => order.push(`slice ${clock.now()}`), undefined);
    await turn();
    expect(order.slice(3)).toEqual(["poll 20.2", "slice 20.2"]);
    s.stop();
  });

  it("waits for one deadline at most: with deadlines too dense for a slice the work still goes on", async () => {
    const clock = new ManualClock();
    const s = new DeadlineScheduler(clock);
    const slicer = new Slicer({ budgetMs: 1, deadlines: s, clock });
    // Twenty groups 0.5 ms apart: never 0.75 ms of room.
    for (let k = 0; k < 20; k++) s.every(10, { sample: () => {} }, 10 + k * 0.5);
    clock.to(9.9);
    let ran = 0;
    slicer.later(() => ran++, undefined);
    await turn();
    expect(ran).toBe(0);
    clock.to(10); // the first deadline passes; the next is 0.5 ms away, and the slice goes
    expect(ran).toBe(1);
    s.stop();
  });

  it("times each slice of a job under its label, the next one given by `later` too", async () => {
    const timed: string[] = [];
    const slicer = new Slicer({ budgetMs: 1, clock: new FakeClock(0), trace: { end: (label) => void timed.push(label) } });
    const task = slicer.task("a job (a slice)");
    await task.next();
    task.done();
    task.done();
    slicer.later(() => undefined, undefined, "a callback's slice");
    await turn();
    expect(timed).toEqual(["a job (a slice)", "a job (a slice)", "a callback's slice"]);
    expect(task.slices).toBe(2);
  });
});

describe("Slicer.soon: work that goes before client requests", () => {
  it("runs after the next client socket read (runSoon), not before, and only once", async () => {
    const clock = new ManualClock();
    const s = new DeadlineScheduler(clock);
    const timed: string[] = [];
    const slicer = new Slicer({ budgetMs: 1, deadlines: s, clock, trace: { end: (label) => void timed.push(label) } });
    s.every(10, { sample: () => {} }, 10);
    clock.to(2);
    const ran: number[] = [];
    slicer.soon((x: number) => ran.push(x), 7, "the rest of a message");
    expect(ran).toEqual([]);
    slicer.runSoon();
    expect(ran).toEqual([7]);
    expect(timed).toEqual(["the rest of a message"]);
    await turn();
    expect(ran).toEqual([7]);
    s.stop();
  });

  it("runs on the turn when no read comes first", async () => {
    const slicer = new Slicer({ budgetMs: 1, clock: new ManualClock() });
    let ran = 0;
    slicer.soon(() => ran++, undefined);
    await turn();
    expect(ran).toBe(1);
  });

  it("keeps a job whose slice does not fit before the next deadline for a later read, after the slot", async () => {
    const clock = new ManualClock();
    const s = new DeadlineScheduler(clock);
    const slicer = new Slicer({ budgetMs: 1, deadlines: s, clock });
    const order: string[] = [];
    s.every(10, { sample: () => void order.push(`poll ${clock.now()}`) }, 10);
    clock.t = 9.7;
    slicer.soon(() => order.push(`slice ${clock.now()}`), undefined);
    slicer.runSoon();
    expect(order).toEqual([]);
    // A read after the deadline: the governor runs the slot, then the job.
    clock.t = 10.1;
    s.runDue();
    slicer.runSoon();
    expect(order).toEqual(["poll 10.1", "slice 10.1"]);
    await turn();
    expect(order).toHaveLength(2);
    s.stop();
  });

  it("gives a poll's delivery (firstTask) its next slice after the next read too, before the jobs of soon", async () => {
    const slicer = new Slicer({ budgetMs: 1, clock: new ManualClock() });
    const order: string[] = [];
    const delivery = slicer.firstTask("values (a slice)");
    slicer.soon(() => order.push("rest of a message"), undefined);
    const next = delivery.next().then(() => void order.push("delivery"));
    slicer.runSoon();
    // (The delivery goes on in a microtask after the read's task.)
    await Promise.resolve();
    await Promise.resolve();
    expect(order).toEqual(["delivery"]);
    await next;
    delivery.done();
    slicer.runSoon();
    expect(order).toEqual(["delivery", "rest of a message"]);
  });

  it("waits while a poll's delivery goes first", async () => {
    const slicer = new Slicer({ budgetMs: 1, clock: new ManualClock() });
    const order: string[] = [];
    const delivery = slicer.firstTask("values (a slice)");
    const next = delivery.next();
    slicer.soon(() => order.push("rest of a message"), undefined);
    slicer.runSoon();
    expect(order).toEqual([]);
    await next;
    order.push("delivery");
    delivery.done();
    slicer.runSoon();
    expect(order).toEqual(["delivery", "rest of a message"]);
  });

  it("runs what a job queues again after the next read, in order behind the jobs that waited", async () => {
    const clock = new ManualClock();
    const slicer = new Slicer({ budgetMs: 1, clock });
    const order: string[] = [];
    let parts = 0;
    const part = (name: string): void => {
      order.push(name);
      if (++parts < 3) slicer.soon(part, name);
    };
    slicer.soon(part, "a");
    slicer.soon((n: string) => order.push(n), "b");
    slicer.runSoon();
    expect(order).toEqual(["a", "b"]);
    slicer.runSoon();
    expect(order).toEqual(["a", "b", "a"]);
    slicer.runSoon();
    slicer.runSoon();
    expect(order).toEqual(["a", "b", "a", "a"]);
    await turn();
    expect(order).toHaveLength(4);
  });
});

describe("SlicedTask", () => {
  it("runs an index loop in slices cut before the deadline, the slot running between them", async () => {
    const clock = new ManualClock();
    const s = new DeadlineScheduler(clock);
    const slicer = new Slicer({ budgetMs: 1, deadlines: s, clock });
    const polls: number[] = [];
    s.every(10, { sample: () => void polls.push(clock.now()) }, 10);
    clock.to(9);
    // Each item takes 0.01 ms of the fake clock, looked at every 8 items.
    const made: number[] = [];
    const task = slicer.task("test (a slice)");
    const done = task.loop(300, (from) => {
      let i = from;
      while (i < 300) {
        clock.t += 0.01;
        made.push(clock.now());
        i++;
        if (i % 8 === 0 && task.over()) break;
      }
      return i;
    });
    // The first slice ended at its first look at the clock past 9.5, before the poll.
    expect(made.at(-1)!).toBeLessThan(10);
    expect(made.at(-1)!).toBeGreaterThanOrEqual(10 - DEADLINE_MARGIN_MS);
    const firstSlice = made.length;
    await turn();
    expect(made.length).toBe(firstSlice);
    clock.to(10);
    await done;
    task.done();
    expect(made).toHaveLength(300);
    expect(polls[0]).toBe(10);
    // The rest was made after the poll, in slices of the budget.
    expect(made.slice(firstSlice).every((t) => t > 10)).toBe(true);
    expect(task.slices).toBeGreaterThanOrEqual(2);
    s.stop();
  });

  it("yields only when its slice is spent", async () => {
    const clock = new ManualClock();
    const slicer = new Slicer({ budgetMs: 1, clock });
    const task = slicer.task("test");
    await task.yield();
    expect(task.slices).toBe(1);
    clock.t = 1;
    await task.yield();
    expect(task.slices).toBe(2);
    task.done();
  });

  it("of a poll's delivery (firstTask) goes before the next slices of other jobs, whatever the deadlines", async () => {
    const clock = new ManualClock();
    const s = new DeadlineScheduler(clock);
    const slicer = new Slicer({ budgetMs: 1, deadlines: s, clock });
    const order: string[] = [];
    slicer.later(() => order.push("other"), undefined);
    const delivery = slicer.firstTask("values (a slice)");
    const delivering = (async () => {
      for (let k = 0; k < 3; k++) {
        await delivery.next();
        order.push(`delivery ${k}`);
      }
      delivery.done();
    })();
    for (let i = 0; i < 6; i++) await turn();
    await delivering;
    expect(order).toEqual(["delivery 0", "delivery 1", "delivery 2", "other"]);
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
