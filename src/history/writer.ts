// The history writer on the thread that writes the database: the HistorySink of tools, tests
// and the bench's fill, and the model the gateway's threaded writer (write-thread.ts) keeps to.
//
// record() never touches the disk: it filters (on change, deadband) and pushes the sample into a
// preallocated ring (sample-queue.ts, which also holds samples for a clock not yet
// synchronized). One unref'd timer owned by the writer flushes the ring into SQLite, one
// transaction of at most `flushCount` samples per tick, every `flushInterval` or at once when
// `flushCount` samples are waiting; a backlog is written in further ticks. When the ring is full
// the oldest unflushed sample is dropped and counted: memory stays bounded when the disk cannot
// keep up. Retention (by age and by size) and the moves of staged samples run in the same ticks
// with a row budget per tick (maintenance.ts). Age retention waits for the clock too: a clock
// ahead of time would delete recent history.
import type { BuiltinType, DataValue, NodeId, StatusCode } from "../ua/builtins.js";
import { StoreMaintenance, type MaintenanceOptions } from "./maintenance.js";
import { SampleQueue, type HistoryWriterStats, type SampleQueueOptions, type StorageOptions } from "./sample-queue.js";
import type { HistorySink } from "./sink.js";
import type { HistoryStore, Series } from "./store.js";

export type { HistoryWriterStats, StorageOptions } from "./sample-queue.js";

export interface HistoryWriterOptions extends SampleQueueOptions, MaintenanceOptions {
  /** ms between flushes. */
  readonly flushInterval: number;
  /** Samples that trigger an early flush; also the most samples written per transaction. */
  readonly flushCount: number;
  readonly onError?: (err: unknown) => void;
}

export class HistoryWriter implements HistorySink {
  readonly store: HistoryStore;
  readonly stats: HistoryWriterStats;
  private readonly options: HistoryWriterOptions;
  private readonly now: () => number;
  private readonly queue: SampleQueue;
  private readonly maintenance: StoreMaintenance;
  /** The store's series, by the queue's series index. */
  private readonly series: Series[] = [];
  private timer: NodeJS.Timeout | undefined;
  private dueAt = Infinity;
  private closed = false;

  constructor(store: HistoryStore, options: HistoryWriterOptions) {
    this.store = store;
    this.options = options;
    this.now = options.now ?? Date.now;
    this.queue = new SampleQueue(options);
    this.stats = this.queue.stats;
    this.maintenance = new StoreMaintenance(store, options, this.now());
  }

  /** Samples waiting in the ring. */
  get queued(): number {
    return this.queue.count;
  }

  /** Starts the flush timer. */
  start(): void {
    this.arm(this.options.flushInterval);
  }

  declare(nodeId: NodeId, options?: StorageOptions): Series {
    const { series } = this.queue.declare(nodeId, options);
    let s = this.series[series.index];
    if (s === undefined) this.series[series.index] = s = this.store.ensureSeries(nodeId);
    return s;
  }

  /** The declared series of a node, without allocating for numeric and string NodeIds. */
  seriesOf(nodeId: NodeId): Series | undefined {
    const q = this.queue.seriesOf(nodeId);
    return q && this.series[q.index];
  }

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
   * Writes one batch (at most flushCount samples) in one transaction; returns how many were
   * committed. On failure the batch stays queued and the error goes to onError.
   */
  flush(): number {
    const q = this.queue;
    if (q.holding) return 0;
    const n = Math.min(q.count, this.options.flushCount);
    if (n === 0) return 0;
    try {
      this.store.writeBatch(q.ring, this.series, q.head, n);
    } catch (err) {
      this.failed(err);
      return 0;
    }
    q.remove(n);
    this.stats.flushed += n;
    this.stats.flushes++;
    this.stats.failing = false;
    return n;
  }

  private failed(err: unknown): void {
    this.stats.failedFlushes++;
    this.stats.failing = true;
    if ((err as { code?: string }).code === "SQLITE_FULL") this.maintenance.full();
    this.options.onError?.(err);
  }

  /** Writes everything queued (at close, and for tests); stops at the first failing batch. */
  flushAll(): void {
    while (this.queue.count > 0 && this.flush() > 0);
  }

  /**
   * One bounded step of retention: rows older than maxAge, then the oldest rows while the
   * database holds more than its size budget. Returns the rows deleted.
   */
  retain(now = this.now()): number {
    const deleted = this.maintenance.retain(now, this.queue.holding);
    this.stats.retained += deleted;
    return deleted;
  }

  /** @internal A step of tick(). */
  compactStep(): void {
    this.maintenance.compactStep(this.now());
  }

  /** @internal A step of tick(). */
  clockStep(): void {
    this.queue.clockStep();
  }

  /** Flushes what is queued, stops the timer and closes the store. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.dropHeld();
    try {
      if (this.store.open) {
        this.flushAll();
        this.store.compact();
      }
    } finally {
      this.store.close();
    }
  }

  private arm(delay: number): void {
    if (this.closed) return;
    const due = this.now() + delay;
    if (this.timer !== undefined && this.dueAt <= due) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.dueAt = due;
    this.timer = setTimeout(tick, delay, this);
    this.timer.unref();
  }

  /** @internal The timer's work: one batch, one retention step, re-arm. */
  tick(): void {
    this.timer = undefined;
    this.dueAt = Infinity;
    // Each step on its own: a full disk failing one must not keep the others (which make room)
    // from running.
    for (const step of TICK_STEPS) {
      try {
        step(this);
      } catch (err) {
        this.options.onError?.(err);
      }
    }
    // A backlog is written in further ticks at once; held samples and failing writes (a full
    // disk) wait for the next interval instead of spinning the event loop.
    const backlog = this.queue.count >= this.options.flushCount && !this.queue.holding && !this.stats.failing;
    this.arm(backlog ? 0 : this.options.flushInterval);
  }
}

function tick(w: HistoryWriter): void {
  w.tick();
}

const TICK_STEPS: readonly ((w: HistoryWriter) => unknown)[] = [(w) => w.clockStep(), (w) => w.flush(), (w) => w.compactStep(), (w) => w.retain()];
