// The shape every service handler has (STYLE: one handler signature, one table keyed by the
// request's binary encoding id, as open62541's ua_services.c).
import type { BinaryReader } from "../ua/binary-reader.js";
import type { BinaryWriter } from "../ua/binary-writer.js";
import type { SecureChannel } from "../security/secure-channel.js";
import type { DiagnosticInfo } from "../ua/builtins.js";
import type { RequestHeader, ResponseHeader } from "../ua/generated/types.js";
import type { Session } from "../sessions/session.js";
import { statusOf } from "../ua/errors.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
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
  /**
   * The handler sends its response itself, on ctx.channel, when it has it (Publish: a
   * subscription encodes it straight into the channel's chunks when it takes the request); its
   * result is then only the header it sent, and `encode` is not used.
   */
  readonly sendsResponse?: boolean;
  /** Returns the response (its header made by `responseHeader`), or throws UaStatusError for a ServiceFault. */
  handle(ctx: ServiceContext, request: Req): Res | Promise<Res>;
  /**
   * The response's bytes are all out of `response` (sent whole, cut off, refused or dropped with
   * its channel): memory it lends (a large body sent by reference, over several turns) may be
   * reused. Called once per response the handler returned.
   */
  sent?(response: Res, whole: boolean): void;
}

/** A Good response header for a request (Part 4 §7.33). */
export function responseHeader(ctx: ServiceContext, requestHeader: RequestHeader, serviceResult = 0): ResponseHeader {
  return {
    timestamp: ctx.now,
    requestHandle: requestHeader.requestHandle,
    serviceResult,
    serviceDiagnostics: NO_DIAGNOSTICS,
  };
}

/** The empty DiagnosticInfo of every response header: one shared, frozen object, not one per response. */
const NO_DIAGNOSTICS: DiagnosticInfo = Object.freeze({});

/**
 * What a hooked service does around its handler (services.ts): `after` sees the response, or the
 * StatusCode of the ServiceFault it ended in, once the handler is done; `before` may hand it a value.
 */
export interface ServiceHooks<Req extends RequestBase, Res extends ResponseBase, T = undefined> {
  before?(ctx: ServiceContext, request: Req): T;
  after(ctx: ServiceContext, request: Req, response: Res | undefined, status: number, state: T): void;
}

/** The service with `hooks` around its handler; the handler's result and faults are passed on unchanged. */
export function withHooks<Req extends RequestBase, Res extends ResponseBase, T>(def: ServiceDefinition, hooks: ServiceHooks<Req, Res, T>): ServiceDefinition {
  const handle = def.handle;
  return {
    ...def,
    handle(ctx, request) {
      const req = request as Req;
      const state = hooks.before?.(ctx, req) as T;
      let result: ResponseBase | Promise<ResponseBase>;
      try {
        result = handle(ctx, request);
      } catch (err) {
        hooks.after(ctx, req, undefined, statusOf(err), state);
        throw err;
      }
      if (!(result instanceof Promise)) {
        hooks.after(ctx, req, result as Res, StatusCodes.Good, state);
        return result;
      }
      return result.then(
        (res) => {
          hooks.after(ctx, req, res as Res, StatusCodes.Good, state);
          return res;
        },
        (err: unknown) => {
          hooks.after(ctx, req, undefined, statusOf(err), state);
          throw err;
        },
      );
    },
  };
}

/** Erases the request/response types so definitions of different services share one table. */
export function defineService<Req extends RequestBase, Res extends ResponseBase>(
  def: ServiceDefinition<Req, Res>,
): ServiceDefinition {
  return def as unknown as ServiceDefinition;
}
