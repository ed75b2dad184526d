// What the history writer does with a sample before the database sees it, on the thread that
// records: the declared series and their filters (on change, deadband), the bounded ring the
// samples wait in, and the hold for a clock that is not yet synchronized.
//
// A clock not yet synchronized (a gateway without a real-time clock boots at 1970 or at the
// image's date until NTP answers) would put samples at wrong times: among, or over, the history
// of earlier runs (two samples of a series in one millisecond keep the later one). OPC UA has no
// StatusCode for "the timestamp is wrong" (Uncertain/Bad speak of the value, and would make the
// aggregates discard good values), so such samples are not stored as they are: the ring holds
// them on the monotonic clock, and once the clock is synchronized they are moved by the step it
// took and stored at their true times. A clock that stays unsynchronized for clockSyncWait (a
// plant without NTP) is then trusted as it is. A full ring drops the oldest held samples, a stop
// before the clock is known drops all of them; both are counted in `dropped`.
import type { DataValue, NodeId, Variant } from "../ua/builtins.js";
import { BuiltinType, IdType, VariantArrayType } from "../ua/builtins.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { nodeIdToString } from "../ua/node-id.js";
import { SampleRing } from "./sample-ring.js";

export interface StorageOptions {
  /** Store a sample only when its value or status changed. */
  readonly onChangeOnly?: boolean;
  /** With onChangeOnly: a numeric change smaller than or equal to this is no change. */
  readonly deadband?: number;
}

export interface HistoryWriterStats {
  /** Samples accepted by record(). */
  recorded: number;
  /** Samples not stored because they did not change. */
  filtered: number;
  /** Samples dropped unflushed because the ring was full (or their value could not be encoded). */
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

export interface SampleQueueOptions {
  /** Ring capacity in samples. */
  readonly queueSize: number;
  /** Default storage of series whose declare() gives none. */
  readonly storage?: StorageOptions;
  /** Time source for samples without timestamps. */
  readonly now?: () => number;
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

/** A declared series as the recording thread knows it. */
export interface QueuedSeries {
  /** Its index in the ring's `series` array and in the writer's tables. */
  readonly index: number;
  /** The NodeId's text form: the series' name in the database. */
  readonly key: string;
  onChangeOnly: boolean;
  deadband: number;
  /** The last value recorded, for on-change and deadband filtering. */
  lastValue: Variant | undefined;
  lastStatus: number;
  /** The same as a number and its type, when it was a numeric scalar (-1: it was not). */
  lastType: number;
  lastNumber: number;
}

export const DEFAULT_CLOCK_SYNC_WAIT = 300_000;

export function newStats(): HistoryWriterStats {
  return { recorded: 0, filtered: 0, dropped: 0, flushed: 0, flushes: 0, failedFlushes: 0, retained: 0, failing: false, waitingForClock: false, restamped: 0 };
}

export class SampleQueue {
  readonly ring: SampleRing;
  readonly stats: HistoryWriterStats = newStats();
  /** Declared series by index. */
  readonly series: QueuedSeries[] = [];
  /** Oldest waiting sample. */
  head = 0;
  /** Samples waiting (those being written included). */
  count = 0;
  /**
   * Samples that left the ring since it was made (written or dropped): the sample at the head
   * is the (removed + 1)th recorded. A writer keeps its place in the stream by it.
   */
  removed = 0;
  /**
   * Samples at the head that a worker is writing: they stay until it answers, so a full ring
   * then drops the newest sample instead of the oldest.
   */
  inFlight = 0;
  /** Samples in the ring are on the monotonic clock, waiting for the system clock. */
  holding: boolean;
  private holdStart: number;
  /** now() - monotonic() when holding began: its change is the clock's step. */
  private holdOffset: number;
  private readonly options: SampleQueueOptions;
  private readonly now: () => number;
  private readonly monotonic: () => number;
  private readonly encode: ((v: Variant) => Uint8Array) | undefined;
  private readonly byNamespace = new Map<number, Map<string | number, QueuedSeries>>();
  private readonly byKey = new Map<string, QueuedSeries>();

  /**
   * `buffer`: the ring's memory (a SharedArrayBuffer a worker reads). `encode`: what values of
   * the Other forms are kept as (see SampleRing.put); absent, the Variants themselves.
   */
  constructor(options: SampleQueueOptions, buffer?: ArrayBufferLike, encode?: (v: Variant) => Uint8Array) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.monotonic = options.monotonic ?? (() => performance.now());
    this.encode = encode;
    this.ring = new SampleRing(SampleQueue.capacity(options), buffer);
    const probe = options.clockSynchronized;
    this.holding = probe !== undefined && (options.clockSyncWait ?? DEFAULT_CLOCK_SYNC_WAIT) > 0 && !probe();
    this.holdStart = this.monotonic();
    this.holdOffset = this.now() - this.holdStart;
    this.stats.waitingForClock = this.holding;
  }

  static capacity(options: { readonly queueSize: number }): number {
    return Math.max(1, options.queueSize);
  }

  /** Declares a series, or gives a declared one its new options; `isNew` for the first time. */
  declare(nodeId: NodeId, options?: StorageOptions): { readonly series: QueuedSeries; readonly isNew: boolean } {
    const key = nodeIdToString(nodeId);
    let s = this.byKey.get(key);
    const isNew = s === undefined;
    if (s === undefined) {
      s = { index: this.series.length, key, onChangeOnly: false, deadband: 0, lastValue: undefined, lastStatus: -1, lastType: -1, lastNumber: NaN };
      this.series.push(s);
      this.byKey.set(key, s);
      if (nodeId.idType === IdType.Numeric || nodeId.idType === IdType.String) {
        let m = this.byNamespace.get(nodeId.namespace);
        if (!m) this.byNamespace.set(nodeId.namespace, (m = new Map()));
        m.set(nodeId.value as string | number, s);
      }
    }
    const o = options ?? this.options.storage ?? {};
    s.onChangeOnly = o.onChangeOnly ?? this.options.storage?.onChangeOnly ?? false;
    s.deadband = o.deadband ?? this.options.storage?.deadband ?? 0;
    // A deadband only means something for on-change storage.
    if (s.deadband > 0) s.onChangeOnly = true;
    return { series: s, isNew };
  }

  /** The declared series of a node, without allocating for numeric and string NodeIds. */
  seriesOf(nodeId: NodeId): QueuedSeries | undefined {
    if (nodeId.idType === IdType.Numeric || nodeId.idType === IdType.String) {
      return this.byNamespace.get(nodeId.namespace)?.get(nodeId.value as string | number);
    }
    return this.byKey.get(nodeIdToString(nodeId));
  }

  /** Filters one sample and queues it; returns at once, never allocates for numeric values. */
  push(s: QueuedSeries, dv: DataValue): void {
    const st = dv.statusCode ?? StatusCodes.Good;
    const v = dv.value;
    if (s.onChangeOnly && st === s.lastStatus && sameValue(s.lastValue, v, s.deadband)) {
      this.stats.filtered++;
      return;
    }
    s.lastValue = v;
    s.lastStatus = st;
    const x = v?.arrayType === VariantArrayType.Scalar ? v.value : undefined;
    s.lastType = typeof x === "number" ? v!.dataType : typeof x === "boolean" ? BuiltinType.Boolean : -1;
    s.lastNumber = typeof x === "number" ? x : x === true ? 1 : 0;
    const i = this.slot();
    if (i < 0) return;
    try {
      this.ring.put(i, s.index, this.stamp(dv.sourceTimestamp ?? dv.serverTimestamp), st, v, this.encode);
    } catch {
      // A value its own type refuses (the codec throws) would fail every batch it is in.
      this.stats.dropped++;
      return;
    }
    this.count++;
  }

  /** push() of a numeric scalar, without a DataValue (HistorySink.recordNumber). */
  pushNumber(s: QueuedSeries, type: number, x: number, st: number, sourceTimestamp: number): void {
    if (s.onChangeOnly && st === s.lastStatus && type === s.lastType) {
      const y = s.lastNumber;
      if (s.deadband > 0 ? Math.abs(x - y) <= s.deadband : x === y || (x !== x && y !== y)) {
        this.stats.filtered++;
        return;
      }
    }
    s.lastValue = undefined;
    s.lastStatus = st;
    s.lastType = type;
    s.lastNumber = x;
    const i = this.slot();
    if (i < 0) return;
    this.ring.putNumber(i, s.index, this.stamp(sourceTimestamp), st, type, x);
    this.count++;
  }

  /** Counts a recorded sample and finds its slot (making room when full); -1: dropped. */
  private slot(): number {
    this.stats.recorded++;
    const cap = this.ring.capacity;
    if (this.count === cap) {
      this.stats.dropped++;
      // Full: the oldest unflushed sample makes room (DESIGN: never unbounded memory), unless a
      // worker is writing it right now.
      if (this.inFlight > 0) return -1;
      this.ring.release(this.head);
      this.head = this.head + 1 === cap ? 0 : this.head + 1;
      this.count--;
      this.removed++;
    }
    const i = this.head + this.count;
    return i >= cap ? i - cap : i;
  }

  /**
   * The time a sample is queued at. Samples are stamped by this gateway's clock as they arrive:
   * moved to the monotonic clock while holding, a stamp made before or after the step (however
   * late the probe notices it) is right.
   */
  private stamp(ts: number | undefined): number {
    const t = ts ?? this.now();
    return this.holding ? t + this.monotonic() - this.now() : t;
  }

  /** The `n` samples at the head were committed (or are given up): their slots are free. */
  remove(n: number): void {
    const ring = this.ring;
    const cap = ring.capacity;
    for (let k = 0, i = this.head; k < n; k++, i = i + 1 === cap ? 0 : i + 1) ring.release(i);
    this.count -= n;
    this.removed += n;
    // An empty ring starts again at its first slot: a light history keeps touching the same few
    // pages of the ring's memory instead of every page of it in turn.
    this.head = this.count === 0 && this.inFlight === 0 ? 0 : (this.head + n) % cap;
  }

  /**
   * Ends the hold once the clock is synchronized (the held samples move by the clock's step) or
   * clockSyncWait has passed without it (they stay at the times the clock gave them).
   */
  clockStep(): void {
    if (!this.holding) return;
    const synced = this.options.clockSynchronized!();
    const wait = this.options.clockSyncWait ?? DEFAULT_CLOCK_SYNC_WAIT;
    if (!synced && this.monotonic() - this.holdStart < wait) return;
    const offset = this.now() - this.monotonic();
    const ts = this.ring.ts;
    const cap = this.ring.capacity;
    for (let k = 0, i = this.head; k < this.count; k++, i = i + 1 === cap ? 0 : i + 1) ts[i] += offset;
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

  /** At a stop while holding: their times are not known, better lost (and counted) than stored at wrong times. */
  dropHeld(): void {
    if (!this.holding) return;
    this.stats.dropped += this.count;
    this.remove(this.count);
  }
}

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
