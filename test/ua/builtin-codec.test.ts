import { describe, expect, it } from "vitest";
import type { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import * as codec from "../../src/ua/builtin-codec.js";
import {
  BuiltinType,
  DATETIME_MIN,
  IdType,
  NULL_VARIANT,
  VariantArrayType,
  arrayOf,
  numericNodeId,
  scalar,
  stringNodeId,
  type DataValue,
  type DiagnosticInfo,
  type ExpandedNodeId,
  type ExtensionObject,
  type NodeId,
  type Variant,
} from "../../src/ua/builtins.js";
import { UaStatusError } from "../../src/ua/errors.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { decodeAll, encode, prng, randomBytes, reader, roundTrip, thrownStatus } from "./helpers.js";

const { BadDecodingError, BadEncodingError } = StatusCodes;

// Test structures under ids no real ns0 node uses.
interface Point {
  x: number;
  y: number;
}
const PointCodec: codec.StructureCodec<Point> = {
  name: "TestPoint",
  dataTypeId: 3999999001,
  binaryEncodingId: 3999999002,
  encode(w, v) {
    w.writeInt32(v.x);
    w.writeInt32(v.y);
  },
  decode(r) {
    return { x: r.readInt32(), y: r.readInt32() };
  },
};
interface Box {
  inner?: ExtensionObject;
}
const BoxCodec: codec.StructureCodec<Box> = {
  name: "TestBox",
  dataTypeId: 3999999003,
  binaryEncodingId: 3999999004,
  encode(w, v) {
    w.writeBoolean(v.inner !== undefined);
    if (v.inner) codec.encodeExtensionObject(w, v.inner);
  },
  decode(r) {
    return r.readBoolean() ? { inner: codec.decodeExtensionObject(r) } : {};
  },
};
codec.registerStructure(PointCodec as codec.StructureCodec);
codec.registerStructure(BoxCodec as codec.StructureCodec);

const GUID = "72962b91-fa75-4ae6-8d28-b404dc7daf63";

const nodeIds: NodeId[] = [
  numericNodeId(0),
  numericNodeId(255),
  numericNodeId(256),
  numericNodeId(65535, 255),
  numericNodeId(65536, 1),
  numericNodeId(1, 256),
  numericNodeId(4294967295, 65535),
  stringNodeId("boiler.temp", 1),
  stringNodeId("", 0),
  stringNodeId("Hot水", 65535),
  { namespace: 2, idType: IdType.Guid, value: GUID },
  { namespace: 3, idType: IdType.Opaque, value: Buffer.from([1, 2, 3, 255]) },
  { namespace: 0, idType: IdType.Opaque, value: Buffer.alloc(0) },
];

const expandedNodeIds: ExpandedNodeId[] = [
  { nodeId: numericNodeId(85), serverIndex: 0 },
  { nodeId: numericNodeId(85), namespaceUri: "urn:x", serverIndex: 0 },
  { nodeId: stringNodeId("a", 1), serverIndex: 7 },
  { nodeId: { namespace: 0, idType: IdType.Guid, value: GUID }, namespaceUri: "", serverIndex: 4294967295 },
];

function m(dataType: BuiltinType, value: unknown[], dimensions: number[]): Variant {
  return { dataType, arrayType: VariantArrayType.Matrix, value, dimensions };
}

const scalars: Variant[] = [
  NULL_VARIANT,
  scalar(BuiltinType.Boolean, true),
  scalar(BuiltinType.Boolean, false),
  scalar(BuiltinType.SByte, -128),
  scalar(BuiltinType.SByte, 127),
  scalar(BuiltinType.Byte, 0),
  scalar(BuiltinType.Byte, 255),
  scalar(BuiltinType.Int16, -32768),
  scalar(BuiltinType.Int16, 32767),
  scalar(BuiltinType.UInt16, 65535),
  scalar(BuiltinType.Int32, -2147483648),
  scalar(BuiltinType.Int32, 2147483647),
  scalar(BuiltinType.UInt32, 4294967295),
  scalar(BuiltinType.Int64, -(2n ** 63n)),
  scalar(BuiltinType.Int64, 2n ** 63n - 1n),
  scalar(BuiltinType.UInt64, 2n ** 64n - 1n),
  scalar(BuiltinType.Float, 1.5),
  scalar(BuiltinType.Float, -Infinity),
  scalar(BuiltinType.Float, NaN),
  scalar(BuiltinType.Double, -0),
  scalar(BuiltinType.Double, NaN),
  scalar(BuiltinType.Double, Number.MAX_VALUE),
  scalar(BuiltinType.Double, Number.MIN_VALUE),
  scalar(BuiltinType.String, "héllo wörld ✓ 𝄞"),
  scalar(BuiltinType.String, ""),
  scalar(BuiltinType.String, undefined),
  scalar(BuiltinType.DateTime, Date.UTC(2024, 1, 29, 12, 0, 0, 123)),
  scalar(BuiltinType.DateTime, DATETIME_MIN),
  scalar(BuiltinType.Guid, GUID),
  scalar(BuiltinType.ByteString, Buffer.from([0, 1, 2])),
  scalar(BuiltinType.ByteString, Buffer.alloc(0)),
  scalar(BuiltinType.ByteString, undefined),
  scalar(BuiltinType.XmlElement, "<a>b</a>"),
  scalar(BuiltinType.NodeId, stringNodeId("x", 4)),
  scalar(BuiltinType.ExpandedNodeId, expandedNodeIds[1]),
  scalar(BuiltinType.StatusCode, StatusCodes.BadDecodingError),
  scalar(BuiltinType.QualifiedName, { namespaceIndex: 3, name: "Temp" }),
  scalar(BuiltinType.LocalizedText, { locale: "de", text: "Temperatur" }),
  scalar(BuiltinType.LocalizedText, {}),
  scalar(BuiltinType.ExtensionObject, { typeId: numericNodeId(PointCodec.binaryEncodingId), body: { x: -1, y: 2 } }),
  scalar(BuiltinType.DataValue, { value: scalar(BuiltinType.Int32, 1), statusCode: StatusCodes.BadTimeout }),
  scalar(BuiltinType.DiagnosticInfo, { symbolicId: 1, additionalInfo: "x" }),
];

const arrays: Variant[] = [
  arrayOf(BuiltinType.Double, []),
  arrayOf(BuiltinType.Int32, [1, -2, 3]),
  arrayOf(BuiltinType.String, ["a", undefined, ""]),
  arrayOf(BuiltinType.Int64, [0n, -1n]),
  arrayOf(BuiltinType.Boolean, [true, false]),
  arrayOf(BuiltinType.ByteString, [Buffer.from("ab"), undefined]),
  arrayOf(BuiltinType.Variant, [scalar(BuiltinType.Int32, 1), scalar(BuiltinType.String, "s"), NULL_VARIANT]),
  // Nested: an array of Variants holding arrays of Variants.
  arrayOf(BuiltinType.Variant, [arrayOf(BuiltinType.Variant, [arrayOf(BuiltinType.Byte, [1, 2])]), arrayOf(BuiltinType.Float, [])]),
  m(BuiltinType.Int16, [1, 2, 3, 4, 5, 6], [2, 3]),
  m(BuiltinType.Double, [], [0, 5]),
  m(BuiltinType.String, ["a", "b", "c", "d", "e", "f", "g", "h"], [2, 2, 2]),
];

const dataValues: DataValue[] = [
  {},
  { value: scalar(BuiltinType.Double, 21.5) },
  {
    value: arrayOf(BuiltinType.UInt16, [1, 2]),
    statusCode: StatusCodes.BadCommunicationError,
    sourceTimestamp: Date.UTC(2020, 0, 1),
    sourcePicoseconds: 9999,
    serverTimestamp: Date.UTC(2021, 0, 1),
    serverPicoseconds: 1,
  },
  { serverTimestamp: DATETIME_MIN },
];

const diagnostics: DiagnosticInfo[] = [
  {},
  {
    symbolicId: 1,
    namespaceUri: 2,
    localizedText: 3,
    locale: 4,
    additionalInfo: "why",
    innerStatusCode: StatusCodes.BadTimeout,
    innerDiagnosticInfo: { locale: -1, innerDiagnosticInfo: { additionalInfo: "" } },
  },
];

describe("round trips", () => {
  it("NodeId in every form", () => {
    for (const id of nodeIds) expect(roundTrip(codec.encodeNodeId, codec.decodeNodeId, id)).toEqual(id);
  });
  it("ExpandedNodeId with and without URI and server index", () => {
    for (const id of expandedNodeIds) expect(roundTrip(codec.encodeExpandedNodeId, codec.decodeExpandedNodeId, id)).toEqual(id);
  });
  it("QualifiedName, LocalizedText, StatusCode, XmlElement", () => {
    for (const q of [{ namespaceIndex: 0, name: "" }, { namespaceIndex: 65535, name: "Ω" }]) {
      expect(roundTrip(codec.encodeQualifiedName, codec.decodeQualifiedName, q)).toEqual(q);
    }
    for (const t of [{}, { locale: "en" }, { text: "" }, { locale: "", text: "x" }]) {
      expect(roundTrip(codec.encodeLocalizedText, codec.decodeLocalizedText, t)).toStrictEqual(t);
    }
    expect(roundTrip(codec.encodeStatusCode, codec.decodeStatusCode, 0xffffffff)).toBe(0xffffffff);
    expect(roundTrip(codec.encodeXmlElement, codec.decodeXmlElement, undefined)).toBeUndefined();
    expect(roundTrip(codec.encodeXmlElement, codec.decodeXmlElement, "<x/>")).toBe("<x/>");
  });
  it("Variant: scalars of every type, edge values", () => {
    for (const v of scalars) expect(roundTrip(codec.encodeVariant, codec.decodeVariant, v), BuiltinType[v.dataType]).toEqual(v);
    expect(Object.is(roundTrip(codec.encodeVariant, codec.decodeVariant, scalar(BuiltinType.Double, -0)).value, -0)).toBe(true);
  });
  it("Variant: arrays, nested Variant arrays, matrices", () => {
    for (const v of arrays) expect(roundTrip(codec.encodeVariant, codec.decodeVariant, v)).toEqual(v);
    // Typed arrays encode like arrays.
    const d = roundTrip(codec.encodeVariant, codec.decodeVariant, arrayOf(BuiltinType.Double, new Float64Array([1.5, -2]) as unknown as number[]));
    expect(d.value).toEqual([1.5, -2]);
  });
  it("Variant: a null array decodes as an empty array", () => {
    const bytes = Buffer.from([0x80 | BuiltinType.Int32, 0xff, 0xff, 0xff, 0xff]);
    expect(decodeAll(codec.decodeVariant, bytes)).toEqual(arrayOf(BuiltinType.Int32, []));
  });
  it("DataValue with every mask bit", () => {
    for (const dv of dataValues) expect(roundTrip(codec.encodeDataValue, codec.decodeDataValue, dv)).toStrictEqual(dv);
    // Good and zero picoseconds are the defaults and are left out of the encoding.
    const bytes = encode(codec.encodeDataValue, { statusCode: StatusCodes.Good, sourcePicoseconds: 0 });
    expect([...bytes]).toEqual([0]);
    expect([...encode(codec.encodeDataValue, dataValues[2])].slice(0, 1)).toEqual([0x3f]);
  });
  it("DiagnosticInfo with every mask bit and nesting", () => {
    for (const di of diagnostics) expect(roundTrip(codec.encodeDiagnosticInfo, codec.decodeDiagnosticInfo, di)).toStrictEqual(di);
  });
  it("ExtensionObject: none, binary, xml, registered structure", () => {
    const cases: ExtensionObject[] = [
      { typeId: numericNodeId(0), body: null },
      { typeId: stringNodeId("t", 2), body: Buffer.from([9, 8, 7]) },
      { typeId: numericNodeId(12345), body: { xml: "<a/>" } },
      { typeId: numericNodeId(PointCodec.binaryEncodingId), body: { x: 1, y: -1 } },
      {
        typeId: numericNodeId(BoxCodec.binaryEncodingId),
        body: { inner: { typeId: numericNodeId(PointCodec.binaryEncodingId), body: { x: 3, y: 4 } } },
      },
    ];
    for (const eo of cases) expect(roundTrip(codec.encodeExtensionObject, codec.decodeExtensionObject, eo)).toEqual(eo);
  });
});

describe("exact bytes (Part 6 §5.2.2 examples)", () => {
  const hex = (b: Buffer) => b.toString("hex");
  it("NodeId encodings pick the smallest form", () => {
    expect(hex(encode(codec.encodeNodeId, numericNodeId(72)))).toBe("0048");
    expect(hex(encode(codec.encodeNodeId, numericNodeId(1025, 5)))).toBe("01050104");
    expect(hex(encode(codec.encodeNodeId, numericNodeId(70000, 2)))).toBe("02020070110100");
    expect(hex(encode(codec.encodeNodeId, stringNodeId("Hot水", 1)))).toBe("03010006000000486f74e6b0b4");
    expect(hex(encode(codec.encodeNodeId, { namespace: 4, idType: IdType.Guid, value: GUID.toUpperCase() }))).toBe(
      "0404" + "00" + "912b9672" + "75fa" + "e64a" + "8d28b404dc7daf63",
    );
    expect(hex(encode(codec.encodeNodeId, { namespace: 1, idType: IdType.Opaque, value: Buffer.from([0xab]) }))).toBe("050100" + "01000000ab");
  });
  it("ExpandedNodeId flags", () => {
    expect(hex(encode(codec.encodeExpandedNodeId, { nodeId: numericNodeId(1), namespaceUri: "u", serverIndex: 2 }))).toBe(
      "c001" + "0100000075" + "02000000",
    );
  });
  it("Variant, LocalizedText, DataValue", () => {
    expect(hex(encode(codec.encodeVariant, scalar(BuiltinType.Int32, 5)))).toBe("0605000000");
    expect(hex(encode(codec.encodeVariant, m(BuiltinType.Byte, [1, 2], [1, 2])))).toBe("c3020000000102" + "02000000" + "01000000" + "02000000");
    expect(hex(encode(codec.encodeLocalizedText, { text: "a" }))).toBe("020100000061");
    expect(hex(encode(codec.encodeDataValue, { value: scalar(BuiltinType.Boolean, true), statusCode: 0x80340000 }))).toBe("03" + "0101" + "00003480");
  });
  it("ExtensionObject: DataType id is replaced by the binary encoding id; length is patched", () => {
    const bytes = encode(codec.encodeExtensionObject, { typeId: numericNodeId(PointCodec.dataTypeId), body: { x: 1, y: 2 } });
    const r = reader(bytes);
    expect(codec.decodeNodeId(r)).toEqual(numericNodeId(PointCodec.binaryEncodingId));
    expect(r.readByte()).toBe(1);
    expect(r.readInt32()).toBe(8);
    expect(r.readInt32()).toBe(1);
  });
});

describe("decoding rejects malformed input", () => {
  const status = (dec: (r: BinaryReader) => unknown, bytes: number[] | Buffer, limits = {}) =>
    thrownStatus(() => dec(reader(Buffer.from(bytes), limits)));

  it("NodeId: unknown encoding byte and ExpandedNodeId flags on a plain NodeId", () => {
    expect(status(codec.decodeNodeId, [0x06, 0, 0])).toBe(BadDecodingError);
    expect(status(codec.decodeNodeId, [0x80, 1])).toBe(BadDecodingError);
    expect(status(codec.decodeNodeId, [0x40, 1, 0, 0, 0, 0])).toBe(BadDecodingError);
    expect(status(codec.decodeExpandedNodeId, [0x86, 1])).toBe(BadDecodingError);
    expect(decodeAll(codec.decodeExpandedNodeId, Buffer.from([0x40, 5, 1, 0, 0, 0]))).toEqual({ nodeId: numericNodeId(5), serverIndex: 1 });
  });
  it("an opaque NodeId and an unknown ExtensionObject body are copied out of the input", () => {
    const input = encode(codec.encodeNodeId, { namespace: 1, idType: IdType.Opaque, value: Buffer.from([1, 2]) });
    const id = codec.decodeNodeId(reader(input));
    input.fill(0);
    expect([...(id.value as Buffer)]).toEqual([1, 2]);
    const eoBytes = encode(codec.encodeExtensionObject, { typeId: numericNodeId(999), body: Buffer.from([5, 6]) });
    const eo = codec.decodeExtensionObject(reader(eoBytes));
    eoBytes.fill(0);
    expect([...(eo.body as Buffer)]).toEqual([5, 6]);
  });
  it("Variant: bad type id, dimensions without array, scalar Variant, bad matrices", () => {
    expect(status(codec.decodeVariant, [26])).toBe(BadDecodingError);
    expect(status(codec.decodeVariant, [0x3f])).toBe(BadDecodingError);
    expect(status(codec.decodeVariant, [0x40 | 6, 0, 0, 0, 0])).toBe(BadDecodingError);
    expect(status(codec.decodeVariant, [BuiltinType.Variant, 6, 1, 0, 0, 0])).toBe(BadDecodingError);
    expect(status(codec.decodeVariant, [0x80, 1, 0, 0, 0])).toBe(BadDecodingError);
    const base = [0xc3, 2, 0, 0, 0, 1, 2];
    expect(status(codec.decodeVariant, [...base, 1, 0, 0, 0, 3, 0, 0, 0])).toBe(BadDecodingError); // 3 != 2
    expect(status(codec.decodeVariant, [...base, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff])).toBe(BadDecodingError); // -1 * -2
    expect(status(codec.decodeVariant, [...base, 0, 0, 0, 0])).toBe(BadDecodingError);
    expect(decodeAll(codec.decodeVariant, Buffer.from([...base, 1, 0, 0, 0, 2, 0, 0, 0]))).toEqual(m(BuiltinType.Byte, [1, 2], [2]));
  });
  it("ExtensionObject: bad encoding byte; body must fill exactly its declared length", () => {
    const id = PointCodec.binaryEncodingId;
    const head = encode(codec.encodeNodeId, numericNodeId(id));
    const body = (len: number, extra: number[]) => Buffer.concat([head, Buffer.from([1]), Buffer.from(new Int32Array([len]).buffer), Buffer.from(extra)]);
    const eight = [1, 0, 0, 0, 2, 0, 0, 0];
    expect(decodeAll(codec.decodeExtensionObject, body(8, eight)).body).toEqual({ x: 1, y: 2 });
    expect(status(codec.decodeExtensionObject, body(6, eight))).toBe(BadDecodingError); // codec reads past the length
    expect(status(codec.decodeExtensionObject, body(10, [...eight, 0, 0]))).toBe(BadDecodingError); // leaves bytes unread
    expect(status(codec.decodeExtensionObject, body(9, eight))).toBe(BadDecodingError); // longer than the input
    expect(status(codec.decodeExtensionObject, body(-2, eight))).toBe(BadDecodingError);
    expect(status(codec.decodeExtensionObject, Buffer.concat([head, Buffer.from([3])]))).toBe(BadDecodingError);
    // The reader's end is restored after a failing body.
    const r = reader(body(6, eight));
    expect(() => codec.decodeExtensionObject(r)).toThrow(UaStatusError);
    expect(r.end).toBe(body(6, eight).length);
  });
  it("invalid UTF-8 in a String is refused", () => {
    expect(status(codec.decodeVariant, [12, 2, 0, 0, 0, 0xc3, 0x28])).toBe(BadDecodingError);
    expect(status(codec.decodeQualifiedName, [0, 0, 1, 0, 0, 0, 0xff])).toBe(BadDecodingError);
    expect(status(codec.decodeLocalizedText, [2, 3, 0, 0, 0, 0xed, 0xa0, 0x80])).toBe(BadDecodingError); // lone surrogate
  });
  it("an array length larger than the bytes left is refused before allocating", () => {
    for (const type of [BuiltinType.Boolean, BuiltinType.Double, BuiltinType.Variant, BuiltinType.ExtensionObject]) {
      expect(status(codec.decodeVariant, [0x80 | type, 0xff, 0xff, 0xff, 0x7f])).toBe(BadDecodingError);
    }
    // Refused by the length check itself (not by running out of bytes after allocating), even
    // with no array limit: each element needs at least its minimum encoded size.
    const refusal = (bytes: number[]) => {
      try {
        codec.decodeVariant(reader(Buffer.from(bytes), { maxArrayLength: 0x7fffffff }));
      } catch (err) {
        return String(err);
      }
      return "decoded";
    };
    expect(refusal([0x80 | BuiltinType.Boolean, 0xff, 0xff, 0xff, 0x7f, 1, 1])).toMatch(/BadDecodingError.*longer than the 2 bytes left/);
    expect(refusal([0x80 | BuiltinType.Guid, 2, 0, 0, 0, ...new Array(20).fill(0)])).toMatch(/longer than the 20 bytes left/);
    expect(refusal([0x80 | BuiltinType.Double, 3, 0, 0, 0, ...new Array(20).fill(0)])).toMatch(/longer than the 20 bytes left/);
    expect(refusal([0x80 | BuiltinType.QualifiedName, 4, 0, 0, 0, ...new Array(20).fill(0)])).toMatch(/longer than the 20 bytes left/);
    expect(status(codec.decodeVariant, [0x80 | BuiltinType.Int32, 0xfe, 0xff, 0xff, 0xff])).toBe(BadDecodingError); // -2
    expect(status(codec.decodeVariant, [0x80 | BuiltinType.Byte, 3, 0, 0, 0, 1, 2, 3], { maxArrayLength: 2 })).toBe(BadDecodingError);
  });
});

describe("nesting depth", () => {
  function nestedVariant(levels: number): Variant {
    let v: Variant = scalar(BuiltinType.Int32, 1);
    for (let i = 1; i < levels; i++) v = arrayOf(BuiltinType.Variant, [v]);
    return v;
  }
  function nestedDiag(levels: number): DiagnosticInfo {
    let d: DiagnosticInfo = { symbolicId: 1 };
    for (let i = 1; i < levels; i++) d = { innerDiagnosticInfo: d };
    return d;
  }
  /** Bytes of `levels` nested items, built with a writer allowed to go deeper than the decoder. */
  function deepBytes<T>(enc: (w: BinaryWriter, v: T) => void, v: T): Buffer {
    const w = new BinaryWriter(Buffer.alloc(64));
    w.maxDepth = 1000;
    enc(w, v);
    return Buffer.from(w.view());
  }
  it("Variant arrays of Variant: 100 levels decode, 101 do not; the encoder refuses 101 as well", () => {
    expect(decodeAll(codec.decodeVariant, deepBytes(codec.encodeVariant, nestedVariant(100)))).toEqual(nestedVariant(100));
    expect(thrownStatus(() => codec.decodeVariant(reader(deepBytes(codec.encodeVariant, nestedVariant(101)))))).toBe(BadDecodingError);
    expect(thrownStatus(() => encode(codec.encodeVariant, nestedVariant(101)))).toBe(BadEncodingError);
  });
  it("DiagnosticInfo inner nesting counts", () => {
    expect(decodeAll(codec.decodeDiagnosticInfo, deepBytes(codec.encodeDiagnosticInfo, nestedDiag(100)))).toEqual(nestedDiag(100));
    expect(thrownStatus(() => codec.decodeDiagnosticInfo(reader(deepBytes(codec.encodeDiagnosticInfo, nestedDiag(101)))))).toBe(BadDecodingError);
    expect(thrownStatus(() => codec.decodeDiagnosticInfo(reader(deepBytes(codec.encodeDiagnosticInfo, nestedDiag(6)), { maxDepth: 5 })))).toBe(
      BadDecodingError,
    );
  });
  it("DataValue / Variant / ExtensionObject nesting counts together", () => {
    // DataValue -> Variant -> DataValue -> ... : each level is two.
    let dv: DataValue = { value: scalar(BuiltinType.Int32, 1) };
    for (let i = 0; i < 3; i++) dv = { value: scalar(BuiltinType.DataValue, dv) };
    const bytes = deepBytes(codec.encodeDataValue, dv); // 8 levels
    expect(decodeAll(codec.decodeDataValue, bytes, { maxDepth: 8 })).toEqual(dv);
    expect(thrownStatus(() => codec.decodeDataValue(reader(bytes, { maxDepth: 7 })))).toBe(BadDecodingError);
    let eo: ExtensionObject = { typeId: numericNodeId(PointCodec.binaryEncodingId), body: { x: 0, y: 0 } };
    for (let i = 0; i < 4; i++) eo = { typeId: numericNodeId(BoxCodec.dataTypeId), body: { inner: eo } };
    const eoBytes = deepBytes(codec.encodeExtensionObject, eo); // 5 levels
    expect(codec.decodeExtensionObject(reader(eoBytes, { maxDepth: 5 }))).toBeTruthy();
    expect(thrownStatus(() => codec.decodeExtensionObject(reader(eoBytes, { maxDepth: 4 })))).toBe(BadDecodingError);
  });
});

describe("encoding refuses values that do not fit their type", () => {
  const bad: [BuiltinType, unknown][] = [
    [BuiltinType.Int32, "5"],
    [BuiltinType.Int32, 1.5],
    [BuiltinType.Int32, 2147483648],
    [BuiltinType.Byte, 300],
    [BuiltinType.Byte, -1],
    [BuiltinType.SByte, 128],
    [BuiltinType.UInt16, 65536],
    [BuiltinType.UInt32, -1],
    [BuiltinType.Int64, 5],
    [BuiltinType.Int64, 2n ** 63n],
    [BuiltinType.UInt64, -1n],
    [BuiltinType.Float, 1e39],
    [BuiltinType.Double, "1"],
    [BuiltinType.Boolean, 1],
    [BuiltinType.String, 5],
    [BuiltinType.DateTime, new Date(0)],
    [BuiltinType.Guid, "not-a-guid"],
    [BuiltinType.ByteString, "ab"],
    [BuiltinType.NodeId, "i=85"],
    [BuiltinType.NodeId, { namespace: 0, idType: IdType.Numeric, value: -1 }],
    [BuiltinType.NodeId, { namespace: 70000, idType: IdType.Numeric, value: 1 }],
    [BuiltinType.NodeId, { namespace: 0, idType: IdType.String, value: 1 }],
    [BuiltinType.StatusCode, 2 ** 32],
    [BuiltinType.LocalizedText, null],
    [BuiltinType.ExtensionObject, { typeId: numericNodeId(1), body: { a: 1 } }],
    [BuiltinType.DataValue, 7],
  ];
  it.each(bad.map(([t, v]) => [BuiltinType[t], t, v] as const))("%s %s", (_name, type, value) => {
    expect(thrownStatus(() => encode(codec.encodeVariant, scalar(type, value)))).toBe(BadEncodingError);
  });
  it("bad Variant shapes", () => {
    const shapes: Variant[] = [
      scalar(BuiltinType.Variant, scalar(BuiltinType.Int32, 1)),
      scalar(26 as BuiltinType, 1),
      arrayOf(BuiltinType.Null, [null]),
      arrayOf(BuiltinType.Int32, [1, "2"]),
      { dataType: BuiltinType.Int32, arrayType: VariantArrayType.Array, value: "abc" },
      m(BuiltinType.Int32, [1, 2, 3], [2, 2]),
      m(BuiltinType.Int32, [], []),
      { dataType: BuiltinType.Int32, arrayType: VariantArrayType.Matrix, value: [1] },
      m(BuiltinType.Int32, [1], [-1, -1]),
    ];
    for (const v of shapes) expect(thrownStatus(() => encode(codec.encodeVariant, v))).toBe(BadEncodingError);
  });
});

/** One valid encoding of each decoder's type, to truncate and to mutate. */
const samples: [string, (r: BinaryReader) => unknown, Buffer][] = [
  ...nodeIds.map((v) => ["NodeId", codec.decodeNodeId, encode(codec.encodeNodeId, v)] as [string, (r: BinaryReader) => unknown, Buffer]),
  ...expandedNodeIds.map((v) => ["ExpandedNodeId", codec.decodeExpandedNodeId, encode(codec.encodeExpandedNodeId, v)] as [string, (r: BinaryReader) => unknown, Buffer]),
  ["QualifiedName", codec.decodeQualifiedName, encode(codec.encodeQualifiedName, { namespaceIndex: 1, name: "ab" })],
  ["LocalizedText", codec.decodeLocalizedText, encode(codec.encodeLocalizedText, { locale: "en", text: "ab" })],
  ...[...scalars, ...arrays].map((v) => ["Variant", codec.decodeVariant, encode(codec.encodeVariant, v)] as [string, (r: BinaryReader) => unknown, Buffer]),
  ...dataValues.map((v) => ["DataValue", codec.decodeDataValue, encode(codec.encodeDataValue, v)] as [string, (r: BinaryReader) => unknown, Buffer]),
  ...diagnostics.map((v) => ["DiagnosticInfo", codec.decodeDiagnosticInfo, encode(codec.encodeDiagnosticInfo, v)] as [string, (r: BinaryReader) => unknown, Buffer]),
  [
    "ExtensionObject",
    codec.decodeExtensionObject,
    encode(codec.encodeExtensionObject, { typeId: numericNodeId(BoxCodec.binaryEncodingId), body: { inner: { typeId: numericNodeId(PointCodec.binaryEncodingId), body: { x: 1, y: 2 } } } }),
  ],
  ["ExtensionObject", codec.decodeExtensionObject, encode(codec.encodeExtensionObject, { typeId: numericNodeId(1), body: { xml: "<x/>" } })],
];

describe("hostile input", () => {
  it("every prefix of a valid encoding throws BadDecodingError", () => {
    for (const [name, dec, bytes] of samples) {
      decodeAll(dec, bytes);
      for (let n = 0; n < bytes.length; n++) {
        const prefix = bytes.subarray(0, n);
        expect(thrownStatus(() => dec(reader(prefix))), `${name} prefix ${n}/${bytes.length}`).toBe(BadDecodingError);
      }
    }
  });

  const decoders: [string, (r: BinaryReader) => unknown][] = [
    ["NodeId", codec.decodeNodeId],
    ["ExpandedNodeId", codec.decodeExpandedNodeId],
    ["QualifiedName", codec.decodeQualifiedName],
    ["LocalizedText", codec.decodeLocalizedText],
    ["ExtensionObject", codec.decodeExtensionObject],
    ["DataValue", codec.decodeDataValue],
    ["Variant", codec.decodeVariant],
    ["DiagnosticInfo", codec.decodeDiagnosticInfo],
    ["StatusCode", codec.decodeStatusCode],
    ["XmlElement", codec.decodeXmlElement],
  ];

  /** Decodes or throws UaStatusError; anything else (RangeError, TypeError, ...) fails. */
  function tryDecode(name: string, dec: (r: BinaryReader) => unknown, bytes: Buffer): boolean {
    try {
      dec(reader(bytes, { maxArrayLength: 4096 }));
      return true;
    } catch (err) {
      if (!(err instanceof UaStatusError)) throw new Error(`${name} on ${bytes.toString("hex")}: ${String(err)}`);
      return false;
    }
  }

  it("random bytes decode or throw UaStatusError, never anything else", () => {
    const rand = prng(0x5eed);
    let decoded = 0;
    for (const [name, dec] of decoders) {
      for (let i = 0; i < 1500; i++) {
        const bytes = randomBytes(rand, (rand() * 48) | 0);
        // Bias the first byte towards valid encodings so decoding gets past it often.
        if (bytes.length > 0 && rand() < 0.7) bytes[0] &= name === "Variant" ? 0xdf : 0x07;
        if (tryDecode(name, dec, bytes)) decoded++;
      }
    }
    expect(decoded).toBeGreaterThan(100);
  });

  it("mutated valid encodings decode or throw UaStatusError", () => {
    const rand = prng(42);
    for (const [name, dec, bytes] of samples) {
      for (let i = 0; i < 60; i++) {
        const copy = Buffer.from(bytes);
        const flips = 1 + ((rand() * 3) | 0);
        for (let f = 0; f < flips && copy.length > 0; f++) copy[(rand() * copy.length) | 0] = (rand() * 256) | 0;
        tryDecode(name, dec, copy);
      }
    }
  });
});

describe("structure registry", () => {
  it("looks codecs up by either id", () => {
    expect(codec.structureByEncodingId(PointCodec.binaryEncodingId)?.name).toBe("TestPoint");
    expect(codec.structureByDataTypeId(PointCodec.dataTypeId)?.name).toBe("TestPoint");
    expect(codec.structureByEncodingId(PointCodec.dataTypeId)).toBeUndefined();
  });
});
