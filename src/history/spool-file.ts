// The main thread's side of the history's spool (spool.ts has the format, write-thread.ts says
// when the writer spools): appends of the ring's samples not in the file yet, one at a time and
// off the event loop (libuv's pool writes them), and the file's removal once every sample in it
// has left the ring. The ring's place is SampleQueue.removed's count: the file holds the samples
// before `upTo`.
import { appendFile, unlink } from "node:fs/promises";
import { statSync } from "node:fs";
import { spoolRecord } from "./spool.js";
import type { SampleQueue } from "./sample-queue.js";

export class SpoolFile {
  /** The ring's samples before this number (SampleQueue.removed's count) are in the file. */
  private upTo = 0;
  /** The file holds records (of samples stored or not yet). */
  private holds = false;
  /** Series the file names (the first N of the queue's). */
  private names = 0;
  /** now() of the first append since the file was last emptied (0: none since). */
  private since = 0;
  /** An append or the removal is under way. */
  private busy = false;
  /** The append or removal under way, or the last one. */
  private done: Promise<void> = Promise.resolve();
  /** An append failed (a full or read-only disk): the writer keeps its thread instead. */
  failed = false;
  /** A spool of an earlier run is there, for the first worker to store. */
  left: boolean;

  constructor(readonly file: string) {
    let size = 0;
    try {
      size = statSync(file).size;
    } catch {
      // No spool: nothing was left.
    }
    this.left = size > 0;
  }

  /** Samples in the file that have not left the ring (no worker stored them yet). */
  waiting(q: SampleQueue): number {
    return Math.max(0, this.upTo - q.removed);
  }

  /** now() of the oldest append the file holds, 0 when it holds none. */
  get oldest(): number {
    return this.since;
  }

  /** Resolves once the append or removal under way is done. */
  settled(): Promise<void> {
    return this.done;
  }

  /**
   * Appends the ring's samples not in the file yet, unless an append is under way (the next call
   * takes them). `failed(err)` is told once when the file cannot be written.
   */
  append(q: SampleQueue, now: number, failed: (err: unknown) => void): void {
    if (this.busy) return;
    const skip = this.waiting(q);
    const n = q.count - skip;
    if (n <= 0) return;
    const names = q.series.length;
    const record = spoolRecord(q.ring, (q.head + skip) % q.ring.capacity, n, q.series, this.names);
    const upTo = q.removed + q.count;
    this.work(
      appendFile(this.file, record).then(
        () => {
          this.upTo = upTo;
          this.names = names;
          this.holds = true;
          if (this.since === 0) this.since = now;
        },
        (err: unknown) => {
          this.failed = true;
          failed(err);
        },
      ),
    );
  }

  /** Removes the file once every sample in it left the ring (stored, or dropped and counted). */
  empty(q: SampleQueue): void {
    if (!this.holds || this.busy || this.waiting(q) > 0) return;
    this.work(
      unlink(this.file).then(
        () => this.emptied(),
        (err: unknown) => {
          // Already gone; or kept (a read-only disk): its samples are stored, and a crash stores them again, the same rows.
          if ((err as NodeJS.ErrnoException).code === "ENOENT") this.emptied();
        },
      ),
    );
  }

  private emptied(): void {
    this.holds = false;
    this.names = 0;
    this.since = 0;
  }

  private work(w: Promise<void>): void {
    this.busy = true;
    this.done = w.finally(() => {
      this.busy = false;
    });
  }
}
