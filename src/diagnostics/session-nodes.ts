// The per-session diagnostics objects (Part 5 §6.3.4 SessionsDiagnosticsSummaryType: one
// SessionDiagnosticsObjectType object per session, §6.3.6) below Server/ServerDiagnostics/
// SessionsDiagnosticsSummary, each with SessionDiagnostics, SessionSecurityDiagnostics and
// SubscriptionDiagnosticsArray, and one Variable per field of the first two (their VariableTypes'
// declarations, Part 5 §7.7, §7.9). The object's NodeId is the session's SessionId (Part 4
// §5.6.2).
//
// Nothing is stored: the nodes are made from the session table when a request names them, and
// their values from ServerDiagnostics when read, so sessions that nobody inspects cost nothing.
// Security diagnostics (who the user is, the client certificate) are for administrators only.
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import {
  NodeClassMask,
  type AttributeRead,
  type AttributeWrite,
  type NodeManager,
  type NodeReference,
  type NodeSummary,
  type RequestContext,
} from "../address-space/node-manager.js";
import { ns0Table } from "../address-space/ns0-table.js";
import { AccessLevel, hasAttribute, readNonValueAttribute, summarize, type UaNode } from "../address-space/ua-node.js";
import { BuiltinType, IdType, VariantArrayType, numericNodeId, stringNodeId, type DataValue, type NodeId, type Variant } from "../ua/builtins.js";
import { AttributeIds, DataTypeIds, ObjectIds, ObjectTypeIds, ReferenceTypeIds, VariableTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { Session, SessionManager } from "../sessions/session.js";
import type { ServerDiagnostics } from "./server-diagnostics.js";

export const SESSIONS_NAMESPACE_URI = "urn:fieldgate:sessions";

const id = (n: number): NodeId => Object.freeze(numericNodeId(n));
const HAS_COMPONENT = id(ReferenceTypeIds.HasComponent);
const HAS_TYPE_DEFINITION = id(ReferenceTypeIds.HasTypeDefinition);
const SUMMARY = id(ObjectIds.Server_ServerDiagnostics_SessionsDiagnosticsSummary);
const UNKNOWN: DataValue = Object.freeze({ statusCode: StatusCodes.BadNodeIdUnknown });
const INVALID_ATTRIBUTE: DataValue = Object.freeze({ statusCode: StatusCodes.BadAttributeIdInvalid });
const DENIED: DataValue = Object.freeze({ statusCode: StatusCodes.BadUserAccessDenied });

/** A field Variable of a diagnostics structure, as its VariableType declares it. */
interface Field {
  readonly name: string;
  /** The structure's member: the BrowseName in lower camel case. */
  readonly key: string;
  readonly dataType: NodeId;
  readonly valueRank: number;
}

/** The three components of a session's object. */
const enum Part {
  Object = 0,
  Diagnostics = 1,
  Security = 2,
  Subscriptions = 3,
}

const PARTS: ReadonlyArray<[string, Part]> = [
  ["SessionDiagnostics", Part.Diagnostics],
  ["SessionSecurityDiagnostics", Part.Security],
  ["SubscriptionDiagnosticsArray", Part.Subscriptions],
];

function fieldsOf(typeId: number): Field[] {
  const table = ns0Table();
  const out: Field[] = [];
  for (const r of table.buildNode(table.position(typeId)).references) {
    if (!r.isForward || r.referenceTypeId.value !== ReferenceTypeIds.HasComponent) continue;
    const child = table.buildNode(table.position(r.targetId.value as number));
    const name = child.browseName.name;
    out.push({ name, key: name[0].toLowerCase() + name.slice(1), dataType: child.dataType!, valueRank: child.valueRank ?? -1 });
  }
  return out;
}

export class SessionNodes implements NodeManager {
  readonly namespaceIndex: number;
  private readonly diagnosticsFields = fieldsOf(VariableTypeIds.SessionDiagnosticsVariableType);
  private readonly securityFields = fieldsOf(VariableTypeIds.SessionSecurityDiagnosticsType);

  constructor(
    private readonly registry: NamespaceRegistry,
    private readonly sessions: SessionManager,
    private readonly diagnostics: ServerDiagnostics,
  ) {
    this.namespaceIndex = registry.register(SESSIONS_NAMESPACE_URI, this);
  }

  /** HasComponent references from SessionsDiagnosticsSummary to every session's object (Ns0Manager.extraReferences). */
  summaryReferences(nodeId: NodeId): NodeReference[] | undefined {
    if (nodeId.namespace !== 0 || nodeId.value !== SUMMARY.value) return undefined;
    return [...this.sessions.sessions()].map((s) => ({ referenceTypeId: HAS_COMPONENT, isForward: true, targetId: s.sessionId }));
  }

  // ---- NodeManager ---------------------------------------------------------------------------

  read(ctx: RequestContext, items: readonly AttributeRead[], results: DataValue[], indices?: readonly number[]): void {
    const n = indices ? indices.length : items.length;
    for (let k = 0; k < n; k++) {
      const i = indices ? indices[k] : k;
      results[i] = this.readOne(ctx, items[i]);
    }
  }

  write(_ctx: RequestContext, items: readonly AttributeWrite[], results: number[], indices?: readonly number[]): void {
    const n = indices ? indices.length : items.length;
    for (let k = 0; k < n; k++) {
      const i = indices ? indices[k] : k;
      const node = this.node(items[i].nodeId);
      results[i] = node === undefined ? StatusCodes.BadNodeIdUnknown : hasAttribute(node.nodeClass, items[i].attributeId) ? StatusCodes.BadNotWritable : StatusCodes.BadAttributeIdInvalid;
    }
  }

  references(nodeId: NodeId): readonly NodeReference[] | undefined {
    return this.node(nodeId)?.references;
  }

  summary(nodeId: NodeId): NodeSummary | undefined {
    const node = this.node(nodeId);
    return node === undefined ? undefined : summarize(node);
  }

  // ---- internals -----------------------------------------------------------------------------

  private readOne(ctx: RequestContext, item: AttributeRead): DataValue {
    const where = this.locate(item.nodeId);
    if (where === undefined) return UNKNOWN;
    const node = this.build(where.session, where.part, where.field);
    if (item.attributeId !== AttributeIds.Value) return readNonValueAttribute(node, item.attributeId, node.accessLevel ?? 0);
    if (node.nodeClass !== NodeClassMask.Variable) return INVALID_ATTRIBUTE;
    if (where.part === Part.Security && ctx.role !== "admin") return DENIED;
    return { value: this.value(where.session, where.part, where.field), sourceTimestamp: ctx.now };
  }

  private value(session: Session, part: Part, field: Field | undefined): Variant {
    if (part === Part.Subscriptions) {
      const subs = [...this.diagnostics.subscriptionsOf(session)];
      const typeId = numericNodeId(DataTypeIds.SubscriptionDiagnosticsDataType);
      return { dataType: BuiltinType.ExtensionObject, arrayType: VariantArrayType.Array, value: subs.map((body) => ({ typeId, body })) };
    }
    const body = (part === Part.Diagnostics ? this.diagnostics.sessionDiagnostics(session) : this.diagnostics.sessionSecurity(session)) as unknown as Record<string, unknown>;
    if (field === undefined) {
      const typeId = numericNodeId(part === Part.Diagnostics ? DataTypeIds.SessionDiagnosticsDataType : DataTypeIds.SessionSecurityDiagnosticsDataType);
      return { dataType: BuiltinType.ExtensionObject, arrayType: VariantArrayType.Scalar, value: { typeId, body } };
    }
    const builtin = this.registry.builtinTypeOf(field.dataType) ?? BuiltinType.Variant;
    const raw = body[field.key];
    const wrap = (v: unknown): unknown => (builtin === BuiltinType.ExtensionObject ? { typeId: field.dataType, body: v } : v);
    if (field.valueRank >= 0 || field.valueRank === -3) {
      return { dataType: builtin, arrayType: VariantArrayType.Array, value: ((raw as unknown[] | undefined) ?? []).map(wrap) };
    }
    return { dataType: builtin, arrayType: VariantArrayType.Scalar, value: wrap(raw ?? null) };
  }

  private node(nodeId: NodeId): UaNode | undefined {
    const where = this.locate(nodeId);
    return where === undefined ? undefined : this.build(where.session, where.part, where.field);
  }

  /** The session and the part of its object a NodeId names: i=<n> the object, s=<n>/<part>[/<field>] the rest. */
  private locate(nodeId: NodeId): { session: Session; part: Part; field?: Field } | undefined {
    if (nodeId.namespace !== this.namespaceIndex) return undefined;
    if (nodeId.idType === IdType.Numeric) {
      const session = this.find(nodeId.value as number);
      return session === undefined ? undefined : { session, part: Part.Object };
    }
    if (nodeId.idType !== IdType.String) return undefined;
    const [n, partName, fieldName, ...rest] = (nodeId.value as string).split("/");
    if (rest.length > 0 || partName === undefined) return undefined;
    const session = this.find(Number(n));
    const part = PARTS.find(([name]) => name === partName)?.[1];
    if (session === undefined || part === undefined) return undefined;
    if (fieldName === undefined) return { session, part };
    const fields = part === Part.Diagnostics ? this.diagnosticsFields : part === Part.Security ? this.securityFields : [];
    const field = fields.find((f) => f.name === fieldName);
    return field === undefined ? undefined : { session, part, field };
  }

  private find(n: number): Session | undefined {
    if (!Number.isInteger(n)) return undefined;
    for (const s of this.sessions.sessions()) if (s.sessionId.value === n) return s;
    return undefined;
  }

  private build(session: Session, part: Part, field: Field | undefined): UaNode {
    const ns = this.namespaceIndex;
    const n = session.sessionId.value as number;
    if (part === Part.Object) {
      const name = session.name || `Session${n}`;
      return {
        nodeId: session.sessionId,
        nodeClass: NodeClassMask.Object,
        browseName: { namespaceIndex: ns, name },
        displayName: { text: name },
        eventNotifier: 0,
        typeDefinition: id(ObjectTypeIds.SessionDiagnosticsObjectType),
        references: [
          { referenceTypeId: HAS_TYPE_DEFINITION, isForward: true, targetId: id(ObjectTypeIds.SessionDiagnosticsObjectType) },
          { referenceTypeId: HAS_COMPONENT, isForward: false, targetId: SUMMARY },
          ...PARTS.map(([p]) => ({ referenceTypeId: HAS_COMPONENT, isForward: true, targetId: stringNodeId(`${n}/${p}`, ns) })),
        ],
      };
    }
    const partName = PARTS.find(([, p]) => p === part)![0];
    if (field !== undefined) {
      return this.variable(stringNodeId(`${n}/${partName}/${field.name}`, ns), { namespaceIndex: 0, name: field.name }, field.dataType, field.valueRank, id(VariableTypeIds.BaseDataVariableType), [
        { referenceTypeId: HAS_COMPONENT, isForward: false, targetId: stringNodeId(`${n}/${partName}`, ns) },
      ]);
    }
    const nodeId = stringNodeId(`${n}/${partName}`, ns);
    const parent = { referenceTypeId: HAS_COMPONENT, isForward: false, targetId: session.sessionId };
    if (part === Part.Subscriptions) {
      return this.variable(nodeId, { namespaceIndex: 0, name: partName }, id(DataTypeIds.SubscriptionDiagnosticsDataType), 1, id(VariableTypeIds.SubscriptionDiagnosticsArrayType), [parent]);
    }
    const fields = part === Part.Diagnostics ? this.diagnosticsFields : this.securityFields;
    return this.variable(
      nodeId,
      { namespaceIndex: 0, name: partName },
      id(part === Part.Diagnostics ? DataTypeIds.SessionDiagnosticsDataType : DataTypeIds.SessionSecurityDiagnosticsDataType),
      -1,
      id(part === Part.Diagnostics ? VariableTypeIds.SessionDiagnosticsVariableType : VariableTypeIds.SessionSecurityDiagnosticsType),
      [parent, ...fields.map((f) => ({ referenceTypeId: HAS_COMPONENT, isForward: true, targetId: stringNodeId(`${n}/${partName}/${f.name}`, ns) }))],
    );
  }

  private variable(nodeId: NodeId, browseName: UaNode["browseName"], dataType: NodeId, valueRank: number, typeDefinition: NodeId, refs: NodeReference[]): UaNode {
    return {
      nodeId,
      nodeClass: NodeClassMask.Variable,
      browseName,
      displayName: { text: browseName.name },
      dataType,
      valueRank,
      arrayDimensions: valueRank === 1 ? [0] : undefined,
      accessLevel: AccessLevel.CurrentRead,
      minimumSamplingInterval: 1000,
      historizing: false,
      typeDefinition,
      references: [{ referenceTypeId: HAS_TYPE_DEFINITION, isForward: true, targetId: typeDefinition }, ...refs],
    };
  }
}
