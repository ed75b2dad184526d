import { describe, expect, it } from "vitest";
import { BuiltinType, VariantArrayType, arrayOf, scalar, type Variant } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { applyRange, numericRangeToString, parseNumericRange, writeRange, type NumericRange, type RangeResult } from "../../src/ua/numeric-range.js";

const { BadIndexRangeInvalid, BadIndexRangeNoData, BadTypeMismatch, BadIndexRangeDataMismatch } = StatusCodes;

function range(text: string): NumericRange {
  const p = parseNumericRange(text);
  if (!p.ok) throw new Error(`range ${text} did not parse`);
  return p.range;
}
function value(r: RangeResult): Variant {
  if (!r.ok) throw new Error(`expected a value, got status 0x${r.statusCode.toString(16)}`);
  return r.value;
}
function status(r: RangeResult): number {
  return r.ok ? StatusCodes.Good : r.statusCode;
}
function m(dataType: BuiltinType, v: unknown[], dimensions: number[]): Variant {
  return { dataType, arrayType: VariantArrayType.Matrix, value: v, dimensions };
}

describe("parseNumericRange (Part 4 §7.22)", () => {
  it.each([
    ["6", [{ low: 6, high: 6 }]],
    ["5:7", [{ low: 5, high: 7 }]],
    ["1:2,0:1", [{ low: 1, high: 2 }, { low: 0, high: 1 }]],
    ["1,1", [{ low: 1, high: 1 }, { low: 1, high: 1 }]],
    ["0:4294967295", [{ low: 0, high: 4294967295 }]],
    ["", []],
  ])("%j", (text, expected) => {
    expect(parseNumericRange(text)).toEqual({ ok: true, range: expected });
    if (text !== "") expect(numericRangeToString(range(text))).toBe(text);
  });
  it.each(["7:5", "5:5", "1:", ":1", "-1", "1 ", " 1", "1,", ",1", "1:2:3", "a", "1.5", "4294967296", "0:4294967296", "1;2"])("refuses %j", (text) => {
    expect(parseNumericRange(text)).toEqual({ ok: false, statusCode: BadIndexRangeInvalid });
  });
});

describe("applyRange (Read)", () => {
  const ints = arrayOf(BuiltinType.Int32, [10, 11, 12, 13, 14]);
  it("arrays: a slice, the upper bound clamped; a lower bound past the end is NoData", () => {
    expect(value(applyRange(ints, range("1:3")))).toEqual(arrayOf(BuiltinType.Int32, [11, 12, 13]));
    expect(value(applyRange(ints, range("4")))).toEqual(arrayOf(BuiltinType.Int32, [14]));
    expect(value(applyRange(ints, range("3:99")))).toEqual(arrayOf(BuiltinType.Int32, [13, 14]));
    expect(status(applyRange(ints, range("5")))).toBe(BadIndexRangeNoData);
    expect(status(applyRange(arrayOf(BuiltinType.Int32, []), range("0")))).toBe(BadIndexRangeNoData);
    expect(status(applyRange(ints, range("1,1")))).toBe(BadIndexRangeNoData);
    expect(value(applyRange(ints, []))).toBe(ints);
  });
  it("scalars: strings and ByteStrings as arrays of characters / bytes; others NoData", () => {
    expect(value(applyRange(scalar(BuiltinType.String, "abcdef"), range("1:3")))).toEqual(scalar(BuiltinType.String, "bcd"));
    expect(value(applyRange(scalar(BuiltinType.ByteString, Buffer.from([1, 2, 3])), range("2:9")))).toEqual(scalar(BuiltinType.ByteString, Buffer.from([3])));
    expect(status(applyRange(scalar(BuiltinType.String, "ab"), range("2")))).toBe(BadIndexRangeNoData);
    expect(status(applyRange(scalar(BuiltinType.String, undefined), range("0")))).toBe(BadIndexRangeNoData);
    expect(status(applyRange(scalar(BuiltinType.Int32, 5), range("0")))).toBe(BadIndexRangeNoData);
  });
  it("arrays of strings: a second dimension selects substrings", () => {
    const s = arrayOf(BuiltinType.String, ["hello", "hi", "world"]);
    expect(value(applyRange(s, range("0:1")))).toEqual(arrayOf(BuiltinType.String, ["hello", "hi"]));
    expect(value(applyRange(s, range("0:2,1:3")))).toEqual(arrayOf(BuiltinType.String, ["ell", "i", "orl"]));
    expect(value(applyRange(s, range("1,2")))).toEqual(arrayOf(BuiltinType.String, [""]));
    expect(status(applyRange(s, range("0,0,0")))).toBe(BadIndexRangeNoData);
  });
  it("matrices: one range per dimension, row-major", () => {
    // 3x4: element [i][j] = 10*i + j
    const mat = m(BuiltinType.Int32, [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23], [3, 4]);
    expect(value(applyRange(mat, range("1:2,0:1")))).toEqual(m(BuiltinType.Int32, [10, 11, 20, 21], [2, 2]));
    expect(value(applyRange(mat, range("1,1")))).toEqual(m(BuiltinType.Int32, [11], [1, 1]));
    expect(value(applyRange(mat, range("2:9,3:9")))).toEqual(m(BuiltinType.Int32, [23], [1, 1]));
    expect(status(applyRange(mat, range("3,0")))).toBe(BadIndexRangeNoData);
    expect(status(applyRange(mat, range("1")))).toBe(BadIndexRangeNoData);
    const cube = m(BuiltinType.Byte, [0, 1, 2, 3, 4, 5, 6, 7], [2, 2, 2]);
    expect(value(applyRange(cube, range("1,0:1,1")))).toEqual(m(BuiltinType.Byte, [5, 7], [1, 2, 1]));
  });
});

describe("writeRange (Write with IndexRange)", () => {
  const ints = arrayOf(BuiltinType.Int32, [10, 11, 12, 13, 14]);
  it("replaces the selected elements and leaves the current value alone", () => {
    const out = value(writeRange(ints, range("1:2"), arrayOf(BuiltinType.Int32, [0, 1])));
    expect(out).toEqual(arrayOf(BuiltinType.Int32, [10, 0, 1, 13, 14]));
    expect(ints.value).toEqual([10, 11, 12, 13, 14]);
    expect(value(writeRange(ints, range("4"), arrayOf(BuiltinType.Int32, [9])))).toEqual(arrayOf(BuiltinType.Int32, [10, 11, 12, 13, 9]));
  });
  it("refuses out-of-bounds, wrong sizes and wrong types", () => {
    expect(status(writeRange(ints, range("4:5"), arrayOf(BuiltinType.Int32, [0, 0])))).toBe(BadIndexRangeNoData);
    expect(status(writeRange(ints, range("1:2"), arrayOf(BuiltinType.Int32, [0])))).toBe(BadIndexRangeDataMismatch);
    expect(status(writeRange(ints, range("1:2"), arrayOf(BuiltinType.Double, [0, 1])))).toBe(BadTypeMismatch);
    expect(status(writeRange(ints, range("1"), scalar(BuiltinType.Int32, 0)))).toBe(BadTypeMismatch);
    expect(status(writeRange(scalar(BuiltinType.Int32, 1), range("0"), scalar(BuiltinType.Int32, 0)))).toBe(BadIndexRangeNoData);
    expect(status(writeRange(ints, range("1,1"), arrayOf(BuiltinType.Int32, [0])))).toBe(BadIndexRangeNoData);
  });
  it("strings and ByteStrings", () => {
    expect(value(writeRange(scalar(BuiltinType.String, "abcdef"), range("1:2"), scalar(BuiltinType.String, "XY")))).toEqual(scalar(BuiltinType.String, "aXYdef"));
    expect(status(writeRange(scalar(BuiltinType.String, "abc"), range("1:2"), scalar(BuiltinType.String, "X")))).toBe(BadIndexRangeDataMismatch);
    expect(status(writeRange(scalar(BuiltinType.String, "abc"), range("2:3"), scalar(BuiltinType.String, "XY")))).toBe(BadIndexRangeNoData);
    const bytes = Buffer.from([1, 2, 3]);
    const out = value(writeRange(scalar(BuiltinType.ByteString, bytes), range("0"), scalar(BuiltinType.ByteString, Buffer.from([9]))));
    expect([...(out.value as Buffer)]).toEqual([9, 2, 3]);
    expect([...bytes]).toEqual([1, 2, 3]);
    const strs = arrayOf(BuiltinType.String, ["hello", "world"]);
    expect(value(writeRange(strs, range("1,0:1"), arrayOf(BuiltinType.String, ["WO"])))).toEqual(arrayOf(BuiltinType.String, ["hello", "WOrld"]));
  });
  it("matrices take a matrix of the selected shape", () => {
    const mat = m(BuiltinType.Int32, [0, 1, 2, 10, 11, 12], [2, 3]);
    expect(value(writeRange(mat, range("0:1,1:2"), m(BuiltinType.Int32, [7, 8, 9, 6], [2, 2])))).toEqual(m(BuiltinType.Int32, [0, 7, 8, 10, 9, 6], [2, 3]));
    expect(status(writeRange(mat, range("0:1,1:2"), m(BuiltinType.Int32, [7, 8, 9, 6], [1, 4])))).toBe(BadIndexRangeDataMismatch);
    expect(status(writeRange(mat, range("0:1,2:3"), m(BuiltinType.Int32, [7, 8, 9, 6], [2, 2])))).toBe(BadIndexRangeNoData);
  });
});
