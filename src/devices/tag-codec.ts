// Register contents <-> tag values: data types, byte orders, scaling, and the inverse for writes
// with range checks. One compiled record per tag (CodecTag) so that decoding a poll is a switch
// on a small integer, not a lookup by name; values are read through one shared scratch buffer.
//
// Byte orders name the four bytes of a 32-bit value as they arrive, A the most significant:
// ABCD big-endian words and bytes (Modbus's own order), CDAB words swapped, BADC bytes swapped
// within each word, DCBA both. 64-bit values extend the same two swaps (word order reversed,
// bytes swapped per word); 16-bit values and strings only know the byte swap.
import { BuiltinType, VariantArrayType, type StatusCode, type Variant } from "../ua/builtins.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { isScaled, tagType, tagWidth, type ByteOrder, type DataType, type TagConfig } from "../config/device-map.js";
import { exactInt64, numberVariant } from "../values/value-cache.js";

export const enum Kind {
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
  /** A coil or discrete input: one bit of a bit block. */
  Coil,
}

const KIND: Readonly<Record<DataType, Kind>> = {
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
  BuiltinType.Boolean, // Coil
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

/** What decoding and encoding need of a tag, compiled once. */
export interface CodecTag {
  readonly kind: Kind;
  /** Registers (bits for Coil) the tag occupies. */
  readonly width: number;
  /** Bit index within the register (Bit only). */
  readonly bit: number;
  readonly wordSwap: boolean;
  readonly byteSwap: boolean;
  readonly scale: number;
  readonly offset: number;
  readonly scaled: boolean;
  /** EURange: writes outside are BadOutOfRange. */
  readonly low: number;
  readonly high: number;
  /** The built-in type of the published value: Double when scaled, else the raw type's. */
  readonly builtinType: BuiltinType;
  /** How a poll hands the value to the value cache (see ValuePath). */
  readonly path: ValuePath;
}

/**
 * Numbers go into the value cache as numbers (decodeNumber: no Variant, no bigint per sample);
 * unscaled 64-bit integers too while they are exact (|v| < 2^53), else as a bigint; strings as
 * a Variant.
 */
export const enum ValuePath {
  Number,
  Int64,
  Object,
}

/**
 * Codecs of tags without scaling or range, by kind, width, bit and byte order: most tags of a
 * map share one (10,000 uint16 tags, one record). Codecs are never changed after compiling.
 */
const plainCodecs = new Map<number, CodecTag>();

export function compileTag(t: TagConfig, deviceByteOrder: ByteOrder): CodecTag {
  const bits = t.address.area === "coil" || t.address.area === "discrete";
  const kind = bits ? Kind.Coil : KIND[tagType(t)];
  const order = t.byteOrder ?? deviceByteOrder;
  const scaled = isScaled(t);
  const width = tagWidth(t);
  const bit = t.address.bit ?? 0;
  const wordSwap = order === "CDAB" || order === "DCBA";
  const byteSwap = order === "BADC" || order === "DCBA";
  const plain = !scaled && t.range === undefined;
  // kind < 16, width <= 125 < 128, bit < 16: one small integer.
  const key = plain ? (((kind * 128 + width) * 16 + bit) * 2 + (wordSwap ? 1 : 0)) * 2 + (byteSwap ? 1 : 0) : -1;
  const known = plain ? plainCodecs.get(key) : undefined;
  if (known) return known;
  const codec: CodecTag = Object.freeze({
    kind,
    width,
    bit,
    wordSwap,
    byteSwap,
    scale: t.scale,
    offset: t.offset,
    scaled,
    low: t.range?.[0] ?? -Infinity,
    high: t.range?.[1] ?? Infinity,
    builtinType: scaled ? BuiltinType.Double : NATIVE[kind]!,
    path: kind === Kind.String ? ValuePath.Object : (kind === Kind.Int64 || kind === Kind.UInt64) && !scaled ? ValuePath.Int64 : ValuePath.Number,
  });
  if (plain) plainCodecs.set(key, codec);
  return codec;
}

// Bytes of the value in big-endian order, assembled from (or split into) registers.
const scratch = new DataView(new ArrayBuffer(8));

/** Byte k of the big-endian value sits in register `wordOf(k)`, high byte when `highOf(k)`. */
function gather(regs: Uint16Array, at: number, words: number, t: CodecTag): void {
  for (let w = 0; w < words; w++) {
    const reg = regs[at + (t.wordSwap ? words - 1 - w : w)]!;
    const hi = reg >>> 8;
    const lo = reg & 0xff;
    scratch.setUint8(2 * w, t.byteSwap ? lo : hi);
    scratch.setUint8(2 * w + 1, t.byteSwap ? hi : lo);
  }
}

function scatter(out: Uint16Array, words: number, t: CodecTag): void {
  for (let w = 0; w < words; w++) {
    const b0 = scratch.getUint8(2 * w);
    const b1 = scratch.getUint8(2 * w + 1);
    out[t.wordSwap ? words - 1 - w : w] = t.byteSwap ? (b1 << 8) | b0 : (b0 << 8) | b1;
  }
}

const decoder = new TextDecoder("utf-8", { fatal: false });
/** Bytes of the longest string tag (125 registers). */
const stringScratch = Buffer.alloc(250);

/**
 * The engineering value of a tag whose first register (or bit) is `block[at]`. Strings end at
 * the first NUL; a scaled value is raw * scale + offset as a Double.
 */
export function decodeValue(t: CodecTag, block: Uint16Array | Uint8Array, at: number): Variant {
  return variantOf(t, decodeRaw(t, block, at));
}

/**
 * The Variant of a tag's value. Booleans and whole numbers 0..255 (alarms, states, idle
 * registers: most of a plant's values) get one frozen Variant per type and value, shared by
 * every tag and sample that has it (the value cache's table); others a new one. Variants are
 * never changed once made.
 */
export function variantOf(t: CodecTag, raw: number | bigint | boolean | string): Variant {
  const type = t.builtinType;
  if (typeof raw === "boolean") return numberVariant(type, raw ? 1 : 0);
  if (typeof raw === "number") return numberVariant(type, raw);
  return { dataType: type, arrayType: VariantArrayType.Scalar, value: raw };
}

/**
 * The value of a tag whose path is Number or Int64 as a number (Booleans 0/1): what a poll
 * hands to the value cache. For the Int64 path, NaN when the value is not exact as a number
 * (|v| >= 2^53): decodeRaw then gives the bigint. Unswapped registers are read directly; other
 * byte orders through the scratch view.
 */
export function decodeNumber(t: CodecTag, block: Uint16Array | Uint8Array, at: number): number {
  const regs = block as Uint16Array;
  let raw: number;
  const plain = !t.wordSwap && !t.byteSwap;
  switch (t.kind) {
    case Kind.Coil:
      return block[at] !== 0 ? 1 : 0;
    case Kind.Bool:
      return regs[at] !== 0 ? 1 : 0;
    case Kind.Bit:
      return (regs[at]! >>> t.bit) & 1;
    case Kind.UInt16:
      raw = plain ? regs[at]! : (gather(regs, at, 1, t), scratch.getUint16(0));
      break;
    case Kind.Int16:
      raw = plain ? (regs[at]! << 16) >> 16 : (gather(regs, at, 1, t), scratch.getInt16(0));
      break;
    case Kind.UInt32:
      raw = plain ? regs[at]! * 65536 + regs[at + 1]! : (gather(regs, at, 2, t), scratch.getUint32(0));
      break;
    case Kind.Int32:
      raw = plain ? ((regs[at]! << 16) | regs[at + 1]!) : (gather(regs, at, 2, t), scratch.getInt32(0));
      break;
    case Kind.Float32:
      gather(regs, at, 2, t);
      raw = scratch.getFloat32(0);
      break;
    case Kind.Float64:
      gather(regs, at, 4, t);
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
        gather(regs, at, 4, t);
        hi = scratch.getUint32(0);
        lo = scratch.getUint32(4);
      }
      if (t.scaled) {
        // Two's complement for Int64; the sum rounds once, as Number(bigint) would.
        raw = (t.kind === Kind.Int64 && hi >= 0x80000000 ? hi - 4294967296 : hi) * 4294967296 + lo;
        break;
      }
      return exactInt64(hi, lo, t.kind === Kind.Int64);
    }
    default:
      return NaN;
  }
  return t.scaled ? raw * t.scale + t.offset : raw;
}

/**
 * decodeValue's value without its Variant (of type t.builtinType), so that a poll can keep the
 * previous Variant when the value did not change.
 */
export function decodeRaw(t: CodecTag, block: Uint16Array | Uint8Array, at: number): number | bigint | boolean | string {
  let raw: number | bigint | boolean | string;
  const regs = block as Uint16Array;
  switch (t.kind) {
    case Kind.Coil:
      raw = block[at] !== 0;
      break;
    case Kind.Bool:
      raw = regs[at] !== 0;
      break;
    case Kind.Bit:
      raw = ((regs[at]! >>> t.bit) & 1) === 1;
      break;
    case Kind.Int16:
    case Kind.UInt16:
      gather(regs, at, 1, t);
      raw = t.kind === Kind.Int16 ? scratch.getInt16(0) : scratch.getUint16(0);
      break;
    case Kind.Int32:
      gather(regs, at, 2, t);
      raw = scratch.getInt32(0);
      break;
    case Kind.UInt32:
      gather(regs, at, 2, t);
      raw = scratch.getUint32(0);
      break;
    case Kind.Float32:
      gather(regs, at, 2, t);
      raw = scratch.getFloat32(0);
      break;
    case Kind.Int64:
      gather(regs, at, 4, t);
      raw = scratch.getBigInt64(0);
      break;
    case Kind.UInt64:
      gather(regs, at, 4, t);
      raw = scratch.getBigUint64(0);
      break;
    case Kind.Float64:
      gather(regs, at, 4, t);
      raw = scratch.getFloat64(0);
      break;
    case Kind.String: {
      const bytes = stringScratch;
      let n = 0;
      for (let w = 0; w < t.width; w++) {
        const reg = regs[at + w]!;
        const first = t.byteSwap ? reg & 0xff : reg >>> 8;
        const second = t.byteSwap ? reg >>> 8 : reg & 0xff;
        if (first === 0) break;
        bytes[n++] = first;
        if (second === 0) break;
        bytes[n++] = second;
      }
      raw = decoder.decode(bytes.subarray(0, n));
      break;
    }
  }
  return t.scaled ? Number(raw) * t.scale + t.offset : raw;
}

/** A write converted to raw data: registers or bits, or the StatusCode that refuses it. */
export type Encoded =
  | { readonly ok: true; readonly data: Uint16Array | Uint8Array }
  | { readonly ok: false; readonly statusCode: StatusCode };

const outOfRange: Encoded = { ok: false, statusCode: StatusCodes.BadOutOfRange };
const typeMismatch: Encoded = { ok: false, statusCode: StatusCodes.BadTypeMismatch };

/**
 * Converts an engineering value back to what the device stores: (value - offset) / scale,
 * rounded for integer types. BadOutOfRange when the value lies outside the EURange or the raw
 * type cannot hold it (Part 4 §5.10.4 leaves the check to the server; Part 8 §5.3.2.2 EURange
 * is the range the value is expected to have). A Bit tag yields its register with only its bit
 * meaningful: the caller merges it into the current register (read-modify-write).
 */
export function encodeValue(t: CodecTag, value: Variant): Encoded {
  const v = value.value;
  switch (t.kind) {
    case Kind.Coil:
      return typeof v === "boolean" ? { ok: true, data: Uint8Array.of(v ? 1 : 0) } : typeMismatch;
    case Kind.Bool:
      return typeof v === "boolean" ? { ok: true, data: Uint16Array.of(v ? 1 : 0) } : typeMismatch;
    case Kind.Bit:
      return typeof v === "boolean" ? { ok: true, data: Uint16Array.of(v ? 1 << t.bit : 0) } : typeMismatch;
    case Kind.String: {
      if (typeof v !== "string") return typeMismatch;
      const bytes = Buffer.from(v, "utf8");
      if (bytes.length > t.width * 2) return outOfRange;
      const out = new Uint16Array(t.width);
      for (let w = 0; w < t.width; w++) {
        const first = bytes[2 * w] ?? 0;
        const second = bytes[2 * w + 1] ?? 0;
        out[w] = t.byteSwap ? (second << 8) | first : (first << 8) | second;
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
  if (Number.isNaN(eng) || eng < t.low || eng > t.high) return outOfRange;
  const words = t.width;
  const out = new Uint16Array(words);
  if ((t.kind === Kind.Int64 || t.kind === Kind.UInt64) && typeof v === "bigint" && !t.scaled) {
    if (t.kind === Kind.Int64 ? v < INT64_MIN || v > INT64_MAX : v < 0n || v > UINT64_MAX) return outOfRange;
    if (t.kind === Kind.Int64) scratch.setBigInt64(0, v);
    else scratch.setBigUint64(0, v);
    scatter(out, 4, t);
    return { ok: true, data: out };
  }
  const raw = t.scaled ? (eng - t.offset) / t.scale : eng;
  switch (t.kind) {
    case Kind.Float32: {
      if (!Number.isFinite(raw) && Number.isFinite(eng)) return outOfRange;
      if (Number.isFinite(raw) && Math.abs(raw) > 3.4028234663852886e38) return outOfRange;
      scratch.setFloat32(0, raw);
      scatter(out, 2, t);
      return { ok: true, data: out };
    }
    case Kind.Float64:
      if (!Number.isFinite(raw) && Number.isFinite(eng)) return outOfRange;
      scratch.setFloat64(0, raw);
      scatter(out, 4, t);
      return { ok: true, data: out };
    case Kind.Int64:
    case Kind.UInt64: {
      if (!Number.isFinite(raw)) return outOfRange;
      const r = BigInt(Math.round(raw));
      if (t.kind === Kind.Int64 ? r < INT64_MIN || r > INT64_MAX : r < 0n || r > UINT64_MAX) return outOfRange;
      if (t.kind === Kind.Int64) scratch.setBigInt64(0, r);
      else scratch.setBigUint64(0, r);
      scatter(out, 4, t);
      return { ok: true, data: out };
    }
    default: {
      const [min, max] = INT_RANGE[t.kind]!;
      const r = Math.round(raw);
      if (!(r >= min && r <= max)) return outOfRange;
      if (words === 1) {
        scratch.setUint16(0, r & 0xffff);
        scatter(out, 1, t);
      } else {
        scratch.setUint32(0, r >>> 0);
        scatter(out, 2, t);
      }
      return { ok: true, data: out };
    }
  }
}
