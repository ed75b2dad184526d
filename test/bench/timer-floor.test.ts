// bench counters --timer-floor: the gateway's scheduler alone, measured the way the counters
// server's lateness is (its histogram, its stall tracer), in this process and in a pinned child.
import { describe, expect, it } from "vitest";
import { measureTimerFloor, timerFloorOnCore } from "../../bench/scenarios/timer-floor.js";

describe("the timer floor", () => {
  it("runs two 10 ms groups and a 100 ms one and reports their lateness", async () => {
    const f = await measureTimerFloor(1);
    // 1 s: ~100 slots per 10 ms group and ~10 of the 100 ms one (a busy machine skips some).
    expect(f.slots).toBeGreaterThan(100);
    expect(f.slots).toBeLessThanOrEqual(212);
    expect(f.p50Ms).toBeLessThanOrEqual(f.p99Ms);
    expect(f.p99Ms).toBeLessThanOrEqual(f.p999Ms);
    for (const n of Object.values(f.causes)) expect(n).toBeGreaterThan(0);
  });

  it("runs in a child process with the gateway's flags (the bench's way)", async () => {
    const f = await timerFloorOnCore(undefined, 1);
    expect(f.slots).toBeGreaterThan(100);
    expect(f.slots).toBeLessThanOrEqual(212);
  }, 40_000);
});
