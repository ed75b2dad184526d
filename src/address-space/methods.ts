// The callable Methods of the address space (Part 3 §5.7, Part 4 §5.11): one registration per
// Method NodeId with the objects it may be called on, the roles that may call it and its
// handler. The Call service (services/method.ts) checks the request against the registration
// and the Method's InputArguments property before the handler runs; handlers see arguments
// whose number, built-in types and ranks already fit.
//
// Methods of types are called on instances (Part 4 §5.11.2: "the Method of an ObjectType may be
// called on an instance"): a registration names the objects itself (`objectStatus`), which also
// covers instances the address space does not show, as the Condition instances of Part 9 §5.5.2.
import type { DataValue, LocalizedText, NodeId, StatusCode, Variant } from "../ua/builtins.js";
import { AttributeIds, ReferenceTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { Argument } from "../ua/generated/types.js";
import { nodeIdKey } from "../ua/node-id.js";
import type { NamespaceRegistry } from "./namespace-registry.js";
import type { RequestContext } from "./node-manager.js";

export type Role = RequestContext["role"];

/** Who calls, as the handler needs it. */
export interface MethodCaller {
  /** The session's id (diagnostics, audit events); absent for internal callers. */
  readonly sessionId?: NodeId;
  /** The caller's session as the subscription engine knows it, for methods on subscriptions. */
  readonly session?: object;
  readonly role: Role;
  /** "" anonymous, user:<name>, cert:<thumbprint> (audit events: ClientUserId). */
  readonly userId: string;
  /** RequestHeader.auditEntryId (audit events: ClientAuditEntryId). */
  readonly auditEntryId: string;
  readonly now: number;
}

export interface MethodCall {
  readonly caller: MethodCaller;
  readonly objectId: NodeId;
  readonly methodId: NodeId;
  /** Checked against the InputArguments: one per argument, of the declared built-in type and rank. */
  readonly inputArguments: readonly Variant[];
}

export interface MethodOutcome {
  readonly statusCode: StatusCode;
  readonly outputArguments?: readonly Variant[];
  /** Per input argument, when the handler refuses some of them (then statusCode is BadInvalidArgument). */
  readonly inputArgumentResults?: readonly StatusCode[];
}

export type MethodHandler = (call: MethodCall) => MethodOutcome | Promise<MethodOutcome>;

export interface MethodRegistration {
  readonly methodId: NodeId;
  /**
   * Whether the method may be called on `objectId`: Good, BadNodeIdUnknown (no such object) or
   * BadMethodInvalid (the object exists but has no such method).
   */
  objectStatus(objectId: NodeId): StatusCode;
  /** Roles that may call it (UserExecutable, BadUserAccessDenied); default every role. */
  readonly roles?: readonly Role[];
  readonly handler: MethodHandler;
}

/** A registered method with its argument declarations, read once from the address space. */
export interface MethodEntry extends MethodRegistration {
  readonly inputArguments: readonly Argument[];
  readonly outputArguments: readonly Argument[];
}

const EMPTY: readonly Argument[] = Object.freeze([]);

export class MethodTable {
  private readonly entries = new Map<string | number, MethodEntry>();

  constructor(private readonly registry: NamespaceRegistry) {}

  /** Adds a method; its InputArguments / OutputArguments properties are read from its node now. */
  register(r: MethodRegistration): void {
    this.entries.set(nodeIdKey(r.methodId), {
      ...r,
      inputArguments: this.argumentsOf(r.methodId, "InputArguments"),
      outputArguments: this.argumentsOf(r.methodId, "OutputArguments"),
    });
  }

  get(methodId: NodeId): MethodEntry | undefined {
    return this.entries.get(nodeIdKey(methodId));
  }

  /** Part 3 §5.7: Executable (a handler is there) and UserExecutable (and the role may call it). */
  access(methodId: NodeId, role: Role): { executable: boolean; userExecutable: boolean } {
    const e = this.get(methodId);
    if (e === undefined) return { executable: false, userExecutable: false };
    return { executable: true, userExecutable: mayCall(e, role) };
  }

  private argumentsOf(methodId: NodeId, name: string): readonly Argument[] {
    const manager = this.registry.managerFor(methodId);
    const refs = manager?.references(methodId) ?? [];
    for (const r of refs) {
      if (!r.isForward || r.referenceTypeId.namespace !== 0 || r.referenceTypeId.value !== ReferenceTypeIds.HasProperty) continue;
      const target = this.registry.managerFor(r.targetId);
      if (target?.summary(r.targetId)?.browseName.name !== name) continue;
      const results: DataValue[] = [];
      target.read({ sessionId: "", role: "admin", now: Date.now() }, [{ nodeId: r.targetId, attributeId: AttributeIds.Value }], results);
      const list = results[0]?.value?.value;
      if (!Array.isArray(list)) return EMPTY;
      return list.map((eo: { body?: unknown }) => eo.body as Argument);
    }
    return EMPTY;
  }
}

export function mayCall(e: MethodRegistration, role: Role): boolean {
  return e.roles === undefined || e.roles.includes(role);
}

/** A LocalizedText input argument's text (Comment arguments of Part 9). */
export function textOf(v: Variant | undefined): LocalizedText {
  const t = v?.value as LocalizedText | null | undefined;
  return t ?? {};
}

/** The objects of a method that belongs to one object (the Server's methods). */
export function onObject(objectId: NodeId, registry: NamespaceRegistry): (id: NodeId) => StatusCode {
  const key = nodeIdKey(objectId);
  return (id) => {
    if (nodeIdKey(id) === key) return StatusCodes.Good;
    return registry.managerFor(id)?.summary(id) === undefined ? StatusCodes.BadNodeIdUnknown : StatusCodes.BadMethodInvalid;
  };
}
