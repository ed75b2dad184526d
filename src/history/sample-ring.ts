// The samples waiting for the database, as parallel typed arrays: no object per sample, and
// memory a worker thread can read as it is (the arrays may sit on one SharedArrayBuffer).
//
// A numeric scalar (Boolean .. Double, DateTime, StatusCode) is kept in `num`, or in `big` for
// Int64/UInt64 given as bigints (the same 8 bytes; as numbers below 2^53 they stay in `num`); any other value (arrays, strings, a value that does not fit
// its type) is kept whole in `other`, by slot: as the Variant itself when the thread that
// records is the one that writes, as its binary Variant encoding when a worker writes.
import { BuiltinType, VariantArrayType, type Variant } from "../ua/builtins.js";

export const enum ValueForm {
  /** No value (a Bad sample without one, or a Null Variant). */
  None = 0,
  Number = 1,
  BigInt = 2,
  /** Kept in `other`; the Variant is a scalar (of a type that `num` cannot hold). */
  OtherScalar = 3,
  /** Kept in `other`; an array or matrix. */
  OtherArray = 4,
}

/** Bytes per slot: ts and num (8 + 8), series and status (4 + 4), type and form (1 + 1). */
const SLOT_BYTES = 26;
const INT64_MIN = -(2n ** 63n);
const INT64_END = 2n ** 63n;
const UINT64_END = 2n ** 64n;

export class SampleRing {
  readonly capacity: number;
  readonly buffer: ArrayBufferLike;
  /** Source timestamp, ms since 1970 (on the monotonic clock while the writer holds samples). */
  readonly ts: Float64Array;
  readonly num: Float64Array;
  /** The same memory as `num`: Int64 values, and UInt64 values as their two's complement. */
  readonly big: BigInt64Array;
  readonly ubig: BigUint64Array;
  /** Index of the declared series (the writer's table). */
  readonly series: Uint32Array;
  readonly status: Uint32Array;
  /** BuiltinType of the value, 0 without one. */
  readonly type: Uint8Array;
  readonly form: Uint8Array;
  /** Values of the Other forms, by slot. */
  readonly other = new Map<number, Variant | Uint8Array>();

  /** A ring of `capacity` slots, on `buffer` when given (SampleRing.bytes(capacity) long). */
  constructor(capacity: number, buffer?: ArrayBufferLike) {
    this.capacity = capacity;
    this.buffer = buffer ?? new ArrayBuffer(SampleRing.bytes(capacity));
    if (this.buffer.byteLength < SampleRing.bytes(capacity)) throw new RangeError(`a ring of ${capacity} samples needs ${SampleRing.bytes(capacity)} bytes`);
    let at = 0;
    const next = (bytesPerSlot: number): number => {
      const start = at;
      at += bytesPerSlot * capacity;
      return start;
    };
    this.ts = new Float64Array(this.buffer, next(8), capacity);
    const numAt = next(8);
    this.num = new Float64Array(this.buffer, numAt, capacity);
    this.big = new BigInt64Array(this.buffer, numAt, capacity);
    this.ubig = new BigUint64Array(this.buffer, numAt, capacity);
    this.series = new Uint32Array(this.buffer, next(4), capacity);
    this.status = new Uint32Array(this.buffer, next(4), capacity);
    this.type = new Uint8Array(this.buffer, next(1), capacity);
    this.form = new Uint8Array(this.buffer, next(1), capacity);
  }

  static bytes(capacity: number): number {
    return SLOT_BYTES * capacity;
  }

  /**
   * Fills slot i. `encode` turns a value of an Other form into what `other` keeps (the Variant
   * itself when absent); it may throw for a value its type refuses, and then nothing is kept.
   */
  put(i: number, series: number, ts: number, status: number, v: Variant | undefined, encode?: (v: Variant) => Uint8Array): void {
    let form: ValueForm = ValueForm.None;
    let type: number = BuiltinType.Null;
    if (v !== undefined && v.dataType !== BuiltinType.Null) {
      type = v.dataType;
      form = v.arrayType === VariantArrayType.Scalar ? this.scalarForm(i, type, v.value) : ValueForm.OtherArray;
      if (form === ValueForm.OtherScalar || form === ValueForm.OtherArray) this.other.set(i, encode ? encode(v) : v);
      else if (this.form[i] >= ValueForm.OtherScalar) this.other.delete(i);
    } else if (this.form[i] >= ValueForm.OtherScalar) {
      this.other.delete(i);
    }
    this.series[i] = series;
    this.ts[i] = ts;
    this.status[i] = status;
    this.type[i] = type;
    this.form[i] = form;
  }

  /** Stores a scalar in num/big when its JS type is the one the codec takes for it. */
  private scalarForm(i: number, type: number, x: unknown): ValueForm {
    switch (type) {
      case BuiltinType.Boolean:
        if (typeof x !== "boolean") return ValueForm.OtherScalar;
        this.num[i] = x ? 1 : 0;
        return ValueForm.Number;
      case BuiltinType.Int64:
        if (typeof x !== "bigint" || x < INT64_MIN || x >= INT64_END) return ValueForm.OtherScalar;
        this.big[i] = x;
        return ValueForm.BigInt;
      case BuiltinType.UInt64:
        if (typeof x !== "bigint" || x < 0n || x >= UINT64_END) return ValueForm.OtherScalar;
        this.ubig[i] = x;
        return ValueForm.BigInt;
      default:
        if (!isNumericType(type) || typeof x !== "number") return ValueForm.OtherScalar;
        this.num[i] = x;
        return ValueForm.Number;
    }
  }

  /** Fills slot i with a numeric scalar of `type` (Boolean as 0/1, Int64/UInt64 below 2^53). */
  putNumber(i: number, series: number, ts: number, status: number, type: number, x: number): void {
    if (this.form[i] >= ValueForm.OtherScalar) this.other.delete(i);
    this.series[i] = series;
    this.ts[i] = ts;
    this.status[i] = status;
    this.type[i] = type;
    this.form[i] = ValueForm.Number;
    this.num[i] = x;
  }

  /** Lets go of what slot i keeps outside the arrays (a flushed or dropped sample). */
  release(i: number): void {
    if (this.form[i] >= ValueForm.OtherScalar) this.other.delete(i);
    this.form[i] = ValueForm.None;
  }

  /** The Variant of a Number or BigInt slot, made anew (for the rare value stored as a Variant). */
  scalar(i: number): Variant {
    const type = this.type[i];
    let value: unknown;
    if (this.form[i] === ValueForm.BigInt) value = type === BuiltinType.UInt64 ? this.ubig[i] : this.big[i];
    else if (type === BuiltinType.Int64 || type === BuiltinType.UInt64) value = BigInt(this.num[i]);
    else value = type === BuiltinType.Boolean ? this.num[i] !== 0 : this.num[i];
    return { dataType: type, arrayType: VariantArrayType.Scalar, value };
  }
}

/** The types a series can have: stored as numbers (see store.ts). */
export function isNumericType(t: number): boolean {
  return (t >= BuiltinType.Boolean && t <= BuiltinType.Double) || t === BuiltinType.DateTime || t === BuiltinType.StatusCode;
}
