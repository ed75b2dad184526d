// What the history writer says in the log (src/history/write-notices.ts), on a clock of the test's
// own: samples dropped, at most one line per interval, with how many since the last line and how
// many in all; and writing again after failed writes, with how many failed and for how long.
import { describe, expect, it } from "vitest";
import { newStats } from "../../src/history/sample-queue.js";
import { DROP_LINE_INTERVAL, WriteNotices } from "../../src/history/write-notices.js";

function notices() {
  const stats = newStats();
  const lines: string[] = [];
  const n = new WriteNotices(stats, { warn: (m) => lines.push(`warn ${m}`), info: (m) => lines.push(`info ${m}`), queueSize: 500 });
  return { stats, lines, n };
}

describe("the history writer's notices", () => {
  it("drops: a line at once, then at most one per interval, each with the count since the last and in all; none without new drops", () => {
    const { stats, lines, n } = notices();
    n.tick(0);
    expect(lines).toEqual([]);
    stats.dropped = 7;
    n.tick(1000);
    expect(lines).toEqual(["warn history: 7 sample(s) dropped unwritten since the last message (7 in all): the database does not keep up and the queue (history.queueSize: 500) is full"]);
    stats.dropped = 50;
    n.tick(1000 + DROP_LINE_INTERVAL - 1);
    expect(lines).toHaveLength(1);
    stats.failing = true;
    stats.dropped = 120;
    n.tick(1000 + DROP_LINE_INTERVAL);
    expect(lines[1]).toBe("warn history: 113 sample(s) dropped unwritten since the last message (120 in all): writes to the database fail and the queue (history.queueSize: 500) is full");
    n.tick(1000 + 5 * DROP_LINE_INTERVAL);
    expect(lines).toHaveLength(2);
    stats.failing = false;
    stats.waitingForClock = true;
    stats.dropped = 121;
    n.tick(1000 + 5 * DROP_LINE_INTERVAL);
    expect(lines[2]).toBe("warn history: 1 sample(s) dropped unwritten since the last message (121 in all): samples held until the clock is synchronized fill the queue (history.queueSize: 500)");
  });

  it("writing again: one line after a run of failures, with their number and time; nothing while writes succeed", () => {
    const { stats, lines, n } = notices();
    n.written(10, 0);
    expect(lines).toEqual([]);
    stats.failedFlushes = 1;
    n.failed(1_000);
    stats.failedFlushes = 2;
    n.failed(2_000);
    stats.failedFlushes = 3;
    n.failed(13_400);
    n.written(14_000, 4321);
    expect(lines).toEqual(["info history: writing again after 3 failed write(s) over 13 s; 4321 queued sample(s) still to write"]);
    n.written(15_000, 0);
    expect(lines).toHaveLength(1);
    stats.failedFlushes = 4;
    n.failed(20_000);
    n.written(20_500, 0);
    expect(lines[1]).toBe("info history: writing again after 1 failed write(s) over 0.5 s; 0 queued sample(s) still to write");
  });
});
