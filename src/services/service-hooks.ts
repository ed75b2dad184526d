// What the session and subscription services tell diagnostics and auditing, hooked around their
// handlers (services/service-table.ts withHooks) so the services themselves stay as they are:
// - CreateSession / ActivateSession: what the client said (SessionDiagnostics), refused sessions
//   (RejectedSessionCount, SecurityRejectedSessionCount), their audit events (Part 5 §6.4.9,
//   §6.4.10: a refused login is an AuditActivateSessionEvent with Status false);
// - CloseSession: its audit event;
// - Write: one AuditWriteUpdateEvent per attribute, with the value before and after, only while
//   someone listens for audit events (the old values are read first, then);
// - ModifySubscription, SetPublishingMode, Republish, TransferSubscriptions: the counts of
//   SubscriptionDiagnostics (Part 5 §12.15).
import type { ActivateSessionRequest, ActivateSessionResponse, CreateSessionRequest, CreateSessionResponse, WriteRequest, WriteResponse } from "../ua/generated/types.js";
import type {
  CreateSubscriptionRequest,
  CreateSubscriptionResponse,
  CloseSessionRequest,
  CloseSessionResponse,
  ModifySubscriptionRequest,
  ModifySubscriptionResponse,
  RepublishRequest,
  SetPublishingModeRequest,
  SetPublishingModeResponse,
  TransferSubscriptionsRequest,
  TransferSubscriptionsResponse,
} from "../ua/generated/types.js";
import type { DataValue } from "../ua/builtins.js";
import { TimestampsToReturn } from "../ua/generated/enums.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { readAttributes } from "./attribute.js";
import type { RepublishResponseOut } from "../subscriptions/notification-encoder.js";
import { withHooks, type ServiceContext, type ServiceDefinition } from "./service-table.js";
import type { Session } from "../sessions/session.js";

function actor(session: Session | undefined, auditEntryId: string | undefined): { sessionId?: Session["sessionId"]; userId: string; auditEntryId: string } {
  return { sessionId: session?.sessionId, userId: session?.userId ?? "", auditEntryId: auditEntryId ?? "" };
}

/** Part 5 §12.11 AuthenticationMechanism, from the identity token's type. */
function mechanism(req: ActivateSessionRequest): string {
  const id = req.userIdentityToken?.typeId;
  const n = id?.namespace === 0 ? id.value : -1;
  if (n === ObjectIds.UserNameIdentityToken_Encoding_DefaultBinary) return "UserName";
  if (n === ObjectIds.X509IdentityToken_Encoding_DefaultBinary) return "X509Certificate";
  if (n === ObjectIds.IssuedIdentityToken_Encoding_DefaultBinary) return "IssuedToken";
  return "Anonymous";
}

export function hookCreateSession(def: ServiceDefinition): ServiceDefinition {
  return withHooks<CreateSessionRequest, CreateSessionResponse, undefined>(def, {
    after(ctx, req, res, status) {
      const server = ctx.server;
      const session = res ? server.sessions.find(res.authenticationToken) : undefined;
      if (session !== undefined) {
        server.serverDiagnostics.cumulatedSessions++;
        const r = server.serverDiagnostics.record(session);
        r.clientDescription = req.clientDescription;
        r.serverUri = req.serverUri ?? "";
        r.endpointUrl = req.endpointUrl ?? "";
        r.maxResponseMessageSize = req.maxResponseMessageSize;
        r.clientCertificate = req.clientCertificate;
      } else {
        server.serverDiagnostics.sessionRejected(status);
      }
      server.events.audit.createSession({
        actor: actor(session, req.requestHeader.auditEntryId),
        status,
        secureChannelId: ctx.channel.channelId,
        clientCertificate: req.clientCertificate,
        revisedSessionTimeout: res?.revisedSessionTimeout ?? 0,
      });
    },
  });
}

export function hookActivateSession(def: ServiceDefinition): ServiceDefinition {
  return withHooks<ActivateSessionRequest, ActivateSessionResponse, undefined>(def, {
    after(ctx, req, _res, status) {
      const server = ctx.server;
      const session = ctx.session;
      if (status === StatusCodes.Good && session !== undefined) {
        const r = server.serverDiagnostics.record(session);
        r.localeIds = (req.localeIds ?? []).filter((l): l is string => typeof l === "string");
        r.authenticationMechanism = mechanism(req);
        r.userIdHistory.push(session.userId.replace(/^(user|cert):/, ""));
        if (r.userIdHistory.length > 16) r.userIdHistory.shift();
      } else {
        server.serverDiagnostics.sessionRejected(status);
      }
      server.events.audit.activateSession({
        actor: actor(session, req.requestHeader.auditEntryId),
        status,
        secureChannelId: ctx.channel.channelId,
        userIdentityToken: req.userIdentityToken,
      });
    },
  });
}

export function hookCloseSession(def: ServiceDefinition): ServiceDefinition {
  return withHooks<CloseSessionRequest, CloseSessionResponse, undefined>(def, {
    after(ctx, req, _res, status) {
      if (status === StatusCodes.Good) ctx.server.events.audit.sessionEnded(actor(ctx.session, req.requestHeader.auditEntryId), "closed");
    },
  });
}

/** Part 4 §6.5: Write is audited per attribute written; the values before are read first. */
export function hookWrite(def: ServiceDefinition): ServiceDefinition {
  return withHooks<WriteRequest, WriteResponse, DataValue[] | undefined>(def, {
    before(ctx, req) {
      if (!ctx.server.events.audit.wanted) return undefined;
      const items = req.nodesToWrite ?? [];
      const rc = { sessionId: "", role: "admin" as const, now: ctx.now };
      return readAttributes(ctx.server.registry, rc, items.map((w) => ({ nodeId: w.nodeId, attributeId: w.attributeId, indexRange: w.indexRange })), TimestampsToReturn.Neither);
    },
    after(ctx, req, res, _status, old) {
      if (old === undefined || res === undefined) return;
      const audit = ctx.server.events.audit;
      const who = actor(ctx.session, req.requestHeader.auditEntryId);
      const items = req.nodesToWrite ?? [];
      for (let i = 0; i < items.length; i++) {
        const w = items[i];
        audit.write(who, { nodeId: w.nodeId, attributeId: w.attributeId, indexRange: w.indexRange, oldValue: old[i], newValue: w.value, status: res.results?.[i] ?? StatusCodes.BadInternalError });
      }
    },
  });
}

function subscriptionOf(ctx: ServiceContext, id: number) {
  const sub = ctx.server.subscriptions.subscriptions.get(id);
  return sub === undefined ? undefined : ctx.server.serverDiagnostics.subscription(sub);
}

export function hookModifySubscription(def: ServiceDefinition): ServiceDefinition {
  return withHooks<ModifySubscriptionRequest, ModifySubscriptionResponse, undefined>(def, {
    after(ctx, req, _res, status) {
      if (status === StatusCodes.Good) {
        const r = subscriptionOf(ctx, req.subscriptionId);
        if (r) r.modify++;
      }
    },
  });
}

export function hookSetPublishingMode(def: ServiceDefinition): ServiceDefinition {
  return withHooks<SetPublishingModeRequest, SetPublishingModeResponse, undefined>(def, {
    after(ctx, req, res) {
      (req.subscriptionIds ?? []).forEach((id, i) => {
        if (res?.results?.[i] !== StatusCodes.Good) return;
        const r = subscriptionOf(ctx, id);
        if (r === undefined) return;
        if (req.publishingEnabled) r.enable++;
        else r.disable++;
      });
    },
  });
}

export function hookRepublish(def: ServiceDefinition): ServiceDefinition {
  return withHooks<RepublishRequest, RepublishResponseOut, undefined>(def, {
    after(ctx, req, _res, status) {
      const r = subscriptionOf(ctx, req.subscriptionId);
      if (r === undefined) return;
      r.republishRequests++;
      r.republishMessageRequests++;
      if (status === StatusCodes.Good) r.republishMessages++;
    },
  });
}

/** The client application of a session (its ApplicationUri), to tell a transfer to the same client from one to another. */
function clientOf(ctx: ServiceContext): string {
  return ctx.session === undefined ? "" : (ctx.server.serverDiagnostics.record(ctx.session).clientDescription.applicationUri ?? "");
}

export function hookCreateSubscription(def: ServiceDefinition): ServiceDefinition {
  return withHooks<CreateSubscriptionRequest, CreateSubscriptionResponse, undefined>(def, {
    after(ctx, _req, res) {
      const r = res === undefined ? undefined : subscriptionOf(ctx, res.subscriptionId);
      if (r) r.client = clientOf(ctx);
    },
  });
}

export function hookTransferSubscriptions(def: ServiceDefinition): ServiceDefinition {
  return withHooks<TransferSubscriptionsRequest, TransferSubscriptionsResponse, undefined>(def, {
    after(ctx, req, res) {
      const client = clientOf(ctx);
      (req.subscriptionIds ?? []).forEach((id, i) => {
        const r = subscriptionOf(ctx, id);
        if (r === undefined) return;
        r.transferRequests++;
        if (res?.results?.[i]?.statusCode !== StatusCodes.Good) return;
        // Part 5 §12.15: to the same client application (a reconnect) or to another one.
        if (r.client === client) r.transferredToSameClient++;
        else r.transferredToAltClient++;
        r.client = client;
      });
    },
  });
}
