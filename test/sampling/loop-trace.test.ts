// The loop trace (src/sampling/loop-trace.ts): a task that holds the event loop past a slot's
// deadline is named as the cause of that late slot (on a fake clock); GC pauses and the
// event-loop delay are seen; and the samples monitored items miss when their source skips slots
// are counted per item.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/sampling/clock.js";
import { LoopTrace, SLEPT_PAST, UNTIMED_WORK, WAITED_FOR_CORE, formatStall } from "../../src/sampling/loop-trace.js";
import { openThreadTimes, type ThreadTimes } from "../../src/sampling/thread-times.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { COUNTER, Fixture } from "../subscriptions/fixture.js";

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe("the loop trace", () => {
  it("names the task that held the loop while a 10 ms slot waited", () => {
    const clock = new FakeClock(0);
    // No thread times: the cause is the timed task alone.
    const trace = new LoopTrace(undefined, () => clock.now());
    const scheduler = new DeadlineScheduler(clock, trace);
    let runs = 0;
    const g = scheduler.every(10, { sample: () => void runs++, label: "sampling @10 ms" });
    try {
      // Slots of 0, 10 and 20 run on time.
      clock.advance(27);
      // A task of 30 ms from 27: the slot of 30 waits for it, runs 27 ms late at 57, and the
      // slots of 40 and 50 are skipped.
      const start = clock.now();
      clock.hold(30);
      trace.end("a HistoryRead of 100,000 values", start);
      clock.advance(0);
    } finally {
      scheduler.stop();
    }
    const stalls = trace.recentStalls();
    expect(stalls.map((s) => [s.slot, s.lateMs, s.cause, s.causeMs])).toEqual([["sampling @10 ms", 27, "a HistoryRead of 100,000 values", 30]]);
    expect(formatStall(stalls[0]!)).toMatch(/sampling @10 ms ran 27\.0 ms late; the loop was busy with a HistoryRead of 100,000 values \(30\.0 ms\)$/);
    expect(trace.longestTask).toBe("a HistoryRead of 100,000 values");
    expect([g.skipped, runs]).toEqual([2, 4]);
  });

  it("sees a task that holds the loop in the event-loop delay", async () => {
    const trace = new LoopTrace();
    trace.start();
    try {
      await new Promise((r) => setTimeout(r, 5));
      // The probe's 1 ms timer cannot run during the 30 ms; a loaded machine only adds delay.
      busy(30);
      await new Promise((r) => setTimeout(r, 5));
      expect(trace.delayMax).toBeGreaterThan(20);
    } finally {
      trace.stop();
    }
  });

  it("tells a slot that waited for its core from one that slept or worked, by the main thread's own clock", () => {
    // The thread's figures as schedstat would give them, moved by hand between mark and stall.
    const times: ThreadTimes & { set(ran: number, waited: number): void } = {
      ranMs: 0,
      waitedMs: 0,
      read: () => true,
      close: () => undefined,
      set(ran, waited) {
        this.ranMs = ran;
        this.waitedMs = waited;
      },
    };
    const trace = new LoopTrace(times);
    const at = Date.UTC(2026, 0, 1);
    // Waited 4 ms of a 5 ms lateness for the core: other processes had it.
    times.set(100, 50);
    trace.mark();
    times.set(100.5, 54);
    trace.stall("poll @10 ms", 5, at);
    // Ran 4.5 ms with no task timed: untimed work of its own.
    trace.mark();
    times.set(105, 54.2);
    trace.stall("poll @10 ms", 5, at);
    // Neither: asleep past the deadline.
    trace.mark();
    times.set(105.1, 54.2);
    trace.stall("poll @10 ms", 3, at);
    // A timed task that covers the lateness stays the cause.
    trace.mark();
    const start = performance.now() - 4;
    trace.end("a HistoryRead", start);
    times.set(109.2, 54.3);
    trace.stall("poll @10 ms", 4, at);
    const [waited, worked, slept, timed] = trace.recentStalls();
    expect(waited!.cause).toBe(WAITED_FOR_CORE);
    expect(waited!.causeMs).toBeCloseTo(4, 5);
    expect(waited!.waitedMs).toBeCloseTo(4, 5);
    expect(waited!.ranMs).toBeCloseTo(0.5, 5);
    expect(worked!.cause).toBe(UNTIMED_WORK);
    expect(worked!.causeMs).toBeCloseTo(4.5, 5);
    expect(slept!.cause).toBe(SLEPT_PAST);
    expect(slept!.causeMs).toBeCloseTo(2.9, 5);
    expect(timed!.cause).toBe("a HistoryRead");
    expect(formatStall(waited!)).toMatch(
      /poll @10 ms ran 5\.0 ms late; the loop was busy with other threads or processes on its core \(the main thread waited for the CPU\) \(4\.0 ms\)$/,
    );
  });

  it("reads the main thread's clock where Linux has one", () => {
    const t = openThreadTimes();
    if (process.platform !== "linux") return expect(t).toBeUndefined();
    expect(t).toBeDefined();
    expect(t!.read()).toBe(true);
    const [ran, waited] = [t!.ranMs, t!.waitedMs];
    busy(20);
    expect(t!.read()).toBe(true);
    // A thread that never sleeps either runs or waits for a CPU (or, in a VM, has its CPU
    // stolen, which neither counts): 20 ms of it is mostly the two together, in ms, not ns or µs.
    const both = t!.ranMs - ran + (t!.waitedMs - waited);
    expect(t!.ranMs - ran).toBeGreaterThan(0);
    expect(both).toBeGreaterThanOrEqual(10);
    expect(both).toBeLessThan(1000);
    t!.close();
    expect(t!.read()).toBe(false);
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
    const f = await Fixture.start();
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
