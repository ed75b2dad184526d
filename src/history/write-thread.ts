// The gateway's history writer: the HistorySink the device tags feed, with every SQLite call on
// a worker thread (write-worker.ts). On the event loop a sample costs a filter and a few stores
// into the ring's typed arrays (sample-queue.ts), which sit on a SharedArrayBuffer the worker
// reads as it is: a batch goes over as two numbers (where it starts, how many), not as a copy.
// Only values that are not numeric scalars (strings, arrays) travel as their encoded bytes.
//
// One unref'd timer: a tick every flushInterval, or at once when flushCount samples wait; one
// batch of at most flushCount samples per tick, in one transaction, then a step of compaction
// and retention (maintenance.ts); a backlog is written in further ticks. A batch stays in the
// ring until the worker says it is committed, so a crash loses at most what was not yet
// committed and a failed write (a full disk) is tried again at the next tick; the ring is
// bounded and drops (and counts) the oldest sample when full, the newest while the oldest is
// being written. One tick is in the worker at a time. A worker that dies is started again at
// the next tick.
//
// With a spool file (spool.ts; the gateway's history has one), the worker runs only while it is
// needed: a gateway whose history is light (the shipped map: one tag a second) would keep an
// isolate of its own, SQLite and their memory for a few rows a second. While no worker runs, each
// tick appends the ring's new samples to the spool instead (off the event loop), so that a crash
// still loses at most flushInterval's samples; they stay in the ring too. A worker starts when
// flushCount samples wait, when the oldest spooled sample is drainInterval old, for a flushAll or
// the close, and stores what the ring holds as above; the spool is then emptied. It ends once it
// has lingered `linger` ms without such a need, unless samples come at a rate that would start it
// again before drainInterval (then it stays, as without a spool). A spool left by a crash is
// stored by the first worker, which then removes the file. The close spools what is not in the
// file yet before it starts the worker: a stop cut short (systemd's stop timeout) loses nothing.
//
// A HistoryRead never starts a worker nor waits for one to start or open (prepareRead): a
// worker's start is an isolate's (seconds of a slow CPU), its open checks the database or stores
// an earlier run's spool first. It reads the staging table and the spool beside the tags' tables
// instead (read-overlay.ts).
import type { ResourceLimits } from "node:worker_threads";
import { BinaryWriter } from "../ua/binary-writer.js";
import { encodeVariant } from "../ua/builtin-codec.js";
import type { BuiltinType, DataValue, NodeId, StatusCode, Variant } from "../ua/builtins.js";
import type { MaintenanceOptions } from "./maintenance.js";
import { SampleQueue, type HistoryWriterStats, type SampleQueueOptions, type StorageOptions } from "./sample-queue.js";
import { SampleRing } from "./sample-ring.js";
import type { HistorySink } from "./sink.js";
import type { HistoryStoreOptions } from "./store.js";
import { WorkerLink, faultError } from "../worker-link.js";
import type { WriteReply, WriteRequest, WriteWorkerData } from "./write-messages.js";
import { builtFile } from "../worker-file.js";
import type { DamagedFile } from "../storage/damaged.js";
import { WriteNotices } from "./write-notices.js";
import { SpoolFile } from "./spool-file.js";

export type { WriteReply, WriteRequest, WriteWorkerData } from "./write-messages.js";
export type { HistoryWriterStats, StorageOptions } from "./sample-queue.js";

export interface WriteThreadOptions extends SampleQueueOptions, MaintenanceOptions {
  /** ms between flushes. */
  readonly flushInterval: number;
  /** Samples that trigger an early flush; also the most samples written per transaction. */
  readonly flushCount: number;
  readonly onError?: (err: unknown) => void;
  /** The database file (created and set up by the caller). */
  readonly file: string;
  readonly store?: Pick<HistoryStoreOptions, "maxSize" | "cacheSize">;
  /** The worker's heap bounds (the default: V8's). */
  readonly resourceLimits?: ResourceLimits;
  /**
   * The database holds no series yet (the caller checked): the worker is started with the first
   * series declared, not before. Until then it would have nothing to write and nothing to keep
   * within the retention limits, and its thread (an isolate, SQLite) is memory of a gateway
   * whose map keeps no history.
   */
  readonly untilFirstSeries?: boolean;
  /** A damaged database was moved aside (and a new one started) by the worker. */
  readonly onDamaged?: (d: DamagedFile) => void;
  /**
   * ms close() waits for the first worker's check of the database (default STOP_CHECK_WAIT)
   * before it ends the worker and gives up what is queued (what the spool holds stays for the
   * next start): the check of a large file on an SD card may take longer than a stop may. With a
   * spool that holds every queued sample, also how long it waits for a worker it had to start.
   */
  readonly stopCheckWait?: number;
  /** Information (writing again after failed writes); warnings (dropped samples) go to `log`. */
  readonly info?: (message: string) => void;
  /**
   * The spool file (spool.ts): with it the worker runs only while it is needed (see the top of
   * this file); without it, from start() (or the first series) to close().
   */
  readonly spool?: string;
  /** ms a spooled sample waits at most before a worker stores it (default DRAIN_INTERVAL). */
  readonly drainInterval?: number;
  /** ms a worker stays after the last need of it (default LINGER). */
  readonly linger?: number;
  /** The worker's module (default: the built write-worker.ts); tests start it through one of their own. */
  readonly workerFile?: URL;
}

/** Default WriteThreadOptions.stopCheckWait. */
export const STOP_CHECK_WAIT = 5000;
/** Default WriteThreadOptions.drainInterval: a worker's start (tens of ms of CPU) every five minutes at most. */
export const DRAIN_INTERVAL = 300_000;
/** Default WriteThreadOptions.linger: a need that comes again within it (a flushAll, flushCount samples) finds the worker. */
export const LINGER = 10_000;

export class HistoryWriteThread implements HistorySink {
  readonly stats: HistoryWriterStats;
  private readonly options: WriteThreadOptions;
  private readonly now: () => number;
  private readonly queue: SampleQueue;
  private readonly ringMemory: SharedArrayBuffer;
  private link: WorkerLink<WriteRequest, WriteReply> | undefined;
  /** A tick is in the worker. */
  private ticking = false;
  /** Rows the worker has staged, not yet moved to their tables (-1: not known yet). */
  private staged = -1;
  private timer: NodeJS.Timeout | undefined;
  private dueAt = Infinity;
  private started = false;
  private closed = false;
  /** A worker has opened the database: the ones started after it do not check it again. */
  private checked = false;
  /** Resolves when the worker answers its "open" (the check done, or failed). */
  private opening: Promise<void> = Promise.resolve();
  private openDone: (() => void) | undefined;
  /** close() ended the worker during its check: what it answers now is not news. */
  private abandoned = false;
  private readonly notices: WriteNotices;
  /** The spool (spool-file.ts), when the writer has one. */
  private readonly spool: SpoolFile | undefined;
  /** now() until which the worker stays, and the recorded count when it was last needed. */
  private neededUntil = 0;
  private neededAt = { time: 0, recorded: 0 };
  /** A worker ended for being idle, until it has exited. */
  private retiring: Promise<void> | undefined;
  /** The worker has answered its "open": it writes and compacts at once. */
  private ready = false;
  private readonly encoder = new BinaryWriter(Buffer.allocUnsafe(256), 16 << 20);
  private readonly encode = (v: Variant): Uint8Array => {
    const w = this.encoder.reset();
    encodeVariant(w, v);
    return new Uint8Array(w.buffer.subarray(0, w.pos));
  };

  constructor(options: WriteThreadOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.ringMemory = new SharedArrayBuffer(SampleRing.bytes(SampleQueue.capacity(options)));
    this.queue = new SampleQueue(options, this.ringMemory, this.encode);
    this.stats = this.queue.stats;
    this.notices = new WriteNotices(this.stats, { warn: options.log, info: options.info, queueSize: this.queue.ring.capacity });
    this.spool = options.spool === undefined ? undefined : new SpoolFile(options.spool);
  }

  /** Worker threads running (0 or 1). */
  get threads(): number {
    return this.link?.alive ? 1 : 0;
  }

  /** Samples waiting in the ring (the batch being written included). */
  get queued(): number {
    return this.queue.count;
  }

  /** Starts the worker and the flush timer. */
  start(): void {
    if (this.closed) return;
    this.started = true;
    if (!this.waiting()) this.worker();
    this.arm(this.options.flushInterval);
  }

  /** No worker yet, and none needed: no series declared in a database that holds none, and no spool left. */
  private waiting(): boolean {
    return this.options.untilFirstSeries === true && this.link === undefined && this.queue.series.length === 0 && this.spool?.left !== true;
  }

  declare(nodeId: NodeId, options?: StorageOptions): void {
    const { series, isNew } = this.queue.declare(nodeId, options);
    if (!isNew) return;
    if (this.link?.alive) this.send(this.link, { op: "declare", index: series.index, key: series.key }, this.declared);
    // With a spool, once the writer runs (started, or a worker ran), a worker starts for it and
    // declares it: a read finds the series at once, its samples in the spool (a reload is rare;
    // the first series of a new database is one).
    else if (this.spool !== undefined && (this.started || this.checked) && !this.closed) this.worker();
  }

  private readonly declared = (_r: WriteReply | undefined, err: Error | undefined): void => {
    // The worker keeps the declaration and creates the series before its next batch.
    if (err && !this.abandoned) this.options.onError?.(err);
  };

  record(nodeId: NodeId, value: DataValue): void {
    if (this.closed) return;
    const s = this.queue.seriesOf(nodeId);
    if (s === undefined) return;
    this.queue.push(s, value);
    if (this.queue.count >= this.options.flushCount && this.timer !== undefined && !this.queue.holding && !this.stats.failing) this.arm(0);
  }

  recordNumber(nodeId: NodeId, dataType: BuiltinType, value: number, statusCode: StatusCode, sourceTimestamp: number): void {
    if (this.closed) return;
    const s = this.queue.seriesOf(nodeId);
    if (s === undefined) return;
    this.queue.pushNumber(s, dataType, value, statusCode, sourceTimestamp);
    if (this.queue.count >= this.options.flushCount && this.timer !== undefined && !this.queue.holding && !this.stats.failing) this.arm(0);
  }

  /**
   * Writes everything queued and waits for it without the event loop (tools and tests; the
   * gateway's own flushes are the timer's); stops at the first failing batch.
   */
  flushAll(): void {
    if (this.closed) return;
    const link = this.worker();
    for (;;) {
      if (this.ticking) link.waitFor(this.lastTick);
      const flushedBefore = this.stats.flushed;
      if (this.queue.count === 0 || this.queue.holding) return;
      link.waitFor(this.tick());
      if (this.stats.flushed === flushedBefore) return;
    }
  }

  /**
   * One tick (the clock, a batch, a step of compaction and retention), waited for without the
   * event loop: tools and tests (the gateway's ticks are the timer's). In the worker, also with a spool.
   */
  tickNow(): void {
    if (this.closed) return;
    if (this.spool !== undefined) this.worker();
    if (this.ticking) this.link!.waitFor(this.lastTick);
    this.timerTick();
    if (this.ticking) this.link!.waitFor(this.lastTick);
  }

  /**
   * Before a HistoryRead: a worker that runs and has opened the database moves what it staged
   * into the tags' tables. Resolves to true when the tables then hold every flushed sample;
   * false when the read must look at the staging table and the spool as well (read-overlay.ts):
   * no worker runs (none is started for a read), it has not opened the database yet, or samples
   * wait in the spool.
   */
  async prepareRead(): Promise<boolean> {
    const link = this.link;
    if (this.closed || link === undefined || !link.alive || !this.ready || this.spooled > 0 || this.spool?.left === true) return false;
    if (!this.needsCompaction()) return true;
    const r = await new Promise<WriteReply>((resolve, reject) => this.send(link, { op: "compact" }, (r, err) => (err ? reject(err) : resolve(r!))));
    this.noteStaged(r);
    return true;
  }

  /** prepareRead() without the event loop (the read-only store of tools and tests). */
  prepareReadSync(): void {
    if (this.closed) return;
    if (this.spooled > 0) {
      this.need();
      this.flushAll();
    }
    if (!this.needsCompaction()) return;
    const r = this.worker().callSync({ op: "compact" });
    this.noteDamaged(r);
    this.noteStaged(r);
  }

  private needsCompaction(): boolean {
    return this.staged !== 0 || this.ticking;
  }

  /** Samples appended to the spool that no worker has stored yet (tools and tests). */
  get spooled(): number {
    return this.spool?.waiting(this.queue) ?? 0;
  }

  /** Resolves once the spool's append or emptying under way is done (tools and tests). */
  spoolSettled(): Promise<void> {
    return this.spool?.settled() ?? Promise.resolve();
  }

  /** The worker is needed now: it stays at least `linger` ms from now. */
  private need(): void {
    const now = this.now();
    this.neededUntil = now + (this.options.linger ?? LINGER);
    this.neededAt = { time: now, recorded: this.stats.recorded };
  }

  /**
   * Samples come at a rate at which a worker would start again before drainInterval: it is not
   * worth ending (measured since it was last needed).
   */
  private busy(now: number): boolean {
    const elapsed = now - this.neededAt.time;
    if (elapsed <= 0) return true;
    return ((this.stats.recorded - this.neededAt.recorded) / elapsed) * (this.options.drainInterval ?? DRAIN_INTERVAL) >= this.options.flushCount;
  }

  /**
   * With a spool and no worker running: appends the ring's samples not in the spool yet to it
   * and returns true; false when a worker must store them now (tick() starts one).
   */
  private spooling(): boolean {
    const o = this.options;
    const spool = this.spool;
    if (spool === undefined || spool.failed || spool.left || this.link?.alive) return false;
    const q = this.queue;
    const now = this.now();
    if (!q.holding && (q.count >= o.flushCount || (spool.oldest > 0 && now - spool.oldest >= (o.drainInterval ?? DRAIN_INTERVAL)))) {
      this.need();
      return false;
    }
    this.arm(o.flushInterval);
    // Held samples are on the monotonic clock: they are spooled once the clock is known.
    if (q.holding) return true;
    spool.append(q, now, (err) => {
      o.log?.(`history: the spool ${spool.file} cannot be written (${err instanceof Error ? err.message : String(err)}); the history's thread keeps running instead`);
      this.arm(0);
    });
    return true;
  }

  /** After a tick's answer, with a spool: empties the spool of stored samples, ends a worker that is not needed. */
  private afterTick(): void {
    const spool = this.spool;
    if (spool === undefined) return;
    spool.empty(this.queue);
    if (this.closed || spool.failed || spool.left || this.queue.count > 0 || this.stats.failing || this.link === undefined) return;
    const now = this.now();
    if (now < this.neededUntil) return;
    if (this.busy(now)) {
      this.need();
      return;
    }
    this.retire();
  }

  /** Ends the worker once it has closed the database (moving what it staged); the next need starts another. */
  private retire(): void {
    const link = this.link!;
    this.link = undefined;
    const ended = (async (): Promise<void> => {
      try {
        const r = await link.call({ op: "close" });
        this.noteDamaged(r);
        await link.ended();
        if (this.link === undefined) this.staged = 0;
      } catch (err) {
        this.options.onError?.(err);
        await link.terminate();
      }
    })();
    const retiring: Promise<void> = ended.finally(() => {
      if (this.retiring === retiring) this.retiring = undefined;
    });
    this.retiring = retiring;
  }

  private noteStaged(r: WriteReply): void {
    if (r.staged !== undefined && !this.ticking) this.staged = r.staged;
  }

  /** Writes what is queued, moves the staged samples, closes the database and ends the worker. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const wait = this.options.stopCheckWait ?? STOP_CHECK_WAIT;
    if (this.link?.alive && !this.checked && !(await this.openedWithin(wait))) {
      // The check only reads (storage/sqlite-check.ts): ending it leaves the file as it was.
      this.abandoned = true;
      await this.spool?.settled();
      this.queue.dropHeld();
      await this.spoolRest();
      const kept = this.spooled;
      const left = this.queue.count - kept;
      this.stats.dropped += left;
      this.queue.remove(this.queue.count);
      await this.link.terminate();
      this.link = undefined;
      this.options.log?.(`history: stopped while the database was being checked; ${kept > 0 ? `${kept} sample(s) stay in ${this.spool!.file} for the next start, ` : ""}${left} queued sample(s) not written (counted as dropped)`);
      return;
    }
    while (this.ticking) await this.tickDone();
    await this.spool?.settled();
    this.queue.dropHeld();
    await this.retiring;
    if (this.link === undefined && this.queue.count === 0 && this.spool?.left !== true) {
      await this.emptySpool();
      return;
    }
    const starting = !this.link?.alive;
    if (starting) await this.spoolRest();
    const link = this.worker();
    const stored = this.storeAndEnd(link);
    // The spool holds every queued sample: the next start stores them if this stop cannot (a
    // worker's start and writes on a slow CPU may outlast the stop systemd allows).
    if (starting && this.spool !== undefined && this.spooled >= this.queue.count && !(await settlesWithin(stored, wait))) {
      this.abandoned = true;
      await link.terminate();
      await stored;
      this.link = undefined;
      this.options.log?.(`history: stopped before the history's thread had stored what waits in ${this.spool.file}; the next start stores it`);
      return;
    }
    await stored;
    this.link = undefined;
    await this.emptySpool();
  }

  /** Writes what is queued, then has the worker move what it staged, close the database and end. */
  private async storeAndEnd(link: WorkerLink<WriteRequest, WriteReply>): Promise<void> {
    while (this.queue.count > 0) {
      const flushedBefore = this.stats.flushed;
      this.tick();
      await this.tickDone();
      if (this.stats.flushed === flushedBefore) break;
    }
    try {
      this.noteDamaged(await link.call({ op: "close" }));
      await link.ended();
    } catch (err) {
      if (!this.abandoned) this.options.onError?.(err);
      await link.terminate();
    }
  }

  /** Appends what the ring holds beyond the spool to it, when the spool is in use, and waits for it. */
  private async spoolRest(): Promise<void> {
    const spool = this.spool;
    if (spool === undefined || spool.failed || spool.left || this.queue.holding) return;
    await spool.settled();
    spool.append(this.queue, this.now(), (err) => this.options.onError?.(err));
    await spool.settled();
  }

  /** Removes the spool (every sample in it has left the ring by now) and waits for it. */
  private async emptySpool(): Promise<void> {
    this.spool?.empty(this.queue);
    await this.spool?.settled();
  }

  private lastTick = 0;
  private tickWaiters: (() => void)[] = [];

  private tickDone(): Promise<void> {
    return this.ticking ? new Promise((resolve) => this.tickWaiters.push(resolve)) : Promise.resolve();
  }

  /** The worker, started when needed (again, after one died). */
  private worker(): WorkerLink<WriteRequest, WriteReply> {
    if (this.link?.alive) return this.link;
    const o = this.options;
    const data: WriteWorkerData = {
      file: o.file,
      store: { maxSize: o.store?.maxSize, cacheSize: o.store?.cacheSize },
      maintenance: { flushCount: o.flushCount, maxAge: o.maxAge, compactInterval: o.compactInterval, compactCount: o.compactCount, retentionBudget: o.retentionBudget },
      ring: this.ringMemory,
      capacity: this.queue.ring.capacity,
      check: !this.checked,
      spool: o.spool,
    };
    const link = new WorkerLink<WriteRequest, WriteReply>(o.workerFile ?? builtFile("history/write-worker"), data, {
      name: "history write worker",
      resourceLimits: o.resourceLimits,
      onExit: (err) => this.options.onError?.(err),
    });
    this.link = link;
    this.staged = -1;
    this.ready = false;
    if (o.spool !== undefined) this.need();
    // First: the worker checks and opens the database (and stores a spool left by an earlier run)
    // before anything else reaches it.
    this.opening = new Promise((resolve) => (this.openDone = resolve));
    this.send(link, { op: "open", replay: this.spool?.left === true }, this.opened);
    for (const s of this.queue.series) this.send(link, { op: "declare", index: s.index, key: s.key }, this.declared);
    return link;
  }

  private readonly opened = (r: WriteReply | undefined, err: Error | undefined): void => {
    this.openDone?.();
    if (this.abandoned) return;
    if (err) {
      this.options.onError?.(err);
      return;
    }
    this.checked = true;
    this.ready = true;
    if (this.spool?.left === true) {
      this.spool.left = false;
      if ((r?.replayed ?? 0) > 0) this.options.info?.(`history: stored ${r!.replayed} sample(s) that the last run had spooled and not yet written`);
    }
  };

  /** Whether the worker answered its "open" within `ms`. */
  private async openedWithin(ms: number): Promise<boolean> {
    return (await settlesWithin(this.opening, ms)) && this.checked;
  }

  /** link.send, with the files the worker moved aside taken from its answer first. */
  private send(link: WorkerLink<WriteRequest, WriteReply>, request: WriteRequest, onReply: (r: WriteReply | undefined, err: Error | undefined) => void): number {
    return link.send(request, (r, err) => {
      this.noteDamaged(r);
      onReply(r, err);
    });
  }

  private noteDamaged(r: WriteReply | undefined): void {
    if (r?.damaged === undefined) return;
    // The reader's connection may be on the moved file: it is told before anyone reads again.
    for (const d of r.damaged) this.options.onDamaged?.(d);
  }

  private arm(delay: number): void {
    if (this.closed || !this.started) return;
    const due = this.now() + delay;
    if (this.timer !== undefined && this.dueAt <= due) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.dueAt = due;
    this.timer = setTimeout(onTimer, delay, this);
    this.timer.unref();
  }

  /** @internal The timer's work: the clock, then one batch and a maintenance step in the worker. */
  timerTick(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.dueAt = Infinity;
    if (this.closed) return;
    // The answer re-arms the timer.
    if (this.ticking) return;
    try {
      this.queue.clockStep();
    } catch (err) {
      this.options.onError?.(err);
    }
    this.notices.tick(this.now());
    if (this.waiting()) {
      this.arm(this.options.flushInterval);
      return;
    }
    if (this.spooling()) return;
    this.tick();
  }

  /** Sends one tick (a batch, when not holding); returns its seq. */
  private tick(): number {
    const q = this.queue;
    const n = q.holding ? 0 : Math.min(q.count, this.options.flushCount);
    q.inFlight = n;
    this.ticking = true;
    let slots: number[] | undefined;
    let values: Uint8Array[] | undefined;
    const other = q.ring.other;
    if (n > 0 && other.size > 0) {
      const cap = q.ring.capacity;
      slots = [];
      values = [];
      for (const [slot, bytes] of other) {
        if ((slot - q.head + cap) % cap < n) {
          slots.push(slot);
          values.push(bytes as Uint8Array);
        }
      }
    }
    const request: WriteRequest = { op: "tick", from: q.head, count: n, slots, values, now: this.now(), holdAge: q.holding };
    this.lastTick = this.send(this.worker(), request, (r, err) => this.ticked(n, r, err));
    return this.lastTick;
  }

  private ticked(n: number, r: WriteReply | undefined, err: Error | undefined): void {
    const q = this.queue;
    q.inFlight = 0;
    this.ticking = false;
    if (err || r === undefined) {
      // The worker died: the batch is still in the ring, for the next worker.
      if (n > 0 && !this.abandoned) this.failed(err ?? new Error("history worker gave no answer"));
    } else {
      if (r.flushFault) this.failed(faultError(r.flushFault));
      else if (n > 0) {
        q.remove(n);
        this.stats.flushed += n;
        this.stats.flushes++;
        this.stats.failing = false;
        this.notices.written(this.now(), q.count);
      }
      for (const f of r.faults ?? []) this.options.onError?.(faultError(f));
      this.stats.retained += r.retained ?? 0;
      if (r.staged !== undefined) this.staged = r.staged;
    }
    const waiters = this.tickWaiters;
    this.tickWaiters = [];
    for (const w of waiters) w();
    this.afterTick();
    // A backlog is written in further ticks at once; held samples and failing writes (a full
    // disk) wait for the next interval instead of spinning.
    const backlog = q.count >= this.options.flushCount && !q.holding && !this.stats.failing;
    this.arm(backlog ? 0 : this.options.flushInterval);
  }

  private failed(err: Error): void {
    this.stats.failedFlushes++;
    this.stats.failing = true;
    this.notices.failed(this.now());
    this.options.onError?.(err);
  }
}

/** Whether `p` settles within `ms`. */
async function settlesWithin(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(resolve, ms, false)));
  const settled = await Promise.race([p.then(() => true as const), late]);
  clearTimeout(timer);
  return settled;
}

function onTimer(w: HistoryWriteThread): void {
  w.timerTick();
}
