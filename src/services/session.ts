// Session service set (Part 4 §5.6): CreateSession, ActivateSession, CloseSession, Cancel.
// ActivateSession takes Anonymous, UserName and X509 identity tokens (server/user-tokens.ts).
import { randomBytes } from "node:crypto";
import { UaStatusError } from "../ua/errors.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import {
  decodeActivateSessionRequest,
  decodeCancelRequest,
  decodeCloseSessionRequest,
  decodeCreateSessionRequest,
  encodeActivateSessionResponse,
  encodeCancelResponse,
  encodeCloseSessionResponse,
  encodeCreateSessionResponse,
  type ActivateSessionRequest,
  type ActivateSessionResponse,
  type CancelRequest,
  type CancelResponse,
  type CloseSessionRequest,
  type CloseSessionResponse,
  type CreateSessionRequest,
  type CreateSessionResponse,
} from "../ua/generated/types.js";
import { defineService, responseHeader, SessionRequirement, type ServiceContext } from "../services/service-table.js";
import { channelOffered, createSessionSecurity, verifyClientSignature } from "../security/session-security.js";
import { authenticateToken } from "../sessions/user-tokens.js";

export { ANONYMOUS_POLICY_ID } from "../sessions/user-tokens.js";

export const createSession = defineService<CreateSessionRequest, CreateSessionResponse>({
  name: "CreateSession",
  requestEncodingId: ObjectIds.CreateSessionRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.CreateSessionResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.None,
  decode: decodeCreateSessionRequest,
  encode: encodeCreateSessionResponse,
  handle(ctx: ServiceContext, req: CreateSessionRequest): CreateSessionResponse {
    const serverEndpoints = ctx.server.endpoints(req.endpointUrl ?? ctx.channel.endpointUrl);
    // Part 4 §5.4: with None switched off, None channels remain for discovery only.
    if (!channelOffered(ctx.channel, serverEndpoints)) throw new UaStatusError(StatusCodes.BadSecurityPolicyRejected);
    // Part 4 §5.6.2: nonce length, the channel's certificate and its applicationUri; serverSignature.
    const security = createSessionSecurity(ctx.channel, ctx.server.pki, req.clientNonce, req.clientCertificate, req.clientDescription.applicationUri);
    const session = ctx.server.sessions.create(ctx.channel, req.sessionName ?? "", req.requestedSessionTimeout, ctx.now);
    if (!session) throw new UaStatusError(StatusCodes.BadTooManySessions);
    return {
      responseHeader: responseHeader(ctx, req.requestHeader),
      sessionId: session.sessionId,
      authenticationToken: session.authenticationToken,
      revisedSessionTimeout: session.timeout,
      serverNonce: session.serverNonce,
      serverCertificate: security.serverCertificate,
      serverEndpoints,
      serverSoftwareCertificates: [],
      serverSignature: security.serverSignature,
      maxRequestMessageSize: 0,
    };
  },
});

export const activateSession = defineService<ActivateSessionRequest, ActivateSessionResponse>({
  name: "ActivateSession",
  requestEncodingId: ObjectIds.ActivateSessionRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.ActivateSessionResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Created,
  decode: decodeActivateSessionRequest,
  encode: encodeActivateSessionResponse,
  async handle(ctx: ServiceContext, req: ActivateSessionRequest): Promise<ActivateSessionResponse> {
    const session = ctx.session!;
    const channel = ctx.channel;
    // Part 4 §5.6.3: the first activation comes on the channel that created the session; later
    // ones may move it to another channel of the same client certificate and the same user.
    if (!session.activated && session.channel !== channel) throw new UaStatusError(StatusCodes.BadSecureChannelIdInvalid);
    const moving = session.channel !== channel;
    if (moving && !sameBytes(session.channel.clientCertificate, channel.clientCertificate)) {
      throw new UaStatusError(StatusCodes.BadSecureChannelIdInvalid);
    }
    const pki = ctx.server.pki;
    // The nonce this request answers; a new one is handed out only on success.
    const serverNonce = session.serverNonce;
    const signature = verifyClientSignature(channel, pki, serverNonce, req.clientSignature);
    if (signature !== StatusCodes.Good) throw new UaStatusError(signature);
    const identity = await authenticateToken(req.userIdentityToken, req.userTokenSignature, {
      users: ctx.server.users,
      allowAnonymous: ctx.server.allowAnonymous,
      anonymousRole: ctx.server.anonymousRole,
      securityPolicyUri: channel.securityPolicyUri,
      keys: pki,
      serverNonce,
      remoteAddress: channel.connection.socket.remoteAddress ?? "",
      validateCertificate: (der) => (pki ? pki.verifyCertificate(der, { purpose: "user" }) : StatusCodes.BadCertificateUntrusted),
    });
    if ("status" in identity) throw new UaStatusError(identity.status);
    // A password check takes time: the session may have been closed meanwhile.
    if (session.closed) throw new UaStatusError(StatusCodes.BadSessionIdInvalid);
    if (moving && identity.userId !== session.userId) throw new UaStatusError(StatusCodes.BadIdentityChangeNotSupported);
    ctx.server.sessions.bind(session, channel);
    session.activated = true;
    session.role = identity.role;
    session.userId = identity.userId;
    session.serverNonce = randomBytes(32);
    return {
      responseHeader: responseHeader(ctx, req.requestHeader),
      serverNonce: session.serverNonce,
      results: [],
      diagnosticInfos: [],
    };
  },
});

function sameBytes(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.equals(b);
}

export const closeSession = defineService<CloseSessionRequest, CloseSessionResponse>({
  name: "CloseSession",
  requestEncodingId: ObjectIds.CloseSessionRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.CloseSessionResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Created,
  decode: decodeCloseSessionRequest,
  encode: encodeCloseSessionResponse,
  handle(ctx: ServiceContext, req: CloseSessionRequest): CloseSessionResponse {
    // Part 4 §5.6.4: without deleteSubscriptions they outlive the session until their lifetime
    // ends or another session takes them over (TransferSubscriptions).
    if (req.deleteSubscriptions) ctx.server.subscriptions.deleteSessionSubscriptions(ctx.session!);
    ctx.server.sessions.close(ctx.session!);
    return { responseHeader: responseHeader(ctx, req.requestHeader) };
  },
});

export const cancel = defineService<CancelRequest, CancelResponse>({
  name: "Cancel",
  requestEncodingId: ObjectIds.CancelRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.CancelResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeCancelRequest,
  encode: encodeCancelResponse,
  handle(ctx: ServiceContext, req: CancelRequest): CancelResponse {
    // Only Publish requests wait in the server (Part 4 §5.6.5); the others are answered as they complete.
    const cancelCount = ctx.server.subscriptions.cancel(ctx.session!, req.requestHandle);
    return { responseHeader: responseHeader(ctx, req.requestHeader), cancelCount };
  },
});
