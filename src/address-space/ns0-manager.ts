// NodeManager of namespace 0 over the generated reduced table (src/ua/generated/ns0.ts).
// Read-only to clients (every Write is BadNotWritable); the server feeds the live values of the
// Server object (Part 5 §6.3.1 ServerType) through the options, setValue and setValueSource.
import {
  BuiltinType,
  NULL_VARIANT,
  VariantArrayType,
  numericNodeId,
  type DataValue,
  type DateTime,
  type ExtensionObject,
  type LocalizedText,
  type NodeId,
  type Variant,
} from "../ua/builtins.js";
import { UaStatusError } from "../ua/errors.js";
import { RedundancySupport, ServerState } from "../ua/generated/enums.js";
import { AttributeIds, ObjectIds, ReferenceTypeIds, VariableIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { BuildInfo, ServerDiagnosticsSummaryDataType, ServerStatusDataType } from "../ua/generated/types.js";
import { NamespaceRegistry, UA_NAMESPACE_URI, type ReferenceTarget } from "./namespace-registry.js";
import type {
  AttributeRead,
  AttributeWrite,
  NodeManager,
  NodeReference,
  NodeSummary,
  RequestContext,
} from "./node-manager.js";
import { ns0Table, type Ns0Table } from "./ns0-table.js";
import { AccessLevel, hasAttribute, readNonValueAttribute, summarize, type UaNode } from "./ua-node.js";

/**
 * ServerCapabilities (Part 5 §6.3.2) and its OperationLimits (Part 5 §6.3.11). Keys are the
 * BrowseNames in lower camel case; a 0 limit means "no limit" (as in the spec). Unknown keys are
 * ignored, so the server's own limits object can be passed as is.
 */
export interface ServerCapabilityValues {
  serverProfileArray?: readonly string[];
  localeIdArray?: readonly string[];
  minSupportedSampleRate?: number;
  maxBrowseContinuationPoints?: number;
  maxQueryContinuationPoints?: number;
  maxHistoryContinuationPoints?: number;
  maxArrayLength?: number;
  maxStringLength?: number;
  maxByteStringLength?: number;
  maxSessions?: number;
  maxSubscriptions?: number;
  maxMonitoredItems?: number;
  maxSubscriptionsPerSession?: number;
  maxMonitoredItemsPerSubscription?: number;
  maxMonitoredItemsQueueSize?: number;
  maxNodesPerRead?: number;
  maxNodesPerHistoryReadData?: number;
  maxNodesPerHistoryReadEvents?: number;
  maxNodesPerWrite?: number;
  maxNodesPerHistoryUpdateData?: number;
  maxNodesPerHistoryUpdateEvents?: number;
  maxNodesPerMethodCall?: number;
  maxNodesPerBrowse?: number;
  maxNodesPerRegisterNodes?: number;
  maxNodesPerTranslateBrowsePathsToNodeIds?: number;
  maxNodesPerNodeManagement?: number;
  maxMonitoredItemsPerCall?: number;
  maxSelectClauseParameters?: number;
  maxWhereClauseParameters?: number;
}

export interface Ns0Options {
  /** The server's ApplicationUri: ServerArray[0] (Part 5 §6.3.1). */
  readonly applicationUri: string;
  readonly buildInfo: BuildInfo;
  /** Default: the time the manager is built. */
  readonly startTime?: DateTime;
  /** Default: `[applicationUri]`. */
  readonly serverArray?: readonly string[];
  /** Default 255: full service (Part 5 §6.3.1, ServiceLevel). */
  readonly serviceLevel?: number;
  readonly redundancySupport?: RedundancySupport;
  readonly capabilities?: ServerCapabilityValues;
  /** Server.Auditing (Part 5 §6.3.1): the server raises AuditEvents. Default false. */
  readonly auditing?: boolean;
  /** Whether a Method can be called, by whom (Part 3 §5.7 Executable, UserExecutable): the server's method table. */
  readonly methodAccess?: (methodId: NodeId, role: RequestContext["role"]) => { executable: boolean; userExecutable: boolean };
  /** References a node has beyond the table's (the sessions under SessionsDiagnosticsSummary, src/diagnostics). */
  readonly extraReferences?: (nodeId: NodeId) => readonly NodeReference[] | undefined;
}

/** Computes a live value at read time; `now` is the request's time, `role` the caller's. */
export type ValueSource = (now: DateTime, role: RequestContext["role"]) => DataValue;

/** Takes a client's write of a Variable's value (the few writable ns0 nodes, e.g. EnabledFlag). */
export type Ns0WriteHandler = (value: Variant) => number;

/** Called after setValue; the subscription layer hooks in here. */
export type ValueChangeListener = (nodeId: NodeId, value: DataValue) => void;

const UNKNOWN_NODE: DataValue = Object.freeze({ statusCode: StatusCodes.BadNodeIdUnknown });
const INVALID_ATTRIBUTE: DataValue = Object.freeze({ statusCode: StatusCodes.BadAttributeIdInvalid });
const NULL_VALUE: DataValue = Object.freeze({ value: NULL_VARIANT });
const VARIABLE_OR_TYPE = 2 | 16;

/** Defaults of capabilities the options leave out. */
const CAPABILITY_DEFAULTS: Readonly<Record<string, unknown>> = {
  serverProfileArray: ["http://opcfoundation.org/UA-Profile/Server/EmbeddedUA2017"],
  localeIdArray: ["en"],
};

const SUMMARY_FIELDS: ReadonlyArray<[number, keyof ServerDiagnosticsSummaryDataType]> = [
  [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_ServerViewCount, "serverViewCount"],
  [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount, "currentSessionCount"],
  [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSessionCount, "cumulatedSessionCount"],
  [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedSessionCount, "securityRejectedSessionCount"],
  [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedSessionCount, "rejectedSessionCount"],
  [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionTimeoutCount, "sessionTimeoutCount"],
  [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionAbortCount, "sessionAbortCount"],
  [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSubscriptionCount, "currentSubscriptionCount"],
  [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSubscriptionCount, "cumulatedSubscriptionCount"],
  [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_PublishingIntervalCount, "publishingIntervalCount"],
  [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedRequestsCount, "securityRejectedRequestsCount"],
  [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedRequestsCount, "rejectedRequestsCount"],
];

function scalarValue(dataType: BuiltinType, value: unknown, sourceTimestamp?: DateTime): DataValue {
  return { value: { dataType, arrayType: VariantArrayType.Scalar, value }, sourceTimestamp };
}

export class Ns0Manager implements NodeManager, ReferenceTarget {
  readonly namespaceIndex = 0;
  /** Optional hook called after every setValue. */
  onValueChange: ValueChangeListener | undefined;
  private readonly methodAccess: Ns0Options["methodAccess"];

  private readonly table: Ns0Table = ns0Table();
  private readonly nodes: (UaNode | undefined)[];
  private readonly sources: (ValueSource | undefined)[];
  /**
   * The last live value read in the current `read()` call (forgotten when it returns): a call
   * that names one live node many times gets one DataValue, as a stored node's value would be,
   * instead of one per occurrence (a Read of 10,000 CurrentTimes built 10,000: bench hostile,
   * bench/RESULTS.md). Within one call the source's answer cannot differ: one `now`, one role.
   */
  private livePosition = -1;
  private liveValue: DataValue = NULL_VALUE;
  private readonly writers = new Map<number, { readonly roles: readonly RequestContext["role"][]; readonly write: Ns0WriteHandler }>();
  private readonly extraReferences: Ns0Options["extraReferences"];
  private readonly startTime: DateTime;
  private readonly buildInfo: BuildInfo;
  private state: ServerState = ServerState.Running;
  private secondsTillShutdown = 0;
  private shutdownReason: LocalizedText = {};
  private namespaceArrayCache: DataValue | undefined;
  private namespaceArrayVersion = -1;

  /** Registers itself as the manager of namespace 0 of `registry`. */
  constructor(
    private readonly registry: NamespaceRegistry,
    options: Ns0Options,
  ) {
    this.methodAccess = options.methodAccess;
    this.extraReferences = options.extraReferences;
    this.nodes = new Array<UaNode | undefined>(this.table.count);
    this.sources = new Array<ValueSource | undefined>(this.table.count);
    this.startTime = options.startTime ?? Date.now();
    this.buildInfo = options.buildInfo;
    registry.register(UA_NAMESPACE_URI, this);
    this.initServerObject(options);
  }

  // ---- NodeManager ------------------------------------------------------------------------

  read(ctx: RequestContext, items: readonly AttributeRead[], results: DataValue[], indices?: readonly number[]): void {
    this.livePosition = -1;
    try {
      if (indices) {
        for (let k = 0; k < indices.length; k++) results[indices[k]] = this.readOne(ctx, items[indices[k]]);
      } else {
        for (let i = 0; i < items.length; i++) results[i] = this.readOne(ctx, items[i]);
      }
    } finally {
      this.livePosition = -1;
      this.liveValue = NULL_VALUE;
    }
  }

  /**
   * Namespace 0 is read-only to clients (Part 4 §5.10.4: BadNotWritable) but for the Values the
   * server gave a write handler (setWriteHandler), which the roles it names may write.
   */
  write(ctx: RequestContext, items: readonly AttributeWrite[], results: number[], indices?: readonly number[]): void {
    const n = indices ? indices.length : items.length;
    for (let k = 0; k < n; k++) {
      const i = indices ? indices[k] : k;
      const item = items[i];
      const p = this.table.positionOf(item.nodeId);
      const writer = p < 0 ? undefined : this.writers.get(p);
      if (p < 0) results[i] = StatusCodes.BadNodeIdUnknown;
      else if (!hasAttribute(this.table.nodeClassAt(p), item.attributeId)) results[i] = StatusCodes.BadAttributeIdInvalid;
      else if (writer === undefined || item.attributeId !== AttributeIds.Value) results[i] = StatusCodes.BadNotWritable;
      else if (!writer.roles.includes(ctx.role)) results[i] = StatusCodes.BadUserAccessDenied;
      else if (item.indexRange !== undefined && item.indexRange !== "") results[i] = StatusCodes.BadWriteNotSupported;
      else if (item.value.statusCode !== undefined || item.value.sourceTimestamp !== undefined || item.value.serverTimestamp !== undefined) results[i] = StatusCodes.BadWriteNotSupported;
      else results[i] = item.value.value === undefined ? StatusCodes.BadTypeMismatch : writer.write(item.value.value);
    }
  }

  references(nodeId: NodeId): readonly NodeReference[] | undefined {
    const p = this.table.positionOf(nodeId);
    if (p < 0) return undefined;
    const own = this.nodeAt(p).references;
    const extra = this.extraReferences?.(nodeId);
    return extra === undefined || extra.length === 0 ? own : [...own, ...extra];
  }

  /** Makes an ns0 Variable's Value writable by `roles` through `write` (AccessLevel gains CurrentWrite). */
  setWriteHandler(nodeId: NodeId, roles: readonly RequestContext["role"][], write: Ns0WriteHandler): void {
    const p = this.mustFind(nodeId);
    const node = this.nodeAt(p);
    if (node.nodeClass !== 2) throw new UaStatusError(StatusCodes.BadNodeClassInvalid, "setWriteHandler on a non-Variable");
    node.accessLevel = (node.accessLevel ?? 1) | AccessLevel.CurrentWrite;
    this.writers.set(p, { roles, write });
  }

  summary(nodeId: NodeId): NodeSummary | undefined {
    const p = this.table.positionOf(nodeId);
    return p < 0 ? undefined : summarize(this.nodeAt(p));
  }

  // ---- for the server ----------------------------------------------------------------------

  /**
   * Adds a reference to an ns0 node (the source); the target may be in any namespace. The
   * inverse belongs to the target's manager: call NamespaceRegistry.addReference to add both.
   */
  addReference(sourceId: NodeId, referenceTypeId: NodeId, targetId: NodeId, isForward = true): void {
    const node = this.nodeAt(this.mustFind(sourceId));
    node.references.push({ referenceTypeId, isForward, targetId });
    if (isForward && referenceTypeId.namespace === 0 && referenceTypeId.value === ReferenceTypeIds.HasTypeDefinition) {
      node.typeDefinition = targetId;
      node.summaryCache = undefined;
    }
  }

  /** Sets the value of an ns0 Variable (kept as given, not copied) and tells the listener. */
  setValue(nodeId: NodeId, value: DataValue): void {
    const p = this.mustFind(nodeId);
    const node = this.nodeAt(p);
    if (node.nodeClass !== 2) throw new UaStatusError(StatusCodes.BadNodeClassInvalid, "setValue on a non-Variable");
    node.value = value;
    this.sources[p] = undefined;
    this.onValueChange?.(node.nodeId, value);
  }

  /** Makes an ns0 Variable's value computed at each read (undefined: back to the stored value). */
  setValueSource(nodeId: NodeId, source: ValueSource | undefined): void {
    const p = this.mustFind(nodeId);
    if (this.table.nodeClassAt(p) !== 2) throw new UaStatusError(StatusCodes.BadNodeClassInvalid, "setValueSource on a non-Variable");
    this.sources[p] = source;
  }

  /** ServerStatus.State (Part 5 §6.3.1, §12.6). */
  setServerState(state: ServerState): void {
    this.state = state;
  }

  get serverState(): ServerState {
    return this.state;
  }

  /** Announces a shutdown: State becomes Shutdown, with the seconds left and a reason (Part 5 §12.10). */
  setShutdown(secondsTillShutdown: number, reason: LocalizedText): void {
    this.state = ServerState.Shutdown;
    this.secondsTillShutdown = secondsTillShutdown;
    this.shutdownReason = reason;
  }

  // ---- internals ---------------------------------------------------------------------------

  private readOne(ctx: RequestContext, item: AttributeRead): DataValue {
    const p = this.table.positionOf(item.nodeId);
    if (p < 0) return UNKNOWN_NODE;
    const node = this.nodeAt(p);
    if (item.attributeId !== AttributeIds.Value) {
      if (node.nodeClass === 4 && (item.attributeId === AttributeIds.Executable || item.attributeId === AttributeIds.UserExecutable)) {
        const access = this.methodAccess?.(node.nodeId, ctx.role);
        const on = item.attributeId === AttributeIds.Executable ? access?.executable : access?.userExecutable;
        return scalarValue(BuiltinType.Boolean, on === true);
      }
      const level = node.accessLevel ?? 1;
      const writer = this.writers.get(p);
      return readNonValueAttribute(node, item.attributeId, writer !== undefined && !writer.roles.includes(ctx.role) ? level & ~AccessLevel.CurrentWrite : level);
    }
    if ((node.nodeClass & VARIABLE_OR_TYPE) === 0) return INVALID_ATTRIBUTE;
    const source = this.sources[p];
    if (source === undefined) return node.value ?? NULL_VALUE;
    if (p === this.livePosition) return this.liveValue;
    const dv = source(ctx.now, ctx.role);
    this.livePosition = p;
    this.liveValue = dv;
    return dv;
  }

  private nodeAt(p: number): UaNode {
    let node = this.nodes[p];
    if (!node) {
      node = this.table.buildNode(p);
      this.nodes[p] = node;
    }
    return node;
  }

  private mustFind(nodeId: NodeId): number {
    const p = this.table.positionOf(nodeId);
    if (p < 0) throw new UaStatusError(StatusCodes.BadNodeIdUnknown, "not in the reduced namespace 0");
    return p;
  }

  private put(id: number, value: DataValue): void {
    this.nodeAt(this.table.position(id)).value = value;
  }

  private live(id: number, source: ValueSource): void {
    this.sources[this.table.position(id)] = source;
  }

  private initServerObject(o: Ns0Options): void {
    const t0 = this.startTime;
    const b = this.buildInfo;
    this.put(VariableIds.Server_ServerArray, { value: arrayOf(BuiltinType.String, o.serverArray ?? [o.applicationUri]), sourceTimestamp: t0 });
    this.live(VariableIds.Server_NamespaceArray, () => this.namespaceArray());
    this.live(VariableIds.Server_ServerStatus, (now) => ({ value: this.serverStatus(now), sourceTimestamp: now }));
    this.put(VariableIds.Server_ServerStatus_StartTime, scalarValue(BuiltinType.DateTime, t0, t0));
    this.live(VariableIds.Server_ServerStatus_CurrentTime, (now) => scalarValue(BuiltinType.DateTime, now, now));
    this.live(VariableIds.Server_ServerStatus_State, (now) => scalarValue(BuiltinType.Int32, this.state, now));
    this.live(VariableIds.Server_ServerStatus_SecondsTillShutdown, (now) => scalarValue(BuiltinType.UInt32, this.secondsTillShutdown, now));
    this.live(VariableIds.Server_ServerStatus_ShutdownReason, (now) => scalarValue(BuiltinType.LocalizedText, this.shutdownReason, now));
    const buildInfo: ExtensionObject = { typeId: numericNodeId(ObjectIds.BuildInfo_Encoding_DefaultBinary), body: b };
    this.put(VariableIds.Server_ServerStatus_BuildInfo, scalarValue(BuiltinType.ExtensionObject, buildInfo, t0));
    this.put(VariableIds.Server_ServerStatus_BuildInfo_ProductUri, scalarValue(BuiltinType.String, b.productUri, t0));
    this.put(VariableIds.Server_ServerStatus_BuildInfo_ManufacturerName, scalarValue(BuiltinType.String, b.manufacturerName, t0));
    this.put(VariableIds.Server_ServerStatus_BuildInfo_ProductName, scalarValue(BuiltinType.String, b.productName, t0));
    this.put(VariableIds.Server_ServerStatus_BuildInfo_SoftwareVersion, scalarValue(BuiltinType.String, b.softwareVersion, t0));
    this.put(VariableIds.Server_ServerStatus_BuildInfo_BuildNumber, scalarValue(BuiltinType.String, b.buildNumber, t0));
    this.put(VariableIds.Server_ServerStatus_BuildInfo_BuildDate, scalarValue(BuiltinType.DateTime, b.buildDate, t0));
    this.put(VariableIds.Server_ServiceLevel, scalarValue(BuiltinType.Byte, o.serviceLevel ?? 255, t0));
    this.put(VariableIds.Server_Auditing, scalarValue(BuiltinType.Boolean, o.auditing === true, t0));
    this.put(VariableIds.Server_ServerRedundancy_RedundancySupport, scalarValue(BuiltinType.Int32, o.redundancySupport ?? RedundancySupport.None, t0));
    this.put(VariableIds.Server_ServerDiagnostics_EnabledFlag, scalarValue(BuiltinType.Boolean, false, t0));
    this.put(VariableIds.Server_ServerCapabilities_SoftwareCertificates, { value: arrayOf(BuiltinType.ExtensionObject, []), sourceTimestamp: t0 });
    for (const [id] of SUMMARY_FIELDS) this.put(id, scalarValue(BuiltinType.UInt32, 0, t0));
    this.live(VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary, (now) => this.diagnosticsSummary(now));
    this.initCapabilities(ObjectIds.Server_ServerCapabilities, o.capabilities ?? {}, t0);
    this.initCapabilities(ObjectIds.Server_ServerCapabilities_OperationLimits, o.capabilities ?? {}, t0);
    // Nothing historical until the history backend says otherwise (publishHistoryCapabilities).
    for (const id of [ObjectIds.HistoryServerCapabilities, ObjectIds.DefaultHAConfiguration, ObjectIds.DefaultHAConfiguration_AggregateConfiguration]) {
      this.initCapabilities(id, {}, t0);
    }
  }

  /**
   * Fills the Variables below ServerCapabilities or OperationLimits from the options, by
   * BrowseName, encoded as each Variable's DataType and ValueRank say.
   */
  private initCapabilities(parentId: number, values: ServerCapabilityValues, t0: DateTime): void {
    const given = values as Readonly<Record<string, unknown>>;
    for (const r of this.nodeAt(this.table.position(parentId)).references) {
      if (!r.isForward) continue;
      const p = this.table.positionOf(r.targetId);
      const child = this.nodeAt(p);
      if (child.nodeClass !== 2 || child.value !== undefined || this.sources[p] !== undefined) continue;
      const name = child.browseName.name;
      const key = name[0].toLowerCase() + name.slice(1);
      const type = this.registry.builtinTypeOf(child.dataType!) ?? BuiltinType.Variant;
      const value = given[key] ?? CAPABILITY_DEFAULTS[key];
      if (child.valueRank === 1) {
        child.value = { value: arrayOf(type, Array.isArray(value) ? value : []), sourceTimestamp: t0 };
      } else if (type === BuiltinType.Boolean) {
        child.value = scalarValue(type, value === true, t0);
      } else {
        child.value = scalarValue(type, typeof value === "number" ? value : 0, t0);
      }
    }
  }

  private namespaceArray(): DataValue {
    const version = this.registry.version;
    if (this.namespaceArrayCache === undefined || this.namespaceArrayVersion !== version) {
      this.namespaceArrayCache = { value: arrayOf(BuiltinType.String, this.registry.uris().slice()), sourceTimestamp: Date.now() };
      this.namespaceArrayVersion = version;
    }
    return this.namespaceArrayCache;
  }

  private serverStatus(now: DateTime): Variant {
    const body: ServerStatusDataType = {
      startTime: this.startTime,
      currentTime: now,
      state: this.state,
      buildInfo: this.buildInfo,
      secondsTillShutdown: this.secondsTillShutdown,
      shutdownReason: this.shutdownReason,
    };
    const eo: ExtensionObject = { typeId: numericNodeId(ObjectIds.ServerStatusDataType_Encoding_DefaultBinary), body };
    return { dataType: BuiltinType.ExtensionObject, arrayType: VariantArrayType.Scalar, value: eo };
  }

  /** The summary structure from its component Variables, whatever feeds those. */
  private diagnosticsSummary(now: DateTime): DataValue {
    const body: Record<string, number> = {};
    for (const [id, field] of SUMMARY_FIELDS) {
      const p = this.table.position(id);
      const dv = this.sources[p]?.(now, "viewer") ?? this.nodeAt(p).value;
      body[field] = typeof dv?.value?.value === "number" ? dv.value.value : 0;
    }
    const eo: ExtensionObject = {
      typeId: numericNodeId(ObjectIds.ServerDiagnosticsSummaryDataType_Encoding_DefaultBinary),
      body: body as unknown as ServerDiagnosticsSummaryDataType,
    };
    return scalarValue(BuiltinType.ExtensionObject, eo, now);
  }
}

function arrayOf(dataType: BuiltinType, value: readonly unknown[]): Variant {
  return { dataType, arrayType: VariantArrayType.Array, value };
}
