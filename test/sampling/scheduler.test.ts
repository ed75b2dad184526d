import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/sampling/clock.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";

function recorder() {
  const deadlines: number[] = [];
  return { deadlines, task: { sample: (d: number) => void deadlines.push(d) } };
}

describe("DeadlineScheduler", () => {
  it("runs slots at t0 + k*interval regardless of when the previous one ran", () => {
    const clock = new FakeClock(1000);
    const s = new DeadlineScheduler(clock);
    const r = recorder();
    s.every(10, r.task);
    clock.advance(55);
    expect(r.deadlines).toEqual([1000, 1010, 1020, 1030, 1040, 1050]);
    expect(clock.pendingTimers).toBe(1); // one timer for the whole scheduler
    s.stop();
    expect(clock.pendingTimers).toBe(0);
  });

  it("skips and counts missed slots instead of replaying them", () => {
    const clock = new FakeClock(0);
    const s = new DeadlineScheduler(clock);
    const r = recorder();
    const g = s.every(10, r.task);
    clock.advance(0);
    clock.stall(35); // the loop was blocked from 0 to 35
    expect(r.deadlines).toEqual([0, 30]);
    expect(g.skipped).toBe(2);
    clock.advance(10);
    expect(r.deadlines).toEqual([0, 30, 40]);
    s.stop();
  });

  it("keeps many groups in one heap with one armed timer", () => {
    const clock = new FakeClock(0);
    const s = new DeadlineScheduler(clock);
    const a = recorder();
    const b = recorder();
    s.every(30, a.task);
    const gb = s.every(20, b.task, 5);
    clock.advance(61);
    expect(a.deadlines).toEqual([0, 30, 60]);
    expect(b.deadlines).toEqual([5, 25, 45]);
    expect(clock.pendingTimers).toBe(1);
    s.cancel(gb);
    clock.advance(40);
    expect(b.deadlines).toEqual([5, 25, 45]);
    expect(a.deadlines).toEqual([0, 30, 60, 90]);
    s.stop();
  });

  it("counts an overrun when an async task is still running at its next slot", async () => {
    const clock = new FakeClock(0);
    const s = new DeadlineScheduler(clock);
    let release!: () => void;
    let runs = 0;
    const g = s.every(10, {
      sample: () => {
        runs++;
        return new Promise<void>((resolve) => (release = resolve));
      },
    });
    clock.advance(25);
    expect(runs).toBe(1);
    expect(g.overruns).toBe(2);
    release();
    await Promise.resolve();
    await Promise.resolve();
    clock.advance(10);
    expect(runs).toBe(2);
    s.stop();
  });

  it("reports lateness quantiles", () => {
    const clock = new FakeClock(0);
    const s = new DeadlineScheduler(clock);
    s.every(10, { sample: () => undefined });
    clock.advance(100);
    expect(s.latencyQuantile(0.99)).toBe(0);
    s.stop();
  });
});
