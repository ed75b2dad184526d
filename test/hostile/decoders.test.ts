// Property-based fuzzing of every decoder: valid values of every built-in type and every
// generated structure are encoded, mutated where decoders trust the input (lengths, counts,
// encoding bytes, type ids, nesting), and decoded again. A decoder may return a value or throw
// UaStatusError, nothing else; and it never builds more array elements than there were bytes,
// which is how an allocation sized from a declared length would show (Part 6 §5.2.5: arrays
// are prefixed by their length, which a decoder checks against the bytes left).
// `npm run fuzz` runs the same properties for a long time with a random seed.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import type { BinaryWriter } from "../../src/ua/binary-writer.js";
import {
  decodeDataValue,
  decodeDiagnosticInfo,
  decodeExpandedNodeId,
  decodeExtensionObject,
  decodeLocalizedText,
  decodeNodeId,
  decodeQualifiedName,
  decodeVariant,
  encodeDataValue,
  encodeDiagnosticInfo,
  encodeExpandedNodeId,
  encodeExtensionObject,
  encodeLocalizedText,
  encodeNodeId,
  encodeQualifiedName,
  encodeVariant,
  type StructureCodec,
} from "../../src/ua/builtin-codec.js";
import { UaStatusError } from "../../src/ua/errors.js";
import { structureInfos } from "../../src/ua/generated/structure-info.js";
import { allStructureCodecs } from "../../src/ua/generated/types.js";
import {
  builtinArb,
  dataValueArb,
  diagnosticInfoArb,
  encodeWith,
  expandedNodeIdArb,
  extensionObjectArb,
  fuzzRuns,
  fuzzSeed,
  fuzzTimeout,
  mutate,
  mutationsArb,
  nodeIdArb,
  structureArb,
  variantArb,
} from "./arbitraries.js";

/** Array elements in a decoded value, counted through nested objects (Buffers count their bytes). */
export function elementCount(v: unknown, depth = 0): number {
  if (depth > 300 || v === null || typeof v !== "object") return 0;
  if (Buffer.isBuffer(v)) return 0;
  let n = 0;
  if (Array.isArray(v)) {
    n += v.length;
    for (const e of v) n += elementCount(e, depth + 1);
    return n;
  }
  for (const k of Object.keys(v)) n += elementCount((v as Record<string, unknown>)[k], depth + 1);
  return n;
}

/** Decodes; returns a failure description, or undefined when the decoder behaved. */
function checkDecode(name: string, decode: (r: BinaryReader) => unknown, bytes: Buffer): string | undefined {
  let value: unknown;
  try {
    value = decode(new BinaryReader(bytes));
  } catch (err) {
    if (err instanceof UaStatusError) return undefined;
    return `${name} [${bytes.toString("hex")}]: ${String(err)}`;
  }
  const n = elementCount(value);
  if (n > bytes.length) return `${name} [${bytes.toString("hex")}]: ${n} array elements from ${bytes.length} bytes`;
  return undefined;
}

interface BuiltinCase {
  name: string;
  arb: fc.Arbitrary<unknown>;
  encode: (w: BinaryWriter, v: never) => void;
  decode: (r: BinaryReader) => unknown;
}

const BUILTINS: BuiltinCase[] = [
  { name: "NodeId", arb: nodeIdArb, encode: encodeNodeId, decode: decodeNodeId },
  { name: "ExpandedNodeId", arb: expandedNodeIdArb, encode: encodeExpandedNodeId, decode: decodeExpandedNodeId },
  { name: "QualifiedName", arb: builtinArb("QualifiedName"), encode: encodeQualifiedName, decode: decodeQualifiedName },
  { name: "LocalizedText", arb: builtinArb("LocalizedText"), encode: encodeLocalizedText, decode: decodeLocalizedText },
  { name: "Variant", arb: variantArb, encode: encodeVariant, decode: decodeVariant },
  { name: "DataValue", arb: dataValueArb, encode: encodeDataValue, decode: decodeDataValue },
  { name: "DiagnosticInfo", arb: diagnosticInfoArb, encode: encodeDiagnosticInfo, decode: decodeDiagnosticInfo },
  { name: "ExtensionObject", arb: extensionObjectArb, encode: encodeExtensionObject, decode: decodeExtensionObject },
];

describe("built-in decoders on mutated valid encodings", () => {
  for (const c of BUILTINS) {
    it(`${c.name}`, () => {
      let encoded = 0;
      fc.assert(
        fc.property(c.arb, mutationsArb, (value, mutations) => {
          const bytes = encodeWith(c.encode as (w: BinaryWriter, v: unknown) => void, value);
          if (bytes === undefined) return; // the encoder refused the value: nothing to mutate
          encoded++;
          // The unmutated encoding decodes (the seed is valid), the mutated one behaves.
          expect(checkDecode(c.name, c.decode, bytes)).toBeUndefined();
          expect(checkDecode(c.name, c.decode, mutate(bytes, mutations))).toBeUndefined();
        }),
        { numRuns: fuzzRuns(300), seed: fuzzSeed() },
      );
      expect(encoded).toBeGreaterThan(0);
    }, fuzzTimeout());
  }
});

describe("generated structure decoders on mutated valid encodings", () => {
  const codecs = new Map<string, StructureCodec>(allStructureCodecs.map((s) => [s.name, s]));
  const infos = structureInfos.filter((i) => codecs.has(i.name));
  const caseArb = fc
    .constantFrom(...infos)
    .chain((info) => fc.tuple(fc.constant(info), structureArb(info), mutationsArb));

  it(`decodes or throws UaStatusError for ${infos.length} structures`, () => {
    let encoded = 0;
    fc.assert(
      fc.property(caseArb, ([info, value, mutations]) => {
        const codec = codecs.get(info.name)!;
        const bytes = encodeWith(codec.encode as (w: BinaryWriter, v: object) => void, value);
        if (bytes === undefined) return;
        encoded++;
        expect(checkDecode(info.name, codec.decode, bytes)).toBeUndefined();
        expect(checkDecode(info.name, codec.decode, mutate(bytes, mutations))).toBeUndefined();
      }),
      { numRuns: fuzzRuns(3000), seed: fuzzSeed() },
    );
    // Most generated values encode; a low count means the arbitraries drifted from the codec.
    expect(encoded).toBeGreaterThan(fuzzRuns(3000) / 2);
  }, fuzzTimeout());

  it("every structure with a binary encoding is reachable from the arbitrary", () => {
    expect(infos.length).toBe(allStructureCodecs.length);
  });
});
