// AuditEvents (Auditing facet, Part 5 §6.4.3 - §6.4.27; Part 4 §6.5: what each service audits):
// CreateSession, ActivateSession (successful and refused logins), CloseSession and session
// timeouts, refused certificates (of secure channels, sessions and X509 user tokens), Write and
// Call. The fields of AuditEventType are filled as Part 5 §6.4.3 says: ActionTimeStamp, Status
// (the action succeeded), ServerId (the server's ApplicationUri), ClientAuditEntryId (the
// RequestHeader's auditEntryId) and ClientUserId (who the session's user is). Secrets never go
// into an event: a UserNameIdentityToken is reported without its password (Part 5 §6.4.10).
//
// Audit events are reported through the Server object only and to administrators only
// (event-item.ts); nothing is built while nobody listens there.
import { BuiltinType, NULL_VARIANT, VariantArrayType, numericNodeId, type DataValue, type ExtensionObject, type NodeId, type Variant } from "../ua/builtins.js";
import { ObjectIds, ObjectTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes, statusCodeName } from "../ua/generated/status-codes.js";
import { createHash } from "node:crypto";
import type { EventBus } from "./event-bus.js";
import { nodeIdVariant, scalar, UaEvent } from "./event.js";

const SERVER: NodeId = Object.freeze(numericNodeId(ObjectIds.Server));
const NOTIFIERS: readonly NodeId[] = Object.freeze([SERVER]);
const SEVERITY_OK = 100;
const SEVERITY_REFUSED = 600;

/** Who did it, as a session knows it. */
export interface AuditActor {
  readonly sessionId?: NodeId;
  /** "" anonymous, user:<name>, cert:<thumbprint>. */
  readonly userId: string;
  readonly auditEntryId: string;
}

/** Part 5 §6.4.3 ClientUserId: the user name, the certificate's thumbprint, or "" for anonymous. */
function clientUserId(userId: string): string {
  if (userId.startsWith("user:")) return userId.slice(5);
  if (userId.startsWith("cert:")) return userId.slice(5);
  return userId;
}

/** The identity token without what must stay secret. */
function redactedToken(token: ExtensionObject | undefined): ExtensionObject | null {
  if (token === undefined || token === null) return null;
  const id = token.typeId.namespace === 0 ? token.typeId.value : -1;
  const body = token.body as Record<string, unknown> | null;
  if (body === null || Buffer.isBuffer(body) || typeof body !== "object") return { typeId: token.typeId, body: null };
  if (id === ObjectIds.UserNameIdentityToken_Encoding_DefaultBinary) return { typeId: token.typeId, body: { ...body, password: Buffer.alloc(0) } };
  if (id === ObjectIds.IssuedIdentityToken_Encoding_DefaultBinary) return { typeId: token.typeId, body: { ...body, tokenData: Buffer.alloc(0) } };
  return token;
}

/** Part 5 §6.4.19 - §6.4.26: the AuditCertificate subtype that fits a validation failure. */
function certificateEventType(status: number): number {
  switch (status) {
    case StatusCodes.BadCertificateUntrusted:
      return ObjectTypeIds.AuditCertificateUntrustedEventType;
    case StatusCodes.BadCertificateTimeInvalid:
    case StatusCodes.BadCertificateIssuerTimeInvalid:
      return ObjectTypeIds.AuditCertificateExpiredEventType;
    case StatusCodes.BadCertificateRevoked:
    case StatusCodes.BadCertificateIssuerRevoked:
    case StatusCodes.BadCertificateRevocationUnknown:
    case StatusCodes.BadCertificateIssuerRevocationUnknown:
      return ObjectTypeIds.AuditCertificateRevokedEventType;
    case StatusCodes.BadCertificateUriInvalid:
    case StatusCodes.BadCertificateHostNameInvalid:
      return ObjectTypeIds.AuditCertificateDataMismatchEventType;
    case StatusCodes.BadCertificateUseNotAllowed:
    case StatusCodes.BadCertificateIssuerUseNotAllowed:
      return ObjectTypeIds.AuditCertificateMismatchEventType;
    default:
      return ObjectTypeIds.AuditCertificateInvalidEventType;
  }
}

export class AuditEvents {
  constructor(
    private readonly bus: EventBus,
    private readonly serverUri: string,
  ) {}

  /** Someone listens on the Server: build audit events. */
  get wanted(): boolean {
    return this.bus.wants(NOTIFIERS);
  }

  private event(typeId: number, sourceName: string, sourceNode: NodeId, message: string, status: boolean, actor: AuditActor | undefined): UaEvent {
    const e = new UaEvent(typeId, { sourceNode, sourceName, message, severity: status ? SEVERITY_OK : SEVERITY_REFUSED }, true);
    e.set("ActionTimeStamp", scalar(BuiltinType.DateTime, Date.now()));
    e.set("Status", scalar(BuiltinType.Boolean, status));
    e.set("ServerId", scalar(BuiltinType.String, this.serverUri));
    e.set("ClientAuditEntryId", scalar(BuiltinType.String, actor?.auditEntryId ?? ""));
    e.set("ClientUserId", scalar(BuiltinType.String, clientUserId(actor?.userId ?? "")));
    return e;
  }

  private statusField(e: UaEvent, status: number): void {
    // AuditSecurityEventType.StatusCodeId (Part 5 §6.4.4): why it was refused.
    if (status !== StatusCodes.Good) e.set("StatusCodeId", scalar(BuiltinType.StatusCode, status));
  }

  /** Part 5 §6.4.9 AuditCreateSessionEventType (SourceName "Session/CreateSession"). */
  createSession(o: { actor: AuditActor; status: number; secureChannelId: number; clientCertificate?: Buffer; revisedSessionTimeout: number }): void {
    if (!this.wanted) return;
    const ok = o.status === StatusCodes.Good;
    const e = this.event(ObjectTypeIds.AuditCreateSessionEventType, "Session/CreateSession", o.actor.sessionId ?? SERVER, ok ? "A session was created." : `CreateSession refused: ${statusCodeName(o.status)}`, ok, o.actor);
    this.statusField(e, o.status);
    e.set("SessionId", nodeIdVariant(o.actor.sessionId ?? numericNodeId(0)));
    e.set("SecureChannelId", scalar(BuiltinType.String, String(o.secureChannelId)));
    e.set("ClientCertificate", scalar(BuiltinType.ByteString, o.clientCertificate ?? null));
    e.set("ClientCertificateThumbprint", scalar(BuiltinType.String, o.clientCertificate ? createHash("sha1").update(o.clientCertificate).digest("hex") : ""));
    e.set("RevisedSessionTimeout", scalar(BuiltinType.Double, o.revisedSessionTimeout));
    this.bus.raise(e, NOTIFIERS);
  }

  /** Part 5 §6.4.10 AuditActivateSessionEventType: a login, successful or refused (Status false). */
  activateSession(o: { actor: AuditActor; status: number; secureChannelId: number; userIdentityToken: ExtensionObject | undefined }): void {
    if (!this.wanted) return;
    const ok = o.status === StatusCodes.Good;
    const e = this.event(ObjectTypeIds.AuditActivateSessionEventType, "Session/ActivateSession", o.actor.sessionId ?? SERVER, ok ? "A session was activated." : `ActivateSession refused: ${statusCodeName(o.status)}`, ok, o.actor);
    this.statusField(e, o.status);
    e.set("SessionId", nodeIdVariant(o.actor.sessionId ?? numericNodeId(0)));
    e.set("SecureChannelId", scalar(BuiltinType.String, String(o.secureChannelId)));
    e.set("ClientSoftwareCertificates", { dataType: BuiltinType.ExtensionObject, arrayType: VariantArrayType.Array, value: [] });
    e.set("UserIdentityToken", scalar(BuiltinType.ExtensionObject, redactedToken(o.userIdentityToken)));
    this.bus.raise(e, NOTIFIERS);
  }

  /** Part 5 §6.4.7 AuditSessionEventType: "Session/CloseSession", "Session/Timeout", "Session/Terminated". */
  sessionEnded(actor: AuditActor, how: "closed" | "timeout" | "terminated"): void {
    if (!this.wanted) return;
    const name = how === "closed" ? "Session/CloseSession" : how === "timeout" ? "Session/Timeout" : "Session/Terminated";
    const e = this.event(ObjectTypeIds.AuditSessionEventType, name, actor.sessionId ?? SERVER, `The session ended (${how}).`, true, actor);
    e.set("SessionId", nodeIdVariant(actor.sessionId ?? numericNodeId(0)));
    this.bus.raise(e, NOTIFIERS);
  }

  /** Part 5 §6.4.18 AuditCertificateEventType and subtypes: a certificate the server refused. */
  certificateRefused(certificate: Buffer, status: number): void {
    if (!this.wanted) return;
    const e = this.event(certificateEventType(status), "Security/Certificate", SERVER, `A certificate was refused: ${statusCodeName(status)}`, false, undefined);
    this.statusField(e, status);
    e.set("Certificate", scalar(BuiltinType.ByteString, certificate));
    this.bus.raise(e, NOTIFIERS);
  }

  /** Part 5 §6.4.23 AuditWriteUpdateEventType, one per written attribute (SourceName "Attribute/Write"). */
  write(actor: AuditActor, o: { nodeId: NodeId; attributeId: number; indexRange?: string; oldValue: DataValue | undefined; newValue: DataValue; status: number }): void {
    const ok = o.status === StatusCodes.Good;
    const e = this.event(ObjectTypeIds.AuditWriteUpdateEventType, "Attribute/Write", o.nodeId, ok ? "An attribute was written." : `A write was refused: ${statusCodeName(o.status)}`, ok, actor);
    e.set("AttributeId", scalar(BuiltinType.UInt32, o.attributeId));
    e.set("IndexRange", scalar(BuiltinType.String, o.indexRange ?? ""));
    e.set("OldValue", o.oldValue?.value ?? NULL_VARIANT);
    e.set("NewValue", o.newValue.value ?? NULL_VARIANT);
    this.bus.raise(e, NOTIFIERS);
  }

  /** Part 5 §6.4.27 AuditUpdateMethodEventType (SourceName "Method/Call"). */
  methodCall(actor: AuditActor, o: { objectId: NodeId; methodId: NodeId; inputArguments: readonly Variant[]; status: number }): void {
    if (!this.wanted) return;
    const ok = o.status === StatusCodes.Good;
    const e = this.event(ObjectTypeIds.AuditUpdateMethodEventType, "Method/Call", o.objectId, ok ? "A method was called." : `A method call failed: ${statusCodeName(o.status)}`, ok, actor);
    e.set("MethodId", nodeIdVariant(o.methodId));
    e.set("InputArguments", { dataType: BuiltinType.Variant, arrayType: VariantArrayType.Array, value: o.inputArguments });
    this.bus.raise(e, NOTIFIERS);
  }
}
