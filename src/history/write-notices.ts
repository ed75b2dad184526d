// What the history writer says in the log beside its counters (which /metrics, the page and the
// System object show): samples it had to drop, at most one line per interval with how many since
// the last line and how many in all; and, after writes failed (a full disk, an I/O error), the
// moment they succeed again, with how long and how many writes failed. The counts are the
// writer's stats; this looks at them once per tick of its timer, never per sample.
import type { HistoryWriterStats } from "./sample-queue.js";

/** Lines about drops: at most one per minute. */
export const DROP_LINE_INTERVAL = 60_000;

export interface WriteNoticesOptions {
  /** Warnings: drops. */
  readonly warn?: (message: string) => void;
  /** Information: writing again. */
  readonly info?: (message: string) => void;
  /** The ring's size (history.queueSize), named in the drop line. */
  readonly queueSize: number;
  /** ms between two drop lines (default DROP_LINE_INTERVAL). */
  readonly interval?: number;
}

export class WriteNotices {
  /** stats.dropped when the last drop line was written. */
  private toldDropped = 0;
  private lastDropLine = -Infinity;
  /** When the first of the failing writes failed (0: writes succeed). */
  private failingSince = 0;
  private failedBefore = 0;

  constructor(
    private readonly stats: Readonly<HistoryWriterStats>,
    private readonly o: WriteNoticesOptions,
  ) {}

  /** Once per tick: a line for samples dropped since the last one, when the interval has passed. */
  tick(now: number): void {
    const dropped = this.stats.dropped;
    if (dropped === this.toldDropped || now - this.lastDropLine < (this.o.interval ?? DROP_LINE_INTERVAL)) return;
    const since = dropped - this.toldDropped;
    const queue = `the queue (history.queueSize: ${this.o.queueSize})`;
    const why = this.stats.failing
      ? `writes to the database fail and ${queue} is full`
      : this.stats.waitingForClock
        ? `samples held until the clock is synchronized fill ${queue}`
        : `the database does not keep up and ${queue} is full`;
    this.o.warn?.(`history: ${since} sample(s) dropped unwritten since the last message (${dropped} in all): ${why}`);
    this.toldDropped = dropped;
    this.lastDropLine = now;
  }

  /** A write failed (stats.failedFlushes already counts it). */
  failed(now: number): void {
    if (this.failingSince !== 0) return;
    this.failingSince = now;
    this.failedBefore = this.stats.failedFlushes - 1;
  }

  /** A batch was committed; `queued`: samples still waiting. */
  written(now: number, queued: number): void {
    if (this.failingSince === 0) return;
    const failed = this.stats.failedFlushes - this.failedBefore;
    const seconds = Math.max(0, Math.round((now - this.failingSince) / 100) / 10);
    this.failingSince = 0;
    this.o.info?.(`history: writing again after ${failed} failed write(s) over ${seconds} s; ${queued} queued sample(s) still to write`);
  }
}
