// Opc.Ua.Types.bsd + NodeIds.csv -> src/ua/generated/{enums,types,structure-info}.ts:
// one numeric enum per EnumeratedType, and per StructuredType an interface, straight-line
// encode/decode functions and a StructureCodec registered with builtin-codec.ts at load.
// Wire rules: Part 6 §5.2.4 (enumerations: Int32; OptionSets: the unsigned integer of their
// length), §5.2.5 (arrays: Int32 length, -1 is null), §5.2.6 (structures: fields in order),
// §5.2.7 (structures with optional fields: an EncodingMask first), §5.2.8 (unions: a UInt32 switch).
import { localName, parseBsd, type BsdDictionary, type BsdEnum, type BsdField, type BsdStructure } from "./bsd.js";
import { generatedHeader, parseCsv, readSchemaFile, type GeneratedFile } from "./schema.js";

const GENERATOR = "gen-types.ts";

/** How a bsd primitive (`opc:X`) or built-in (`ua:X`) is read, written and typed. */
interface ScalarCodec {
  readonly ts: string;
  /** Expression that decodes one value from `r`. */
  readonly read: string;
  /** Statement template that encodes `$` into `w`. */
  readonly write: string;
  /** Smallest encoded size in bytes, to bound array lengths before allocating. */
  readonly min: number;
  /** Null on the wire is undefined in TS (String, ByteString, XmlElement, ExtensionObject). */
  readonly nullable: boolean;
}

const prim = (ts: string, name: string, min: number, nullable = false): ScalarCodec => ({
  ts,
  read: `r.read${name}()`,
  write: `w.write${name}($);`,
  min,
  nullable,
});
const builtin = (ts: string, name: string, min: number): ScalarCodec => ({
  ts,
  read: `decode${name}(r)`,
  write: `encode${name}(w, $);`,
  min,
  nullable: false,
});

/** Part 6 §5.2.2 sizes: NodeId >= 2 (TwoByte), QualifiedName = UInt16 + String, ExtensionObject = NodeId + Byte. */
const SCALARS: ReadonlyMap<string, ScalarCodec> = new Map([
  ["opc:Boolean", prim("boolean", "Boolean", 1)],
  ["opc:SByte", prim("number", "SByte", 1)],
  ["opc:Byte", prim("number", "Byte", 1)],
  ["opc:Int16", prim("number", "Int16", 2)],
  ["opc:UInt16", prim("number", "UInt16", 2)],
  ["opc:Int32", prim("number", "Int32", 4)],
  ["opc:UInt32", prim("number", "UInt32", 4)],
  ["opc:Int64", prim("bigint", "Int64", 8)],
  ["opc:UInt64", prim("bigint", "UInt64", 8)],
  ["opc:Float", prim("number", "Float", 4)],
  ["opc:Double", prim("number", "Double", 8)],
  ["opc:DateTime", prim("number", "DateTime", 8)],
  ["opc:Guid", prim("string", "Guid", 16)],
  ["opc:String", prim("string", "String", 4, true)],
  ["opc:CharArray", prim("string", "String", 4, true)],
  ["opc:ByteString", prim("Buffer", "ByteString", 4, true)],
  ["ua:XmlElement", { ts: "string", read: "decodeXmlElement(r)", write: "encodeXmlElement(w, $);", min: 4, nullable: true }],
  ["ua:NodeId", builtin("NodeId", "NodeId", 2)],
  ["ua:ExpandedNodeId", builtin("ExpandedNodeId", "ExpandedNodeId", 2)],
  ["ua:StatusCode", builtin("StatusCode", "StatusCode", 4)],
  ["ua:QualifiedName", builtin("QualifiedName", "QualifiedName", 6)],
  ["ua:LocalizedText", builtin("LocalizedText", "LocalizedText", 1)],
  ["ua:ExtensionObject", builtin("ExtensionObject", "ExtensionObject", 3)],
  ["ua:DataValue", builtin("DataValue", "DataValue", 1)],
  ["ua:Variant", builtin("Variant", "Variant", 1)],
  ["ua:DiagnosticInfo", builtin("DiagnosticInfo", "DiagnosticInfo", 1)],
]);

/**
 * A scalar ExtensionObject field maps the null ExtensionObject to undefined through helpers in
 * types.ts; inside arrays, elements stay ExtensionObjects (null ones with a null body).
 */
const SCALAR_FIELD_OVERRIDES: ReadonlyMap<string, Pick<ScalarCodec, "read" | "write" | "nullable">> = new Map([
  ["ua:ExtensionObject", { read: "readOptionalExtensionObject(r)", write: "writeOptionalExtensionObject(w, $);", nullable: true }],
]);

const BUILTIN_TYPE_IMPORTS = ["DataValue", "DiagnosticInfo", "ExpandedNodeId", "ExtensionObject", "LocalizedText", "NodeId", "QualifiedName", "StatusCode", "Variant"];
const CODEC_IMPORTS = ["DataValue", "DiagnosticInfo", "ExpandedNodeId", "ExtensionObject", "LocalizedText", "NodeId", "QualifiedName", "StatusCode", "Variant", "XmlElement"];

const RESERVED = new Set(
  ("break case catch class const continue debugger default delete do else enum export extends false finally for function if " +
    "import in instanceof new null return super switch this throw true try typeof var void while with implements interface let " +
    "package private protected public static yield await arguments eval r w v i n a mask")
    .split(" "),
);

export type FieldCategory = "builtin" | "enum" | "structure";

/** One field of a generated structure, after the `NoOfX` length fields and mask bits are folded in. */
export interface FieldModel {
  /** TS property name: the bsd name with its first letter lower-cased. */
  readonly name: string;
  /** A local variable name for decoders (the property name unless it is reserved). */
  readonly local: string;
  /** The bsd type, without prefix: `Int32`, `NodeId`, `ReadValueId`, `MessageSecurityMode`. */
  readonly type: string;
  readonly category: FieldCategory;
  readonly isArray: boolean;
  /** Part 6 §5.2.7 optional field: its bit in the EncodingMask. */
  readonly maskBit?: number;
  /** Part 6 §5.2.8 union member: its switch value. */
  readonly switchValue?: number;
  readonly tsElement: string;
  readonly read: string;
  readonly write: string;
  readonly min: number;
  /** `?:` in TS: arrays, nullable built-ins, optional fields, union members. */
  readonly optional: boolean;
}

export interface StructureModel {
  readonly name: string;
  readonly baseType?: string;
  readonly documentation?: string;
  readonly dataTypeId: number;
  readonly binaryEncodingId: number;
  readonly fields: readonly FieldModel[];
  /** Bits of the Part 6 §5.2.7 EncodingMask (8, 16 or 32); 0 when the structure has none. */
  readonly maskBits: number;
  readonly isUnion: boolean;
  /** Smallest encoded size of one value. */
  readonly min: number;
  /** Part of a cycle of structures that contain each other: its decoder counts nesting depth. */
  readonly recursive: boolean;
}

export interface TypesModel {
  readonly enums: readonly BsdEnum[];
  readonly structures: readonly StructureModel[];
}

/** Built-ins that the bsd describes as structures but builtin-codec.ts encodes by hand. */
function isBuiltinStructure(s: BsdStructure): boolean {
  return s.baseType === undefined;
}

function lowerFirst(s: string): string {
  return s.charAt(0).toLowerCase() + s.slice(1);
}

function enumCodec(e: BsdEnum): Omit<ScalarCodec, "ts" | "nullable"> {
  // Part 6 §5.2.4: enumerations are Int32; OptionSets are the unsigned integer of their size.
  const bits = e.lengthInBits;
  if (bits <= 8) return { read: "r.readByte()", write: "w.writeByte($);", min: 1 };
  if (bits <= 16) return { read: "r.readUInt16()", write: "w.writeUInt16($);", min: 2 };
  if (bits <= 32 && e.isOptionSet) return { read: "r.readUInt32()", write: "w.writeUInt32($);", min: 4 };
  if (bits <= 32) return { read: "r.readInt32()", write: "w.writeInt32($);", min: 4 };
  throw new Error(`bsd: enumeration ${e.name} of ${bits} bits`);
}

/** Builds the model of every enumeration and non-built-in structure; ids come from NodeIds.csv. */
export function buildTypesModel(dict: BsdDictionary, nodeIdsCsv: string): TypesModel {
  const ids = new Map<string, number>();
  for (const [name, id, nodeClass] of parseCsv(nodeIdsCsv)) ids.set(`${nodeClass}:${name}`, Number(id));
  const enums = dict.types.filter((t): t is BsdEnum => t.kind === "enum");
  const bsdStructs = dict.types.filter((t): t is BsdStructure => t.kind === "structure" && !isBuiltinStructure(t));
  const structNames = new Set(bsdStructs.map((s) => s.name));

  const mins = new Map<string, number>();
  const models: StructureModel[] = [];
  const pending = new Map<string, BsdStructure>(bsdStructs.map((s) => [s.name, s]));
  // Element sizes of structure fields need the nested structure's size first; resolve in
  // dependency order and treat members of a cycle as 1 byte (a safe lower bound).
  const sizeOf = (name: string, stack: Set<string>): number => {
    const known = mins.get(name);
    if (known !== undefined) return known;
    const s = pending.get(name);
    if (!s || stack.has(name)) return 1;
    stack.add(name);
    const m = buildStructure(s, dict, ids, structNames, (n) => sizeOf(n, stack));
    stack.delete(name);
    mins.set(name, m.min);
    return m.min;
  };
  for (const s of bsdStructs) {
    sizeOf(s.name, new Set());
    models.push(buildStructure(s, dict, ids, structNames, (n) => mins.get(n) ?? 1));
  }
  const recursive = findRecursive(models);
  return { enums, structures: models.map((m) => (recursive.has(m.name) ? { ...m, recursive: true } : m)) };
}

function buildStructure(
  s: BsdStructure,
  dict: BsdDictionary,
  ids: ReadonlyMap<string, number>,
  structNames: ReadonlySet<string>,
  structMin: (name: string) => number,
): StructureModel {
  const dataTypeId = ids.get(`DataType:${s.name}`);
  const binaryEncodingId = ids.get(`Object:${s.name}_Encoding_DefaultBinary`);
  if (dataTypeId === undefined) throw new Error(`NodeIds.csv: no DataType ${s.name}`);
  // A structure with no binary encoding (an abstract one) is generated with encoding id 0 and is not registered.
  const lengthFields = new Set(s.fields.filter((f) => f.lengthField).map((f) => f.lengthField!));
  const bitFields = new Map<string, number>();
  let maskBits = 0;
  const unionSwitch = s.fields.find((f) => f.name === "SwitchField" && f.typeName === "opc:UInt32");
  const fields: FieldModel[] = [];
  const used = new Set<string>();
  for (const f of s.fields) {
    if (f.typeName === "opc:Bit") {
      bitFields.set(f.name, maskBits);
      maskBits += f.length ?? 1;
      continue;
    }
    if (lengthFields.has(f.name) || f === unionSwitch) continue;
    const model = fieldModel(s, f, dict, structNames, structMin, bitFields, unionSwitch !== undefined);
    if (used.has(model.name)) throw new Error(`bsd: ${s.name} has two fields named ${model.name}`);
    used.add(model.name);
    fields.push(model);
  }
  if (maskBits !== 0 && maskBits !== 8 && maskBits !== 16 && maskBits !== 32) {
    throw new Error(`bsd: ${s.name} has an EncodingMask of ${maskBits} bits`);
  }
  let min = maskBits / 8 + (unionSwitch ? 4 : 0);
  for (const f of fields) if (f.maskBit === undefined && f.switchValue === undefined) min += f.isArray ? 4 : f.min;
  return {
    name: s.name,
    baseType: s.baseType ? localName(s.baseType) : undefined,
    documentation: s.documentation,
    dataTypeId,
    binaryEncodingId: binaryEncodingId ?? 0,
    fields,
    maskBits,
    isUnion: unionSwitch !== undefined,
    min,
    recursive: false,
  };
}

function fieldModel(
  s: BsdStructure,
  f: BsdField,
  dict: BsdDictionary,
  structNames: ReadonlySet<string>,
  structMin: (name: string) => number,
  bitFields: ReadonlyMap<string, number>,
  isUnion: boolean,
): FieldModel {
  const name = lowerFirst(f.name);
  const local = RESERVED.has(name) ? name + "_" : name;
  const isArray = f.lengthField !== undefined;
  let maskBit: number | undefined;
  let switchValue: number | undefined;
  if (f.switchField !== undefined) {
    if (isUnion && f.switchField === "SwitchField" && f.switchValue !== undefined) switchValue = f.switchValue;
    else if (bitFields.has(f.switchField) && f.switchValue === undefined) maskBit = bitFields.get(f.switchField);
    else throw new Error(`bsd: ${s.name}.${f.name} switches on ${f.switchField}, which is neither a mask bit nor a union switch`);
  }
  const type = localName(f.typeName);
  const scalar = SCALARS.get(f.typeName);
  let category: FieldCategory;
  let c: Omit<ScalarCodec, "nullable"> & { nullable: boolean };
  if (scalar) {
    category = "builtin";
    const o = isArray ? undefined : SCALAR_FIELD_OVERRIDES.get(f.typeName);
    c = o ? { ...scalar, ...o } : scalar;
  } else {
    const t = dict.byName.get(type);
    if (t?.kind === "enum") {
      category = "enum";
      c = { ...enumCodec(t), ts: t.name, nullable: false };
    } else if (t?.kind === "structure" && structNames.has(type)) {
      category = "structure";
      c = { ts: type, read: `decode${type}(r)`, write: `encode${type}(w, $);`, min: structMin(type), nullable: false };
    } else {
      throw new Error(`bsd: ${s.name}.${f.name} has unsupported type ${f.typeName}`);
    }
  }
  // Null strings inside arrays are kept (as undefined) so that arrays round-trip byte for byte.
  const tsElement = isArray && c.nullable ? `${c.ts} | undefined` : c.ts;
  return {
    name,
    local,
    type,
    category,
    isArray,
    maskBit,
    switchValue,
    tsElement,
    read: c.read,
    write: c.write,
    min: Math.max(1, c.min),
    optional: isArray || c.nullable || maskBit !== undefined || switchValue !== undefined,
  };
}

/** Structures that can contain themselves through other structures (not through ExtensionObject). */
function findRecursive(models: readonly StructureModel[]): Set<string> {
  const edges = new Map<string, string[]>();
  for (const m of models) edges.set(m.name, m.fields.filter((f) => f.category === "structure").map((f) => f.type));
  const out = new Set<string>();
  for (const m of models) {
    const seen = new Set<string>();
    const stack = [...(edges.get(m.name) ?? [])];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (n === m.name) {
        out.add(m.name);
        break;
      }
      if (seen.has(n)) continue;
      seen.add(n);
      stack.push(...(edges.get(n) ?? []));
    }
  }
  return out;
}

function validIdentifier(s: string): boolean {
  return /^[A-Za-z_$][\w$]*$/.test(s);
}

function docComment(doc: string | undefined, indent = ""): string[] {
  return doc ? [`${indent}/** ${doc.replace(/\*\//g, "*\\/")} */`] : [];
}

export function emitEnums(model: TypesModel): string {
  const out: string[] = [generatedHeader(GENERATOR, ["Opc.Ua.Types.bsd"])];
  out.push("// Enumerations (Part 6 §5.2.4: encoded as Int32) and OptionSets (encoded as the unsigned");
  out.push("// integer of their LengthInBits); EnumLengths gives the encoded size of each in bits.");
  out.push("");
  for (const e of model.enums) {
    out.push(...docComment(e.documentation));
    if (e.isOptionSet) out.push(`/** OptionSet of ${e.lengthInBits} bits: values combine with \`|\`. */`);
    out.push(`export enum ${e.name} {`);
    for (const v of e.values) {
      const key = validIdentifier(v.name) ? v.name : JSON.stringify(v.name);
      out.push(`  ${key} = ${v.value},`);
    }
    out.push("}", "");
  }
  out.push("export const EnumLengths: Readonly<Record<string, { readonly bits: number; readonly isOptionSet: boolean }>> = {");
  for (const e of model.enums) out.push(`  ${e.name}: { bits: ${e.lengthInBits}, isOptionSet: ${e.isOptionSet} },`);
  out.push("};", "");
  return out.join("\n");
}

function emitEncode(s: StructureModel, out: string[]): void {
  const used = s.fields.length > 0 || s.maskBits > 0 || s.isUnion;
  out.push(`export function encode${s.name}(w: BinaryWriter, ${used ? "v" : "_v"}: ${s.name}): void {`);
  if (s.maskBits > 0) {
    // Part 6 §5.2.7: bit i of the EncodingMask is set when the i-th optional field is present.
    out.push("  let mask = 0;");
    for (const f of s.fields) {
      if (f.maskBit !== undefined) out.push(`  if (v.${f.name} !== undefined) mask |= ${2 ** f.maskBit};`);
    }
    out.push(`  ${enumWrite(s.maskBits, "mask")}`);
  }
  if (s.isUnion) {
    // Part 6 §5.2.8: the switch selects one member (0: none); only that member is encoded.
    out.push("  w.writeUInt32(v.switchField);", "  switch (v.switchField) {");
    for (const f of s.fields) {
      out.push(`    case ${f.switchValue}:`);
      out.push(...encodeField(f, `v.${f.name}!`, "      "));
      out.push("      break;");
    }
    out.push("  }");
  } else {
    for (const f of s.fields) {
      if (f.maskBit !== undefined) {
        out.push(`  if (v.${f.name} !== undefined) {`, ...encodeField(f, `v.${f.name}`, "    "), "  }");
      } else out.push(...encodeField(f, `v.${f.name}`, "  "));
    }
  }
  out.push("}", "");
}

function enumWrite(bits: number, expr: string): string {
  return bits === 8 ? `w.writeByte(${expr});` : bits === 16 ? `w.writeUInt16(${expr});` : `w.writeUInt32(${expr});`;
}

function encodeField(f: FieldModel, expr: string, ind: string): string[] {
  if (!f.isArray) return [ind + f.write.replace("$", expr)];
  return [
    `${ind}{`,
    `${ind}  const a = ${expr};`,
    `${ind}  if (a == null) w.writeInt32(-1);`,
    `${ind}  else {`,
    `${ind}    w.writeInt32(a.length);`,
    `${ind}    for (let i = 0; i < a.length; i++) ${f.write.replace("$", "a[i]")}`,
    `${ind}  }`,
    `${ind}}`,
  ];
}

function decodeInto(f: FieldModel, ind: string): string[] {
  if (!f.isArray) return [`${ind}${f.local} = ${f.read};`];
  return [
    `${ind}{`,
    `${ind}  const n = r.readArrayLength(${f.min});`,
    `${ind}  if (n >= 0) {`,
    `${ind}    const a = new Array<${f.tsElement}>(n);`,
    `${ind}    for (let i = 0; i < n; i++) a[i] = ${f.read};`,
    `${ind}    ${f.local} = a;`,
    `${ind}  }`,
    `${ind}}`,
  ];
}

function fieldTsType(f: FieldModel): string {
  return f.isArray ? (f.tsElement.includes("|") ? `(${f.tsElement})[]` : `${f.tsElement}[]`) : f.tsElement;
}

function emitDecode(s: StructureModel, out: string[]): void {
  const hasBody = s.fields.length > 0 || s.maskBits > 0 || s.isUnion;
  out.push(`export function decode${s.name}(${hasBody ? "r" : "_r"}: BinaryReader): ${s.name} {`);
  let ind = "  ";
  if (s.recursive) {
    // These structures nest without an ExtensionObject in between, so the depth limit of
    // Part 6 §5.2.2.18 must be counted here.
    out.push("  r.enter();", "  try {");
    ind = "    ";
  }
  if (s.maskBits > 0) {
    const read = s.maskBits === 8 ? "r.readByte()" : s.maskBits === 16 ? "r.readUInt16()" : "r.readUInt32()";
    out.push(`${ind}const mask = ${read};`);
  }
  if (s.isUnion) out.push(`${ind}const switchField = r.readUInt32();`);
  for (const f of s.fields) {
    const t = fieldTsType(f) + (f.optional ? " | undefined" : "");
    if (!f.isArray && f.maskBit === undefined && f.switchValue === undefined) {
      out.push(`${ind}const ${f.local}: ${t} = ${f.read};`);
      continue;
    }
    out.push(`${ind}let ${f.local}: ${t};`);
    if (f.maskBit !== undefined) {
      out.push(`${ind}if ((mask & ${2 ** f.maskBit}) !== 0) {`, ...decodeInto(f, ind + "  "), `${ind}}`);
    } else if (f.switchValue === undefined) out.push(...decodeInto(f, ind));
  }
  if (s.isUnion) {
    out.push(`${ind}switch (switchField) {`, `${ind}  case 0:`, `${ind}    break;`);
    for (const f of s.fields) out.push(`${ind}  case ${f.switchValue}:`, ...decodeInto(f, ind + "    "), `${ind}    break;`);
    out.push(`${ind}  default:`, `${ind}    throw decodingError(\`${s.name}: unknown union switch \${switchField}\`);`, `${ind}}`);
  }
  const props = s.fields.map((f) => (f.local === f.name ? f.name : `${f.name}: ${f.local}`));
  if (s.isUnion) props.unshift("switchField");
  out.push(props.length > 0 ? `${ind}return { ${props.join(", ")} };` : `${ind}return {};`);
  if (s.recursive) out.push("  } finally {", "    r.leave();", "  }");
  out.push("}", "");
}

export function emitTypes(model: TypesModel): string {
  const out: string[] = [generatedHeader(GENERATOR, ["Opc.Ua.Types.bsd", "NodeIds.csv"])];
  const enumsUsed = new Set<string>();
  for (const s of model.structures) for (const f of s.fields) if (f.category === "enum") enumsUsed.add(f.type);
  const anyUnion = model.structures.some((s) => s.isUnion);
  out.push("// The structures of namespace 0 (services, nodes, PubSub, ...), encoded per Part 6 §5.2.5-§5.2.8.");
  out.push("// Null arrays, strings, ByteStrings, XmlElements and ExtensionObjects are undefined.");
  out.push('import type { BinaryReader } from "../binary-reader.js";');
  out.push('import type { BinaryWriter } from "../binary-writer.js";');
  // Import only what the fields use, so the file stays free of unused names.
  const fieldCode = model.structures.flatMap((s) => s.fields.map((f) => `${f.tsElement} ${f.read} ${f.write}`)).join(" ");
  const types = BUILTIN_TYPE_IMPORTS.filter((n) => n === "ExtensionObject" || new RegExp(`\\b${n}\\b`).test(fieldCode));
  out.push(`import { IdType, type ${types.join(", type ")} } from "../builtins.js";`);
  out.push("import {");
  for (const n of CODEC_IMPORTS) {
    if (n === "ExtensionObject" || fieldCode.includes(`decode${n}(`)) out.push(`  decode${n},`);
    if (n === "ExtensionObject" || fieldCode.includes(`encode${n}(`)) out.push(`  encode${n},`);
  }
  out.push("  registerStructure,", "  type StructureCodec,", '} from "../builtin-codec.js";');
  if (anyUnion) out.push('import { decodingError } from "../errors.js";');
  if (enumsUsed.size > 0) out.push(`import type { ${[...enumsUsed].sort().join(", ")} } from "./enums.js";`);
  out.push("");
  out.push(
    "/** An ExtensionObject field: the null ExtensionObject (null NodeId, no body) is undefined. */",
    "function writeOptionalExtensionObject(w: BinaryWriter, v: ExtensionObject | undefined): void {",
    "  if (v === undefined) {",
    "    // Part 6 §5.2.2.15: TwoByte NodeId 0 and encoding byte 0x00 (no body).",
    "    w.writeByte(0);",
    "    w.writeByte(0);",
    "    w.writeByte(0);",
    "  } else encodeExtensionObject(w, v);",
    "}",
    "",
    "function readOptionalExtensionObject(r: BinaryReader): ExtensionObject | undefined {",
    "  // The null ExtensionObject that nearly every RequestHeader carries: three zero bytes, no object made.",
    "  const p = r.pos;",
    "  if (p + 3 <= r.end && r.buffer[p] === 0 && r.buffer[p + 1] === 0 && r.buffer[p + 2] === 0) {",
    "    r.pos = p + 3;",
    "    return undefined;",
    "  }",
    "  const v = decodeExtensionObject(r);",
    "  const t = v.typeId;",
    "  return v.body === null && t.namespace === 0 && t.idType === IdType.Numeric && t.value === 0 ? undefined : v;",
    "}",
    "",
  );
  for (const s of model.structures) {
    out.push(...docComment(s.documentation));
    const base = s.baseType && s.baseType !== "ExtensionObject" ? `Subtype of ${s.baseType}; ` : "";
    out.push(`/** ${base}DataType i=${s.dataTypeId}, binary encoding i=${s.binaryEncodingId}. */`);
    out.push(`export interface ${s.name} {`);
    if (s.isUnion) out.push("  /** Part 6 §5.2.8: which member is set (0: none). */", "  switchField: number;");
    for (const f of s.fields) out.push(`  ${f.name}${f.optional ? "?" : ""}: ${fieldTsType(f)};`);
    out.push("}", "");
    emitEncode(s, out);
    emitDecode(s, out);
    out.push(`export const ${s.name}Codec: StructureCodec<${s.name}> = {`);
    out.push(`  name: "${s.name}",`, `  dataTypeId: ${s.dataTypeId},`, `  binaryEncodingId: ${s.binaryEncodingId},`);
    out.push(`  encode: encode${s.name},`, `  decode: decode${s.name},`, "};", "");
  }
  out.push("/** Every generated structure codec, in schema order. */");
  out.push("export const allStructureCodecs: readonly StructureCodec[] = [");
  for (const s of model.structures) out.push(`  ${s.name}Codec,`);
  out.push("];", "");
  out.push("// Structures without a binary encoding (abstract ones) cannot appear in an ExtensionObject.");
  out.push("for (const codec of allStructureCodecs) if (codec.binaryEncodingId !== 0) registerStructure(codec);");
  out.push("");
  return out.join("\n");
}

/** A table of each structure's fields, for tests and for tools that need the layout at runtime. */
export function emitStructureInfo(model: TypesModel): string {
  const out: string[] = [generatedHeader(GENERATOR, ["Opc.Ua.Types.bsd", "NodeIds.csv"])];
  out.push(
    "// The field layout of every generated structure, as data: tests build sample values from it.",
    "// Not imported by the codec itself.",
    "",
    "export interface StructureFieldInfo {",
    "  /** The TS property name. */",
    "  readonly name: string;",
    "  /** The bsd type name: a built-in (`Int32`, `String`, `NodeId`, ...), an enumeration or a structure. */",
    "  readonly type: string;",
    '  readonly category: "builtin" | "enum" | "structure";',
    "  readonly isArray: boolean;",
    "  /** The property is `?:` in TS (arrays, nullable built-ins, optional fields, union members). */",
    "  readonly optional: boolean;",
    "  /** Part 6 §5.2.7: the bit of the EncodingMask that says the field is present. */",
    "  readonly maskBit?: number;",
    "  /** Part 6 §5.2.8: the union switch value that selects the field. */",
    "  readonly switchValue?: number;",
    "}",
    "",
    "export interface StructureInfo {",
    "  readonly name: string;",
    "  readonly baseType?: string;",
    "  readonly dataTypeId: number;",
    "  /** 0 when the structure has no binary encoding (abstract). */",
    "  readonly binaryEncodingId: number;",
    "  readonly isUnion: boolean;",
    "  readonly fields: readonly StructureFieldInfo[];",
    "}",
    "",
    "export const structureInfos: readonly StructureInfo[] = [",
  );
  for (const s of model.structures) {
    const base = s.baseType ? ` baseType: "${s.baseType}",` : "";
    out.push(`  {`, `    name: "${s.name}",${base} dataTypeId: ${s.dataTypeId}, binaryEncodingId: ${s.binaryEncodingId}, isUnion: ${s.isUnion},`);
    if (s.fields.length === 0) out.push("    fields: [],");
    else {
      out.push("    fields: [");
      for (const f of s.fields) {
        const extra = (f.maskBit !== undefined ? `, maskBit: ${f.maskBit}` : "") + (f.switchValue !== undefined ? `, switchValue: ${f.switchValue}` : "");
        out.push(`      { name: "${f.name}", type: "${f.type}", category: "${f.category}", isArray: ${f.isArray}, optional: ${f.optional}${extra} },`);
      }
      out.push("    ],");
    }
    out.push("  },");
  }
  out.push("];", "");
  return out.join("\n");
}

/** Emits the three files from a bsd text and a NodeIds.csv text (tests use it on small schemas). */
export function generateTypesFrom(bsdText: string, nodeIdsCsv: string, dir = "src/ua/generated"): GeneratedFile[] {
  const model = buildTypesModel(parseBsd(bsdText), nodeIdsCsv);
  return [
    { path: `${dir}/enums.ts`, content: emitEnums(model) },
    { path: `${dir}/types.ts`, content: emitTypes(model) },
    { path: `${dir}/structure-info.ts`, content: emitStructureInfo(model) },
  ];
}

export function generateTypes(): GeneratedFile[] {
  return generateTypesFrom(readSchemaFile("Opc.Ua.Types.bsd"), readSchemaFile("NodeIds.csv"));
}
