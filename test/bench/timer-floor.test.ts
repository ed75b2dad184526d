// bench counters --timer-floor: the gateway's scheduler alone, measured the way the counters
// server's lateness is (its histogram, its stall tracer): on a fake clock here, where the slots
// and their lateness are known, and once in a pinned child the way the bench runs it.
import { describe, expect, it } from "vitest";
import { startTimerFloor, timerFloorOnCore } from "../../bench/scenarios/timer-floor.js";
import { FakeClock } from "../../src/sampling/clock.js";
import { LoopTrace } from "../../src/sampling/loop-trace.js";
import { missingBuild, requirePeers, skipWithout } from "../helpers/built.js";

const unbuilt = missingBuild("bench/scenarios/timer-floor.js");

describe("the timer floor", () => {
  it("counts two 10 ms groups and a 100 ms one, their lateness and the stalls' causes", () => {
    const clock = new FakeClock(0);
    const trace = new LoopTrace(undefined, () => clock.now());
    const floor = startTimerFloor(clock, trace);
    try {
      // Groups from 5, 5.9 and 5.3 ms: 100 + 100 + 10 slots in the first second, all on time.
      clock.advance(1000);
      expect(floor.figures()).toEqual({ p50Ms: 0, p99Ms: 0, p999Ms: 0, slots: 210, causes: {} });
      // The loop stalls from 1000 to 1025: each group's slot due at 1005.x is late, a stall
      // nothing timed explains. The 10 ms groups skip to their slot of 1025 (on time) and of
      // 1015.9 (9.1 ms late); the 100 ms one runs its slot of 1005.3, 19.7 ms late.
      clock.stall(25);
      const f = floor.figures();
      expect(f.slots).toBe(213);
      expect(f.causes).toEqual({ "nothing timed": 3 });
      expect([f.p50Ms, f.p99Ms]).toEqual([0, 0]);
      expect(f.p999Ms).toBeCloseTo(19.7, 5);
    } finally {
      floor.stop();
    }
  });

  it.skipIf(skipWithout(unbuilt))("runs in a child process with the gateway's flags (the bench's way)", async () => {
    requirePeers(unbuilt);
    const f = await timerFloorOnCore(undefined, 1);
    expect(f.slots).toBeGreaterThan(0);
    for (const q of [f.p50Ms, f.p99Ms, f.p999Ms]) expect(Number.isFinite(q)).toBe(true);
    expect(typeof f.causes).toBe("object");
  }, 40_000);
});
