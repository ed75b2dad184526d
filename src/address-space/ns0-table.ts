// The generated namespace 0 table (src/ua/generated/ns0.ts) turned into lookups: position by
// NodeId, the type hierarchy, and node records on demand. Indexed once per process; decoding of
// values, definitions and references waits for the first use of each node (the managers cache
// the records), so start-up pays only for the index (DESIGN: "loaded in milliseconds").
import {
  BuiltinType,
  VariantArrayType,
  numericNodeId,
  type ExtensionObject,
  type LocalizedText,
  type NodeId,
  type Variant,
} from "../ua/builtins.js";
import * as T from "../ua/generated/ns0.js";
import { DataTypeIds, ObjectIds, ReferenceTypeIds } from "../ua/generated/node-ids.js";
import type { NodeClassMask, NodeReference } from "./node-manager.js";
import { typeDefinitionOf, type UaNode } from "./ua-node.js";

type LText = readonly [string, string];

function toText(t: LText): LocalizedText {
  if (t[0] === "") return t[1] === "" ? {} : { text: t[1] };
  return { locale: t[0], text: t[1] };
}

export class Ns0Table {
  readonly count: number = T.ns0Count;
  /** A shared NodeId object per node, so references and summaries allocate none. */
  readonly nodeIds: readonly NodeId[];
  private readonly positions = new Map<number, number>();
  /** Supertype id per position (0: none). */
  private readonly supertypes: Int32Array;
  private readonly sparseDescriptions = new Map<number, LText>();
  private readonly sparseDisplayNames = new Map<number, LText>();
  private readonly sparseInverseNames = new Map<number, LText>();
  private readonly variableRows = new Map<number, readonly [number, number, number, number, number[]]>();
  private readonly valueRows = new Map<number, readonly unknown[]>();
  private readonly definitionRows = new Map<number, readonly unknown[]>();
  readonly hierarchicalReferenceTypes: ReadonlySet<number>;

  constructor() {
    const n = this.count;
    const ids = T.ns0Ids;
    const nodeIds = new Array<NodeId>(n);
    for (let i = 0; i < n; i++) {
      this.positions.set(ids[i], i);
      nodeIds[i] = Object.freeze(numericNodeId(ids[i]));
    }
    this.nodeIds = nodeIds;
    this.supertypes = new Int32Array(n);
    const refs = T.ns0Refs;
    const start = T.ns0RefStart;
    for (let i = 0; i < n; i++) {
      for (let k = start[i]; k < start[i + 1]; k += 2) {
        if (refs[k] === ReferenceTypeIds.HasSubtype && refs[k + 1] < 0) this.supertypes[i] = -refs[k + 1];
      }
    }
    sparse(T.ns0Descriptions, this.sparseDescriptions);
    sparse(T.ns0DisplayNames, this.sparseDisplayNames);
    sparse(T.ns0InverseNames, this.sparseInverseNames);
    for (const row of T.ns0Variables) this.variableRows.set(row[0], row);
    for (const row of T.ns0Values) this.valueRows.set(row[0] as number, row);
    for (const row of T.ns0Definitions) this.definitionRows.set(row[0] as number, row);
    const hier = new Set<number>();
    for (let i = 0; i < n; i++) {
      if (this.isSubtypeOf(ids[i], ReferenceTypeIds.HierarchicalReferences)) hier.add(ids[i]);
    }
    this.hierarchicalReferenceTypes = hier;
  }

  /** Position of a numeric namespace 0 id, -1 when the reduced table lacks it. */
  position(id: number): number {
    return this.positions.get(id) ?? -1;
  }

  /** Position of a NodeId, -1 unless it is a numeric id of the table. */
  positionOf(nodeId: NodeId): number {
    if (nodeId.namespace !== 0 || typeof nodeId.value !== "number") return -1;
    return this.positions.get(nodeId.value) ?? -1;
  }

  nodeClassAt(p: number): NodeClassMask {
    return T.ns0Classes[p] as NodeClassMask;
  }

  supertypeOf(id: number): number | undefined {
    const p = this.positions.get(id);
    if (p === undefined) return undefined;
    return this.supertypes[p] || undefined;
  }

  /** True when `id` is `baseId` or reaches it over HasSubtype (every ns0 type has one supertype). */
  isSubtypeOf(id: number, baseId: number): boolean {
    let p = this.positions.get(id);
    if (p === undefined) return false;
    for (let guard = 0; guard < 64; guard++) {
      if (T.ns0Ids[p] === baseId) return true;
      const s = this.supertypes[p];
      if (s === 0) return false;
      p = this.positions.get(s);
      if (p === undefined) return false;
    }
    return false;
  }

  /**
   * The built-in type a value of this ns0 DataType is encoded as (Part 3 §8 / Part 6 §5.1.2):
   * the nearest built-in supertype; Enumerations are Int32 (Part 6 §5.2.4); Structures are
   * ExtensionObject; the abstract Number/Integer/UInteger and BaseDataType give Variant (any).
   * Undefined for ids the table lacks.
   */
  builtinTypeOf(dataTypeId: number): BuiltinType | undefined {
    let id: number | undefined = dataTypeId;
    for (let guard = 0; id !== undefined && guard < 64; guard++) {
      if (id === DataTypeIds.Enumeration) return BuiltinType.Int32;
      if (id === DataTypeIds.Number || id === DataTypeIds.Integer || id === DataTypeIds.UInteger) return BuiltinType.Variant;
      if (id >= 1 && id <= 25) return id === DataTypeIds.BaseDataType ? BuiltinType.Variant : (id as BuiltinType);
      id = this.supertypeOf(id);
    }
    return undefined;
  }

  /**
   * A new node record for a position. Records are mutable (values, added references), so each
   * manager builds and caches its own; the table itself stays shared and read-only.
   */
  buildNode(p: number): UaNode {
    const nodeClass = T.ns0Classes[p] as NodeClassMask;
    const flags = T.ns0Flags[p];
    const name = T.ns0BrowseNames[p];
    const dn = this.sparseDisplayNames.get(p);
    const desc = this.sparseDescriptions.get(p);
    const references = this.buildReferences(p);
    const node: UaNode = {
      nodeId: this.nodeIds[p],
      nodeClass,
      browseName: { namespaceIndex: 0, name },
      displayName: dn ? toText(dn) : { text: name },
      description: desc ? toText(desc) : undefined,
      references,
      typeDefinition: typeDefinitionOf(references),
    };
    if (nodeClass & (8 | 16 | 32 | 64)) node.isAbstract = (flags & 1) !== 0;
    if (nodeClass === 32) {
      node.symmetric = (flags & 2) !== 0;
      const inv = this.sparseInverseNames.get(p);
      if (inv) node.inverseName = toText(inv);
    }
    if (nodeClass === 1) node.eventNotifier = (flags >> 8) & 0xff;
    // Part 3 §5.7: whether a Method can be called is the server's to say (Ns0Manager asks its
    // method table); the table alone knows of no implementation.
    if (nodeClass === 4) node.executable = false;
    if (nodeClass === 2) {
      node.accessLevel = (flags >> 8) & 0xff;
      node.historizing = false;
    }
    const row = this.variableRows.get(p);
    if (row) {
      node.dataType = this.nodeIds[this.position(row[1])] ?? numericNodeId(row[1]);
      node.valueRank = row[2];
      node.minimumSamplingInterval = row[3];
      node.arrayDimensions = row[4];
      const value = this.staticValue(p);
      if (value) node.value = { value };
    }
    const def = this.definitionRows.get(p);
    if (def) node.definition = this.decodeDefinition(p, def);
    return node;
  }

  private buildReferences(p: number): NodeReference[] {
    const out: NodeReference[] = [];
    const refs = T.ns0Refs;
    for (let k = T.ns0RefStart[p]; k < T.ns0RefStart[p + 1]; k += 2) {
      const target = refs[k + 1];
      out.push({
        referenceTypeId: this.nodeIds[this.position(refs[k])],
        isForward: target > 0,
        targetId: this.nodeIds[this.position(target > 0 ? target : -target)],
      });
    }
    return out;
  }

  private staticValue(p: number): Variant | undefined {
    const row = this.valueRows.get(p);
    if (!row) return undefined;
    switch (row[1]) {
      case 0:
        return array(BuiltinType.LocalizedText, (row[2] as LText[]).map(toText));
      case 1: {
        const typeId = numericNodeId(ObjectIds.EnumValueType_Encoding_DefaultBinary);
        const items = (row[2] as Array<[number, LText, LText]>).map(
          ([value, displayName, description]): ExtensionObject => ({
            typeId,
            body: { value: BigInt(value), displayName: toText(displayName), description: toText(description) },
          }),
        );
        return array(BuiltinType.ExtensionObject, items);
      }
      case 2:
        return { dataType: BuiltinType.String, arrayType: VariantArrayType.Scalar, value: row[2] };
      case 3:
        return { dataType: BuiltinType.Boolean, arrayType: VariantArrayType.Scalar, value: row[2] === 1 };
      case 4:
        return { dataType: BuiltinType.Int32, arrayType: VariantArrayType.Scalar, value: row[2] };
      case 5: {
        // Argument (Part 3 §8.6): the InputArguments / OutputArguments of a Method.
        const typeId = numericNodeId(ObjectIds.Argument_Encoding_DefaultBinary);
        const items = (row[2] as Array<[string, number, number, number[], LText]>).map(
          ([name, dataType, valueRank, arrayDimensions, description]): ExtensionObject => ({
            typeId,
            body: { name, dataType: this.nodeIds[this.position(dataType)] ?? numericNodeId(dataType), valueRank, arrayDimensions, description: toText(description) },
          }),
        );
        return array(BuiltinType.ExtensionObject, items);
      }
      case 6:
        return { dataType: BuiltinType.LocalizedText, arrayType: VariantArrayType.Scalar, value: toText(row[2] as LText) };
      case 7:
        return { dataType: BuiltinType.UInt32, arrayType: VariantArrayType.Scalar, value: row[2] };
      default:
        return undefined;
    }
  }

  /** StructureDefinition / EnumDefinition bodies (Part 3 §8.48, §8.49); field names lower-camel as generated from the bsd. */
  private decodeDefinition(p: number, row: readonly unknown[]): ExtensionObject {
    if (row[1] === 0) {
      const fields = (row[2] as Array<[string, number]>).map(([name, value]) => ({
        value: BigInt(value),
        displayName: { text: name },
        description: {},
        name,
      }));
      return { typeId: numericNodeId(ObjectIds.EnumDefinition_Encoding_DefaultBinary), body: { fields } };
    }
    const [, , structureType, encodingId, baseType, rawFields] = row as [number, number, number, number, number, Array<[string, number, number, number, string?]>];
    const fields = rawFields.map(([name, dataType, valueRank, isOptional, dims]) => ({
      name,
      description: {},
      dataType: this.nodeIds[this.position(dataType)] ?? numericNodeId(dataType),
      valueRank,
      arrayDimensions: dims ? dims.split(",").map(Number) : [],
      maxStringLength: 0,
      isOptional: isOptional === 1,
    }));
    return {
      typeId: numericNodeId(ObjectIds.StructureDefinition_Encoding_DefaultBinary),
      body: {
        defaultEncodingId: encodingId ? this.nodeIds[this.position(encodingId)] : numericNodeId(0),
        baseDataType: this.nodeIds[this.position(baseType)] ?? numericNodeId(baseType),
        structureType,
        fields,
      },
    };
  }
}

function array(dataType: BuiltinType, value: readonly unknown[]): Variant {
  return { dataType, arrayType: VariantArrayType.Array, value };
}

function sparse(flat: readonly unknown[], into: Map<number, LText>): void {
  for (let i = 0; i < flat.length; i += 2) into.set(flat[i] as number, flat[i + 1] as LText);
}

let shared: Ns0Table | undefined;

/** The process-wide table (it is read-only; managers keep their own mutable state apart). */
export function ns0Table(): Ns0Table {
  shared ??= new Ns0Table();
  return shared;
}
