// The node record both the namespace 0 manager and the memory namespace keep, and the reading of
// its attributes (Part 3 §5: which attributes each NodeClass has; Part 6 §5.1 / Part 3 §8 for the
// data type each attribute is read as). One place for this, so both managers answer alike.
import {
  BuiltinType,
  VariantArrayType,
  type DataValue,
  type ExtensionObject,
  type LocalizedText,
  type NodeId,
  type QualifiedName,
  type Variant,
} from "../ua/builtins.js";
import { AttributeIds, ReferenceTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { NodeClassMask, type NodeReference, type NodeSummary } from "./node-manager.js";

/** AccessLevel bits (Part 3 §8.57, AccessLevelType). */
export const AccessLevel = {
  CurrentRead: 0x01,
  CurrentWrite: 0x02,
  HistoryRead: 0x04,
  HistoryWrite: 0x08,
  SemanticChange: 0x10,
  StatusWrite: 0x20,
  TimestampWrite: 0x40,
} as const;

/**
 * One node of any NodeClass. Fields a NodeClass lacks stay undefined; `references` holds both
 * directions and is appended to by addReference. Managers own these records: callers outside a
 * manager treat them as read-only.
 */
export interface UaNode {
  readonly nodeId: NodeId;
  readonly nodeClass: NodeClassMask;
  readonly browseName: QualifiedName;
  displayName: LocalizedText;
  description?: LocalizedText;
  readonly references: NodeReference[];
  /** HasTypeDefinition target (Objects, Variables), kept apart for Browse. */
  typeDefinition?: NodeId;
  /** Cached NodeSummary; reset it when a field it shows changes. */
  summaryCache?: NodeSummary;

  isAbstract?: boolean;
  symmetric?: boolean;
  inverseName?: LocalizedText;
  containsNoLoops?: boolean;
  eventNotifier?: number;
  /** The current value; reads hand out this very object (no copy). */
  value?: DataValue;
  dataType?: NodeId;
  valueRank?: number;
  arrayDimensions?: readonly number[];
  accessLevel?: number;
  minimumSamplingInterval?: number;
  historizing?: boolean;
  executable?: boolean;
  /** DataTypeDefinition of Structure and Enumeration DataTypes (Part 3 §5.8.2). */
  definition?: ExtensionObject;
}

const COMMON = bits(
  AttributeIds.NodeId,
  AttributeIds.NodeClass,
  AttributeIds.BrowseName,
  AttributeIds.DisplayName,
  AttributeIds.Description,
  AttributeIds.WriteMask,
  AttributeIds.UserWriteMask,
);

function bits(...ids: number[]): number {
  let m = 0;
  for (const id of ids) m |= 1 << id;
  return m;
}

/** Attributes per NodeClass (Part 3 §5.2 - §5.9); optional ones fieldgate does not keep are left out. */
const ATTRIBUTES_OF_CLASS = new Map<number, number>([
  [NodeClassMask.Object, COMMON | bits(AttributeIds.EventNotifier)],
  [
    NodeClassMask.Variable,
    COMMON |
      bits(
        AttributeIds.Value,
        AttributeIds.DataType,
        AttributeIds.ValueRank,
        AttributeIds.ArrayDimensions,
        AttributeIds.AccessLevel,
        AttributeIds.UserAccessLevel,
        AttributeIds.MinimumSamplingInterval,
        AttributeIds.Historizing,
      ),
  ],
  [NodeClassMask.Method, COMMON | bits(AttributeIds.Executable, AttributeIds.UserExecutable)],
  [NodeClassMask.ObjectType, COMMON | bits(AttributeIds.IsAbstract)],
  [
    NodeClassMask.VariableType,
    COMMON |
      bits(AttributeIds.Value, AttributeIds.DataType, AttributeIds.ValueRank, AttributeIds.ArrayDimensions, AttributeIds.IsAbstract),
  ],
  [NodeClassMask.ReferenceType, COMMON | bits(AttributeIds.IsAbstract, AttributeIds.Symmetric, AttributeIds.InverseName)],
  [NodeClassMask.DataType, COMMON | bits(AttributeIds.IsAbstract, AttributeIds.DataTypeDefinition)],
  [NodeClassMask.View, COMMON | bits(AttributeIds.ContainsNoLoops, AttributeIds.EventNotifier)],
]);

/** Whether a node of `nodeClass` has the attribute `attributeId` at all. */
export function hasAttribute(nodeClass: number, attributeId: number): boolean {
  if (attributeId < 1 || attributeId > 30) return false;
  return ((ATTRIBUTES_OF_CLASS.get(nodeClass) ?? 0) & (1 << attributeId)) !== 0;
}

export function good(value: Variant): DataValue {
  return { value };
}

export function bad(statusCode: number): DataValue {
  return { statusCode };
}

function v(dataType: BuiltinType, value: unknown): DataValue {
  return { value: { dataType, arrayType: VariantArrayType.Scalar, value } };
}

const EMPTY_TEXT: LocalizedText = Object.freeze({});

/**
 * Reads any attribute but Value (the managers answer Value themselves: live sources, the write
 * path and timestamps differ). `userAccessLevel` is the AccessLevel the caller's role has.
 * Returns a fresh DataValue; BadAttributeIdInvalid for attributes the node lacks.
 */
export function readNonValueAttribute(node: UaNode, attributeId: number, userAccessLevel: number): DataValue {
  if (!hasAttribute(node.nodeClass, attributeId)) return bad(StatusCodes.BadAttributeIdInvalid);
  switch (attributeId) {
    case AttributeIds.NodeId:
      return v(BuiltinType.NodeId, node.nodeId);
    case AttributeIds.NodeClass:
      return v(BuiltinType.Int32, node.nodeClass);
    case AttributeIds.BrowseName:
      return v(BuiltinType.QualifiedName, node.browseName);
    case AttributeIds.DisplayName:
      return v(BuiltinType.LocalizedText, node.displayName);
    case AttributeIds.Description:
      return v(BuiltinType.LocalizedText, node.description ?? EMPTY_TEXT);
    case AttributeIds.WriteMask:
    case AttributeIds.UserWriteMask:
      // No attribute but Value is writable anywhere in fieldgate (Part 3 §5.2.7).
      return v(BuiltinType.UInt32, 0);
    case AttributeIds.IsAbstract:
      return v(BuiltinType.Boolean, node.isAbstract === true);
    case AttributeIds.Symmetric:
      return v(BuiltinType.Boolean, node.symmetric === true);
    case AttributeIds.InverseName:
      return v(BuiltinType.LocalizedText, node.inverseName ?? EMPTY_TEXT);
    case AttributeIds.ContainsNoLoops:
      return v(BuiltinType.Boolean, node.containsNoLoops === true);
    case AttributeIds.EventNotifier:
      return v(BuiltinType.Byte, node.eventNotifier ?? 0);
    case AttributeIds.DataType:
      return v(BuiltinType.NodeId, node.dataType);
    case AttributeIds.ValueRank:
      return v(BuiltinType.Int32, node.valueRank ?? -1);
    case AttributeIds.ArrayDimensions:
      return { value: { dataType: BuiltinType.UInt32, arrayType: VariantArrayType.Array, value: node.arrayDimensions ?? [] } };
    case AttributeIds.AccessLevel:
      return v(BuiltinType.Byte, node.accessLevel ?? AccessLevel.CurrentRead);
    case AttributeIds.UserAccessLevel:
      return v(BuiltinType.Byte, userAccessLevel);
    case AttributeIds.MinimumSamplingInterval:
      return v(BuiltinType.Double, node.minimumSamplingInterval ?? 0);
    case AttributeIds.Historizing:
      return v(BuiltinType.Boolean, node.historizing === true);
    case AttributeIds.Executable:
    case AttributeIds.UserExecutable:
      return v(BuiltinType.Boolean, node.executable === true);
    case AttributeIds.DataTypeDefinition:
      // Only Structures and Enumerations have one (Part 3 §5.8.2); others lack the attribute.
      return node.definition
        ? v(BuiltinType.ExtensionObject, node.definition)
        : bad(StatusCodes.BadAttributeIdInvalid);
    default:
      return bad(StatusCodes.BadAttributeIdInvalid);
  }
}

/** The NodeSummary Browse reports, cached on the node. */
export function summarize(node: UaNode): NodeSummary {
  let s = node.summaryCache;
  if (!s) {
    s = { nodeClass: node.nodeClass, browseName: node.browseName, displayName: node.displayName, typeDefinition: node.typeDefinition };
    node.summaryCache = s;
  }
  return s;
}

/** The HasTypeDefinition target among a node's references. */
export function typeDefinitionOf(references: readonly NodeReference[]): NodeId | undefined {
  for (const r of references) {
    const t = r.referenceTypeId;
    if (r.isForward && t.namespace === 0 && t.value === ReferenceTypeIds.HasTypeDefinition) return r.targetId;
  }
  return undefined;
}
