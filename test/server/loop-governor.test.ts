// The loop governor (src/server/loop-governor.ts) after each client socket read: the read is
// timed, the sampling slots that came due run, then the sliced work that goes before client
// requests (the rest of a Publish, Slicer.soon) gets its slice, in that order.
import { describe, expect, it } from "vitest";
import { LoopGovernor } from "../../src/server/loop-governor.js";
import type { LoopTrace } from "../../src/sampling/loop-trace.js";
import type { DeadlineScheduler } from "../../src/sampling/scheduler.js";

describe("LoopGovernor", () => {
  it("after a socket read: times it, runs the due slots, then the slices that go before client requests", () => {
    const order: string[] = [];
    const scheduler = { now: 5, runDue: (now: number) => void order.push(`slots at ${now}`) } as unknown as DeadlineScheduler;
    const trace = { readLabel: () => "client requests", end: (label: string, start: number, now: number) => void order.push(`timed ${label} ${start}-${now}`) } as unknown as LoopTrace;
    const governor = new LoopGovernor(scheduler, trace, { runSoon: () => void order.push("soon") });
    governor.afterRead(4);
    expect(order).toEqual(["timed client requests 4-5", "slots at 5", "soon"]);
    // Between two requests of one read: the slots only (a Publish part waits for the read's end).
    order.length = 0;
    governor.between();
    expect(order).toEqual(["slots at 5"]);
  });
});
