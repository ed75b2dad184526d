// Base Info Diagnostics (Part 5 §6.3.3 ServerDiagnosticsType): the counters of
// ServerDiagnosticsSummary (§12.9), SessionsDiagnosticsSummary's SessionDiagnosticsArray and
// SessionSecurityDiagnosticsArray (§12.11, §12.12), SubscriptionDiagnosticsArray (§12.15),
// SamplingIntervalDiagnosticsArray (§12.8) and EnabledFlag.
//
// What it costs: the summary's counters are a few increments on rare events (sessions, refused
// requests). Every value is computed when a client reads it, from the session table and the
// subscription engine, so an unread array costs nothing. The per-session service counters of
// SessionDiagnostics (TotalRequestCount, ReadCount, ...) are what grows with traffic: they count
// only while EnabledFlag is true (Part 5 §6.3.3: the flag turns the collection of diagnostics on
// and off; an administrator writes it), and cost one test of the flag per request otherwise.
import type { Ns0Manager } from "../address-space/ns0-manager.js";
import type { Role } from "../address-space/methods.js";
import { BuiltinType, VariantArrayType, numericNodeId, type DataValue, type ExtensionObject, type NodeId } from "../ua/builtins.js";
import { ApplicationType, MessageSecurityMode } from "../ua/generated/enums.js";
import { DataTypeIds, VariableIds } from "../ua/generated/node-ids.js";
import { StatusCodes, statusCodeName } from "../ua/generated/status-codes.js";
import type {
  ApplicationDescription,
  SamplingIntervalDiagnosticsDataType,
  ServiceCounterDataType,
  SessionDiagnosticsDataType,
  SessionSecurityDiagnosticsDataType,
  SubscriptionDiagnosticsDataType,
} from "../ua/generated/types.js";
import { MonitoringMode } from "../ua/generated/enums.js";
import type { SubscriptionEngine } from "../subscriptions/engine.js";
import type { Subscription } from "../subscriptions/subscription.js";
import type { EventItems } from "../events/event-items.js";
import type { Session, SessionManager } from "../sessions/session.js";

/** The services of SessionDiagnosticsDataType's counters, in its field order (Part 5 §12.11). */
export const COUNTED_SERVICES = [
  "Read",
  "HistoryRead",
  "Write",
  "HistoryUpdate",
  "Call",
  "CreateMonitoredItems",
  "ModifyMonitoredItems",
  "SetMonitoringMode",
  "SetTriggering",
  "DeleteMonitoredItems",
  "CreateSubscription",
  "ModifySubscription",
  "SetPublishingMode",
  "Publish",
  "Republish",
  "TransferSubscriptions",
  "DeleteSubscriptions",
  "AddNodes",
  "AddReferences",
  "DeleteNodes",
  "DeleteReferences",
  "Browse",
  "BrowseNext",
  "TranslateBrowsePathsToNodeIds",
  "QueryFirst",
  "QueryNext",
  "RegisterNodes",
  "UnregisterNodes",
] as const;
const SERVICE_INDEX = new Map<string, number>(COUNTED_SERVICES.map((s, i) => [s, i]));
/** The TotalRequestCount pair follows the services'. */
const TOTAL = COUNTED_SERVICES.length;

/** Refusals "due to security constraints" (Part 5 §12.9): the caller was not who, or not allowed, what it said. */
export function isSecurityRejection(status: number): boolean {
  switch (status) {
    case StatusCodes.BadSecurityChecksFailed:
    case StatusCodes.BadUserAccessDenied:
    case StatusCodes.BadIdentityTokenInvalid:
    case StatusCodes.BadIdentityTokenRejected:
    case StatusCodes.BadSecurityPolicyRejected:
    case StatusCodes.BadSecurityModeRejected:
    case StatusCodes.BadSecurityModeInsufficient:
    case StatusCodes.BadApplicationSignatureInvalid:
    case StatusCodes.BadUserSignatureInvalid:
    case StatusCodes.BadNonceInvalid:
    case StatusCodes.BadSecureChannelIdInvalid:
      return true;
    default:
      return statusCodeName(status).startsWith("BadCertificate");
  }
}

/** What CreateSession and ActivateSession told about a session (SessionDiagnosticsDataType, SessionSecurityDiagnosticsDataType). */
export class SessionRecord {
  clientDescription: ApplicationDescription = { applicationName: {}, applicationType: ApplicationType.Client };
  serverUri = "";
  endpointUrl = "";
  localeIds: string[] = [];
  maxResponseMessageSize = 0;
  clientCertificate: Buffer | undefined = undefined;
  authenticationMechanism = "";
  readonly userIdHistory: string[] = [];
  /** [total, errors] per counted service, then TotalRequestCount; filled while EnabledFlag is true. */
  readonly counts = new Float64Array(2 * (TOTAL + 1));
  unauthorized = 0;
}

/** Per subscription, what only the service layer sees (SubscriptionDiagnosticsDataType). */
export class SubscriptionRecord {
  modify = 0;
  enable = 0;
  disable = 0;
  republishRequests = 0;
  republishMessageRequests = 0;
  republishMessages = 0;
  transferRequests = 0;
  transferredToAltClient = 0;
  transferredToSameClient = 0;
  /** The ApplicationUri of the client that owns it (set at CreateSubscription and each transfer). */
  client = "";
}

function counter(c: Float64Array, i: number): ServiceCounterDataType {
  return { totalCount: c[2 * i], errorCount: c[2 * i + 1] };
}

function eo(typeId: number, body: object): ExtensionObject {
  return { typeId: numericNodeId(typeId), body };
}

function array(items: ExtensionObject[], now: number): DataValue {
  return { value: { dataType: BuiltinType.ExtensionObject, arrayType: VariantArrayType.Array, value: items }, sourceTimestamp: now };
}

function uint32(n: number, now: number): DataValue {
  return { value: { dataType: BuiltinType.UInt32, arrayType: VariantArrayType.Scalar, value: n >>> 0 }, sourceTimestamp: now };
}

const DENIED: DataValue = Object.freeze({ statusCode: StatusCodes.BadUserAccessDenied });

function userName(userId: string): string {
  return userId.startsWith("user:") || userId.startsWith("cert:") ? userId.slice(5) : userId;
}

export class ServerDiagnostics {
  /** EnabledFlag: per-session service counters are collected. */
  enabled = false;
  cumulatedSessions = 0;
  securityRejectedSessions = 0;
  rejectedSessions = 0;
  sessionTimeouts = 0;
  sessionAborts = 0;
  securityRejectedRequests = 0;
  rejectedRequests = 0;
  private readonly sessionRecords = new WeakMap<Session, SessionRecord>();
  private readonly subscriptionRecords = new WeakMap<Subscription, SubscriptionRecord>();
  /** Largest number of items seen at once per sampling interval (SamplingIntervalDiagnostics.MaxMonitoredItemCount). */
  private readonly maxPerInterval = new Map<number, number>();

  constructor(
    private readonly sessions: SessionManager,
    private readonly engine: SubscriptionEngine,
    private readonly events: EventItems,
  ) {}

  // ---- counting ------------------------------------------------------------------------------

  record(session: Session): SessionRecord {
    let r = this.sessionRecords.get(session);
    if (r === undefined) {
      r = new SessionRecord();
      this.sessionRecords.set(session, r);
    }
    return r;
  }

  subscription(sub: Subscription): SubscriptionRecord {
    let r = this.subscriptionRecords.get(sub);
    if (r === undefined) {
      r = new SubscriptionRecord();
      this.subscriptionRecords.set(sub, r);
    }
    return r;
  }

  /** A request of `session` to `service` was answered; ok false for a ServiceFault. Only while enabled. */
  countRequest(session: Session, service: string, ok: boolean, status: number): void {
    const c = this.record(session).counts;
    const i = SERVICE_INDEX.get(service);
    c[2 * TOTAL]++;
    if (!ok) c[2 * TOTAL + 1]++;
    if (i !== undefined) {
      c[2 * i]++;
      if (!ok) c[2 * i + 1]++;
    }
    if (!ok && isSecurityRejection(status)) this.record(session).unauthorized++;
  }

  /** A request answered with a ServiceFault (Part 5 §12.9 RejectedRequestsCount). */
  requestRejected(status: number): void {
    this.rejectedRequests++;
    if (isSecurityRejection(status)) this.securityRejectedRequests++;
  }

  /** CreateSession or ActivateSession refused (RejectedSessionCount, SecurityRejectedSessionCount). */
  sessionRejected(status: number): void {
    this.rejectedSessions++;
    if (isSecurityRejection(status)) this.securityRejectedSessions++;
  }

  /** Remembers the sampling intervals' largest item counts; called after items are created or changed. */
  noteSamplingIntervals(): void {
    for (const d of this.samplingIntervalCounts()) {
      if (d.monitoredItemCount > (this.maxPerInterval.get(d.samplingInterval) ?? 0)) this.maxPerInterval.set(d.samplingInterval, d.monitoredItemCount);
    }
  }

  // ---- values --------------------------------------------------------------------------------

  sessionDiagnostics(session: Session): SessionDiagnosticsDataType {
    const r = this.record(session);
    const c = r.counts;
    const publisher = this.engine.publisherOf(session);
    let items = 0;
    for (const sub of publisher.subscriptions) items += sub.items.size + (this.events.of(sub)?.items.size ?? 0);
    const body: Record<string, unknown> = {
      sessionId: session.sessionId,
      sessionName: session.name,
      clientDescription: r.clientDescription,
      serverUri: r.serverUri,
      endpointUrl: r.endpointUrl,
      localeIds: r.localeIds,
      actualSessionTimeout: session.timeout,
      maxResponseMessageSize: r.maxResponseMessageSize,
      clientConnectionTime: session.createdAt,
      clientLastContactTime: session.lastActivity,
      currentSubscriptionsCount: publisher.subscriptions.size,
      currentMonitoredItemsCount: items,
      currentPublishRequestsInQueue: publisher.queued,
      totalRequestCount: counter(c, TOTAL),
      unauthorizedRequestCount: r.unauthorized,
    };
    COUNTED_SERVICES.forEach((name, i) => (body[`${name[0].toLowerCase()}${name.slice(1)}Count`] = counter(c, i)));
    return body as unknown as SessionDiagnosticsDataType;
  }

  sessionSecurity(session: Session): SessionSecurityDiagnosticsDataType {
    const r = this.record(session);
    const ch = session.channel;
    return {
      sessionId: session.sessionId,
      clientUserIdOfSession: userName(session.userId),
      clientUserIdHistory: r.userIdHistory,
      authenticationMechanism: r.authenticationMechanism,
      encoding: "UA Binary",
      transportProtocol: "opc.tcp",
      securityMode: ch.securityMode === MessageSecurityMode.Invalid ? MessageSecurityMode.None : ch.securityMode,
      securityPolicyUri: ch.securityPolicyUri,
      clientCertificate: r.clientCertificate,
    };
  }

  subscriptionDiagnostics(sub: Subscription): SubscriptionDiagnosticsDataType {
    const r = this.subscription(sub);
    const events = this.events.of(sub);
    let disabled = 0;
    for (const item of sub.items.values()) if (item.mode === MonitoringMode.Disabled) disabled++;
    for (const item of events?.items.values() ?? []) if (item.mode === MonitoringMode.Disabled) disabled++;
    const dataChanges = sub.dataChangeNotifications;
    const eventCount = events?.counts.eventNotifications ?? 0;
    return {
      sessionId: (sub.owner?.session.sessionId as NodeId | undefined) ?? numericNodeId(0),
      subscriptionId: sub.id,
      priority: sub.priority,
      publishingInterval: sub.publishingInterval,
      maxKeepAliveCount: sub.maxKeepAliveCount,
      maxLifetimeCount: sub.lifetimeCount,
      maxNotificationsPerPublish: sub.maxNotificationsPerPublish,
      publishingEnabled: sub.publishingEnabled,
      modifyCount: r.modify,
      enableCount: r.enable,
      disableCount: r.disable,
      republishRequestCount: r.republishRequests,
      republishMessageRequestCount: r.republishMessageRequests,
      republishMessageCount: r.republishMessages,
      transferRequestCount: r.transferRequests,
      transferredToAltClientCount: r.transferredToAltClient,
      transferredToSameClientCount: r.transferredToSameClient,
      publishRequestCount: sub.publishRequests,
      dataChangeNotificationsCount: dataChanges,
      eventNotificationsCount: eventCount,
      notificationsCount: dataChanges + eventCount,
      latePublishRequestCount: sub.lateCount,
      currentKeepAliveCount: sub.keepAliveCounter,
      currentLifetimeCount: sub.lifetimeCounter,
      unacknowledgedMessageCount: sub.unacknowledgedCount,
      discardedMessageCount: sub.discardedMessages,
      monitoredItemCount: sub.items.size + (events?.items.size ?? 0),
      disabledMonitoredItemCount: disabled,
      monitoringQueueOverflowCount: sub.queueOverflows,
      nextSequenceNumber: sub.sequenceNumber,
      eventQueueOverFlowCount: events?.counts.eventQueueOverflows ?? 0,
    };
  }

  /** SubscriptionDiagnostics of the session's subscriptions (its SubscriptionDiagnosticsArray). */
  subscriptionsOf(session: Session): SubscriptionDiagnosticsDataType[] {
    return [...this.engine.publisherOf(session).subscriptions].map((s) => this.subscriptionDiagnostics(s));
  }

  /** The data items per sampling interval, counted now (events have no sampling interval). */
  private samplingIntervalCounts(): SamplingIntervalDiagnosticsDataType[] {
    const by = new Map<number, { n: number; disabled: number }>();
    for (const sub of this.engine.subscriptions.values()) {
      for (const item of sub.items.values()) {
        let e = by.get(item.samplingInterval);
        if (e === undefined) by.set(item.samplingInterval, (e = { n: 0, disabled: 0 }));
        e.n++;
        if (item.mode === MonitoringMode.Disabled) e.disabled++;
      }
    }
    return [...by].sort(([a], [b]) => a - b).map(([samplingInterval, e]) => ({
      samplingInterval,
      monitoredItemCount: e.n,
      maxMonitoredItemCount: Math.max(e.n, this.maxPerInterval.get(samplingInterval) ?? 0),
      disabledMonitoredItemCount: e.disabled,
    }));
  }

  /** Distinct publishing intervals in use (ServerDiagnosticsSummary.PublishingIntervalCount). */
  private publishingIntervalCount(): number {
    const set = new Set<number>();
    for (const sub of this.engine.subscriptions.values()) set.add(sub.publishingInterval);
    return set.size;
  }

  // ---- wiring into namespace 0 ---------------------------------------------------------------

  /** The Server object's diagnostics nodes read from here; EnabledFlag is written by admins. */
  publish(ns0: Ns0Manager): void {
    const summary: Array<[number, () => number]> = [
      [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_ServerViewCount, () => 0],
      [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount, () => this.sessions.size],
      [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSessionCount, () => this.cumulatedSessions],
      [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedSessionCount, () => this.securityRejectedSessions],
      [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedSessionCount, () => this.rejectedSessions],
      [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionTimeoutCount, () => this.sessionTimeouts],
      [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionAbortCount, () => this.sessionAborts],
      [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_PublishingIntervalCount, () => this.publishingIntervalCount()],
      [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSubscriptionCount, () => this.engine.subscriptionCount],
      [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSubscriptionCount, () => this.engine.stats.subscriptionsCreated],
      [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedRequestsCount, () => this.securityRejectedRequests],
      [VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedRequestsCount, () => this.rejectedRequests],
    ];
    for (const [id, get] of summary) ns0.setValueSource(numericNodeId(id), (now) => uint32(get(), now));
    ns0.setValueSource(numericNodeId(VariableIds.Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionDiagnosticsArray), (now) =>
      array([...this.sessions.sessions()].map((s) => eo(DataTypeIds.SessionDiagnosticsDataType, this.sessionDiagnostics(s))), now),
    );
    // Part 5 §6.3.4: security diagnostics name users and certificates: administrators only.
    ns0.setValueSource(numericNodeId(VariableIds.Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionSecurityDiagnosticsArray), (now, role) =>
      role === "admin" ? array([...this.sessions.sessions()].map((s) => eo(DataTypeIds.SessionSecurityDiagnosticsDataType, this.sessionSecurity(s))), now) : DENIED,
    );
    ns0.setValueSource(numericNodeId(VariableIds.Server_ServerDiagnostics_SubscriptionDiagnosticsArray), (now) =>
      array([...this.engine.subscriptions.values()].map((s) => eo(DataTypeIds.SubscriptionDiagnosticsDataType, this.subscriptionDiagnostics(s))), now),
    );
    ns0.setValueSource(numericNodeId(VariableIds.Server_ServerDiagnostics_SamplingIntervalDiagnosticsArray), (now) => {
      this.noteSamplingIntervals();
      return array(this.samplingIntervalCounts().map((d) => eo(DataTypeIds.SamplingIntervalDiagnosticsDataType, d)), now);
    });
    ns0.setValueSource(numericNodeId(VariableIds.Server_ServerDiagnostics_EnabledFlag), (now) => ({
      value: { dataType: BuiltinType.Boolean, arrayType: VariantArrayType.Scalar, value: this.enabled },
      sourceTimestamp: now,
    }));
    ns0.setWriteHandler(numericNodeId(VariableIds.Server_ServerDiagnostics_EnabledFlag), ADMIN, (value) => {
      if (value.dataType !== BuiltinType.Boolean || value.arrayType !== VariantArrayType.Scalar) return StatusCodes.BadTypeMismatch;
      this.enabled = value.value === true;
      return StatusCodes.Good;
    });
  }
}

const ADMIN: readonly Role[] = ["admin"];
