// The scheduler's timer: it never runs its callback before the due time, it can be cancelled in
// each of its phases (the whole-ms timer, the pieces of waiting), and it gives the event loop a
// turn between its pieces of waiting. How close to the due time it fires is a bench figure
// (bench counters --timer-floor), not asserted here.
import { describe, expect, it, vi } from "vitest";
import { PreciseTimer } from "../../src/sampling/precise-timer.js";
import { systemClock } from "../../src/sampling/clock.js";

function firedAt(delayMs: number): Promise<{ dueAt: number; at: number }> {
  return new Promise((resolve) => {
    const t: PreciseTimer = new PreciseTimer(() => resolve({ dueAt: t.dueAt, at: performance.now() }), delayMs);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("PreciseTimer", () => {
  it("never runs before its due time, for delays across the whole-ms and the waiting ranges", async () => {
    const delays = [0, 0.05, 0.2, 0.26, 0.5, 0.9, 0.99, 1, 1.3, 2.7, 3.01, 5.5];
    for (let round = 0; round < 3; round++) {
      for (const d of delays) {
        const { dueAt, at } = await firedAt(d);
        expect(at).toBeGreaterThanOrEqual(dueAt);
      }
    }
  });

  it("does not fire once cancelled, whether it is in its whole-ms timer or waiting in pieces", async () => {
    let fired = 0;
    const inTimer = new PreciseTimer(() => fired++, 3);
    inTimer.cancel();
    const beforeFirstPiece = new PreciseTimer(() => fired++, 0.9);
    beforeFirstPiece.cancel();
    // Its clock held still, so that it is between two pieces of waiting however slowly this
    // machine turns the loop (on a loaded one, two turns outlasted the 0.9 ms and it fired).
    const now = performance.now();
    const held = vi.spyOn(performance, "now").mockReturnValue(now);
    let betweenPieces: PreciseTimer;
    try {
      betweenPieces = new PreciseTimer(() => fired++, 0.9);
      // The first piece (0.25 ms) runs in the next check phase, the second in the one after.
      await new Promise<void>((r) => setImmediate(() => setImmediate(r)));
      betweenPieces.cancel();
    } finally {
      held.mockRestore();
    }
    // Past its due time now: had the cancel not taken, its next piece would run it.
    await sleep(10);
    expect(performance.now()).toBeGreaterThan(betweenPieces.dueAt);
    expect(fired).toBe(0);
  });

  it("lets other work of the event loop run between its pieces of waiting", async () => {
    const order: string[] = [];
    const done = new Promise<void>((resolve) => {
      new PreciseTimer(() => {
        order.push("timer");
        resolve();
      }, 0.9);
    });
    // Queued after the timer's first turn: a single blocking wait of 0.9 ms would run the timer first.
    setImmediate(() => order.push("other work"));
    await done;
    expect(order).toEqual(["other work", "timer"]);
  });

  it("is the system clock's timer, and clearTimer cancels it", async () => {
    let fired = 0;
    const handle = systemClock.setTimer(() => fired++, 1.5);
    expect(handle).toBeInstanceOf(PreciseTimer);
    systemClock.clearTimer(handle);
    // A timer due after it runs after it would have: however late the loop turns, timers fire
    // in the order of their due times.
    const later = await firedAt(3);
    expect(later.at).toBeGreaterThanOrEqual(later.dueAt);
    expect(fired).toBe(0);
  });
});
