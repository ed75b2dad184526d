// The shape every service handler has (STYLE: one handler signature, one table keyed by the
// request's binary encoding id, as open62541's ua_services.c).
import type { BinaryReader } from "../ua/binary-reader.js";
import type { BinaryWriter } from "../ua/binary-writer.js";
import type { SecureChannel } from "../security/secure-channel.js";
import type { RequestHeader, ResponseHeader } from "../ua/generated/types.js";
import type { Session } from "../server/session.js";
import type { ServerCore } from "./server-core.js";

export const enum SessionRequirement {
  /** Discovery and session creation: no session. */
  None = 0,
  /** ActivateSession and CloseSession: a created session, activated or not. */
  Created = 1,
  /** Everything else. */
  Activated = 2,
}

export interface ServiceContext {
  readonly server: ServerCore;
  readonly channel: SecureChannel;
  readonly requestId: number;
  /** The session named by the request's authenticationToken, checked per `requires`. */
  readonly session: Session | undefined;
  /** Server time when the request arrived, ms since 1970. */
  readonly now: number;
}

export interface RequestBase {
  requestHeader: RequestHeader;
}

export interface ResponseBase {
  responseHeader: ResponseHeader;
}

export interface ServiceDefinition<Req extends RequestBase = RequestBase, Res extends ResponseBase = ResponseBase> {
  readonly name: string;
  readonly requestEncodingId: number;
  readonly responseEncodingId: number;
  readonly requires: SessionRequirement;
  decode(r: BinaryReader): Req;
  encode(w: BinaryWriter, v: Res): void;
  /** Returns the response (its header made by `responseHeader`), or throws UaStatusError for a ServiceFault. */
  handle(ctx: ServiceContext, request: Req): Res | Promise<Res>;
}

/** A Good response header for a request (Part 4 §7.33). */
export function responseHeader(ctx: ServiceContext, requestHeader: RequestHeader, serviceResult = 0): ResponseHeader {
  return {
    timestamp: ctx.now,
    requestHandle: requestHeader.requestHandle,
    serviceResult,
    serviceDiagnostics: {},
  };
}

/** Erases the request/response types so definitions of different services share one table. */
export function defineService<Req extends RequestBase, Res extends ResponseBase>(
  def: ServiceDefinition<Req, Res>,
): ServiceDefinition {
  return def as unknown as ServiceDefinition;
}
