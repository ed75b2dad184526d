// The loop trace (src/sampling/loop-trace.ts): a task that holds the event loop past a slot's
// deadline is named as the cause of that late slot; GC pauses and the event-loop delay are
// seen; and the samples monitored items miss when their source skips slots are counted per item.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { systemClock } from "../../src/sampling/clock.js";
import { LoopTrace, formatStall } from "../../src/sampling/loop-trace.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { COUNTER, Fixture } from "../subscriptions/fixture.js";

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe("the loop trace", () => {
  it("names the task that held the loop while a 10 ms slot waited", async () => {
    const trace = new LoopTrace();
    trace.start();
    const scheduler = new DeadlineScheduler(systemClock, trace);
    let runs = 0;
    const g = scheduler.every(10, { sample: () => void runs++, label: "sampling @10 ms" });
    try {
      await new Promise((r) => setTimeout(r, 25));
      // A task of 30 ms: the next slot runs about 20-30 ms late, and two or three are skipped.
      await new Promise<void>((resolve) =>
        setTimeout(() => {
          const start = performance.now();
          busy(30);
          trace.end("a HistoryRead of 100,000 values", start);
          resolve();
        }, 2),
      );
      await new Promise((r) => setTimeout(r, 25));
      // The event-loop delay probe saw the 30 ms.
      expect(trace.delayMax).toBeGreaterThan(20);
    } finally {
      scheduler.stop();
      trace.stop();
    }
    // On a loaded machine the process may also be descheduled, which makes late slots with no
    // task to blame: look for the slot that waited on this task among them.
    const stalls = trace.recentStalls().filter((s) => s.slot === "sampling @10 ms" && s.lateMs > 15);
    const stall = stalls.find((s) => s.cause === "a HistoryRead of 100,000 values");
    expect(stall, JSON.stringify(stalls)).toBeDefined();
    expect(stall!.causeMs).toBeGreaterThanOrEqual(29);
    expect(formatStall(stall!)).toMatch(/sampling @10 ms ran \d+\.\d ms late; the loop was busy with a HistoryRead of 100,000 values \(\d+\.\d ms\)$/);
    expect(trace.longestTask).toBe("a HistoryRead of 100,000 values");
    expect(g.skipped).toBeGreaterThan(0);
    expect(runs).toBeGreaterThan(2);
  });

  it("counts GC pauses", async () => {
    const trace = new LoopTrace();
    trace.start();
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    gc();
    gc();
    await new Promise((r) => setTimeout(r, 20));
    trace.stop();
    expect(trace.gcCount).toBeGreaterThanOrEqual(2);
    expect(trace.gcPauseMax).toBeGreaterThan(0);
  });
});

describe("samples missed per monitored item", () => {
  it("a fed item misses the poll slots its group skips; a sampled one its sampling group's", async () => {
    const f = new Fixture();
    const s = f.session();
    const id = f.subscribe(s, { interval: 1000, keepAlive: 100, lifetime: 1000 });
    f.monitor(s, id, COUNTER(1), { samplingInterval: 10, clientHandle: 1 });
    f.monitor(s, id, COUNTER(2), { samplingInterval: 20, clientHandle: 2 });
    const [fed, sampled] = [...f.engine.subscriptions.get(id)!.items.values()];
    expect([fed!.fed, sampled!.fed]).toEqual([true, false]);
    await f.now();
    await f.advance(100);
    expect([f.engine.sampler.skippedSamples(fed!), f.engine.sampler.skippedSamples(sampled!)]).toEqual([0, 0]);
    // The loop stalls 35 ms: the counters' 10 ms poll skips the slots of 110 and 120; the
    // 20 ms sampling group runs its slot of 120 late and skips none.
    f.clock.stall(35);
    await f.now();
    expect(f.engine.sampler.skippedSamples(fed!)).toBe(2);
    expect(f.engine.sampler.skippedSamples(sampled!)).toBe(0);
    // 45 ms more, to 180: the poll skips 140, 150, 160 and 170; the sampling group, due at 140,
    // skips 140 and 160 and runs 180's slot.
    f.clock.stall(45);
    await f.now();
    expect(f.engine.sampler.skippedSamples(fed!)).toBe(6);
    expect(f.engine.sampler.skippedSamples(sampled!)).toBe(2);
  });
});
