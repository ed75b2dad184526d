// Routes a complete request from a secure channel to its service: decode the encoding NodeId,
// look the service up by it, check the session, run the handler, encode the response or a
// ServiceFault. One BinaryReader is reused for every request (decoding is synchronous).
import { loopTrace } from "../sampling/loop-trace.js";
import { monotonicNow } from "../sampling/monotonic.js";
import { BinaryReader, type DecodingLimits } from "../ua/binary-reader.js";
import { getUInt16 } from "../ua/le.js";
import type { BinaryWriter } from "../ua/binary-writer.js";
import { decodeNodeId } from "../ua/builtin-codec.js";
import { IdType } from "../ua/builtins.js";
import { statusOf, UaStatusError } from "../ua/errors.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { decodeRequestHeader, encodeServiceFault, type RequestHeader, type ServiceFault } from "../ua/generated/types.js";
import type { ChannelHandler, ChannelHooks, SecureChannel } from "../security/secure-channel.js";
import type { ServerCore } from "../services/server-core.js";
import type { Session } from "../sessions/session.js";
import { SessionRequirement, type ResponseBase, type ServiceContext, type ServiceDefinition } from "../services/service-table.js";

export interface DispatcherLog {
  warn(message: string): void;
}

/** Requests between two looks at the sampling deadlines: small Reads, one clock read for many. */
const YIELD_EVERY = 16;

/** A service as the dispatcher runs it: found by the request's encoding id, with what it needs made once. */
interface Route {
  readonly service: ServiceDefinition;
  /** What its responses tell when they are out. */
  readonly hooks: ChannelHooks<ResponseBase>;
  /** "HistoryRead response": the loop trace's label of a response sent after the handler's promise settled. */
  readonly asyncLabel: string;
}

export class Dispatcher implements ChannelHandler {
  private readonly table = new Map<number, Route>();
  private readonly reader: BinaryReader;
  private readonly core: ServerCore;
  private readonly log: DispatcherLog;

  /**
   * `yieldPoint` is called every YIELD_EVERY requests (the loop governor: sampling slots that came
   * due run between two requests, not after the whole socket read that carries hundreds of them).
   */
  constructor(core: ServerCore, services: readonly ServiceDefinition[], limits: DecodingLimits, log: DispatcherLog, private readonly yieldPoint?: () => void) {
    this.core = core;
    this.log = log;
    this.reader = new BinaryReader(Buffer.alloc(0), 0, 0, limits);
    for (const s of services) this.table.set(s.requestEncodingId, { service: s, hooks: this.hooksOf(s), asyncLabel: `${s.name} response` });
  }

  private handled = 0;
  /** A ServiceFault that cannot be sent ends its channel. */
  private readonly faultHooks: ChannelHooks<ServiceFault> = {
    sent: noop,
    refused: (channel, _requestId, _fault, err) => channel.close(statusOf(err)),
  };

  onRequest(channel: SecureChannel, requestId: number, body: Buffer, start: number, end: number): void {
    this.handle(channel, requestId, body, start, end);
    if (++this.handled >= YIELD_EVERY) {
      this.handled = 0;
      this.yieldPoint?.();
    }
  }

  private handle(channel: SecureChannel, requestId: number, body: Buffer, start: number, end: number): void {
    const r = this.reader.setBuffer(body, start, end);
    let route: Route | undefined;
    let request: { requestHeader: RequestHeader };
    let known: Session | undefined;
    try {
      const typeId = readNs0NumericId(r);
      route = typeId >= 0 ? this.table.get(typeId) : undefined;
      if (route === undefined) {
        // Part 4 §5.3: unknown or unsupported services answer BadServiceUnsupported; every
        // request starts with a RequestHeader, which gives the handle to answer with.
        const header = decodeRequestHeader(r);
        this.fault(channel, requestId, header.requestHandle, StatusCodes.BadServiceUnsupported);
        return;
      }
      const service = route.service;
      loopTrace.lastService = service.name;
      // The token of the session found last, as most requests carry: the decoder takes the
      // session's own NodeId for it, and the lookup below is a comparison of two objects.
      known = this.core.sessions.lastAt(r.buffer, r.pos, r.end);
      if (known !== undefined) r.know(r.pos, r.pos + known.tokenWire.length, known.authenticationToken);
      request = service.decode(r);
      if (r.pos !== r.end) throw new UaStatusError(StatusCodes.BadDecodingError, `${r.end - r.pos} bytes after ${route.service.name}`);
    } catch (err) {
      // A request that does not decode ends its channel (its framing can no longer be trusted);
      // other channels are untouched.
      channel.close(statusOf(err) === StatusCodes.BadInternalError ? StatusCodes.BadDecodingError : statusOf(err));
      return;
    }
    const service = route.service;
    const now = Date.now();
    const handle = request.requestHeader.requestHandle;
    let session: Session | undefined;
    if (service.requires !== SessionRequirement.None) {
      const token = request.requestHeader.authenticationToken;
      session = known !== undefined && token === known.authenticationToken ? known : this.core.sessions.find(token);
      const status = checkSession(session, channel, service.requires);
      if (status !== StatusCodes.Good) {
        this.fault(channel, requestId, handle, status);
        return;
      }
      session!.lastActivity = now;
    }
    const ctx: ServiceContext = { server: this.core, channel, requestId, session, now };
    // Part 5 §12.11: per-session service counts while diagnostics are enabled (EnabledFlag).
    const counted = session !== undefined && this.core.serverDiagnostics.enabled ? session : undefined;
    let result: ResponseBase | Promise<ResponseBase>;
    try {
      result = service.handle(ctx, request);
    } catch (err) {
      if (counted) this.core.serverDiagnostics.countRequest(counted, service.name, false, statusOf(err));
      this.failed(channel, requestId, handle, service, err);
      return;
    }
    if (result instanceof Promise) {
      const settled = route;
      result.then(
        (res) => {
          // Not inside a socket read: timed on its own for the loop trace (a big response's encoding).
          const start = monotonicNow();
          if (counted) this.core.serverDiagnostics.countRequest(counted, service.name, true, 0);
          this.send(channel, requestId, settled, res);
          loopTrace.end(settled.asyncLabel, start);
        },
        (err: unknown) => {
          if (counted) this.core.serverDiagnostics.countRequest(counted, service.name, false, statusOf(err));
          this.failed(channel, requestId, handle, service, err);
        },
      );
    } else {
      if (counted) this.core.serverDiagnostics.countRequest(counted, service.name, true, 0);
      this.send(channel, requestId, route, result);
    }
  }

  onChannelClosed(): void {}

  private send(channel: SecureChannel, requestId: number, route: Route, res: ResponseBase): void {
    const service = route.service;
    if (service.sendsResponse === true) return;
    channel.respond(requestId, service.responseEncodingId, service.encode as (w: BinaryWriter, v: ResponseBase) => void, res, route.hooks);
  }

  private hooksOf(service: ServiceDefinition): ChannelHooks<ResponseBase> {
    const sent = service.sent;
    return {
      sent: sent === undefined ? noop : (res, whole) => sent.call(service, res, whole),
      refused: (channel, requestId, res, err) => this.failed(channel, requestId, res.responseHeader.requestHandle, service, err),
    };
  }

  private failed(channel: SecureChannel, requestId: number, handle: number, service: ServiceDefinition, err: unknown): void {
    if (!(err instanceof UaStatusError)) this.log.warn(`${service.name} failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    // A ServiceFault carries only the StatusCode: never a message, stack or path.
    this.fault(channel, requestId, handle, statusOf(err));
  }

  private fault(channel: SecureChannel, requestId: number, requestHandle: number, status: number): void {
    // Part 5 §12.9 RejectedRequestsCount / SecurityRejectedRequestsCount.
    this.core.serverDiagnostics.requestRejected(status);
    const fault: ServiceFault = {
      responseHeader: { timestamp: Date.now(), requestHandle, serviceResult: status, serviceDiagnostics: {} },
    };
    channel.respond(requestId, ObjectIds.ServiceFault_Encoding_DefaultBinary, encodeServiceFault, fault, this.faultHooks);
  }
}

/**
 * The request's encoding NodeId as a number when it is numeric in namespace 0 (every service's
 * is: FourByte on the wire), else -1; without making a NodeId object for each request.
 */
function readNs0NumericId(r: BinaryReader): number {
  const p = r.pos;
  if (p + 4 <= r.end && r.buffer[p] === FOUR_BYTE && r.buffer[p + 1] === 0) {
    r.pos = p + 4;
    return getUInt16(r.buffer, p + 2);
  }
  const id = decodeNodeId(r);
  return id.namespace === 0 && id.idType === IdType.Numeric ? (id.value as number) : -1;
}

/** Part 6 §5.2.2.9: the FourByte NodeId encoding (namespace byte, UInt16 identifier). */
const FOUR_BYTE = 0x01;

function checkSession(session: Session | undefined, channel: SecureChannel, requires: SessionRequirement): number {
  if (session === undefined || session.closed) return StatusCodes.BadSessionIdInvalid;
  if (requires === SessionRequirement.Activated) {
    if (!session.activated) return StatusCodes.BadSessionNotActivated;
    // Part 4 §5.6.3: a session is used only on the channel that activated it.
    if (session.channel !== channel) return StatusCodes.BadSecureChannelIdInvalid;
  }
  return StatusCodes.Good;
}

function noop(): void {}
