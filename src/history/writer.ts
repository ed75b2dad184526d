// The history writer: the HistorySink the device namespace feeds (DESIGN: History).
//
// record() never touches the disk: it filters (on change, deadband) and pushes the sample into a
// preallocated ring. One unref'd timer owned by the writer flushes the ring into SQLite, one
// transaction of at most `flushCount` samples per tick, every `flushInterval` or at once when
// `flushCount` samples are waiting; a backlog is written in further ticks so the event loop is
// never held for longer than one batch. When the ring is full the oldest unflushed sample is
// dropped and counted: memory stays bounded when the disk cannot keep up. Retention (by age and
// by size) runs in the same ticks with a row budget per tick.
//
// A clock not yet synchronized (a gateway without a real-time clock boots at 1970 or at the
// image's date until NTP answers) would put samples at wrong times: among, or over, the history
// of earlier runs (two samples of a series in one millisecond keep the later one). OPC UA has no
// StatusCode for "the timestamp is wrong" (Uncertain/Bad speak of the value, and would make the
// aggregates discard good values), so such samples are not stored as they are: the ring holds
// them on the monotonic clock, and once the clock is synchronized they are moved by the step it
// took and stored at their true times. A clock that stays unsynchronized for clockSyncWait (a
// plant without NTP) is then trusted as it is. A full ring drops the oldest held samples, a stop
// before the clock is known drops all of them; both are counted in `dropped`. Age retention
// waits for the clock too: a clock ahead of time would delete recent history.
import type { DataValue, NodeId, Variant } from "../ua/builtins.js";
import { IdType } from "../ua/builtins.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { HistorySink } from "./sink.js";
import { HistoryStore, Series } from "./store.js";

export interface StorageOptions {
  /** Store a sample only when its value or status changed. */
  readonly onChangeOnly?: boolean;
  /** With onChangeOnly: a numeric change smaller than or equal to this is no change. */
  readonly deadband?: number;
}

export interface HistoryWriterOptions {
  /** ms between flushes. */
  readonly flushInterval: number;
  /** Samples that trigger an early flush; also the most samples written per transaction. */
  readonly flushCount: number;
  /** Ring capacity in samples. */
  readonly queueSize: number;
  /** Samples older than this (ms) are deleted; 0 keeps them. */
  readonly maxAge?: number;
  /** Default storage of series whose declare() gives none. */
  readonly storage?: StorageOptions;
  /** ms between moves of staged samples into their tags' tables (default 60 s; see store.ts). */
  readonly compactInterval?: number;
  /** Staged samples that trigger a move before compactInterval (default 50,000). */
  readonly compactCount?: number;
  /** Rows retention may delete per tick (default max(10000, 2 * flushCount)). */
  readonly retentionBudget?: number;
  /** Time source for samples without timestamps and for age retention. */
  readonly now?: () => number;
  readonly onError?: (err: unknown) => void;
  /**
   * Whether the system clock is synchronized (systemd-timesyncd's flag on the appliance), asked
   * once per tick until it says so. Absent: the clock is trusted from the start.
   */
  readonly clockSynchronized?: () => boolean;
  /** ms to hold samples for a clock that is not synchronized (default 5 min); 0: never hold. */
  readonly clockSyncWait?: number;
  /** A clock that never steps, in ms (default performance.now). */
  readonly monotonic?: () => number;
  /** Notices (the clock synchronized, or given up on). */
  readonly log?: (message: string) => void;
}

export interface HistoryWriterStats {
  /** Samples accepted by record(). */
  recorded: number;
  /** Samples not stored because they did not change. */
  filtered: number;
  /** Samples dropped unflushed because the ring was full. */
  dropped: number;
  /** Samples committed to the database. */
  flushed: number;
  flushes: number;
  /** Flushes that failed (the batch stays queued for the next tick). */
  failedFlushes: number;
  /** Rows deleted by retention. */
  retained: number;
  /** The last flush failed (a full disk, a read-only file system): set until one succeeds. */
  failing: boolean;
  /** Samples are held until the clock is synchronized (nothing is stored meanwhile). */
  waitingForClock: boolean;
  /** Held samples stored at times corrected by the clock's step. */
  restamped: number;
}

const AGE_CHECK_INTERVAL = 10_000;
const DEFAULT_CLOCK_SYNC_WAIT = 300_000;

export class HistoryWriter implements HistorySink {
  readonly store: HistoryStore;
  readonly stats: HistoryWriterStats = {
    recorded: 0, filtered: 0, dropped: 0, flushed: 0, flushes: 0, failedFlushes: 0, retained: 0, failing: false, waitingForClock: false, restamped: 0,
  };
  private readonly options: HistoryWriterOptions;
  private readonly now: () => number;
  private readonly monotonic: () => number;
  /** Samples in the ring are on the monotonic clock, waiting for the system clock. */
  private holding: boolean;
  private holdStart: number;
  /** now() - monotonic() when holding began: its change is the clock's step. */
  private holdOffset: number;
  private readonly byNamespace = new Map<number, Map<string | number, Series>>();
  private readonly other = new Map<string, Series>();
  // The ring, as parallel arrays (no object per sample).
  private readonly ringSeries: (Series | undefined)[];
  private readonly ringTs: Float64Array;
  private readonly ringValues: (Variant | undefined)[];
  private readonly ringStatus: Uint32Array;
  private head = 0;
  private count = 0;
  private timer: NodeJS.Timeout | undefined;
  private dueAt = Infinity;
  private closed = false;
  // Retention state.
  private nextAgeCheck = 0;
  private ageCursor = 0;
  private sizeCutoff: number | undefined;
  private trimming = false;
  private compacting = false;
  private lastCompaction: number;

  constructor(store: HistoryStore, options: HistoryWriterOptions) {
    this.store = store;
    this.options = options;
    this.now = options.now ?? Date.now;
    const cap = Math.max(1, options.queueSize);
    this.ringSeries = new Array(cap).fill(undefined);
    this.ringTs = new Float64Array(cap);
    this.ringValues = new Array(cap).fill(undefined);
    this.ringStatus = new Uint32Array(cap);
    this.lastCompaction = this.now();
    this.monotonic = options.monotonic ?? (() => performance.now());
    const probe = options.clockSynchronized;
    this.holding = probe !== undefined && (options.clockSyncWait ?? DEFAULT_CLOCK_SYNC_WAIT) > 0 && !probe();
    this.holdStart = this.monotonic();
    this.holdOffset = this.now() - this.holdStart;
    this.stats.waitingForClock = this.holding;
  }

  /** Samples waiting in the ring. */
  get queued(): number {
    return this.count;
  }

  /** Starts the flush timer. */
  start(): void {
    this.arm(this.options.flushInterval);
  }

  declare(nodeId: NodeId, options?: StorageOptions): Series {
    const s = this.store.ensureSeries(nodeId);
    const o = options ?? this.options.storage ?? {};
    s.onChangeOnly = o.onChangeOnly ?? this.options.storage?.onChangeOnly ?? false;
    s.deadband = o.deadband ?? this.options.storage?.deadband ?? 0;
    // A deadband only means something for on-change storage.
    if (s.deadband > 0) s.onChangeOnly = true;
    if (nodeId.idType === IdType.Numeric || nodeId.idType === IdType.String) {
      let m = this.byNamespace.get(nodeId.namespace);
      if (!m) this.byNamespace.set(nodeId.namespace, (m = new Map()));
      m.set(nodeId.value as string | number, s);
    } else {
      this.other.set(s.key, s);
    }
    return s;
  }

  /** The declared series of a node, without allocating for numeric and string NodeIds. */
  seriesOf(nodeId: NodeId): Series | undefined {
    if (nodeId.idType === IdType.Numeric || nodeId.idType === IdType.String) {
      return this.byNamespace.get(nodeId.namespace)?.get(nodeId.value as string | number);
    }
    const s = this.store.find(nodeId);
    return s && this.other.get(s.key);
  }

  record(nodeId: NodeId, value: DataValue): void {
    const s = this.seriesOf(nodeId);
    if (s) this.recordSeries(s, value);
  }

  /** The fast path: a series handle from declare(). */
  recordSeries(s: Series, dv: DataValue): void {
    if (this.closed) return;
    const st = dv.statusCode ?? StatusCodes.Good;
    const v = dv.value;
    if (s.onChangeOnly && st === s.lastStatus && sameValue(s.lastValue, v, s.deadband)) {
      this.stats.filtered++;
      return;
    }
    s.lastValue = v;
    s.lastStatus = st;
    this.stats.recorded++;
    const cap = this.ringTs.length;
    if (this.count === cap) {
      // Full: the oldest unflushed sample makes room (DESIGN: never unbounded memory).
      this.ringValues[this.head] = undefined;
      this.head = this.head + 1 === cap ? 0 : this.head + 1;
      this.count--;
      this.stats.dropped++;
    }
    let i = this.head + this.count;
    if (i >= cap) i -= cap;
    this.ringSeries[i] = s;
    let ts = dv.sourceTimestamp ?? dv.serverTimestamp ?? this.now();
    // Samples are stamped by this gateway's clock as they arrive: moved to the monotonic clock,
    // a stamp made before or after the step (however late the probe notices it) is right.
    if (this.holding) ts += this.monotonic() - this.now();
    this.ringTs[i] = ts;
    this.ringValues[i] = v;
    this.ringStatus[i] = st;
    this.count++;
    if (this.count >= this.options.flushCount && this.timer !== undefined && !this.holding && !this.stats.failing) this.arm(0);
  }

  /**
   * Writes one batch (at most flushCount samples) in one transaction; returns how many were
   * committed. On failure the batch stays queued and the error goes to onError.
   */
  flush(): number {
    if (this.holding) return 0;
    const n = Math.min(this.count, this.options.flushCount);
    if (n === 0) return 0;
    try {
      this.store.writeBatch(this.ringSeries, this.ringTs, this.ringValues, this.ringStatus, this.head, n);
    } catch (err) {
      this.stats.failedFlushes++;
      this.stats.failing = true;
      // The size cap (max_page_count) was hit before retention caught up: trim first.
      if ((err as { code?: string }).code === "SQLITE_FULL") this.trimming = true;
      this.options.onError?.(err);
      return 0;
    }
    const cap = this.ringTs.length;
    for (let k = 0, i = this.head; k < n; k++, i = i + 1 === cap ? 0 : i + 1) {
      this.ringValues[i] = undefined;
      this.ringSeries[i] = undefined;
    }
    this.head = (this.head + n) % cap;
    this.count -= n;
    this.stats.flushed += n;
    this.stats.flushes++;
    this.stats.failing = false;
    return n;
  }

  /** Writes everything queued (at close, and for tests); stops at the first failing batch. */
  flushAll(): void {
    while (this.count > 0 && this.flush() > 0);
  }

  /**
   * One bounded step of retention: rows older than maxAge, then the oldest rows while the
   * database holds more than its size budget. Returns the rows deleted.
   */
  retain(now = this.now()): number {
    let budget = this.options.retentionBudget ?? Math.max(10_000, 2 * this.options.flushCount);
    const start = budget;
    const maxAge = this.options.maxAge ?? 0;
    const all = [...this.store.allSeries()];
    if (all.length === 0) return 0;
    // No enclosing transaction: every delete commits on its own (store.deleteBefore), so the WAL
    // can be checkpointed between them and stays within its budget.
    if (maxAge > 0 && !this.holding && now >= this.nextAgeCheck) {
      const cutoff = now - maxAge;
      while (budget > 0 && this.ageCursor < all.length) {
        const deleted = this.store.deleteBefore(all[this.ageCursor], cutoff, budget);
        budget -= deleted;
        if (budget > 0) this.ageCursor++;
      }
      if (this.ageCursor >= all.length) {
        this.ageCursor = 0;
        this.nextAgeCheck = now + AGE_CHECK_INTERVAL;
      }
    }
    budget = this.trimToSize(all, budget);
    const deleted = start - budget;
    this.stats.retained += deleted;
    this.shrinkFile();
    return deleted;
  }

  /** Size retention: deletes the oldest samples of every series, a time step at a time. */
  private trimToSize(all: readonly Series[], budget: number): number {
    const fileBudget = this.store.fileBudget;
    if (fileBudget === 0) return budget;
    const used = this.store.usedBytes();
    if (used > fileBudget * 0.9) this.trimming = true;
    while (this.trimming && budget > 0) {
      if (this.store.usedBytes() <= fileBudget * 0.75) {
        this.trimming = false;
        this.sizeCutoff = undefined;
        break;
      }
      if (this.sizeCutoff === undefined) {
        let oldest = Infinity;
        let newest = -Infinity;
        for (const s of all) {
          const o = this.store.oldest(s, false);
          if (o !== undefined && o < oldest) oldest = o;
          const n = this.store.newest(s, false);
          if (n !== undefined && n > newest) newest = n;
        }
        if (oldest === Infinity) {
          this.trimming = false;
          break;
        }
        // A twentieth of the stored time span per step: fair to every series, and bounded.
        this.sizeCutoff = oldest + Math.max(1000, (newest - oldest) / 20);
      }
      let removed = 0;
      for (const s of all) {
        if (budget <= 0) break;
        const d = this.store.deleteBefore(s, this.sizeCutoff, budget);
        removed += d;
        budget -= d;
      }
      if (budget > 0 || removed === 0) this.sizeCutoff = undefined; // this step is done
    }
    return budget;
  }

  /**
   * Gives free pages back when the file itself is over its budget (a database opened with a
   * smaller maxSize than it has grown to). Within the budget free pages stay for reuse: moving
   * pages around to shrink a file that will grow again only wears the card.
   */
  private shrinkFile(): void {
    const fileBudget = this.store.fileBudget;
    if (fileBudget === 0 || this.store.fileBytes() <= fileBudget) return;
    this.trimming = true;
    const free = this.store.freePages();
    if (free > 0) {
      this.store.incrementalVacuum(Math.min(free, 256));
      this.store.applyPageLimit();
    }
  }

  /**
   * Moves staged samples into their tags' tables when due (compactInterval, compactCount), a
   * bounded number per tick until the staging table is empty.
   */
  /** @internal A step of tick(). */
  compactStep(): void {
    const staged = this.store.staged;
    if (staged === 0) return;
    const now = this.now();
    // Under a size cap the staging table may hold an eighth of the budget (rows of ~32 bytes).
    const budget = this.store.fileBudget;
    const threshold = Math.min(this.options.compactCount ?? 50_000, budget > 0 ? Math.max(100, budget / 256) : Infinity);
    if (!this.compacting && staged < threshold && now - this.lastCompaction < (this.options.compactInterval ?? 60_000)) return;
    this.compacting = true;
    this.store.compact(Math.max(20_000, 2 * this.options.flushCount));
    if (this.store.staged === 0) {
      this.compacting = false;
      this.lastCompaction = now;
    }
  }

  /**
   * Ends the hold once the clock is synchronized (the held samples move by the clock's step) or
   * clockSyncWait has passed without it (they stay at the times the clock gave them).
   */
  /** @internal A step of tick(). */
  clockStep(): void {
    if (!this.holding) return;
    const synced = this.options.clockSynchronized!();
    const wait = this.options.clockSyncWait ?? DEFAULT_CLOCK_SYNC_WAIT;
    if (!synced && this.monotonic() - this.holdStart < wait) return;
    const offset = this.now() - this.monotonic();
    const cap = this.ringTs.length;
    for (let k = 0, i = this.head; k < this.count; k++, i = i + 1 === cap ? 0 : i + 1) this.ringTs[i] += offset;
    this.holding = false;
    this.stats.waitingForClock = false;
    const held = `${this.count} held sample(s)${this.stats.dropped > 0 ? `, ${this.stats.dropped} dropped so far` : ""}`;
    if (synced) {
      this.stats.restamped += this.count;
      const step = (offset - this.holdOffset) / 1000;
      this.options.log?.(`history: the clock is synchronized (it moved ${step >= 0 ? "+" : ""}${step.toFixed(3)} s); ${held} stored at corrected times`);
    } else {
      this.options.log?.(`history: the clock is not synchronized after ${Math.round(wait / 1000)} s; storing samples with its time from now on (${held})`);
    }
  }

  /** Flushes what is queued, stops the timer and closes the store. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.holding) {
      // Their times are not known: better lost (and counted) than stored at wrong times.
      this.stats.dropped += this.count;
      this.ringValues.fill(undefined);
      this.ringSeries.fill(undefined);
      this.count = 0;
    }
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
    const backlog = this.count >= this.options.flushCount && !this.holding && !this.stats.failing;
    this.arm(backlog ? 0 : this.options.flushInterval);
  }
}

function tick(w: HistoryWriter): void {
  w.tick();
}

const TICK_STEPS: readonly ((w: HistoryWriter) => unknown)[] = [(w) => w.clockStep(), (w) => w.flush(), (w) => w.compactStep(), (w) => w.retain()];

/** On-change test (Part 8 §7.2 absolute deadband for numbers; equality otherwise). */
function sameValue(a: Variant | undefined, b: Variant | undefined, deadband: number): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  if (a.dataType !== b.dataType || a.arrayType !== b.arrayType) return false;
  const x = a.value;
  const y = b.value;
  if (typeof x === "number" && typeof y === "number") return deadband > 0 ? Math.abs(x - y) <= deadband : x === y || (x !== x && y !== y);
  if (typeof x === "bigint" && typeof y === "bigint") return deadband > 0 ? Math.abs(Number(x - y)) <= deadband : x === y;
  if (Buffer.isBuffer(x) && Buffer.isBuffer(y)) return x.equals(y);
  return x === y;
}
