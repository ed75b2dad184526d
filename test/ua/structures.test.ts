// Every generated structure round-trips, a few encodings are checked byte for byte against the
// layout of Part 4 / Part 6, and hostile bytes into every decoder end in UaStatusError only.
import { describe, expect, it } from "vitest";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { decodeExtensionObject, encodeExtensionObject, structureByDataTypeId, structureByEncodingId, type StructureCodec } from "../../src/ua/builtin-codec.js";
import {
  BuiltinType,
  DATETIME_MIN,
  IdType,
  NULL_NODE_ID,
  numericNodeId,
  scalar,
  stringNodeId,
  type ExtensionObject,
} from "../../src/ua/builtins.js";
import { UaStatusError } from "../../src/ua/errors.js";
import { BrowseDirection, EnumLengths, MessageSecurityMode, NodeClass, SecurityTokenRequestType, TimestampsToReturn } from "../../src/ua/generated/enums.js";
import * as Enums from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { structureInfos, type StructureFieldInfo, type StructureInfo } from "../../src/ua/generated/structure-info.js";
import {
  ReadRequestCodec,
  allStructureCodecs,
  decodeOpenSecureChannelRequest,
  decodeReadRequest,
  decodeResponseHeader,
  encodeOpenSecureChannelRequest,
  encodeReadRequest,
  encodeResponseHeader,
  type ReadRequest,
  type ResponseHeader,
} from "../../src/ua/generated/types.js";

const infoByName = new Map<string, StructureInfo>(structureInfos.map((s) => [s.name, s]));
const codecByName = new Map<string, StructureCodec>(allStructureCodecs.map((c) => [c.name, c]));

/** Sample shape: "full" sets every optional thing (two-element arrays, nulls inside arrays); "empty" leaves them out. */
type Mode = "full" | "empty";

function builtinSample(type: string, k: number): unknown {
  switch (type) {
    case "Boolean":
      return k % 2 === 0;
    case "SByte":
      return -5 - k;
    case "Byte":
      return 200 + k;
    case "Int16":
      return -1234 - k;
    case "UInt16":
      return 54321 + k;
    case "Int32":
      return -123456 - k;
    case "UInt32":
      return 3000000000 + k;
    case "Int64":
      return -(2n ** 40n) - BigInt(k);
    case "UInt64":
      return 2n ** 63n + BigInt(k);
    case "Float":
      return 1.5 + k;
    case "Double":
      return Math.PI + k;
    case "DateTime":
      // Whole milliseconds convert to ticks and back exactly.
      return 1700000000123 + k;
    case "Guid":
      return `72962b91-fa75-4ae6-8d28-b404dc7daf${(0x60 + k).toString(16)}`;
    case "String":
    case "CharArray":
    case "XmlElement":
      return `h\u00e9llo ${k}`;
    case "ByteString":
      return Buffer.from([1, 2, 3, k & 0xff]);
    case "NodeId":
      return stringNodeId(`dev.tag${k}`, 2);
    case "ExpandedNodeId":
      return { nodeId: numericNodeId(1000 + k, 3), serverIndex: 0 };
    case "StatusCode":
      return StatusCodes.BadNodeIdUnknown;
    case "QualifiedName":
      return { namespaceIndex: 1, name: `q${k}` };
    case "LocalizedText":
      return { locale: "en", text: `text ${k}` };
    case "ExtensionObject":
      return {
        typeId: numericNodeId(ObjectIds.AnonymousIdentityToken_Encoding_DefaultBinary),
        body: { policyId: `anon${k}` },
      } satisfies ExtensionObject;
    case "DataValue":
      return { value: scalar(BuiltinType.Double, 2.5 + k), statusCode: StatusCodes.UncertainLastUsableValue, sourceTimestamp: 1700000000000 + k, sourcePicoseconds: 10 };
    case "Variant":
      return scalar(BuiltinType.Int32, 42 + k);
    case "DiagnosticInfo":
      return { symbolicId: 3 + k, additionalInfo: "why", innerStatusCode: StatusCodes.BadTimeout };
    default:
      throw new Error(`no sample for built-in ${type}`);
  }
}

function enumSample(type: string): number {
  const table = (Enums as unknown as Record<string, Record<string, string | number>>)[type];
  const values = Object.values(table).filter((v): v is number => typeof v === "number" && v !== 0);
  if (values.length === 0) return 0;
  // An OptionSet carries a combination of bits.
  return EnumLengths[type].isOptionSet && values.length > 1 ? values[0] | values[1] : values[values.length - 1];
}

function elementSample(f: StructureFieldInfo, k: number, mode: Mode, depth: number): unknown {
  if (f.category === "builtin") return builtinSample(f.type, k);
  if (f.category === "enum") return enumSample(f.type);
  return structureSample(infoByName.get(f.type)!, mode, depth + 1, k);
}

function structureSample(info: StructureInfo, mode: Mode, depth = 0, k = 0): Record<string, unknown> {
  const v: Record<string, unknown> = {};
  if (info.isUnion) {
    // Part 6 §5.2.8: select the first member in "full" mode, none in "empty" mode.
    const member = info.fields[0];
    v.switchField = mode === "full" && member ? member.switchValue : 0;
    if (mode === "full" && member) v[member.name] = elementSample(member, k, mode, depth);
    return v;
  }
  for (const f of info.fields) {
    const nullable = f.optional && !f.isArray;
    if (f.isArray) {
      if (mode === "empty" || depth > 3) continue;
      const a = [elementSample(f, k, mode, depth), elementSample(f, k + 1, mode, depth)];
      // Null strings inside arrays must survive the round trip.
      if (f.category === "builtin" && ["String", "CharArray", "ByteString", "XmlElement"].includes(f.type)) a.push(undefined);
      v[f.name] = a;
    } else if (nullable && mode === "empty") {
      continue;
    } else {
      v[f.name] = elementSample(f, k, mode, depth);
    }
  }
  return v;
}

function encode(codec: StructureCodec, value: object): Buffer {
  const w = new BinaryWriter(Buffer.alloc(64));
  codec.encode(w, value);
  return Buffer.from(w.view());
}

function decodeAll(codec: StructureCodec, bytes: Buffer): object {
  const r = new BinaryReader(bytes);
  const v = codec.decode(r);
  expect(r.pos, `${codec.name} left bytes unread`).toBe(bytes.length);
  return v;
}

describe("generated structures", () => {
  it("has one codec per structure in the field table, registered by encoding and DataType id", () => {
    expect(allStructureCodecs.length).toBe(structureInfos.length);
    expect(allStructureCodecs.length).toBeGreaterThan(300);
    for (const c of allStructureCodecs) {
      const info = infoByName.get(c.name)!;
      expect(c.dataTypeId).toBe(info.dataTypeId);
      expect(c.binaryEncodingId).toBe(info.binaryEncodingId);
      if (c.binaryEncodingId !== 0) {
        expect(structureByEncodingId(c.binaryEncodingId)).toBe(c);
        expect(structureByDataTypeId(c.dataTypeId)).toBe(c);
      }
    }
    expect(ReadRequestCodec.binaryEncodingId).toBe(ObjectIds.ReadRequest_Encoding_DefaultBinary);
  });

  it("keeps the enumeration names and values of the bsd", () => {
    expect(NodeClass.Object).toBe(1);
    expect(NodeClass.Variable).toBe(2);
    expect(MessageSecurityMode.None).toBe(1);
    expect(MessageSecurityMode.SignAndEncrypt).toBe(3);
    expect(TimestampsToReturn.Both).toBe(2);
    expect(SecurityTokenRequestType.Issue).toBe(0);
    expect(SecurityTokenRequestType.Renew).toBe(1);
    expect(BrowseDirection.Forward).toBe(0);
    expect(EnumLengths.AccessLevelType).toEqual({ bits: 8, isOptionSet: true });
  });

  for (const mode of ["full", "empty"] as const) {
    it(`round-trips every structure (${mode} sample)`, () => {
      const failures: string[] = [];
      for (const info of structureInfos) {
        const codec = codecByName.get(info.name)!;
        const sample = structureSample(info, mode);
        try {
          const bytes = encode(codec, sample);
          const back = decodeAll(codec, bytes);
          expect(back).toEqual(sample);
          expect(encode(codec, back).equals(bytes)).toBe(true);
        } catch (err) {
          failures.push(`${info.name}: ${(err as Error).message.split("\n")[0]}`);
        }
      }
      expect(failures).toEqual([]);
    });
  }

  it("round-trips every registered structure inside an ExtensionObject", () => {
    const failures: string[] = [];
    for (const info of structureInfos) {
      if (info.binaryEncodingId === 0) continue;
      const body = structureSample(info, "full");
      const w = new BinaryWriter(Buffer.alloc(64));
      try {
        encodeExtensionObject(w, { typeId: numericNodeId(info.binaryEncodingId), body });
        const back = decodeExtensionObject(new BinaryReader(Buffer.from(w.view())));
        expect(back.typeId).toEqual(numericNodeId(info.binaryEncodingId));
        expect(back.body).toEqual(body);
      } catch (err) {
        failures.push(`${info.name}: ${(err as Error).message.split("\n")[0]}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it("maps the null ExtensionObject field to undefined and back", () => {
    const codec = codecByName.get("ResponseHeader")!;
    const v = decodeAll(codec, encode(codec, { timestamp: DATETIME_MIN, requestHandle: 0, serviceResult: 0, serviceDiagnostics: {} })) as ResponseHeader;
    expect(v.additionalHeader).toBeUndefined();
    expect(v.stringTable).toBeUndefined();
  });

  it("reads an ExtensionObject field that only starts like the null one, and refuses a cut-off one", () => {
    const codec = codecByName.get("ResponseHeader")!;
    const bytes = encode(codec, { timestamp: DATETIME_MIN, requestHandle: 0, serviceResult: 0, serviceDiagnostics: {} });
    const head = bytes.subarray(0, bytes.length - 3);
    // TwoByte NodeId 0 with a body of 0 bytes: not the null ExtensionObject (its encoding byte is 1).
    const withBody = Buffer.concat([head, Buffer.from("00000100000000", "hex")]);
    const v = decodeAll(codec, withBody) as ResponseHeader;
    expect(v.additionalHeader).toEqual({ typeId: numericNodeId(0), body: Buffer.alloc(0) });
    // FourByte NodeId ns 0 i=0: the same id in another form, no body: kept as what it is.
    const fourByte = Buffer.concat([head, Buffer.from("0100000000", "hex")]);
    expect((decodeAll(codec, fourByte) as ResponseHeader).additionalHeader).toBeUndefined();
    const cut = Buffer.concat([head, Buffer.from("0000", "hex")]);
    expect(() => codec.decode(new BinaryReader(cut))).toThrow(UaStatusError);
  });
});

describe("exact encodings", () => {
  it("encodes a ResponseHeader as Part 4 §7.33 / Part 6 lay it out", () => {
    const v: ResponseHeader = {
      timestamp: 1700000000123,
      requestHandle: 0x01020304,
      serviceResult: StatusCodes.BadTimeout,
      serviceDiagnostics: {},
      stringTable: ["ab"],
      additionalHeader: undefined,
    };
    const w = new BinaryWriter();
    encodeResponseHeader(w, v);
    const hex = [
      "b0c47fc64717da01", // DateTime: 100 ns ticks since 1601, Int64 little-endian
      "04030201", // requestHandle
      "00000a80", // serviceResult BadTimeout 0x800A0000
      "00", // DiagnosticInfo with an empty mask
      "01000000" + "02000000" + "6162", // stringTable: one String "ab"
      "000000", // additionalHeader: TwoByte NodeId 0, no body
    ].join("");
    expect(w.view().toString("hex")).toBe(hex);
    expect(decodeResponseHeader(new BinaryReader(Buffer.from(hex, "hex")))).toEqual(v);
  });

  it("encodes a ReadRequest byte for byte", () => {
    const v: ReadRequest = {
      requestHeader: {
        authenticationToken: NULL_NODE_ID,
        timestamp: DATETIME_MIN,
        requestHandle: 1,
        returnDiagnostics: 0,
        timeoutHint: 1000,
      },
      maxAge: 0,
      timestampsToReturn: TimestampsToReturn.Both,
      nodesToRead: [{ nodeId: stringNodeId("a", 1), attributeId: 13, dataEncoding: { namespaceIndex: 0, name: "" } }],
    };
    const w = new BinaryWriter();
    encodeReadRequest(w, v);
    const hex = [
      "0000", // authenticationToken: TwoByte NodeId 0
      "0000000000000000", // timestamp: DateTime.MinValue
      "01000000", // requestHandle
      "00000000", // returnDiagnostics
      "ffffffff", // auditEntryId: null String
      "e8030000", // timeoutHint 1000
      "000000", // additionalHeader: null ExtensionObject
      "0000000000000000", // maxAge 0.0
      "02000000", // timestampsToReturn Both
      "01000000", // one ReadValueId
      "03" + "0100" + "01000000" + "61", // String NodeId ns=1;s=a
      "0d000000", // attributeId Value (13)
      "ffffffff", // indexRange: null String
      "0000" + "00000000", // dataEncoding: ns 0, empty name
    ].join("");
    expect(w.view().toString("hex")).toBe(hex);
    const back = decodeReadRequest(new BinaryReader(Buffer.from(hex, "hex")));
    expect(back).toEqual(v);
    expect(back.nodesToRead![0].nodeId).toEqual({ namespace: 1, idType: IdType.String, value: "a" });
  });

  it("encodes an OpenSecureChannelRequest with its enumerations as Int32", () => {
    const w = new BinaryWriter();
    encodeOpenSecureChannelRequest(w, {
      requestHeader: { authenticationToken: NULL_NODE_ID, timestamp: DATETIME_MIN, requestHandle: 0, returnDiagnostics: 0, timeoutHint: 0 },
      clientProtocolVersion: 0,
      requestType: SecurityTokenRequestType.Renew,
      securityMode: MessageSecurityMode.SignAndEncrypt,
      clientNonce: Buffer.from([0xaa]),
      requestedLifetime: 3600000,
    });
    const tail = w.view().subarray(2 + 8 + 4 + 4 + 4 + 4 + 3).toString("hex");
    expect(tail).toBe("00000000" + "01000000" + "03000000" + "01000000aa" + "80ee3600");
    const back = decodeOpenSecureChannelRequest(new BinaryReader(Buffer.from(w.view())));
    expect(back.requestType).toBe(SecurityTokenRequestType.Renew);
    expect(back.clientNonce).toEqual(Buffer.from([0xaa]));
  });

  it("refuses an array longer than the bytes left before allocating it", () => {
    // nodesToRead claims 1e6 elements of at least 16 bytes each, with 0 bytes left.
    const w = new BinaryWriter();
    encodeReadRequest(w, {
      requestHeader: { authenticationToken: NULL_NODE_ID, timestamp: DATETIME_MIN, requestHandle: 0, returnDiagnostics: 0, timeoutHint: 0 },
      maxAge: 0,
      timestampsToReturn: TimestampsToReturn.Source,
      nodesToRead: [],
    });
    const bytes = Buffer.from(w.view());
    bytes.writeInt32LE(1_000_000, bytes.length - 4);
    expect(() => decodeReadRequest(new BinaryReader(bytes))).toThrow(UaStatusError);
  });
});

describe("hostile input", () => {
  // A small deterministic PRNG (mulberry32), so a failure reproduces.
  function prng(seed: number): () => number {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function tryDecode(codec: StructureCodec, bytes: Buffer, failures: string[]): void {
    try {
      codec.decode(new BinaryReader(bytes));
    } catch (err) {
      if (!(err instanceof UaStatusError)) failures.push(`${codec.name} [${bytes.toString("hex")}]: ${String(err)}`);
    }
  }

  it("decodes random bytes into every structure or throws UaStatusError", () => {
    const rand = prng(0x5eed);
    const failures: string[] = [];
    for (const codec of allStructureCodecs) {
      for (let n = 0; n < 24; n++) {
        const bytes = Buffer.alloc(Math.floor(rand() * 96));
        for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(rand() * 256);
        // Small lengths and counts reach deeper into a structure than uniform bytes do.
        if (n % 2 === 1) for (let i = 0; i < bytes.length; i++) if (rand() < 0.6) bytes[i] = rand() < 0.5 ? 0 : 1;
        tryDecode(codec, bytes, failures);
      }
    }
    expect(failures.slice(0, 10)).toEqual([]);
  });

  it("decodes truncated and corrupted valid encodings or throws UaStatusError", () => {
    const rand = prng(42);
    const failures: string[] = [];
    for (const info of structureInfos) {
      const codec = codecByName.get(info.name)!;
      const bytes = encode(codec, structureSample(info, "full"));
      // Truncations (every one for short encodings, 48 spread ones for long ones): decoding
      // follows the same path as on the whole encoding, so it must run out of bytes.
      const step = Math.max(1, Math.ceil(bytes.length / 48));
      for (let cut = 0; cut < bytes.length; cut += step) {
        try {
          codec.decode(new BinaryReader(bytes, 0, cut));
          failures.push(`${info.name}: decoded from ${cut} of ${bytes.length} bytes`);
        } catch (err) {
          if (!(err instanceof UaStatusError)) failures.push(`${info.name} cut at ${cut}: ${String(err)}`);
        }
      }
      for (let n = 0; n < 8; n++) {
        const bad = Buffer.from(bytes);
        for (let k = 0; k < 3; k++) bad[Math.floor(rand() * bad.length)] = Math.floor(rand() * 256);
        tryDecode(codec, bad, failures);
      }
    }
    expect(failures.slice(0, 10)).toEqual([]);
  });
});
