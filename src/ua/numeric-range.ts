// NumericRange (Part 4 §7.22; §7.27 in 1.05): the IndexRange of Read, Write and monitored items.
//
// Results are values, never exceptions: a bad range is a StatusCode for one operation.
// Status codes follow Part 4 §7.22:
// - BadIndexRangeInvalid only for bad syntax;
// - BadIndexRangeNoData for every other range that does not fit the value (a lower bound past
//   the end, a range on a scalar, the wrong number of dimensions);
// - on Write, BadTypeMismatch when the new value is not of the value's type or shape, and
//   BadIndexRangeDataMismatch when its size differs from the range's ("the size of the array
//   shall match the size specified by the NumericRange").
import { BuiltinType, VariantArrayType, type DataValue, type StatusCode, type Variant } from "./builtins.js";
import { StatusCodes } from "./generated/status-codes.js";

/** One dimension of a range, both bounds inclusive; `low === high` for a single index. */
export interface RangeDimension {
  readonly low: number;
  readonly high: number;
}

/** The dimensions of a range in the order of ArrayDimensions; empty means "the whole value". */
export type NumericRange = readonly RangeDimension[];

export type ParseRangeResult =
  | { readonly ok: true; readonly range: NumericRange }
  | { readonly ok: false; readonly statusCode: StatusCode };

/** The ranged value (Read) or the whole updated value (Write), or why there is none. */
export type RangeResult = { readonly ok: true; readonly value: Variant } | { readonly ok: false; readonly statusCode: StatusCode };

const UINT32_MAX = 4294967295;
const DIGITS = /^[0-9]+$/;

function fail(statusCode: StatusCode): { readonly ok: false; readonly statusCode: StatusCode } {
  return { ok: false, statusCode };
}

function parseIndex(text: string): number {
  if (!DIGITS.test(text)) return -1;
  const n = Number(text);
  return n <= UINT32_MAX ? n : -1;
}

/**
 * Parses "6", "5:7", "1:2,0:1", ... (Part 4 Annex A.3). "7:5" and "5:5" are invalid (the first
 * bound shall be lower), as is any other character, white space included. An empty string is
 * the empty range: the parameter is not used.
 */
export function parseNumericRange(text: string | undefined | null): ParseRangeResult {
  if (text == null || text === "") return { ok: true, range: [] };
  const parts = text.split(",");
  const range: RangeDimension[] = [];
  for (const part of parts) {
    const colon = part.indexOf(":");
    if (colon < 0) {
      const i = parseIndex(part);
      if (i < 0) return fail(StatusCodes.BadIndexRangeInvalid);
      range.push({ low: i, high: i });
    } else {
      const low = parseIndex(part.slice(0, colon));
      const high = parseIndex(part.slice(colon + 1));
      if (low < 0 || high < 0 || low >= high) return fail(StatusCodes.BadIndexRangeInvalid);
      range.push({ low, high });
    }
  }
  return { ok: true, range };
}

export function numericRangeToString(range: NumericRange): string {
  return range.map((d) => (d.low === d.high ? String(d.low) : `${d.low}:${d.high}`)).join(",");
}

function isText(type: BuiltinType): boolean {
  return type === BuiltinType.String || type === BuiltinType.ByteString;
}

/** The length of a String (UTF-16 units: JS characters) or ByteString, -1 for null or another value. */
function textLength(v: unknown): number {
  if (typeof v === "string") return v.length;
  if (v instanceof Uint8Array) return v.length;
  return -1;
}

/** Part of a String or ByteString, the high bound clamped; undefined when `low` is past the end. */
function subText(v: unknown, d: RangeDimension): unknown {
  const n = textLength(v);
  if (n < 0 || d.low >= n) return undefined;
  const end = Math.min(d.high, n - 1) + 1;
  if (typeof v === "string") return v.slice(d.low, end);
  // Copied: the result goes out in a response while the source value may be replaced.
  return Buffer.from((v as Uint8Array).subarray(d.low, end));
}

/**
 * Flat offsets (row-major: the last index varies fastest, Part 6 §5.2.2.16) of the elements of
 * `dims` inside the box [lows, highs].
 */
function boxOffsets(dims: readonly number[], lows: readonly number[], highs: readonly number[]): number[] {
  const k = dims.length;
  const strides = new Array<number>(k);
  let count = 1;
  let stride = 1;
  for (let i = k - 1; i >= 0; i--) {
    strides[i] = stride;
    stride *= dims[i];
    count *= highs[i] - lows[i] + 1;
  }
  const offsets = new Array<number>(count);
  const idx = lows.slice();
  for (let n = 0; n < count; n++) {
    let off = 0;
    for (let i = 0; i < k; i++) off += idx[i] * strides[i];
    offsets[n] = off;
    for (let i = k - 1; i >= 0; i--) {
      if (++idx[i] <= highs[i]) break;
      idx[i] = lows[i];
    }
  }
  return offsets;
}

/** Reads the part of `value` that `range` selects (Read, monitored items). Upper bounds past the end are clamped. */
export function applyRange(value: Variant, range: NumericRange): RangeResult {
  if (range.length === 0) return { ok: true, value };
  const type = value.dataType;
  if (value.arrayType === VariantArrayType.Scalar) {
    if (range.length !== 1 || !isText(type)) return fail(StatusCodes.BadIndexRangeNoData);
    const sub = subText(value.value, range[0]);
    if (sub === undefined) return fail(StatusCodes.BadIndexRangeNoData);
    return { ok: true, value: { dataType: type, arrayType: VariantArrayType.Scalar, value: sub } };
  }
  const items = value.value as readonly unknown[] | null;
  if (items == null) return fail(StatusCodes.BadIndexRangeNoData);

  // A matrix takes one range per dimension; an array one. One more range dimension selects
  // substrings of String and ByteString elements (Part 4 §7.22).
  const dims = value.arrayType === VariantArrayType.Matrix && value.dimensions ? value.dimensions : [items.length];
  const k = dims.length;
  const textDim = range.length === k + 1 && isText(type) ? range[k] : undefined;
  if (range.length !== k && textDim === undefined) return fail(StatusCodes.BadIndexRangeNoData);

  const lows = new Array<number>(k);
  const highs = new Array<number>(k);
  for (let i = 0; i < k; i++) {
    if (range[i].low >= dims[i]) return fail(StatusCodes.BadIndexRangeNoData);
    lows[i] = range[i].low;
    highs[i] = Math.min(range[i].high, dims[i] - 1);
  }
  const offsets = boxOffsets(dims, lows, highs);
  const out = new Array<unknown>(offsets.length);
  for (let n = 0; n < offsets.length; n++) {
    const item = items[offsets[n]];
    // An element too short for the substring range contributes an empty (not a missing) value.
    out[n] = textDim === undefined ? item : (subText(item, textDim) ?? (typeof item === "string" ? "" : item == null ? item : Buffer.alloc(0)));
  }
  if (value.arrayType === VariantArrayType.Matrix) {
    const newDims = new Array<number>(k);
    for (let i = 0; i < k; i++) newDims[i] = highs[i] - lows[i] + 1;
    return { ok: true, value: { dataType: type, arrayType: VariantArrayType.Matrix, value: out, dimensions: newDims } };
  }
  return { ok: true, value: { dataType: type, arrayType: VariantArrayType.Array, value: out } };
}

/** Replaces the selected characters or bytes of `current`; `replacement` must have exactly their count. */
function replaceText(current: unknown, d: RangeDimension, replacement: unknown): unknown | StatusCode {
  const n = textLength(current);
  if (n < 0 || d.high >= n) return StatusCodes.BadIndexRangeNoData;
  const size = d.high - d.low + 1;
  if (typeof current === "string") {
    if (typeof replacement !== "string") return StatusCodes.BadTypeMismatch;
    if (replacement.length !== size) return StatusCodes.BadIndexRangeDataMismatch;
    return current.slice(0, d.low) + replacement + current.slice(d.high + 1);
  }
  if (!(replacement instanceof Uint8Array)) return StatusCodes.BadTypeMismatch;
  if (replacement.length !== size) return StatusCodes.BadIndexRangeDataMismatch;
  const out = Buffer.from(current as Uint8Array);
  out.set(replacement, d.low);
  return out;
}

/**
 * Writes `newValue` into the part of `current` that `range` selects (Write with an IndexRange)
 * and returns the whole updated value; `current` is not modified. Unlike Read, bounds are not
 * clamped: every selected element must exist (Part 4 §7.22: "the Server shall return an error
 * if it cannot write all elements specified").
 */
export function writeRange(current: Variant, range: NumericRange, newValue: Variant): RangeResult {
  if (range.length === 0) return { ok: true, value: newValue };
  const type = current.dataType;
  if (type === BuiltinType.Null) return fail(StatusCodes.BadIndexRangeNoData);
  if (newValue.dataType !== type) return fail(StatusCodes.BadTypeMismatch);

  if (current.arrayType === VariantArrayType.Scalar) {
    if (range.length !== 1 || !isText(type)) return fail(StatusCodes.BadIndexRangeNoData);
    if (newValue.arrayType !== VariantArrayType.Scalar) return fail(StatusCodes.BadTypeMismatch);
    const r = replaceText(current.value, range[0], newValue.value);
    if (typeof r === "number") return fail(r);
    return { ok: true, value: { dataType: type, arrayType: VariantArrayType.Scalar, value: r } };
  }
  const items = current.value as readonly unknown[] | null;
  if (items == null) return fail(StatusCodes.BadIndexRangeNoData);
  const matrix = current.arrayType === VariantArrayType.Matrix && current.dimensions !== undefined;
  const dims = matrix ? (current.dimensions as readonly number[]) : [items.length];
  const k = dims.length;
  const textDim = range.length === k + 1 && isText(type) ? range[k] : undefined;
  if (range.length !== k && textDim === undefined) return fail(StatusCodes.BadIndexRangeNoData);

  const lows = new Array<number>(k);
  const highs = new Array<number>(k);
  for (let i = 0; i < k; i++) {
    if (range[i].high >= dims[i]) return fail(StatusCodes.BadIndexRangeNoData);
    lows[i] = range[i].low;
    highs[i] = range[i].high;
  }
  // The new value has the shape of the selection: an array for one dimension, a matrix with
  // the selected sizes for several.
  if (newValue.arrayType === VariantArrayType.Scalar) return fail(StatusCodes.BadTypeMismatch);
  const src = newValue.value as readonly unknown[] | null;
  if (src == null || !Array.isArray(src)) return fail(StatusCodes.BadTypeMismatch);
  if (k > 1) {
    const nd = newValue.dimensions;
    if (newValue.arrayType !== VariantArrayType.Matrix || nd === undefined || nd.length !== k) {
      return fail(StatusCodes.BadIndexRangeDataMismatch);
    }
    for (let i = 0; i < k; i++) if (nd[i] !== highs[i] - lows[i] + 1) return fail(StatusCodes.BadIndexRangeDataMismatch);
  }
  const offsets = boxOffsets(dims, lows, highs);
  if (src.length !== offsets.length) return fail(StatusCodes.BadIndexRangeDataMismatch);
  const out = items.slice();
  for (let n = 0; n < offsets.length; n++) {
    if (textDim === undefined) {
      out[offsets[n]] = src[n];
    } else {
      const r = replaceText(items[offsets[n]], textDim, src[n]);
      if (typeof r === "number") return fail(r);
      out[offsets[n]] = r;
    }
  }
  return matrix
    ? { ok: true, value: { dataType: type, arrayType: VariantArrayType.Matrix, value: out, dimensions: dims.slice() } }
    : { ok: true, value: { dataType: type, arrayType: VariantArrayType.Array, value: out } };
}

/**
 * Index ranges on values read (Part 4 §7.22), for Read and HistoryRead: the DataValue with its
 * value cut to `rangeText`, or a DataValue with only the failure status.
 */
export function applyIndexRange(dv: DataValue, rangeText: string): DataValue {
  const parsed = parseNumericRange(rangeText);
  if (!parsed.ok) return { statusCode: parsed.statusCode };
  if (parsed.range.length === 0 || dv.value === undefined) return dv;
  const ranged = applyRange(dv.value, parsed.range);
  if (!ranged.ok) return { statusCode: ranged.statusCode };
  return {
    value: ranged.value,
    statusCode: dv.statusCode,
    sourceTimestamp: dv.sourceTimestamp,
    sourcePicoseconds: dv.sourcePicoseconds,
    serverTimestamp: dv.serverTimestamp,
    serverPicoseconds: dv.serverPicoseconds,
  };
}
