// The value cache (DESIGN: poll group -> value cache -> monitored items, history, northbound):
// the latest value of every tag, in slots, and the one subscribe interface its consumers use.
//
// A slot is one tag (or one memory variable fed at a fixed rate). Numbers live in typed arrays
// (type, value, status, source time): a poll of 16,384 counters writes 16,384 numbers and
// allocates nothing; subscribers get them as numbers (ValueSink.offerNumber). Values that are
// not plain numbers are kept as the DataValue they came in. Read asks for a DataValue (get):
// it is made once per change and reused until the next one.
//
// Per slot, 10,000 tags: the typed arrays 36 bytes, the DataValue and subscriber lists 8 each,
// the key 8 and its Map entry ~46. The last DataValue doubles as the
// keeper of the current number's Variant (see `fresh`), so no array of Variants is needed.
//
// Slots are keyed (device and tag name, or a namespace's NodeId): a reload that keeps a tag
// keeps its slot, its value and its subscribers, even when the tag's node is replaced. A slot
// whose rate changes, or that is released, tells its subscribers (SlotSubscriber.sourceChanged)
// so that sampling can regroup them.
import { BuiltinType, VariantArrayType, type DataValue, type StatusCode, type Variant } from "../ua/builtins.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { SlotSubscriber, ValueSink } from "./value-sink.js";

/**
 * What the cache knows of a slot's source. Kept in typed arrays, not as the object given to
 * acquire: an object per tag would be 56 bytes of heap each for as long as the slot lives.
 */
export interface SlotInfo {
  /** BuiltinType of the values the source produces. */
  readonly builtinType: BuiltinType;
  /** ms between two values from the source (a poll group's interval); 0 when not fed at a rate. */
  readonly rate: number;
}

/** Sees every change of every slot, e.g. to batch a device's changes per poll cycle. */
export interface CacheObserver {
  changed(slot: number): void;
  /** A poll cycle (or a write's read-back) of `device` handed on all its values. */
  batchEnd(device: string): void;
}

const enum Kind {
  /** No value yet (waiting, or never read): only a status. */
  None = 0,
  Number = 1,
  /** The DataValue in `objects`. */
  Object = 2,
  /** Released. */
  Free = 3,
}

const WAITING = StatusCodes.BadWaitingForInitialData;
const TWO_32 = 4294967296;

/** Booleans and whole numbers 0..255 share one frozen Variant per type and value (alarms, states, idle registers). */
const SHARED_MAX = 256;
const shared: (Variant[] | undefined)[] = [];

/** A Variant of a number as the source's type gives it (Boolean, bigint for 64-bit integers). */
export function numberVariant(type: BuiltinType, n: number): Variant {
  if (type === BuiltinType.Boolean) return sharedVariant(type, n !== 0 ? 1 : 0, n !== 0);
  if (type === BuiltinType.Int64 || type === BuiltinType.UInt64) return { dataType: type, arrayType: VariantArrayType.Scalar, value: BigInt(n) };
  // 1 / n > 0 keeps -0 (a scaled Double) out: it must stay -0.
  if ((n | 0) === n && n >= 0 && n < SHARED_MAX && (n !== 0 || 1 / n > 0)) return sharedVariant(type, n, n);
  return { dataType: type, arrayType: VariantArrayType.Scalar, value: n };
}

function sharedVariant(type: BuiltinType, slot: number, value: unknown): Variant {
  const byValue = (shared[type] ??= []);
  return (byValue[slot] ??= Object.freeze({ dataType: type, arrayType: VariantArrayType.Scalar, value }));
}

export class ValueCache {
  private capacity = 0;
  private kind = new Uint8Array(0);
  private type = new Uint8Array(0);
  private num = new Float64Array(0);
  private status = new Uint32Array(0);
  private sourceTs = new Float64Array(0);
  private rates = new Float64Array(0);
  /** Poll slots of the slot's source skipped (late or still busy) since the slot was made. */
  private skipped = new Uint32Array(0);
  /**
   * Kind.Object: the DataValue as it came in. Kind.Number: the DataValue get() made, current
   * while `fresh` is 1; after a change of time or status alone (fresh 0) it is kept only for its
   * Variant, which the next get() reuses (a number read every cycle keeps one Variant).
   */
  private memo: (DataValue | undefined)[] = [];
  private fresh = new Uint8Array(0);
  private subscribers: (SlotSubscriber[] | undefined)[] = [];
  /** BuiltinType of the slot's source (SlotInfo.builtinType); its rate is in `rates`. */
  private sourceType = new Uint8Array(0);
  private readonly byKey = new Map<string, number>();
  private keys: (string | undefined)[] = [];
  private readonly free: number[] = [];
  private readonly observers: CacheObserver[] = [];
  private used = 0;

  /** Slots in use. */
  get size(): number {
    return this.used;
  }

  /**
   * The slot of `key`, made when it is new (waiting for its first value). An existing slot
   * takes the new info: a new built-in type empties it (the old value would be of another type),
   * a new rate is told to its subscribers.
   */
  acquire(key: string, info: SlotInfo): number {
    const known = this.byKey.get(key);
    if (known !== undefined) {
      const typeBefore = this.sourceType[known];
      const rateBefore = this.rates[known];
      this.sourceType[known] = info.builtinType;
      this.rates[known] = info.rate;
      if (typeBefore !== info.builtinType) this.reset(known, WAITING);
      if (rateBefore !== info.rate) this.tellChanged(known);
      return known;
    }
    const slot = this.free.length > 0 ? this.free.pop()! : this.grow();
    this.byKey.set(key, slot);
    this.keys[slot] = key;
    this.sourceType[slot] = info.builtinType;
    this.rates[slot] = info.rate;
    this.reset(slot, WAITING);
    this.skipped[slot] = 0;
    this.used++;
    return slot;
  }

  /** The key a live slot was acquired with (the same string: a device tag's NodeId text shares it). */
  keyOf(slot: number): string | undefined {
    return this.keys[slot];
  }

  /**
   * Room for `n` more slots in the typed arrays, exactly: a start that acquires 10,000 slots
   * would otherwise double them to 16,384 (36 bytes a slot for the 6,384 never used).
   */
  reserve(n: number): void {
    const need = this.capacity + Math.max(0, n - this.free.length);
    if (need > this.kind.length) this.resize(need);
  }

  /** The slot of a key, or -1. */
  slotOf(key: string): number {
    return this.byKey.get(key) ?? -1;
  }

  /** Frees a slot: its subscribers hear sourceChanged and are dropped. */
  release(slot: number): void {
    if (this.kind[slot] === Kind.Free) return;
    const key = this.keys[slot]!;
    this.byKey.delete(key);
    this.keys[slot] = undefined;
    this.kind[slot] = Kind.Free;
    this.memo[slot] = undefined;
    this.used--;
    const subs = this.subscribers[slot];
    this.subscribers[slot] = undefined;
    if (subs !== undefined) for (const s of subs) s.sourceChanged(slot);
    this.free.push(slot);
  }

  isLive(slot: number): boolean {
    return slot >= 0 && slot < this.capacity && this.kind[slot] !== Kind.Free;
  }

  info(slot: number): SlotInfo | undefined {
    return this.isLive(slot) ? { builtinType: this.sourceType[slot]!, rate: this.rates[slot]! } : undefined;
  }

  rateOf(slot: number): number {
    return this.rates[slot]!;
  }

  /** The source skipped `n` of its slots (skip-not-burst: they are not made up). */
  addSkipped(slot: number, n: number): void {
    this.skipped[slot] += n;
  }

  /** Slots the source skipped since the slot was made: what an item fed by it missed. */
  skippedOf(slot: number): number {
    return this.skipped[slot]!;
  }

  // ---- writing (the poll groups; memory variables) -------------------------------------------

  /** A numeric value (the hot path: no allocation). */
  setNumber(slot: number, type: BuiltinType, value: number, status: StatusCode, sourceTimestamp: number, serverTimestamp: number): void {
    // The same number keeps the last DataValue for its Variant (stale); another one drops it.
    if (this.kind[slot] !== Kind.Number || this.type[slot] !== type || this.num[slot] !== value) this.memo[slot] = undefined;
    this.fresh[slot] = 0;
    this.kind[slot] = Kind.Number;
    this.type[slot] = type;
    this.num[slot] = value;
    this.status[slot] = status;
    this.sourceTs[slot] = sourceTimestamp;
    const subs = this.subscribers[slot];
    if (subs !== undefined) for (let i = 0; i < subs.length; i++) subs[i]!.offerNumber(type, value, status, sourceTimestamp, serverTimestamp);
    if (this.observers.length !== 0) this.observe(slot);
  }

  /** Any value (kept by reference: the caller never mutates it). */
  setDataValue(slot: number, value: DataValue, serverTimestamp: number): void {
    this.put(slot, value);
    const subs = this.subscribers[slot];
    if (subs !== undefined) for (let i = 0; i < subs.length; i++) subs[i]!.offerDataValue(value, serverTimestamp);
    if (this.observers.length !== 0) this.observe(slot);
  }

  /** Sets a value without telling the subscribers: a node's initial value (they hear of the next one). */
  put(slot: number, value: DataValue): void {
    this.kind[slot] = value.value === undefined ? Kind.None : Kind.Object;
    this.status[slot] = value.statusCode ?? StatusCodes.Good;
    this.sourceTs[slot] = value.sourceTimestamp ?? 0;
    this.memo[slot] = value;
    this.fresh[slot] = 1;
  }

  /** A new status; the value and its source time stay (a device that stopped answering). */
  setStatus(slot: number, status: StatusCode, serverTimestamp: number): void {
    const kind = this.kind[slot];
    if (kind === Kind.Number) {
      this.setNumber(slot, this.type[slot]!, this.num[slot]!, status, this.sourceTs[slot]!, serverTimestamp);
      return;
    }
    const old = kind === Kind.Object ? this.memo[slot] : undefined;
    const dv: DataValue =
      kind === Kind.Object && old !== undefined ? { value: old.value, statusCode: status, sourceTimestamp: old.sourceTimestamp, sourcePicoseconds: old.sourcePicoseconds } : { statusCode: status };
    this.setDataValue(slot, dv, serverTimestamp);
  }

  /** A poll cycle of `device` is done: observers may hand on what it changed. */
  endBatch(device: string): void {
    for (let i = 0; i < this.observers.length; i++) this.observers[i]!.batchEnd(device);
  }

  // ---- reading --------------------------------------------------------------------------------

  /** The current value as a DataValue; the same object until the value, status or time changes. */
  get(slot: number): DataValue {
    const m = this.memo[slot];
    if (m !== undefined && this.fresh[slot] === 1) return m;
    const status = this.status[slot]!;
    let dv: DataValue;
    if (this.kind[slot] === Kind.Number) {
      const variant = m?.value ?? numberVariant(this.type[slot]!, this.num[slot]!);
      dv = status === StatusCodes.Good ? { value: variant, sourceTimestamp: this.sourceTs[slot] } : { value: variant, statusCode: status, sourceTimestamp: this.sourceTs[slot] };
    } else {
      dv = { statusCode: this.kind[slot] === Kind.Free ? StatusCodes.BadNodeIdUnknown : status };
    }
    this.memo[slot] = dv;
    this.fresh[slot] = 1;
    return dv;
  }

  statusOf(slot: number): StatusCode {
    return this.kind[slot] === Kind.Free ? StatusCodes.BadNodeIdUnknown : this.status[slot]!;
  }

  /** Whether the slot holds a value (a Bad status may keep the last one). */
  hasValue(slot: number): boolean {
    const k = this.kind[slot];
    return k === Kind.Number || k === Kind.Object;
  }

  sourceTimestampOf(slot: number): number {
    return this.sourceTs[slot]!;
  }

  /** The number a numeric slot holds (NaN otherwise). */
  numberOf(slot: number): number {
    return this.kind[slot] === Kind.Number ? this.num[slot]! : NaN;
  }

  /** Hands the current value to one sink, as a change would (a sampling pass). */
  offerTo(slot: number, sink: ValueSink, serverTimestamp: number): void {
    if (this.kind[slot] === Kind.Number) sink.offerNumber(this.type[slot]!, this.num[slot]!, this.status[slot]!, this.sourceTs[slot]!, serverTimestamp);
    else sink.offerDataValue(this.get(slot), serverTimestamp);
  }

  // ---- subscribing ----------------------------------------------------------------------------

  subscribe(slot: number, s: SlotSubscriber): void {
    const list = this.subscribers[slot];
    if (list === undefined) this.subscribers[slot] = [s];
    else if (!list.includes(s)) list.push(s);
  }

  unsubscribe(slot: number, s: SlotSubscriber): void {
    const list = this.subscribers[slot];
    if (list === undefined) return;
    const i = list.indexOf(s);
    if (i < 0) return;
    list.splice(i, 1);
    if (list.length === 0) this.subscribers[slot] = undefined;
  }

  subscriberCount(slot: number): number {
    return this.subscribers[slot]?.length ?? 0;
  }

  addObserver(o: CacheObserver): void {
    if (!this.observers.includes(o)) this.observers.push(o);
  }

  removeObserver(o: CacheObserver): void {
    const i = this.observers.indexOf(o);
    if (i >= 0) this.observers.splice(i, 1);
  }

  // ---- internals ------------------------------------------------------------------------------

  private observe(slot: number): void {
    for (let i = 0; i < this.observers.length; i++) this.observers[i]!.changed(slot);
  }

  private tellChanged(slot: number): void {
    const subs = this.subscribers[slot];
    if (subs !== undefined) for (const s of [...subs]) s.sourceChanged(slot);
  }

  private reset(slot: number, status: StatusCode): void {
    this.kind[slot] = Kind.None;
    this.type[slot] = this.sourceType[slot]!;
    this.num[slot] = 0;
    this.status[slot] = status;
    this.sourceTs[slot] = 0;
    this.memo[slot] = undefined;
  }

  /** A new slot at the end, doubling the arrays when full. */
  private grow(): number {
    const slot = this.capacity;
    if (slot >= this.kind.length) this.resize(Math.max(64, this.kind.length * 2));
    this.capacity = slot + 1;
    return slot;
  }

  private resize(n: number): void {
    this.kind = extend(this.kind, new Uint8Array(n));
    this.type = extend(this.type, new Uint8Array(n));
    this.sourceType = extend(this.sourceType, new Uint8Array(n));
    this.fresh = extend(this.fresh, new Uint8Array(n));
    this.num = extend(this.num, new Float64Array(n));
    this.status = extend(this.status, new Uint32Array(n));
    this.sourceTs = extend(this.sourceTs, new Float64Array(n));
    this.rates = extend(this.rates, new Float64Array(n));
    this.skipped = extend(this.skipped, new Uint32Array(n));
  }
}

function extend<T extends Uint8Array | Uint32Array | Float64Array>(old: T, next: T): T {
  next.set(old);
  return next;
}

/**
 * A 64-bit integer from its two 32-bit halves (`hi` as read: signed for Int64, unsigned for
 * UInt64) as a number when it is exact (|v| < 2^53), else NaN: the caller then makes a bigint.
 */
export function exactInt64(hi: number, lo: number, signed: boolean): number {
  const h = signed ? hi | 0 : hi >>> 0;
  return h >= -0x200000 && h < 0x200000 ? h * TWO_32 + (lo >>> 0) : NaN;
}
