// A tag's value <-> what its driver reads and writes. Every tag has a codec (TagCodec) that its
// driver's definition made (DriverProtocol.tag): where the tag sits in a block (its area and
// width, for the block planner), its published type, and how its value is decoded from a block
// and encoded for a write. One object a kind of tag, shared by the tags alike, so that decoding
// a poll is a call on a small record, not a lookup by name.
//
// This file also holds the codec of drivers that read 16-bit words and bits (compileWordTag):
// data types, byte orders, scaling, and the inverse for writes with range checks; values are
// read through one shared scratch buffer. Byte orders name the four bytes of a 32-bit value as
// they arrive, A the most significant: ABCD big-endian words and bytes, CDAB words swapped,
// BADC bytes swapped within each word, DCBA both. 64-bit values extend the same two swaps (word
// order reversed, bytes swapped per word); 16-bit values and strings only know the byte swap.
import { BuiltinType, VariantArrayType, type StatusCode, type Variant } from "../ua/builtins.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { UneceUnit } from "../ua/generated/units.js";
import { exactInt64, numberVariant } from "../values/value-cache.js";
import type { BlockData } from "./driver.js";

/** The value types of a word tag (its `type` key): `bool` is a word != 0, `bit` one bit of a word. */
export const WORD_TYPES = ["bool", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64", "string", "bit"] as const;
export const BYTE_ORDERS = ["ABCD", "CDAB", "BADC", "DCBA"] as const;
export type WordType = (typeof WORD_TYPES)[number];
export type ByteOrder = (typeof BYTE_ORDERS)[number];

/** A decoded value before its Variant; undefined when the block holds none for the tag (a record driver's answer without its record). */
export type RawValue = number | bigint | boolean | string;

/** A write converted to raw data: words or bits, or the StatusCode that refuses it. */
export type Encoded =
  | { readonly ok: true; readonly data: Uint16Array | Uint8Array }
  | { readonly ok: false; readonly statusCode: StatusCode };

/**
 * Numbers go into the value cache as numbers (decodeNumber: no Variant, no bigint per sample);
 * `Checked` ones only while decodeNumber gives one (not NaN: an unscaled 64-bit integer beyond
 * 2^53, a record the answer lacks), else by decodeRaw; strings as a Variant.
 */
export const enum ValuePath {
  Number,
  Checked,
  Object,
}

/** What the poll groups, the writes and the address space need of a tag. Never changed once made. */
export interface TagCodec {
  /** The data area the tag is read from, in its driver's name for it. */
  readonly area: string;
  /** Units of the area the tag occupies (words, bits, records): the block planner's width. */
  readonly width: number;
  /** The built-in type of the published value. */
  readonly builtinType: BuiltinType;
  readonly path: ValuePath;
  /** A write changes part of a unit (one bit of a word): the unit is read first and the write merged into it. */
  readonly partial: boolean;
  /** The value as a number (Booleans 0/1), for the Number and Checked paths. */
  decodeNumber(data: BlockData, at: number): number;
  /** The value of the tag whose first unit is at `at` of the block; undefined when the block holds none for it. */
  decodeRaw(data: BlockData, at: number): RawValue | undefined;
  /** An engineering value as the device stores it, or the StatusCode that refuses it. */
  encode(value: Variant): Encoded;
  /** A partial write's data merged into the unit read (`current`), for writing the unit whole. */
  merge(current: BlockData, written: Uint16Array | Uint8Array): Uint16Array | Uint8Array;
  /**
   * For a driver whose devices say in their answers what unit a value is in (self-describing
   * records): the engineering unit of the tag's value in this answer, or undefined when it has
   * none. Present only on the codecs of tags whose unit comes from the device (the map names no
   * `unit`): the tag's EngineeringUnits follow it (Part 8 §5.6.3).
   */
  unitOf?(data: BlockData, at: number): UneceUnit | undefined;
}

/**
 * The Variant of a tag's value. Booleans and whole numbers 0..255 (alarms, states, idle
 * words: most of a plant's values) get one frozen Variant per type and value, shared by every
 * tag and sample that has it (the value cache's table); others a new one. Variants are never
 * changed once made.
 */
export function variantOf(type: BuiltinType, raw: RawValue): Variant {
  if (typeof raw === "boolean") return numberVariant(type, raw ? 1 : 0);
  if (typeof raw === "number") return numberVariant(type, raw);
  return { dataType: type, arrayType: VariantArrayType.Scalar, value: raw };
}

// ---- the word codec ---------------------------------------------------------------------------

const enum Kind {
  Bool,
  Bit,
  Int16,
  UInt16,
  Int32,
  UInt32,
  Int64,
  UInt64,
  Float32,
  Float64,
  String,
  /** One unit of a bit area (a Uint8Array of 0/1). */
  Flag,
}

const KIND: Readonly<Record<WordType, Kind>> = {
  bool: Kind.Bool,
  bit: Kind.Bit,
  int16: Kind.Int16,
  uint16: Kind.UInt16,
  int32: Kind.Int32,
  uint32: Kind.UInt32,
  int64: Kind.Int64,
  uint64: Kind.UInt64,
  float32: Kind.Float32,
  float64: Kind.Float64,
  string: Kind.String,
};

const NATIVE: readonly BuiltinType[] = [
  BuiltinType.Boolean, // Bool
  BuiltinType.Boolean, // Bit
  BuiltinType.Int16,
  BuiltinType.UInt16,
  BuiltinType.Int32,
  BuiltinType.UInt32,
  BuiltinType.Int64,
  BuiltinType.UInt64,
  BuiltinType.Float,
  BuiltinType.Double,
  BuiltinType.String,
  BuiltinType.Boolean, // Flag
];

/** Integer limits of the raw types a write must fit (Int64/UInt64 as bigints). */
const INT_RANGE: Partial<Record<Kind, readonly [number, number]>> = {
  [Kind.Int16]: [-0x8000, 0x7fff],
  [Kind.UInt16]: [0, 0xffff],
  [Kind.Int32]: [-0x80000000, 0x7fffffff],
  [Kind.UInt32]: [0, 0xffffffff],
};
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** Longest string of a word tag, in words (2 characters each). */
export const MAX_STRING_WORDS = 125;

/** Words a value of `type` occupies (`length` words for a string). */
export function wordWidth(type: WordType, length: number | undefined): number {
  switch (type) {
    case "int32":
    case "uint32":
    case "float32":
      return 2;
    case "int64":
    case "uint64":
    case "float64":
      return 4;
    case "string":
      return length ?? 1;
    default:
      return 1;
  }
}

/** What a driver of words and bits says of one tag (its definition reads it from the tag's keys). */
export interface WordTagSpec {
  readonly area: string;
  /** The area's unit is one bit (reads give a Uint8Array of 0/1), not a 16-bit word: the tag is one of them. */
  readonly bits: boolean;
  /** The value type of a tag of a word area. */
  readonly type: WordType;
  /** The bit of the word, for a `bit` tag. */
  readonly bit?: number;
  /** Words of a string. */
  readonly length?: number;
  readonly byteOrder: ByteOrder;
  readonly scale: number;
  readonly offset: number;
  /** EURange: writes outside are BadOutOfRange. */
  readonly range?: readonly number[];
}

/**
 * Codecs of tags without scaling or range, by area, kind, width, bit and byte order: most tags
 * of a map share one (10,000 uint16 tags, one record).
 */
const plainCodecs = new Map<string, Map<number, WordCodec>>();

/** The codec of a tag of words or bits. */
export function compileWordTag(spec: WordTagSpec): TagCodec {
  const kind = spec.bits ? Kind.Flag : KIND[spec.type];
  const width = spec.bits ? 1 : wordWidth(spec.type, spec.length);
  const bit = spec.bit ?? 0;
  const order = spec.byteOrder;
  const wordSwap = order === "CDAB" || order === "DCBA";
  const byteSwap = order === "BADC" || order === "DCBA";
  const plain = spec.scale === 1 && spec.offset === 0 && spec.range === undefined;
  if (!plain) return new WordCodec(spec, kind, width, bit, wordSwap, byteSwap);
  // kind < 16, width <= 125 < 128, bit < 16: one small integer.
  const key = (((kind * 128 + width) * 16 + bit) * 2 + (wordSwap ? 1 : 0)) * 2 + (byteSwap ? 1 : 0);
  let ofArea = plainCodecs.get(spec.area);
  if (ofArea === undefined) plainCodecs.set(spec.area, (ofArea = new Map()));
  let codec = ofArea.get(key);
  if (codec === undefined) ofArea.set(key, (codec = new WordCodec(spec, kind, width, bit, wordSwap, byteSwap)));
  return codec;
}

// Bytes of the value in big-endian order, assembled from (or split into) words.
const scratch = new DataView(new ArrayBuffer(8));

const decoder = new TextDecoder("utf-8", { fatal: false });
/** Bytes of the longest string tag. */
const stringScratch = Buffer.alloc(2 * MAX_STRING_WORDS);

const outOfRange: Encoded = { ok: false, statusCode: StatusCodes.BadOutOfRange };
const typeMismatch: Encoded = { ok: false, statusCode: StatusCodes.BadTypeMismatch };

// Fields are declared, not defined: each is set once, in the constructor, and keeps the
// representation of its value (a class field is first defined as undefined, which widens it);
// a poll reads them for every tag it decodes.
class WordCodec implements TagCodec {
  declare readonly area: string;
  declare readonly width: number;
  declare readonly builtinType: BuiltinType;
  declare readonly path: ValuePath;
  declare readonly partial: boolean;
  declare private readonly kind: Kind;
  /** Bit index within the word (Bit only). */
  declare private readonly bit: number;
  declare private readonly wordSwap: boolean;
  declare private readonly byteSwap: boolean;
  declare private readonly scale: number;
  declare private readonly offset: number;
  declare private readonly scaled: boolean;
  declare private readonly low: number;
  declare private readonly high: number;

  constructor(spec: WordTagSpec, kind: Kind, width: number, bit: number, wordSwap: boolean, byteSwap: boolean) {
    const scaled = spec.scale !== 1 || spec.offset !== 0;
    this.area = spec.area;
    this.width = width;
    this.kind = kind;
    this.bit = bit;
    this.wordSwap = wordSwap;
    this.byteSwap = byteSwap;
    this.scale = spec.scale;
    this.offset = spec.offset;
    this.scaled = scaled;
    this.low = spec.range?.[0] ?? -Infinity;
    this.high = spec.range?.[1] ?? Infinity;
    // Double when scaled, else the raw type's.
    this.builtinType = scaled ? BuiltinType.Double : NATIVE[kind]!;
    this.path = kind === Kind.String ? ValuePath.Object : (kind === Kind.Int64 || kind === Kind.UInt64) && !scaled ? ValuePath.Checked : ValuePath.Number;
    this.partial = kind === Kind.Bit;
    Object.freeze(this);
  }

  /** Byte k of the big-endian value sits in word `wordOf(k)`, high byte when `highOf(k)`. */
  private gather(regs: Uint16Array, at: number, words: number): void {
    for (let w = 0; w < words; w++) {
      const reg = regs[at + (this.wordSwap ? words - 1 - w : w)]!;
      const hi = reg >>> 8;
      const lo = reg & 0xff;
      scratch.setUint8(2 * w, this.byteSwap ? lo : hi);
      scratch.setUint8(2 * w + 1, this.byteSwap ? hi : lo);
    }
  }

  private scatter(out: Uint16Array, words: number): void {
    for (let w = 0; w < words; w++) {
      const b0 = scratch.getUint8(2 * w);
      const b1 = scratch.getUint8(2 * w + 1);
      out[this.wordSwap ? words - 1 - w : w] = this.byteSwap ? (b1 << 8) | b0 : (b0 << 8) | b1;
    }
  }

  /**
   * For the Checked path (unscaled 64-bit integers), NaN when the value is not exact as a number
   * (|v| >= 2^53): decodeRaw then gives the bigint. Unswapped words are read directly; other
   * byte orders through the scratch view.
   */
  decodeNumber(block: BlockData, at: number): number {
    const regs = block as Uint16Array;
    let raw: number;
    const plain = !this.wordSwap && !this.byteSwap;
    switch (this.kind) {
      case Kind.Flag:
        return (block as Uint8Array)[at] !== 0 ? 1 : 0;
      case Kind.Bool:
        return regs[at] !== 0 ? 1 : 0;
      case Kind.Bit:
        return (regs[at]! >>> this.bit) & 1;
      case Kind.UInt16:
        raw = plain ? regs[at]! : (this.gather(regs, at, 1), scratch.getUint16(0));
        break;
      case Kind.Int16:
        raw = plain ? (regs[at]! << 16) >> 16 : (this.gather(regs, at, 1), scratch.getInt16(0));
        break;
      case Kind.UInt32:
        raw = plain ? regs[at]! * 65536 + regs[at + 1]! : (this.gather(regs, at, 2), scratch.getUint32(0));
        break;
      case Kind.Int32:
        raw = plain ? ((regs[at]! << 16) | regs[at + 1]!) : (this.gather(regs, at, 2), scratch.getInt32(0));
        break;
      case Kind.Float32:
        this.gather(regs, at, 2);
        raw = scratch.getFloat32(0);
        break;
      case Kind.Float64:
        this.gather(regs, at, 4);
        raw = scratch.getFloat64(0);
        break;
      case Kind.Int64:
      case Kind.UInt64: {
        let hi: number;
        let lo: number;
        if (plain) {
          hi = regs[at]! * 65536 + regs[at + 1]!;
          lo = regs[at + 2]! * 65536 + regs[at + 3]!;
        } else {
          this.gather(regs, at, 4);
          hi = scratch.getUint32(0);
          lo = scratch.getUint32(4);
        }
        if (this.scaled) {
          // Two's complement for Int64; the sum rounds once, as Number(bigint) would.
          raw = (this.kind === Kind.Int64 && hi >= 0x80000000 ? hi - 4294967296 : hi) * 4294967296 + lo;
          break;
        }
        return exactInt64(hi, lo, this.kind === Kind.Int64);
      }
      default:
        return NaN;
    }
    return this.scaled ? raw * this.scale + this.offset : raw;
  }

  /** Strings end at the first NUL; a scaled value is raw * scale + offset. */
  decodeRaw(block: BlockData, at: number): RawValue {
    let raw: RawValue;
    const regs = block as Uint16Array;
    switch (this.kind) {
      case Kind.Flag:
        raw = (block as Uint8Array)[at] !== 0;
        break;
      case Kind.Bool:
        raw = regs[at] !== 0;
        break;
      case Kind.Bit:
        raw = ((regs[at]! >>> this.bit) & 1) === 1;
        break;
      case Kind.Int16:
      case Kind.UInt16:
        this.gather(regs, at, 1);
        raw = this.kind === Kind.Int16 ? scratch.getInt16(0) : scratch.getUint16(0);
        break;
      case Kind.Int32:
        this.gather(regs, at, 2);
        raw = scratch.getInt32(0);
        break;
      case Kind.UInt32:
        this.gather(regs, at, 2);
        raw = scratch.getUint32(0);
        break;
      case Kind.Float32:
        this.gather(regs, at, 2);
        raw = scratch.getFloat32(0);
        break;
      case Kind.Int64:
        this.gather(regs, at, 4);
        raw = scratch.getBigInt64(0);
        break;
      case Kind.UInt64:
        this.gather(regs, at, 4);
        raw = scratch.getBigUint64(0);
        break;
      case Kind.Float64:
        this.gather(regs, at, 4);
        raw = scratch.getFloat64(0);
        break;
      case Kind.String: {
        const bytes = stringScratch;
        let n = 0;
        for (let w = 0; w < this.width; w++) {
          const reg = regs[at + w]!;
          const first = this.byteSwap ? reg & 0xff : reg >>> 8;
          const second = this.byteSwap ? reg >>> 8 : reg & 0xff;
          if (first === 0) break;
          bytes[n++] = first;
          if (second === 0) break;
          bytes[n++] = second;
        }
        raw = decoder.decode(bytes.subarray(0, n));
        break;
      }
    }
    return this.scaled ? Number(raw) * this.scale + this.offset : raw;
  }

  /**
   * Converts an engineering value back to what the device stores: (value - offset) / scale,
   * rounded for integer types. BadOutOfRange when the value lies outside the EURange or the raw
   * type cannot hold it (Part 4 §5.10.4 leaves the check to the server; Part 8 §5.3.2.2 EURange
   * is the range the value is expected to have). A Bit tag yields its word with only its bit
   * meaningful: the writer merges it into the current word (merge).
   */
  encode(value: Variant): Encoded {
    const v = value.value;
    switch (this.kind) {
      case Kind.Flag:
        return typeof v === "boolean" ? { ok: true, data: Uint8Array.of(v ? 1 : 0) } : typeMismatch;
      case Kind.Bool:
        return typeof v === "boolean" ? { ok: true, data: Uint16Array.of(v ? 1 : 0) } : typeMismatch;
      case Kind.Bit:
        return typeof v === "boolean" ? { ok: true, data: Uint16Array.of(v ? 1 << this.bit : 0) } : typeMismatch;
      case Kind.String: {
        if (typeof v !== "string") return typeMismatch;
        const bytes = Buffer.from(v, "utf8");
        if (bytes.length > this.width * 2) return outOfRange;
        const out = new Uint16Array(this.width);
        for (let w = 0; w < this.width; w++) {
          const first = bytes[2 * w] ?? 0;
          const second = bytes[2 * w + 1] ?? 0;
          out[w] = this.byteSwap ? (second << 8) | first : (first << 8) | second;
        }
        return { ok: true, data: out };
      }
      default:
        break;
    }
    // Numbers: check the engineering value, then convert it to the raw type.
    let eng: number;
    if (typeof v === "number") eng = v;
    else if (typeof v === "bigint") eng = Number(v);
    else return typeMismatch;
    if (Number.isNaN(eng) || eng < this.low || eng > this.high) return outOfRange;
    const words = this.width;
    const out = new Uint16Array(words);
    if ((this.kind === Kind.Int64 || this.kind === Kind.UInt64) && typeof v === "bigint" && !this.scaled) {
      if (this.kind === Kind.Int64 ? v < INT64_MIN || v > INT64_MAX : v < 0n || v > UINT64_MAX) return outOfRange;
      if (this.kind === Kind.Int64) scratch.setBigInt64(0, v);
      else scratch.setBigUint64(0, v);
      this.scatter(out, 4);
      return { ok: true, data: out };
    }
    const raw = this.scaled ? (eng - this.offset) / this.scale : eng;
    switch (this.kind) {
      case Kind.Float32: {
        if (!Number.isFinite(raw) && Number.isFinite(eng)) return outOfRange;
        if (Number.isFinite(raw) && Math.abs(raw) > 3.4028234663852886e38) return outOfRange;
        scratch.setFloat32(0, raw);
        this.scatter(out, 2);
        return { ok: true, data: out };
      }
      case Kind.Float64:
        if (!Number.isFinite(raw) && Number.isFinite(eng)) return outOfRange;
        scratch.setFloat64(0, raw);
        this.scatter(out, 4);
        return { ok: true, data: out };
      case Kind.Int64:
      case Kind.UInt64: {
        if (!Number.isFinite(raw)) return outOfRange;
        const r = BigInt(Math.round(raw));
        if (this.kind === Kind.Int64 ? r < INT64_MIN || r > INT64_MAX : r < 0n || r > UINT64_MAX) return outOfRange;
        if (this.kind === Kind.Int64) scratch.setBigInt64(0, r);
        else scratch.setBigUint64(0, r);
        this.scatter(out, 4);
        return { ok: true, data: out };
      }
      default: {
        const [min, max] = INT_RANGE[this.kind]!;
        const r = Math.round(raw);
        if (!(r >= min && r <= max)) return outOfRange;
        if (words === 1) {
          scratch.setUint16(0, r & 0xffff);
          this.scatter(out, 1);
        } else {
          scratch.setUint32(0, r >>> 0);
          this.scatter(out, 2);
        }
        return { ok: true, data: out };
      }
    }
  }

  /** A bit tag's write: its bit set in the word read, the others as they were (read-modify-write). */
  merge(current: BlockData, written: Uint16Array | Uint8Array): Uint16Array | Uint8Array {
    if (this.kind !== Kind.Bit) return written;
    const mask = 1 << this.bit;
    return Uint16Array.of(((current as Uint16Array)[0]! & ~mask) | (written[0]! & mask));
  }
}
