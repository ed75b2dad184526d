// fast-check arbitraries for the hostile-input tests: valid values of every built-in type and of
// every generated structure (built from the generated field table), and structured mutations of
// valid encodings. Mutations aim at the places decoders trust: lengths, counts, encoding bytes,
// type ids and nesting, rather than uniformly random bytes that fail at the first field.
import fc from "fast-check";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { BuiltinType, IdType, VariantArrayType, type NodeId, type Variant } from "../../src/ua/builtins.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import * as Enums from "../../src/ua/generated/enums.js";
import { structureInfos, type StructureFieldInfo, type StructureInfo } from "../../src/ua/generated/structure-info.js";

/** Runs per property: short in `npm test`, long from `npm run fuzz` (FIELDGATE_FUZZ_RUNS). */
export function fuzzRuns(short: number): number {
  const n = Number(process.env.FIELDGATE_FUZZ_RUNS ?? "");
  return Number.isInteger(n) && n > 0 ? n : short;
}

/** Vitest time-out for a property: generous for long runs (a bound against hangs, not a timing claim). */
export function fuzzTimeout(shortMs = 60_000): number {
  return process.env.FIELDGATE_FUZZ_RUNS ? 24 * 3600_000 : shortMs;
}

/** A fixed seed in `npm test` (a failure reproduces); FIELDGATE_FUZZ_SEED or random for long runs. */
export function fuzzSeed(): number {
  const s = Number(process.env.FIELDGATE_FUZZ_SEED ?? "");
  if (Number.isInteger(s)) return s;
  return process.env.FIELDGATE_FUZZ_RUNS ? (Date.now() & 0x7fffffff) : 0x0f1e1d;
}

const text = fc.string({ unit: "binary", maxLength: 12 });
const u32 = fc.integer({ min: 0, max: 0xffffffff });

export const nodeIdArb: fc.Arbitrary<NodeId> = fc.oneof(
  fc.record({ namespace: fc.integer({ min: 0, max: 0xffff }), idType: fc.constant(IdType.Numeric), value: u32 }),
  fc.record({ namespace: fc.integer({ min: 0, max: 0xffff }), idType: fc.constant(IdType.String), value: fc.string({ maxLength: 16 }) }),
  fc.record({ namespace: fc.integer({ min: 0, max: 3 }), idType: fc.constant(IdType.Guid), value: fc.uuid() }),
  fc.record({
    namespace: fc.integer({ min: 0, max: 3 }),
    idType: fc.constant(IdType.Opaque),
    value: fc.uint8Array({ maxLength: 8 }).map((a) => Buffer.from(a)),
  }),
);

const expandedNodeIdArb = fc.record(
  { nodeId: nodeIdArb, namespaceUri: fc.string({ maxLength: 10 }), serverIndex: u32 },
  { requiredKeys: ["nodeId", "serverIndex"] },
);

const dateArb = fc.integer({ min: -11644473600000, max: 4102444800000 });

/** A scalar of a built-in type that is not itself structured (used inside Variants). */
function simpleScalar(t: BuiltinType): fc.Arbitrary<unknown> {
  switch (t) {
    case BuiltinType.Boolean:
      return fc.boolean();
    case BuiltinType.SByte:
      return fc.integer({ min: -128, max: 127 });
    case BuiltinType.Byte:
      return fc.integer({ min: 0, max: 255 });
    case BuiltinType.Int16:
      return fc.integer({ min: -32768, max: 32767 });
    case BuiltinType.UInt16:
      return fc.integer({ min: 0, max: 65535 });
    case BuiltinType.Int32:
      return fc.integer();
    case BuiltinType.UInt32:
    case BuiltinType.StatusCode:
      return u32;
    case BuiltinType.Int64:
      return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
    case BuiltinType.UInt64:
      return fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    case BuiltinType.Float:
      return fc.float();
    case BuiltinType.Double:
      return fc.double();
    case BuiltinType.String:
    case BuiltinType.XmlElement:
      return text;
    case BuiltinType.DateTime:
      return dateArb;
    case BuiltinType.Guid:
      return fc.uuid();
    case BuiltinType.ByteString:
      return fc.uint8Array({ maxLength: 12 }).map((a) => Buffer.from(a));
    case BuiltinType.NodeId:
      return nodeIdArb;
    case BuiltinType.ExpandedNodeId:
      return expandedNodeIdArb;
    case BuiltinType.QualifiedName:
      return fc.record({ namespaceIndex: fc.integer({ min: 0, max: 0xffff }), name: text });
    case BuiltinType.LocalizedText:
      return fc.record({ locale: fc.string({ maxLength: 5 }), text }, { requiredKeys: [] });
    default:
      return fc.constant(null);
  }
}

const SIMPLE_TYPES: BuiltinType[] = [];
for (let t = BuiltinType.Boolean; t <= BuiltinType.LocalizedText; t++) SIMPLE_TYPES.push(t);

const { variantArb, dataValueArb, diagnosticInfoArb, extensionObjectArb } = fc.letrec<{
  variantArb: Variant;
  dataValueArb: object;
  diagnosticInfoArb: object;
  extensionObjectArb: object;
}>((tie) => ({
  variantArb: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant({ dataType: BuiltinType.Null, arrayType: VariantArrayType.Scalar, value: null }),
    fc.constantFrom(...SIMPLE_TYPES).chain((t) => simpleScalar(t).map((value) => ({ dataType: t, arrayType: VariantArrayType.Scalar, value }))),
    fc.constantFrom(...SIMPLE_TYPES).chain((t) =>
      fc.array(simpleScalar(t), { maxLength: 4 }).map((value) => ({ dataType: t, arrayType: VariantArrayType.Array, value })),
    ),
    fc.constantFrom(BuiltinType.Int32, BuiltinType.Byte).chain((t) =>
      fc.array(simpleScalar(t), { minLength: 6, maxLength: 6 }).map((value) => ({ dataType: t, arrayType: VariantArrayType.Matrix, value, dimensions: [2, 3] })),
    ),
    fc.array(tie("variantArb") as fc.Arbitrary<Variant>, { maxLength: 3 }).map((value) => ({ dataType: BuiltinType.Variant, arrayType: VariantArrayType.Array, value })),
    tie("dataValueArb").map((value) => ({ dataType: BuiltinType.DataValue, arrayType: VariantArrayType.Scalar, value })),
    tie("extensionObjectArb").map((value) => ({ dataType: BuiltinType.ExtensionObject, arrayType: VariantArrayType.Scalar, value })),
  ) as fc.Arbitrary<Variant>,
  dataValueArb: fc.record(
    {
      value: tie("variantArb"),
      statusCode: u32,
      sourceTimestamp: dateArb,
      sourcePicoseconds: fc.integer({ min: 0, max: 9999 }),
      serverTimestamp: dateArb,
      serverPicoseconds: fc.integer({ min: 0, max: 9999 }),
    },
    { requiredKeys: [] },
  ),
  diagnosticInfoArb: fc.record(
    {
      symbolicId: fc.integer(),
      namespaceUri: fc.integer(),
      localizedText: fc.integer(),
      locale: fc.integer(),
      additionalInfo: text,
      innerStatusCode: u32,
      innerDiagnosticInfo: fc.oneof({ depthSize: "small" }, fc.constant(undefined), tie("diagnosticInfoArb")),
    },
    { requiredKeys: [] },
  ),
  extensionObjectArb: fc.oneof(
    fc.constant({ typeId: { namespace: 0, idType: IdType.Numeric, value: 0 }, body: null }),
    // An unknown type: the body travels as opaque bytes.
    fc.uint8Array({ maxLength: 16 }).map((a) => ({ typeId: { namespace: 2, idType: IdType.Numeric, value: 4242 }, body: Buffer.from(a) })),
    text.map((policyId) => ({ typeId: { namespace: 0, idType: IdType.Numeric, value: ObjectIds.AnonymousIdentityToken_Encoding_DefaultBinary }, body: { policyId } })),
  ),
}));

export { variantArb, dataValueArb, diagnosticInfoArb, extensionObjectArb, expandedNodeIdArb };

/** An arbitrary for a built-in type by its bsd name. */
export function builtinArb(type: string): fc.Arbitrary<unknown> {
  switch (type) {
    case "CharArray":
      return text;
    case "Variant":
      return variantArb;
    case "DataValue":
      return dataValueArb;
    case "DiagnosticInfo":
      return diagnosticInfoArb;
    case "ExtensionObject":
      return extensionObjectArb;
    default: {
      const t = (BuiltinType as unknown as Record<string, BuiltinType>)[type];
      if (t === undefined) throw new Error(`no arbitrary for ${type}`);
      return simpleScalar(t);
    }
  }
}

const infoByName = new Map<string, StructureInfo>(structureInfos.map((s) => [s.name, s]));

function enumArb(type: string): fc.Arbitrary<number> {
  const table = (Enums as unknown as Record<string, Record<string, string | number>>)[type];
  const values = table ? Object.values(table).filter((v): v is number => typeof v === "number") : [];
  return values.length > 0 ? fc.constantFrom(...values) : fc.integer({ min: 0, max: 3 });
}

const structureArbs = new Map<string, fc.Arbitrary<object>>();

function fieldArb(f: StructureFieldInfo, depth: number): fc.Arbitrary<unknown> {
  const one = (): fc.Arbitrary<unknown> =>
    f.category === "builtin" ? builtinArb(f.type) : f.category === "enum" ? enumArb(f.type) : structureArb(infoByName.get(f.type)!, depth + 1);
  if (f.isArray) return depth > 3 ? fc.constant(undefined) : fc.option(fc.array(one(), { maxLength: 3 }), { nil: undefined });
  if (f.optional) return fc.option(one(), { nil: undefined });
  return one();
}

/** Valid values of a generated structure (nested structures bounded to a few levels). */
export function structureArb(info: StructureInfo, depth = 0): fc.Arbitrary<object> {
  const key = `${info.name}/${Math.min(depth, 4)}`;
  const cached = structureArbs.get(key);
  if (cached) return cached;
  let arb: fc.Arbitrary<object>;
  if (info.isUnion) {
    const members = info.fields;
    arb =
      members.length === 0 || depth > 3
        ? fc.constant({ switchField: 0 })
        : fc.oneof(
            fc.constant({ switchField: 0 }),
            ...members.map((m) => fieldArb({ ...m, optional: false }, depth).map((v) => ({ switchField: m.switchValue, [m.name]: v }))),
          );
  } else {
    const shape: Record<string, fc.Arbitrary<unknown>> = {};
    for (const f of info.fields) shape[f.name] = fieldArb(f, depth);
    arb = fc.record(shape);
  }
  structureArbs.set(key, arb);
  return arb;
}

/** Encodes with `encode` into a fresh buffer; undefined when the encoder refuses the value. */
export function encodeWith<T>(encode: (w: BinaryWriter, v: T) => void, value: T): Buffer | undefined {
  const w = new BinaryWriter(Buffer.alloc(256));
  try {
    encode(w, value);
  } catch {
    return undefined;
  }
  return Buffer.from(w.view());
}

/** Values that break assumptions about lengths and counts (Int32 little-endian). */
const INTERESTING_32 = [-1, -2, 0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff, -0x80000000, 0x40000000, 1 << 20, 4096];
const INTERESTING_8 = [0, 1, 2, 3, 4, 5, 0x40, 0x7f, 0x80, 0x81, 0xc0, 0xff, 0x19, 0x1a, 0x99];

export type Mutation =
  | { op: "byte"; at: number; value: number }
  | { op: "int32"; at: number; value: number }
  | { op: "flip"; at: number; bit: number }
  | { op: "truncate"; at: number }
  | { op: "insert"; at: number; bytes: Uint8Array }
  | { op: "delete"; at: number; count: number }
  | { op: "duplicate"; at: number; count: number };

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant("byte" as const), at: fc.nat(), value: fc.oneof(fc.constantFrom(...INTERESTING_8), fc.integer({ min: 0, max: 255 })) }),
  fc.record({ op: fc.constant("int32" as const), at: fc.nat(), value: fc.constantFrom(...INTERESTING_32) }),
  fc.record({ op: fc.constant("flip" as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ op: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ op: fc.constant("insert" as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ op: fc.constant("delete" as const), at: fc.nat(), count: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ op: fc.constant("duplicate" as const), at: fc.nat(), count: fc.integer({ min: 1, max: 32 }) }),
);

export const mutationsArb = fc.array(mutationArb, { minLength: 1, maxLength: 4 });

/** Applies mutations to a copy; positions wrap around the current length, `from` protects a prefix. */
export function mutate(input: Buffer, mutations: readonly Mutation[], from = 0): Buffer {
  let b = Buffer.from(input);
  for (const m of mutations) {
    const span = b.length - from;
    if (span <= 0) break;
    const at = from + (m.at % span);
    switch (m.op) {
      case "byte":
        b[at] = m.value;
        break;
      case "int32":
        if (at + 4 <= b.length) b.writeInt32LE(m.value, at);
        break;
      case "flip":
        b[at] ^= 1 << m.bit;
        break;
      case "truncate":
        b = b.subarray(0, at);
        break;
      case "insert":
        b = Buffer.concat([b.subarray(0, at), Buffer.from(m.bytes), b.subarray(at)]);
        break;
      case "delete":
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + m.count)]);
        break;
      case "duplicate":
        b = Buffer.concat([b.subarray(0, at + m.count), b.subarray(at)]);
        break;
    }
  }
  return b;
}
