// Where the bench's load processes run (bench/harness/load-process.ts) and the counters
// scenario's subscriber placement (bench/scenarios/counters.ts): the subscriber may run under
// SCHED_FIFO on the load core, ahead of the load client beside it, with V8's GC and optimizing
// compiles on its main thread (a FIFO main thread never lets its own helper threads run there).
import { describe, expect, it } from "vitest";
import { loadCommand } from "../../bench/harness/load-process.js";
import { parseCountersOptions } from "../../bench/scenarios/counters.js";

describe("load process placement", () => {
  it("starts a load under chrt -f with the single-threaded GC when a priority is asked", () => {
    const cmd = loadCommand({ cpu: 1, realtimePriority: 5 }, "/w.js");
    expect(cmd.command).toBe("chrt");
    expect(cmd.args.slice(0, 2)).toEqual(["-f", "5"]);
    expect(cmd.args.slice(-3)).toEqual(["--single-threaded-gc", "--no-concurrent-recompilation", "/w.js"]);
    // Pinned inside chrt where taskset exists: the priority applies to the pinned process.
    if (cmd.pinned) expect(cmd.args.slice(2, 5)).toEqual([expect.stringMatching(/taskset$/), "-c", "1"]);
  });

  it("leaves a load with no priority as it was: no chrt, no flags of its own", () => {
    const cmd = loadCommand({ cpu: 1, nodeFlags: ["--x"] }, "/w.js");
    expect(cmd.command).not.toBe("chrt");
    expect(cmd.args.slice(-2)).toEqual(["--x", "/w.js"]);
    expect(cmd.args).not.toContain("--single-threaded-gc");
  });

  it("gives the counters subscriber SCHED_FIFO 5 with --realtime unless told otherwise", () => {
    expect(parseCountersOptions(["--realtime"])?.subscriberPriority).toBe(5);
    expect(parseCountersOptions([])?.subscriberPriority).toBe(0);
    expect(parseCountersOptions(["--realtime", "--subscriber-priority", "0"])?.subscriberPriority).toBe(0);
    expect(parseCountersOptions(["--subscriber-priority", "7"])?.subscriberPriority).toBe(7);
    expect(() => parseCountersOptions(["--subscriber-priority", "-1"])).toThrow(/--subscriber-priority/);
    // --server-nice places the server too: the subscriber goes ahead of the load client as well.
    expect(parseCountersOptions(["--server-nice=-20"])).toMatchObject({ serverNice: -20, subscriberPriority: 5, realtime: false });
    expect(() => parseCountersOptions(["--server-nice=-21"])).toThrow(/--server-nice: expected an integer from -20 to 19/);
    expect(() => parseCountersOptions(["--server-nice=-5", "--realtime"])).toThrow(/choose one/);
  });
});
