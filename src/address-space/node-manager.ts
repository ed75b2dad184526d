// The NodeManager interface: one per namespace (DESIGN: the server routes each operation by
// namespace, in batches). Services group the operations of a request by namespace index and
// hand each manager its share in one call.
import type { DataValue, LocalizedText, NodeId, QualifiedName } from "../ua/builtins.js";
import type { ValueCache } from "../values/value-cache.js";

/** NodeClass (Part 3 §8.29), the values of the generated NodeClass enumeration. */
export const enum NodeClassMask {
  Object = 1,
  Variable = 2,
  Method = 4,
  ObjectType = 8,
  VariableType = 16,
  ReferenceType = 32,
  DataType = 64,
  View = 128,
}

/** Who asks: enough for access decisions without coupling managers to the session layer. */
export interface RequestContext {
  /** Session id as a string key, or "" for internal callers. */
  readonly sessionId: string;
  /** Role of the user (the security issue fills this in; anonymous is a viewer). */
  readonly role: "viewer" | "operator" | "admin";
  /** Server time at the start of the request, ms since 1970. */
  readonly now: number;
}

/** One attribute to read: the shape of the generated ReadValueId. */
export interface AttributeRead {
  readonly nodeId: NodeId;
  readonly attributeId: number;
  readonly indexRange?: string;
  readonly dataEncoding?: QualifiedName;
}

/** One attribute to write: the shape of the generated WriteValue. */
export interface AttributeWrite {
  readonly nodeId: NodeId;
  readonly attributeId: number;
  readonly indexRange?: string;
  readonly value: DataValue;
}

/** A reference of a node, as its manager knows it. */
export interface NodeReference {
  readonly referenceTypeId: NodeId;
  readonly isForward: boolean;
  readonly targetId: NodeId;
}

/** What Browse reports about a target node (ReferenceDescription's per-target fields). */
export interface NodeSummary {
  readonly nodeClass: number;
  readonly browseName: QualifiedName;
  readonly displayName: LocalizedText;
  /** HasTypeDefinition target, for Objects and Variables. */
  readonly typeDefinition?: NodeId;
}

/**
 * Where a Variable's value lives when the value cache holds it (device tags, variables fed at a
 * fixed rate): monitored items on it subscribe to the slot, or sample it there, instead of
 * going through read().
 */
export interface ValueSource {
  readonly values: ValueCache;
  readonly slot: number;
}

export interface NodeManager {
  /** The namespace index this manager owns. */
  readonly namespaceIndex: number;

  /**
   * Reads one attribute per item; `results[indices[k]]` receives the answer for
   * `items[indices[k]]` (all items when `indices` is undefined). An unknown node is
   * `{ statusCode: BadNodeIdUnknown }`, an attribute the node class lacks is
   * BadAttributeIdInvalid. Index ranges are applied by the caller, not here.
   * Timestamps: the manager sets sourceTimestamp for Value; the service sets serverTimestamp.
   */
  read(ctx: RequestContext, items: readonly AttributeRead[], results: DataValue[], indices?: readonly number[]): void;

  /**
   * Writes; `results[indices[k]]` receives the StatusCode. Value writes are type-checked
   * (BadTypeMismatch), refused on read-only nodes (BadNotWritable) and for roles that may not
   * write (BadUserAccessDenied). Device writes complete asynchronously.
   */
  write(ctx: RequestContext, items: readonly AttributeWrite[], results: number[], indices?: readonly number[]): void | Promise<void>;

  /** All references of a node in both directions, or undefined when the node is unknown here. */
  references(nodeId: NodeId): readonly NodeReference[] | undefined;

  /** The attributes Browse shows of a target node, or undefined when unknown here. */
  summary(nodeId: NodeId): NodeSummary | undefined;

  /** The cache slot of a Variable's Value, when it has one. Asked once per monitored item. */
  valueSource?(nodeId: NodeId): ValueSource | undefined;
}
