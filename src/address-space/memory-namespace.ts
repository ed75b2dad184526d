// A general in-memory NodeManager: folders, objects, variables and properties added by code
// (the device map, the test and benchmark namespaces), Read of every attribute, Write of Value
// with the checks of Part 4 §5.10.4, and a fast setValue path for drivers that feeds
// subscriptions through one listener.
//
// Decisions:
// - References are kept in both directions on the nodes of this namespace. A parent in another
//   namespace (e.g. Objects in ns0) gets the forward reference through the registry; the child
//   here records the inverse itself. HasTypeDefinition is recorded only forward: type nodes do not
//   list their instances (thousands of device variables would bloat BaseDataVariableType).
// - Writing StatusCode / SourceTimestamp along with the value is allowed per node through the
//   AccessLevel bits StatusWrite and TimestampWrite (Part 3 §8.57); without them the write is
//   BadWriteNotSupported (Part 4 §5.10.4). A ServerTimestamp is never writable: the server
//   stamps it on reads. A Good StatusCode counts as "not written".
// - A variable with an onWrite handler does not store the written value: the handler forwards
//   it (to a device) and the new value arrives through setValue (the next poll). Without a
//   handler the value is stored, with sourceTimestamp = the one written or the request's time.
// - An IndexRange write is merged into the current value with writeRange (Part 4 §7.22).
// - ByteString and one-dimensional Byte arrays are interchangeable on write (Part 4 §5.10.4)
//   and are converted to the variable's own form before storing.
import {
  BuiltinType,
  IdType,
  NULL_VARIANT,
  numericNodeId,
  stringNodeId,
  type DataValue,
  type LocalizedText,
  type NodeId,
  type QualifiedName,
  type StatusCode,
  type Variant,
} from "../ua/builtins.js";
import { UaStatusError, statusOf } from "../ua/errors.js";
import { AttributeIds, ObjectTypeIds, ReferenceTypeIds, VariableTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { nodeIdEquals, nodeIdKey } from "../ua/node-id.js";
import { parseNumericRange, writeRange } from "../ua/numeric-range.js";
import type { NamespaceRegistry, ReferenceTarget } from "./namespace-registry.js";
import {
  NodeClassMask,
  type AttributeRead,
  type AttributeWrite,
  type NodeManager,
  type NodeReference,
  type NodeSummary,
  type RequestContext,
  type ValueSource,
} from "./node-manager.js";
import { checkValue, coerceBytes, expectedBuiltin } from "./value-checks.js";
import { ValueCache } from "../values/value-cache.js";
import { AccessLevel, hasAttribute, readNonValueAttribute, summarize, type UaNode } from "./ua-node.js";

export type Role = RequestContext["role"];

/**
 * Forwards a client's write (e.g. to a device). Returns the operation's StatusCode, or a promise
 * of it for slow targets; a rejected promise or a throw gives BadInternalError.
 */
export type WriteHandler = (ctx: RequestContext, variable: MemoryVariable, value: DataValue) => StatusCode | Promise<StatusCode>;

/** Called after every value change (setValue and stored client writes). */
export type MemoryValueListener = (variable: MemoryVariable, value: DataValue) => void;

export interface NodeOptions {
  /** A NodeId, or a string identifier in this namespace. */
  readonly nodeId: NodeId | string;
  /** A QualifiedName, or a name in this namespace. */
  readonly browseName: string | QualifiedName;
  /** Default: the browse name. */
  readonly displayName?: string | LocalizedText;
  readonly description?: string | LocalizedText;
  /** The node this one hangs under (any namespace); none for a root of its own. */
  readonly parent?: NodeId;
  /** Reference from the parent; defaults: Organizes for objects, HasComponent for variables. */
  readonly referenceType?: NodeId;
}

export interface ObjectOptions extends NodeOptions {
  /** Default BaseObjectType (FolderType for addFolder). */
  readonly typeDefinition?: NodeId;
  readonly eventNotifier?: number;
}

export interface VariableOptions extends NodeOptions {
  /**
   * A built-in type, or any ns0 DataType as a number or NodeId (Enumerations, UtcTime, Number,
   * BaseDataType, Range, ...).
   */
  readonly dataType: BuiltinType | number | NodeId;
  /** Default -1 (scalar). */
  readonly valueRank?: number;
  readonly arrayDimensions?: readonly number[];
  /** AccessLevel bits (AccessLevel.CurrentRead, ...); default CurrentRead. */
  readonly accessLevel?: number;
  /** Roles that may write; default operator and admin (Part 3 §5.6.2 UserAccessLevel). */
  readonly writeRoles?: readonly Role[];
  /** Default: `feedInterval` when given, else 0. */
  readonly minimumSamplingInterval?: number;
  /**
   * The owner sets this variable's value with setValue every `feedInterval` ms (a device poll
   * group). Monitored items sampling at that rate are then fed by setValue (through
   * onValueChange) instead of being sampled by a second timer. 0 (default): not fed.
   */
  readonly feedInterval?: number;
  readonly historizing?: boolean;
  /** Default BaseDataVariableType (PropertyType for addProperty). */
  readonly typeDefinition?: NodeId;
  /** Initial value: a Variant (stored with the creation time as sourceTimestamp) or a DataValue. */
  readonly value?: Variant | DataValue;
  readonly onWrite?: WriteHandler;
  /** Free slot for the owner (a driver's tag, ...). */
  readonly context?: unknown;
}

/** A variable of a MemoryNamespace: the handle setValue takes. */
export interface MemoryVariable extends UaNode {
  value: DataValue;
  readonly dataType: NodeId;
  readonly valueRank: number;
  readonly accessLevel: number;
  /** Built-in type a written Variant must have (Variant: any; or one of the ABSTRACT_* marks). */
  readonly expectedType: number;
  readonly writeRoleMask: number;
  readonly onWrite: WriteHandler | undefined;
  /** See VariableOptions.feedInterval; 0 when nobody feeds the variable at a fixed rate. */
  readonly feedInterval: number;
  /** The value cache slot holding the value (fed variables, device tags); absent for plain ones. */
  readonly source?: ValueSource;
  context: unknown;
}

export interface MemoryNamespaceOptions {
  /** Where fed variables keep their values (default: a cache of the namespace's own). */
  readonly values?: ValueCache;
  /** The time stamped on values handed to subscribers as their server timestamp (default Date.now). */
  readonly wallNow?: () => number;
}

const ROLE_BITS: Readonly<Record<Role, number>> = { viewer: 1, operator: 2, admin: 4 };
const DEFAULT_WRITE_ROLES: readonly Role[] = ["operator", "admin"];
/** Marks for the abstract numeric DataTypes (Part 5 §12.2.9); above every BuiltinType. */
const WRITE_BITS = AccessLevel.CurrentWrite | AccessLevel.StatusWrite | AccessLevel.TimestampWrite | AccessLevel.HistoryWrite;

const UNKNOWN_NODE: DataValue = Object.freeze({ statusCode: StatusCodes.BadNodeIdUnknown });
const INVALID_ATTRIBUTE: DataValue = Object.freeze({ statusCode: StatusCodes.BadAttributeIdInvalid });

const ref = (n: number): NodeId => numericNodeId(n);
const ORGANIZES = Object.freeze(ref(ReferenceTypeIds.Organizes));
const HAS_COMPONENT = Object.freeze(ref(ReferenceTypeIds.HasComponent));
const HAS_PROPERTY = Object.freeze(ref(ReferenceTypeIds.HasProperty));
const HAS_TYPE_DEFINITION = Object.freeze(ref(ReferenceTypeIds.HasTypeDefinition));

function text(t: string | LocalizedText | undefined): LocalizedText | undefined {
  return typeof t === "string" ? { text: t } : t;
}

function isDataValue(v: Variant | DataValue): v is DataValue {
  return !("arrayType" in v && "dataType" in v);
}

export class MemoryNamespace implements NodeManager, ReferenceTarget {
  /** Optional hook called after every value change; the subscription layer sets it. */
  onValueChange: MemoryValueListener | undefined;

  private readonly byNumber = new Map<number, UaNode>();
  private readonly byString = new Map<string, UaNode>();
  private readonly byOther = new Map<string | number, UaNode>();
  private cache: ValueCache | undefined;
  private readonly wallNow: () => number;
  /** Slots of the fed variables this namespace made (released with their nodes). */
  private readonly ownSlots = new Map<UaNode, number>();
  /** Slots of removed variables, released once the current task is done (see removeNode). */
  private doomedSlots: Set<number> | undefined;

  /** `registry` is needed only to hang nodes under parents of other namespaces. */
  constructor(
    readonly namespaceIndex: number,
    private readonly registry?: NamespaceRegistry,
    options: MemoryNamespaceOptions = {},
  ) {
    this.cache = options.values;
    this.wallNow = options.wallNow ?? Date.now;
  }

  /** The cache fed variables keep their values in. */
  get values(): ValueCache {
    return (this.cache ??= new ValueCache());
  }

  get nodeCount(): number {
    return this.byNumber.size + this.byString.size + this.byOther.size;
  }

  // ---- building -----------------------------------------------------------------------------

  addFolder(options: ObjectOptions): UaNode {
    return this.addObject({ ...options, typeDefinition: options.typeDefinition ?? ref(ObjectTypeIds.FolderType) });
  }

  addObject(options: ObjectOptions): UaNode {
    const node = this.makeNode(options, NodeClassMask.Object, options.typeDefinition ?? ref(ObjectTypeIds.BaseObjectType));
    node.eventNotifier = options.eventNotifier ?? 0;
    this.insert(node, options, ORGANIZES);
    return node;
  }

  addVariable(options: VariableOptions): MemoryVariable {
    const dataType = typeof options.dataType === "number" ? ref(options.dataType) : options.dataType;
    const expectedType = expectedBuiltin(dataType);
    const base = this.makeNode(options, NodeClassMask.Variable, options.typeDefinition ?? ref(VariableTypeIds.BaseDataVariableType));
    let roles = 0;
    for (const r of options.writeRoles ?? DEFAULT_WRITE_ROLES) roles |= ROLE_BITS[r];
    const initial = options.value;
    const node: MemoryVariable = Object.assign(base, {
      value: initial === undefined ? { value: NULL_VARIANT } : isDataValue(initial) ? initial : { value: initial, sourceTimestamp: Date.now() },
      dataType,
      valueRank: options.valueRank ?? -1,
      arrayDimensions: options.arrayDimensions,
      accessLevel: options.accessLevel ?? AccessLevel.CurrentRead,
      minimumSamplingInterval: options.minimumSamplingInterval ?? options.feedInterval ?? 0,
      historizing: options.historizing ?? false,
      expectedType,
      writeRoleMask: roles,
      onWrite: options.onWrite,
      feedInterval: options.feedInterval ?? 0,
      context: options.context,
    });
    this.insert(node, options, HAS_COMPONENT);
    if (node.feedInterval > 0) this.feedFromCache(node);
    return node;
  }

  /**
   * A fed variable keeps its value in the value cache, so that monitored items at its rate are
   * fed by setValue through the cache's subscribe interface, like device tags.
   */
  private feedFromCache(node: MemoryVariable): void {
    const values = this.values;
    const initial = node.value;
    const slot = values.acquire(`ns${this.namespaceIndex}:${nodeIdKey(node.nodeId)}`, {
      builtinType: node.expectedType <= BuiltinType.DiagnosticInfo ? node.expectedType : BuiltinType.Variant,
      rate: node.feedInterval,
    });
    const wallNow = this.wallNow;
    this.ownSlots.set(node, slot);
    this.doomedSlots?.delete(slot);
    Object.defineProperty(node, "value", {
      get: () => values.get(slot),
      set: (dv: DataValue) => values.setDataValue(slot, dv, wallNow()),
      enumerable: true,
    });
    Object.defineProperty(node, "source", { value: { values, slot } satisfies ValueSource, enumerable: true });
    // A new node's value: its items hear of the next one (a node that replaces another keeps its items).
    if (initial.value !== undefined && initial.value.dataType !== BuiltinType.Null) values.put(slot, initial);
  }

  /** A property (HasProperty, PropertyType) of `parent`; default NodeId `<parent>.<name>` for string parents. */
  addProperty(parent: NodeId, options: Omit<VariableOptions, "parent" | "nodeId"> & { readonly nodeId?: NodeId | string }): MemoryVariable {
    const name = typeof options.browseName === "string" ? options.browseName : options.browseName.name;
    const nodeId = options.nodeId ?? (parent.idType === IdType.String ? `${String(parent.value)}.${name}` : undefined);
    if (nodeId === undefined) throw new UaStatusError(StatusCodes.BadNodeIdInvalid, "addProperty needs a nodeId for this parent");
    return this.addVariable({
      ...options,
      nodeId,
      parent,
      referenceType: options.referenceType ?? HAS_PROPERTY,
      typeDefinition: options.typeDefinition ?? ref(VariableTypeIds.PropertyType),
    });
  }

  /**
   * Adds a node record its owner built (the device namespace's compact tag variables, whose
   * attributes are derived on demand) under `parent` with a forward `referenceType`. The node
   * lists its own references, the inverse one to `parent` among them. `forward` is the
   * parent's reference to it when the owner has one (the device namespace's tag variables are
   * their own), else one is made.
   */
  adoptNode(node: UaNode, parent: NodeId, referenceType: NodeId, forward?: NodeReference): void {
    const id = node.nodeId;
    if (id.namespace !== this.namespaceIndex) throw new UaStatusError(StatusCodes.BadNodeIdInvalid, `node ${String(id.value)} is not in namespace ${this.namespaceIndex}`);
    if (this.find(id)) throw new UaStatusError(StatusCodes.BadNodeIdExists, `node ${String(id.value)} exists`);
    if (parent.namespace !== this.namespaceIndex || !this.find(parent)) {
      throw new UaStatusError(StatusCodes.BadParentNodeIdInvalid, `parent ${String(parent.value)} unknown`);
    }
    if (forward === undefined) this.addReference(parent, referenceType, id, true);
    else this.find(parent)!.references.push(forward);
    if (id.idType === IdType.String) this.byString.set(id.value as string, node);
    else if (id.idType === IdType.Numeric) this.byNumber.set(id.value as number, node);
    else this.byOther.set(nodeIdKey(id), node);
  }

  /** Adds a reference to a node of this namespace (the target may be anywhere). */
  addReference(sourceId: NodeId, referenceTypeId: NodeId, targetId: NodeId, isForward = true): void {
    const node = this.find(sourceId);
    if (!node) throw new UaStatusError(StatusCodes.BadNodeIdUnknown, "addReference: source not in this namespace");
    node.references.push({ referenceTypeId, isForward, targetId });
  }

  /**
   * Removes a node with the subtree below it: the targets of its forward hierarchical
   * references that live in this namespace (Organizes, HasComponent, HasProperty, ...), and
   * every reference to a removed node held by the nodes that stay, in this namespace or in the
   * other end's manager when it offers `removeReference`. Returns the NodeIds removed (none
   * for an unknown node). Part 4 §5.7.3 DeleteNodes, as the device map's reload needs it.
   */
  removeNode(nodeId: NodeId): NodeId[] {
    return this.removeNodes([nodeId]);
  }

  /**
   * removeNode for many at once: the nodes that stay drop their references to removed ones in
   * one pass each (a device of 16,384 tags whose tags are replaced would otherwise scan its
   * 16,384 references once per tag).
   */
  removeNodes(nodeIds: readonly NodeId[]): NodeId[] {
    const doomed = new Set<UaNode>();
    const stack: UaNode[] = [];
    for (const id of nodeIds) {
      const root = this.find(id);
      if (root) stack.push(root);
    }
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (doomed.has(node)) continue;
      doomed.add(node);
      for (const r of node.references) {
        if (!r.isForward || !this.isHierarchical(r.referenceTypeId)) continue;
        const child = this.find(r.targetId);
        if (child) stack.push(child);
      }
    }
    /** Nodes that stay but hold references to removed ones. */
    const touched = new Set<UaNode>();
    for (const node of doomed) {
      for (const r of node.references) {
        const other = this.find(r.targetId);
        if (other) {
          if (!doomed.has(other)) touched.add(other);
        } else if (r.targetId.namespace !== this.namespaceIndex) {
          const owner = this.registry?.managerFor(r.targetId) as { removeReference?: MemoryNamespace["removeReference"] } | undefined;
          owner?.removeReference?.(r.targetId, r.referenceTypeId, node.nodeId, !r.isForward);
        }
      }
    }
    for (const other of touched) {
      const refs = other.references;
      let keep = 0;
      for (let i = 0; i < refs.length; i++) {
        const r = refs[i]!;
        // A reference that is a node is the reference to that node itself (adoptNode's `forward`:
        // the device namespace's tag variables), found without making its NodeId and looking it up.
        const target = isNode(r) ? r : r.targetId.namespace === this.namespaceIndex ? this.find(r.targetId) : undefined;
        if (target === undefined || !doomed.has(target)) refs[keep++] = r;
      }
      refs.length = keep;
    }
    const removed: NodeId[] = [];
    for (const node of doomed) {
      const slot = this.ownSlots.get(node);
      if (slot !== undefined) {
        this.ownSlots.delete(node);
        this.releaseLater(slot);
      }
      const id = node.nodeId;
      if (id.idType === IdType.String) this.byString.delete(id.value as string);
      else if (id.idType === IdType.Numeric) this.byNumber.delete(id.value as number);
      else this.byOther.delete(nodeIdKey(id));
      removed.push(id);
    }
    return removed;
  }

  /** Removes one reference of a node of this namespace (the counterpart of addReference). */
  removeReference(sourceId: NodeId, referenceTypeId: NodeId, targetId: NodeId, isForward = true): void {
    const node = this.find(sourceId);
    if (node) dropReference(node.references, referenceTypeId, targetId, isForward);
  }

  getNode(nodeId: NodeId): UaNode | undefined {
    return this.find(nodeId);
  }

  /** The variable with this NodeId, or undefined (also for non-Variables). */
  variable(nodeId: NodeId | string): MemoryVariable | undefined {
    const node = this.find(typeof nodeId === "string" ? stringNodeId(nodeId, this.namespaceIndex) : nodeId);
    return node?.nodeClass === NodeClassMask.Variable ? (node as MemoryVariable) : undefined;
  }

  /**
   * Replaces a variable's value (kept as given, not copied or checked: the caller owns its
   * correctness) and tells the listener. The fast path for drivers.
   */
  setValue(variable: MemoryVariable | NodeId, value: DataValue): void {
    const v = "expectedType" in variable ? variable : this.variable(variable);
    if (!v) throw new UaStatusError(StatusCodes.BadNodeIdUnknown, "setValue: no such variable");
    v.value = value;
    this.onValueChange?.(v, value);
  }

  // ---- NodeManager --------------------------------------------------------------------------

  read(ctx: RequestContext, items: readonly AttributeRead[], results: DataValue[], indices?: readonly number[]): void {
    if (indices) {
      for (let k = 0; k < indices.length; k++) results[indices[k]] = this.readOne(ctx, items[indices[k]]);
    } else {
      for (let i = 0; i < items.length; i++) results[i] = this.readOne(ctx, items[i]);
    }
  }

  write(ctx: RequestContext, items: readonly AttributeWrite[], results: number[], indices?: readonly number[]): void | Promise<void> {
    let pending: Promise<void>[] | undefined;
    const n = indices ? indices.length : items.length;
    for (let k = 0; k < n; k++) {
      const i = indices ? indices[k] : k;
      const r = this.writeOne(ctx, items[i]);
      if (typeof r === "number") {
        results[i] = r;
      } else {
        results[i] = StatusCodes.BadInternalError;
        (pending ??= []).push(
          r.then(
            (s) => void (results[i] = s),
            (e: unknown) => void (results[i] = statusOf(e)),
          ),
        );
      }
    }
    if (pending) return Promise.all(pending).then(() => undefined);
  }

  references(nodeId: NodeId): readonly NodeReference[] | undefined {
    return this.find(nodeId)?.references;
  }

  summary(nodeId: NodeId): NodeSummary | undefined {
    const node = this.find(nodeId);
    return node ? summarize(node) : undefined;
  }

  /**
   * A removed fed variable's slot is released when the current task ends, not at once: a
   * variable added with the same NodeId before then (a reload replacing a node) takes the slot
   * over, with its subscribers (the monitored items on that NodeId).
   */
  private releaseLater(slot: number): void {
    if (this.doomedSlots === undefined) {
      const doomed = (this.doomedSlots = new Set());
      queueMicrotask(() => {
        this.doomedSlots = undefined;
        for (const s of doomed) this.cache?.release(s);
      });
    }
    this.doomedSlots.add(slot);
  }

  valueSource(nodeId: NodeId): ValueSource | undefined {
    return this.variable(nodeId)?.source;
  }

  // ---- internals ----------------------------------------------------------------------------

  /** Hierarchical per the registry's type table; without a registry, anything but HasTypeDefinition. */
  private isHierarchical(referenceTypeId: NodeId): boolean {
    if (this.registry) return this.registry.isHierarchical(referenceTypeId);
    return !nodeIdEquals(referenceTypeId, HAS_TYPE_DEFINITION);
  }

  private find(nodeId: NodeId): UaNode | undefined {
    if (nodeId.namespace !== this.namespaceIndex) return undefined;
    if (nodeId.idType === IdType.String) return this.byString.get(nodeId.value as string);
    if (nodeId.idType === IdType.Numeric) return this.byNumber.get(nodeId.value as number);
    return this.byOther.get(nodeIdKey(nodeId));
  }

  private makeNode(options: NodeOptions, nodeClass: NodeClassMask, typeDefinition: NodeId): UaNode {
    const nodeId = typeof options.nodeId === "string" ? stringNodeId(options.nodeId, this.namespaceIndex) : options.nodeId;
    if (nodeId.namespace !== this.namespaceIndex) {
      throw new UaStatusError(StatusCodes.BadNodeIdInvalid, `node ${String(nodeId.value)} is not in namespace ${this.namespaceIndex}`);
    }
    if (this.find(nodeId)) throw new UaStatusError(StatusCodes.BadNodeIdExists, `node ${String(nodeId.value)} exists`);
    const browseName =
      typeof options.browseName === "string" ? { namespaceIndex: this.namespaceIndex, name: options.browseName } : options.browseName;
    return {
      nodeId,
      nodeClass,
      browseName,
      displayName: text(options.displayName) ?? { text: browseName.name },
      description: text(options.description),
      references: [{ referenceTypeId: HAS_TYPE_DEFINITION, isForward: true, targetId: typeDefinition }],
      typeDefinition,
    };
  }

  private insert(node: UaNode, options: NodeOptions, defaultReference: NodeId): void {
    const parent = options.parent;
    if (parent) {
      const referenceType = options.referenceType ?? defaultReference;
      if (parent.namespace === this.namespaceIndex) {
        if (!this.find(parent)) throw new UaStatusError(StatusCodes.BadParentNodeIdInvalid, `parent ${String(parent.value)} unknown`);
        this.addReference(parent, referenceType, node.nodeId, true);
      } else {
        const owner = this.registry?.managerFor(parent) as (NodeManager & Partial<ReferenceTarget>) | undefined;
        if (!owner?.addReference || !owner.summary(parent)) {
          throw new UaStatusError(StatusCodes.BadParentNodeIdInvalid, `parent ${String(parent.value)} unknown or not extensible`);
        }
        owner.addReference(parent, referenceType, node.nodeId, true);
      }
      node.references.push({ referenceTypeId: referenceType, isForward: false, targetId: parent });
    }
    const id = node.nodeId;
    if (id.idType === IdType.String) this.byString.set(id.value as string, node);
    else if (id.idType === IdType.Numeric) this.byNumber.set(id.value as number, node);
    else this.byOther.set(nodeIdKey(id), node);
  }

  private userAccessLevel(ctx: RequestContext, v: MemoryVariable): number {
    return (v.writeRoleMask & ROLE_BITS[ctx.role]) !== 0 ? v.accessLevel : v.accessLevel & ~WRITE_BITS;
  }

  private readOne(ctx: RequestContext, item: AttributeRead): DataValue {
    const node = this.find(item.nodeId);
    if (!node) return UNKNOWN_NODE;
    if (item.attributeId === AttributeIds.Value) {
      return node.nodeClass === NodeClassMask.Variable ? (node as MemoryVariable).value : INVALID_ATTRIBUTE;
    }
    const ual = node.nodeClass === NodeClassMask.Variable ? this.userAccessLevel(ctx, node as MemoryVariable) : 0;
    return readNonValueAttribute(node, item.attributeId, ual);
  }

  /** Part 4 §5.10.4 operation-level results, in the order a client can act on them. */
  private writeOne(ctx: RequestContext, item: AttributeWrite): StatusCode | Promise<StatusCode> {
    const node = this.find(item.nodeId);
    if (!node) return StatusCodes.BadNodeIdUnknown;
    if (!hasAttribute(node.nodeClass, item.attributeId)) return StatusCodes.BadAttributeIdInvalid;
    if (item.attributeId !== AttributeIds.Value) return StatusCodes.BadNotWritable;
    const v = node as MemoryVariable;
    if ((v.accessLevel & AccessLevel.CurrentWrite) === 0) return StatusCodes.BadNotWritable;
    if ((v.writeRoleMask & ROLE_BITS[ctx.role]) === 0) return StatusCodes.BadUserAccessDenied;
    const dv = item.value;
    if (dv.serverTimestamp !== undefined) return StatusCodes.BadWriteNotSupported;
    const writesStatus = dv.statusCode !== undefined && dv.statusCode !== StatusCodes.Good;
    if (writesStatus && (v.accessLevel & AccessLevel.StatusWrite) === 0) return StatusCodes.BadWriteNotSupported;
    if (dv.sourceTimestamp !== undefined && (v.accessLevel & AccessLevel.TimestampWrite) === 0) return StatusCodes.BadWriteNotSupported;
    let value = dv.value;
    if (value === undefined) return StatusCodes.BadTypeMismatch;
    value = coerceBytes(v, value);
    if (item.indexRange !== undefined && item.indexRange !== "") {
      const parsed = parseNumericRange(item.indexRange);
      if (!parsed.ok) return parsed.statusCode;
      const current = v.value.value;
      if (current === undefined) return StatusCodes.BadIndexRangeNoData;
      const merged = writeRange(current, parsed.range, value);
      if (!merged.ok) return merged.statusCode;
      value = merged.value;
    }
    const check = checkValue(v, value);
    if (check !== StatusCodes.Good) return check;
    const stored: DataValue = {
      value,
      statusCode: writesStatus ? dv.statusCode : undefined,
      sourceTimestamp: dv.sourceTimestamp ?? ctx.now,
      sourcePicoseconds: dv.sourceTimestamp !== undefined ? dv.sourcePicoseconds : undefined,
    };
    if (v.onWrite) return v.onWrite(ctx, v, stored);
    this.setValue(v, stored);
    return StatusCodes.Good;
  }
}

function dropReference(refs: NodeReference[], referenceTypeId: NodeId, targetId: NodeId, isForward: boolean): void {
  for (let i = refs.length - 1; i >= 0; i--) {
    const r = refs[i]!;
    if (r.isForward === isForward && nodeIdEquals(r.targetId, targetId) && nodeIdEquals(r.referenceTypeId, referenceTypeId)) refs.splice(i, 1);
  }
}

/** Whether a reference object is a node itself (adoptNode's `forward`). */
function isNode(r: NodeReference): r is NodeReference & UaNode {
  return (r as Partial<UaNode>).nodeClass !== undefined;
}
