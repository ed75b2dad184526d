// Register contents <-> values: every data type in every byte order, scaling, and the inverse
// for writes with range checks. Expected registers are written out by hand from the IEEE 754 /
// two's complement bytes, not computed with the code under test.
import { describe, expect, it } from "vitest";
import type { DeviceConfig } from "../../src/config/device-map.js";
import { variantOf, type ByteOrder, type TagCodec, type WordType as DataType } from "../../src/devices/tag-codec.js";
import { modbusTag, type ModbusTag as TagConfig } from "../../drivers/modbus/protocol.js";
import { BuiltinType, VariantArrayType, type Variant } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";

/** The word codec of a Modbus tag on a device of byte order `order`. */
function compileTag(t: TagConfig, order: ByteOrder): TagCodec {
  return modbusTag(t, { byteOrder: order } as unknown as DeviceConfig).codec;
}

function decodeValue(codec: TagCodec, block: Uint16Array | Uint8Array, at: number): Variant {
  return variantOf(codec.builtinType, codec.decodeRaw(block, at)!);
}

function encodeValue(codec: TagCodec, value: Variant) {
  return codec.encode(value);
}

function tag(type: DataType, extra: Partial<TagConfig> = {}, area: TagConfig["address"]["area"] = "holding"): TagConfig {
  return { name: "t", address: { area, offset: 0 }, type, scale: 1, offset: 0, access: "readwrite", history: false, ...extra };
}

function decode(t: TagConfig, regs: number[], order: ByteOrder = "ABCD", at = 0): unknown {
  return decodeValue(compileTag(t, order), Uint16Array.from(regs), at).value;
}

function encode(t: TagConfig, value: Variant, order: ByteOrder = "ABCD"): number[] | number {
  const r = encodeValue(compileTag(t, order), value);
  return r.ok ? Array.from(r.data) : r.statusCode;
}

const v = (dataType: BuiltinType, value: unknown): Variant => ({ dataType, arrayType: VariantArrayType.Scalar, value });

// 123456.789 as float32 is 0x47F12065; as float64 0x40FE240C9FBE76C9.
const F32 = [0x47f1, 0x2065];
const F64 = [0x40fe, 0x240c, 0x9fbe, 0x76c9];

describe("byte orders", () => {
  it.each([
    ["ABCD", [0x47f1, 0x2065]],
    ["CDAB", [0x2065, 0x47f1]],
    ["BADC", [0xf147, 0x6520]],
    ["DCBA", [0x6520, 0xf147]],
  ] as const)("float32 %s", (order, regs) => {
    expect(decode(tag("float32"), [...regs], order)).toBe(Math.fround(123456.789));
    expect(encode(tag("float32"), v(BuiltinType.Float, Math.fround(123456.789)), order)).toEqual(regs);
  });

  it.each([
    ["ABCD", [0x40fe, 0x240c, 0x9fbe, 0x76c9]],
    ["CDAB", [0x76c9, 0x9fbe, 0x240c, 0x40fe]],
    ["BADC", [0xfe40, 0x0c24, 0xbe9f, 0xc976]],
    ["DCBA", [0xc976, 0xbe9f, 0x0c24, 0xfe40]],
  ] as const)("float64 %s", (order, regs) => {
    expect(decode(tag("float64"), [...regs], order)).toBe(123456.789);
    expect(encode(tag("float64"), v(BuiltinType.Double, 123456.789), order)).toEqual(regs);
  });

  it.each([
    ["ABCD", [0xfffe, 0x1dc0], -123456],
    ["CDAB", [0x1dc0, 0xfffe], -123456],
    ["BADC", [0xfeff, 0xc01d], -123456],
    ["DCBA", [0xc01d, 0xfeff], -123456],
  ] as const)("int32 %s", (order, regs, value) => {
    expect(decode(tag("int32"), [...regs], order)).toBe(value);
    expect(encode(tag("int32"), v(BuiltinType.Int32, value), order)).toEqual(regs);
  });

  it("16-bit values know only the byte swap", () => {
    expect(decode(tag("uint16"), [0x1234], "ABCD")).toBe(0x1234);
    expect(decode(tag("uint16"), [0x1234], "CDAB")).toBe(0x1234);
    expect(decode(tag("uint16"), [0x1234], "BADC")).toBe(0x3412);
    expect(decode(tag("int16"), [0xff85], "DCBA")).toBe(-31233);
    expect(decode(tag("int16"), [0xff85])).toBe(-123);
  });

  it("a tag's own byteOrder wins over the device's", () => {
    expect(decode(tag("float32", { byteOrder: "CDAB" }), [0x2065, 0x47f1], "ABCD")).toBe(Math.fround(123456.789));
  });
});

describe("data types", () => {
  it("uint32, int64 and uint64 (bigints, exact beyond 2^53)", () => {
    expect(decode(tag("uint32"), [0xffff, 0xfffe])).toBe(4294967294);
    expect(decode(tag("int64"), [0xffff, 0xffff, 0xffff, 0xfffe])).toBe(-2n);
    expect(decode(tag("uint64"), [0x0020, 0x0000, 0x0000, 0x0001])).toBe(9007199254740993n);
    expect(decode(tag("int64"), [0x0000, 0x0000, 0x0000, 0x0005], "CDAB")).toBe(5n * 2n ** 48n);
    expect(encode(tag("uint64"), v(BuiltinType.UInt64, 9007199254740993n))).toEqual([0x0020, 0, 0, 1]);
    expect(encode(tag("int64"), v(BuiltinType.Int64, -2n))).toEqual([0xffff, 0xffff, 0xffff, 0xfffe]);
  });

  it("types map to OPC UA built-in types", () => {
    const types: [DataType, BuiltinType][] = [
      ["bool", BuiltinType.Boolean],
      ["bit", BuiltinType.Boolean],
      ["int16", BuiltinType.Int16],
      ["uint16", BuiltinType.UInt16],
      ["int32", BuiltinType.Int32],
      ["uint32", BuiltinType.UInt32],
      ["int64", BuiltinType.Int64],
      ["uint64", BuiltinType.UInt64],
      ["float32", BuiltinType.Float],
      ["float64", BuiltinType.Double],
      ["string", BuiltinType.String],
    ];
    for (const [type, builtin] of types) expect(compileTag(tag(type, { length: 2 }), "ABCD").builtinType, type).toBe(builtin);
    expect(compileTag(tag("int16", { scale: 0.1 }), "ABCD").builtinType).toBe(BuiltinType.Double);
  });

  it("strings: two characters per register, ending at NUL; BADC swaps each pair", () => {
    const t = tag("string", { length: 4 });
    expect(decode(t, [0x6669, 0x656c, 0x6400, 0x4142])).toBe("field");
    expect(decode(t, [0x6966, 0x6c65, 0x0064, 0x0000], "BADC")).toBe("field");
    expect(encode(t, v(BuiltinType.String, "field"))).toEqual([0x6669, 0x656c, 0x6400, 0]);
    expect(encode(t, v(BuiltinType.String, "field"), "DCBA")).toEqual([0x6966, 0x6c65, 0x0064, 0]);
    expect(encode(t, v(BuiltinType.String, "123456789"))).toBe(StatusCodes.BadOutOfRange);
  });

  it("bool on a register is register != 0; bit is one bit; a coil is a bit of a bit block", () => {
    expect(decode(tag("bool"), [0x0100])).toBe(true);
    expect(decode(tag("bool"), [0])).toBe(false);
    expect(decode(tag("bit", { address: { area: "holding", offset: 0, bit: 3 } }), [0b1000])).toBe(true);
    expect(decode(tag("bit", { address: { area: "holding", offset: 0, bit: 2 } }), [0b1000])).toBe(false);
    expect(decodeValue(compileTag(tag("bool", {}, "coil"), "ABCD"), Uint8Array.of(0, 1, 0), 1).value).toBe(true);
    expect(encode(tag("bit", { address: { area: "holding", offset: 0, bit: 3 } }), v(BuiltinType.Boolean, true))).toEqual([8]);
    expect(encodeValue(compileTag(tag("bool", {}, "coil"), "ABCD"), v(BuiltinType.Boolean, true))).toEqual({ ok: true, data: Uint8Array.of(1) });
  });

  it("reads a tag at its place in a block", () => {
    expect(decode(tag("float32"), [0, 0, 0, ...F32, 0], "ABCD", 3)).toBe(Math.fround(123456.789));
    expect(decode(tag("float64"), [9, ...F64], "ABCD", 1)).toBe(123456.789);
  });
});

describe("scaling", () => {
  it("engineering = raw * scale + offset, as a Double", () => {
    const t = tag("int16", { scale: 0.1, offset: -40 });
    const value = decodeValue(compileTag(t, "ABCD"), Uint16Array.of(650), 0);
    expect(value.dataType).toBe(BuiltinType.Double);
    expect(value.value).toBeCloseTo(25, 10);
  });

  it("writes convert back, rounded to the raw type", () => {
    const t = tag("int16", { scale: 0.1, offset: -40 });
    expect(encode(t, v(BuiltinType.Double, 25))).toEqual([650]);
    expect(encode(t, v(BuiltinType.Double, 25.04))).toEqual([650]);
    expect(encode(t, v(BuiltinType.Double, -50))).toEqual([0xff9c]);
  });

  it("writes outside the EURange or the raw type are BadOutOfRange", () => {
    const ranged = tag("uint16", { scale: 0.5, range: [0, 100] });
    expect(encode(ranged, v(BuiltinType.Double, 100))).toEqual([200]);
    expect(encode(ranged, v(BuiltinType.Double, 100.5))).toBe(StatusCodes.BadOutOfRange);
    expect(encode(ranged, v(BuiltinType.Double, -1))).toBe(StatusCodes.BadOutOfRange);
    expect(encode(ranged, v(BuiltinType.Double, Number.NaN))).toBe(StatusCodes.BadOutOfRange);
    const raw = tag("uint16", { scale: 10 });
    expect(encode(raw, v(BuiltinType.Double, 655350))).toEqual([65535]);
    expect(encode(raw, v(BuiltinType.Double, 655360))).toBe(StatusCodes.BadOutOfRange);
    expect(encode(tag("int16"), v(BuiltinType.Int16, -32768))).toEqual([0x8000]);
    expect(encode(tag("uint32", { scale: 2 }), v(BuiltinType.Double, -2))).toBe(StatusCodes.BadOutOfRange);
    expect(encode(tag("float32", { scale: 1e-30 }), v(BuiltinType.Double, 1e10))).toBe(StatusCodes.BadOutOfRange);
    expect(encode(tag("uint64"), v(BuiltinType.UInt64, -1n))).toBe(StatusCodes.BadOutOfRange);
  });

  it("refuses a value of the wrong kind", () => {
    expect(encode(tag("uint16"), v(BuiltinType.String, "1"))).toBe(StatusCodes.BadTypeMismatch);
    expect(encode(tag("bool"), v(BuiltinType.UInt16, 1))).toBe(StatusCodes.BadTypeMismatch);
  });
});
