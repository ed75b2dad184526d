// Session service set (Part 4 §5.6): CreateSession, ActivateSession, CloseSession, Cancel.
// Identity here is anonymous only; the security issue adds UserName and X509 tokens.
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
  type AnonymousIdentityToken,
  type CancelRequest,
  type CancelResponse,
  type CloseSessionRequest,
  type CloseSessionResponse,
  type CreateSessionRequest,
  type CreateSessionResponse,
} from "../ua/generated/types.js";
import { defineService, responseHeader, SessionRequirement, type ServiceContext } from "../server/service-table.js";

/** The policyId of the anonymous UserTokenPolicy in every endpoint. */
export const ANONYMOUS_POLICY_ID = "anonymous";

export const createSession = defineService<CreateSessionRequest, CreateSessionResponse>({
  name: "CreateSession",
  requestEncodingId: ObjectIds.CreateSessionRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.CreateSessionResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.None,
  decode: decodeCreateSessionRequest,
  encode: encodeCreateSessionResponse,
  handle(ctx: ServiceContext, req: CreateSessionRequest): CreateSessionResponse {
    // Part 4 §5.6.2: the client nonce must be at least 32 bytes on secured channels; with
    // policy None it may be empty.
    const session = ctx.server.sessions.create(ctx.channel, req.sessionName ?? "", req.requestedSessionTimeout, ctx.now);
    if (!session) throw new UaStatusError(StatusCodes.BadTooManySessions);
    return {
      responseHeader: responseHeader(ctx, req.requestHeader),
      sessionId: session.sessionId,
      authenticationToken: session.authenticationToken,
      revisedSessionTimeout: session.timeout,
      serverNonce: session.serverNonce,
      serverCertificate: undefined,
      serverEndpoints: ctx.server.endpoints(req.endpointUrl ?? ctx.channel.endpointUrl),
      serverSoftwareCertificates: [],
      serverSignature: { algorithm: undefined, signature: undefined },
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
  handle(ctx: ServiceContext, req: ActivateSessionRequest): ActivateSessionResponse {
    const session = ctx.session!;
    const token = req.userIdentityToken;
    const tokenType = token ? token.typeId.value : undefined;
    // A missing token is treated as anonymous (Part 4 §5.6.3: "a null token is anonymous").
    if (tokenType !== undefined && tokenType !== 0 && tokenType !== ObjectIds.AnonymousIdentityToken_Encoding_DefaultBinary) {
      throw new UaStatusError(StatusCodes.BadIdentityTokenInvalid);
    }
    if (!ctx.server.allowAnonymous) throw new UaStatusError(StatusCodes.BadIdentityTokenRejected);
    const body = token?.body as AnonymousIdentityToken | null | undefined;
    if (body && typeof body === "object" && "policyId" in body && body.policyId !== undefined && body.policyId !== ANONYMOUS_POLICY_ID) {
      throw new UaStatusError(StatusCodes.BadIdentityTokenInvalid);
    }
    ctx.server.sessions.bind(session, ctx.channel);
    session.activated = true;
    session.role = "viewer";
    session.serverNonce = randomBytes(32);
    return {
      responseHeader: responseHeader(ctx, req.requestHeader),
      serverNonce: session.serverNonce,
      results: [],
      diagnosticInfos: [],
    };
  },
});

export const closeSession = defineService<CloseSessionRequest, CloseSessionResponse>({
  name: "CloseSession",
  requestEncodingId: ObjectIds.CloseSessionRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.CloseSessionResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Created,
  decode: decodeCloseSessionRequest,
  encode: encodeCloseSessionResponse,
  handle(ctx: ServiceContext, req: CloseSessionRequest): CloseSessionResponse {
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
    // Requests are answered as they complete; none is left to cancel.
    return { responseHeader: responseHeader(ctx, req.requestHeader), cancelCount: 0 };
  },
});
