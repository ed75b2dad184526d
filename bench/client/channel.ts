// One UA-TCP connection of the load client: Hello/Acknowledge, a secure channel with
// SecurityPolicy None (Issue, then Renew before the token expires), a session with an anonymous
// identity, and request/response calls decoded by the generated codec. The calls made here are
// the few of the set-up and tear-down; the hot request loop (service-pipeline.ts) takes over the
// MSG frames through `loadHandler` and never goes through `call`.
import { connect, type Socket } from "node:net";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { decodeNodeId, encodeNodeId } from "../../src/ua/builtin-codec.js";
import { NULL_NODE_ID, numericNodeId, type ExtensionObject, type NodeId } from "../../src/ua/builtins.js";
import { UaStatusError } from "../../src/ua/errors.js";
import { ApplicationType, MessageSecurityMode, SecurityTokenRequestType, UserTokenType } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes, statusCodeName } from "../../src/ua/generated/status-codes.js";
import {
  decodeActivateSessionResponse,
  decodeCloseSessionResponse,
  decodeCreateSessionResponse,
  decodeOpenSecureChannelResponse,
  decodeResponseHeader,
  encodeActivateSessionRequest,
  encodeCloseSecureChannelRequest,
  encodeCloseSessionRequest,
  encodeCreateSessionRequest,
  encodeOpenSecureChannelRequest,
  type EndpointDescription,
  type RequestHeader,
} from "../../src/ua/generated/types.js";
import {
  FrameKind,
  FrameSplitter,
  HEADER_SIZE,
  MIN_BUFFER_SIZE,
  MSG_BODY_OFFSET,
  MSG_OFFSET_REQUEST_ID,
  SECURITY_POLICY_NONE,
  beginMessageFrame,
  beginOpenFrame,
  finishFrame,
  readAcknowledge,
  readErrorMessage,
  skipAsymmetricHeader,
  writeHello,
  type FrameSink,
  type TransportLimits,
} from "./ua-tcp.js";

/** A failure of the load client's connection, with a stable code (and the StatusCode when the peer sent one). */
export class LoadClientError extends Error {
  constructor(
    readonly code: "ECONNECT" | "ECLOSED" | "ETIMEOUT" | "EPROTOCOL" | "ESERVICE",
    message: string,
    readonly statusCode?: number,
  ) {
    super(message);
    this.name = "LoadClientError";
  }
}

/** Receives the MSG frames that are not answers to a `call` (the pipelined Reads). */
export interface MessageHandler {
  /**
   * Brackets the frames of one socket read: the handler can take one timestamp for all of
   * them and cork the socket so that the requests it sends in reply leave in one writev.
   */
  beginBatch(): void;
  onMessage(kind: FrameKind, buffer: Buffer, start: number, end: number): void;
  endBatch(): void;
  onChannelError(err: Error): void;
}

export interface ChannelOptions {
  host: string;
  port: number;
  /** Sent in Hello and CreateSession. */
  endpointUrl: string;
  /** Requested secure channel token lifetime, ms. */
  requestedLifetimeMs?: number;
  requestedSessionTimeoutMs?: number;
  /** Timeout of each set-up / tear-down call, ms. */
  callTimeoutMs?: number;
  /** Our receive buffer (the largest chunk the server may send us). */
  receiveBufferSize?: number;
}

type Decoder = (r: BinaryReader) => unknown;

interface PendingCall {
  readonly service: string;
  readonly responseEncodingId: number;
  readonly decode: Decoder;
  readonly resolve: (v: unknown) => void;
  readonly reject: (e: Error) => void;
  readonly timer: NodeJS.Timeout;
  /** Bodies of intermediate chunks (MSG "C"), copied: they outlive the socket chunk. */
  parts: Buffer[] | null;
}

const NO_ADDITIONAL_HEADER: ExtensionObject = Object.freeze({ typeId: NULL_NODE_ID, body: null });
const DEFAULT_RECEIVE_BUFFER = 1 << 16;

export class UaClientChannel implements FrameSink {
  readonly socket: Socket;
  readonly options: Required<ChannelOptions>;
  /** Negotiated in Acknowledge. */
  serverLimits: TransportLimits | null = null;
  channelId = 0;
  tokenId = 0;
  revisedLifetimeMs = 0;
  /** Part 6 §6.7.2.4: one counter per channel over OPN, MSG and CLO alike; the load client increments it too. */
  sequenceNumber = 0;
  requestId = 0;
  authenticationToken: NodeId = NULL_NODE_ID;
  sessionId: NodeId = NULL_NODE_ID;
  serverEndpoints: EndpointDescription[] = [];
  /** Set while the pipelined load owns the MSG traffic. */
  loadHandler: MessageHandler | null = null;
  closed = false;

  private readonly splitter: FrameSplitter;
  private readonly writer = new BinaryWriter(Buffer.allocUnsafe(8192));
  private readonly reader = new BinaryReader();
  private readonly pending = new Map<number, PendingCall>();
  private ackWaiter: { resolve: () => void; reject: (e: Error) => void } | null = null;
  private renewTimer: NodeJS.Timeout | null = null;
  private requestHandle = 0;
  private closeError: Error | null = null;

  private constructor(socket: Socket, options: ChannelOptions) {
    this.socket = socket;
    this.options = {
      requestedLifetimeMs: 3_600_000,
      requestedSessionTimeoutMs: 600_000,
      callTimeoutMs: 10_000,
      receiveBufferSize: DEFAULT_RECEIVE_BUFFER,
      ...options,
    };
    this.splitter = new FrameSplitter(this, this.options.receiveBufferSize);
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", (err) => this.fail(new LoadClientError("ECLOSED", `socket error: ${err.message}`)));
    socket.on("close", () => this.fail(new LoadClientError("ECLOSED", "connection closed by the server")));
  }

  /** Connects and completes Hello/Acknowledge. */
  static open(options: ChannelOptions): Promise<UaClientChannel> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: options.host, port: options.port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new LoadClientError("ETIMEOUT", `no Acknowledge from ${options.host}:${options.port}`));
      }, options.callTimeoutMs ?? 10_000);
      const onConnectError = (err: Error): void => {
        clearTimeout(timer);
        reject(new LoadClientError("ECONNECT", `connect ${options.host}:${options.port}: ${err.message}`));
      };
      socket.once("error", onConnectError);
      socket.once("connect", () => {
        socket.off("error", onConnectError);
        const channel = new UaClientChannel(socket, options);
        channel.ackWaiter = {
          resolve: () => {
            clearTimeout(timer);
            resolve(channel);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        };
        const w = channel.writer.reset();
        const size = channel.options.receiveBufferSize;
        writeHello(w, options.endpointUrl, {
          receiveBufferSize: size,
          sendBufferSize: Math.max(size, MIN_BUFFER_SIZE),
          maxMessageSize: 0,
          maxChunkCount: 0,
        });
        socket.write(Buffer.from(w.view()));
      });
    });
  }

  /** The RequestHeader of a set-up call (the load encodes its own once). */
  requestHeader(timeoutHint = this.options.callTimeoutMs): RequestHeader {
    return {
      authenticationToken: this.authenticationToken,
      timestamp: Date.now(),
      requestHandle: ++this.requestHandle,
      returnDiagnostics: 0,
      auditEntryId: undefined,
      timeoutHint,
      additionalHeader: NO_ADDITIONAL_HEADER,
    };
  }

  /**
   * Encodes one complete single-chunk MSG frame: the body is the encoding NodeId then the
   * structure. Sequence number and request id are as given (the load patches its own).
   * Returns a copy, safe to keep and to write.
   */
  encodeMessage<T>(encodingId: number, encode: (w: BinaryWriter, v: T) => void, body: T, sequenceNumber: number, requestId: number, kind: FrameKind.MSGF | FrameKind.CLOF = FrameKind.MSGF): Buffer {
    const w = this.writer.reset();
    const start = beginMessageFrame(w, kind, this.channelId, this.tokenId, sequenceNumber, requestId);
    encodeNodeId(w, numericNodeId(encodingId));
    encode(w, body);
    finishFrame(w, start);
    const limit = this.serverLimits?.receiveBufferSize ?? MIN_BUFFER_SIZE;
    if (w.pos > limit) {
      throw new LoadClientError("EPROTOCOL", `request of ${w.pos} bytes exceeds the server's receive buffer of ${limit} (chunking not implemented)`);
    }
    return Buffer.from(w.view());
  }

  /** One service call, decoded by the generated decoder; a Bad serviceResult or ServiceFault rejects. */
  call<Req, Res>(
    service: string,
    requestEncodingId: number,
    encode: (w: BinaryWriter, v: Req) => void,
    request: Req,
    responseEncodingId: number,
    decode: (r: BinaryReader) => Res,
  ): Promise<Res> {
    if (this.closed) return Promise.reject(this.closeError ?? new LoadClientError("ECLOSED", "channel closed"));
    const requestId = ++this.requestId;
    const frame = this.encodeMessage(requestEncodingId, encode, request, ++this.sequenceNumber, requestId);
    const result = this.expect(service, requestId, responseEncodingId, decode);
    this.socket.write(frame);
    return result as Promise<Res>;
  }

  /** OpenSecureChannel, Issue or Renew (Part 4 §5.5.2), SecurityPolicy None. */
  async openSecureChannel(requestType: SecurityTokenRequestType = SecurityTokenRequestType.Issue): Promise<void> {
    const w = this.writer.reset();
    const requestId = ++this.requestId;
    const start = beginOpenFrame(w, this.channelId, ++this.sequenceNumber, requestId);
    encodeNodeId(w, numericNodeId(ObjectIds.OpenSecureChannelRequest_Encoding_DefaultBinary));
    encodeOpenSecureChannelRequest(w, {
      requestHeader: this.requestHeader(),
      clientProtocolVersion: 0,
      requestType,
      securityMode: MessageSecurityMode.None,
      clientNonce: undefined,
      requestedLifetime: this.options.requestedLifetimeMs,
    });
    finishFrame(w, start);
    const frame = Buffer.from(w.view());
    const response = this.expect("OpenSecureChannel", requestId, ObjectIds.OpenSecureChannelResponse_Encoding_DefaultBinary, decodeOpenSecureChannelResponse);
    this.socket.write(frame);
    const r = (await response) as ReturnType<typeof decodeOpenSecureChannelResponse>;
    this.channelId = r.securityToken.channelId;
    this.tokenId = r.securityToken.tokenId;
    this.revisedLifetimeMs = r.securityToken.revisedLifetime;
    this.scheduleRenew();
  }

  /** Part 4 §5.5.2.1: renew before the token expires (at 75 % of its lifetime, as stacks commonly do). */
  private scheduleRenew(): void {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    if (this.revisedLifetimeMs <= 0) return;
    this.renewTimer = setTimeout(() => {
      this.renewTimer = null;
      this.openSecureChannel(SecurityTokenRequestType.Renew).catch((err: Error) => {
        this.fail(new LoadClientError("EPROTOCOL", `token renewal failed: ${err.message}`));
      });
    }, Math.max(100, this.revisedLifetimeMs * 0.75));
    this.renewTimer.unref();
  }

  /** CreateSession then ActivateSession with an AnonymousIdentityToken. */
  async createAndActivateSession(sessionName: string): Promise<void> {
    const created = await this.call(
      "CreateSession",
      ObjectIds.CreateSessionRequest_Encoding_DefaultBinary,
      encodeCreateSessionRequest,
      {
        requestHeader: this.requestHeader(),
        clientDescription: {
          applicationUri: "urn:fieldgate:bench:load-client",
          productUri: "urn:fieldgate:bench",
          applicationName: { text: "fieldgate bench load client" },
          applicationType: ApplicationType.Client,
          gatewayServerUri: undefined,
          discoveryProfileUri: undefined,
          discoveryUrls: undefined,
        },
        serverUri: undefined,
        endpointUrl: this.options.endpointUrl,
        sessionName,
        clientNonce: undefined,
        clientCertificate: undefined,
        requestedSessionTimeout: this.options.requestedSessionTimeoutMs,
        maxResponseMessageSize: 0,
      },
      ObjectIds.CreateSessionResponse_Encoding_DefaultBinary,
      decodeCreateSessionResponse,
    );
    this.authenticationToken = created.authenticationToken;
    this.sessionId = created.sessionId;
    this.serverEndpoints = created.serverEndpoints ?? [];
    await this.call(
      "ActivateSession",
      ObjectIds.ActivateSessionRequest_Encoding_DefaultBinary,
      encodeActivateSessionRequest,
      {
        requestHeader: this.requestHeader(),
        clientSignature: { algorithm: undefined, signature: undefined },
        clientSoftwareCertificates: undefined,
        localeIds: undefined,
        userIdentityToken: {
          typeId: numericNodeId(ObjectIds.AnonymousIdentityToken_Encoding_DefaultBinary),
          body: { policyId: this.anonymousPolicyId() },
        },
        userTokenSignature: { algorithm: undefined, signature: undefined },
      },
      ObjectIds.ActivateSessionResponse_Encoding_DefaultBinary,
      decodeActivateSessionResponse,
    );
  }

  /** The policyId the server offers for anonymous tokens on a None endpoint, else "anonymous". */
  anonymousPolicyId(): string {
    for (const e of this.serverEndpoints) {
      if (e.securityPolicyUri !== undefined && e.securityPolicyUri !== SECURITY_POLICY_NONE) continue;
      for (const t of e.userIdentityTokens ?? []) {
        if (t.tokenType === UserTokenType.Anonymous && t.policyId) return t.policyId;
      }
    }
    return "anonymous";
  }

  /** CloseSession, CloseSecureChannel, then end the socket. Errors on the way are swallowed: the run is over. */
  async close(): Promise<void> {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.renewTimer = null;
    if (this.closed) return;
    try {
      if (this.authenticationToken !== NULL_NODE_ID) {
        await this.call(
          "CloseSession",
          ObjectIds.CloseSessionRequest_Encoding_DefaultBinary,
          encodeCloseSessionRequest,
          { requestHeader: this.requestHeader(), deleteSubscriptions: true },
          ObjectIds.CloseSessionResponse_Encoding_DefaultBinary,
          decodeCloseSessionResponse,
        );
      }
      // Part 4 §5.5.3: CloseSecureChannel has no response; the server closes the socket.
      const frame = this.encodeMessage(
        ObjectIds.CloseSecureChannelRequest_Encoding_DefaultBinary,
        encodeCloseSecureChannelRequest,
        { requestHeader: this.requestHeader() },
        ++this.sequenceNumber,
        ++this.requestId,
        FrameKind.CLOF,
      );
      this.socket.end(frame);
    } catch {
      this.socket.destroy();
    }
    this.closed = true;
  }

  destroy(): void {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.renewTimer = null;
    this.closed = true;
    this.socket.destroy();
  }

  private expect(service: string, requestId: number, responseEncodingId: number, decode: Decoder): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(requestId);
        reject(new LoadClientError("ETIMEOUT", `${service}: no response within ${this.options.callTimeoutMs} ms`));
      }, this.options.callTimeoutMs);
      this.pending.set(requestId, { service, responseEncodingId, decode, resolve, reject, timer, parts: null });
    });
  }

  private onData(chunk: Buffer): void {
    const handler = this.loadHandler;
    if (handler === null) {
      this.splitter.feed(chunk);
      return;
    }
    handler.beginBatch();
    try {
      this.splitter.feed(chunk);
    } finally {
      handler.endBatch();
    }
  }

  onFrame(buffer: Buffer, start: number, end: number): void {
    const kind = buffer.readUInt32LE(start) as FrameKind;
    if (kind === FrameKind.MSGF || kind === FrameKind.MSGC || kind === FrameKind.MSGA) {
      if (end - start < MSG_BODY_OFFSET) return this.fail(new LoadClientError("EPROTOCOL", "MSG chunk shorter than its headers"));
      const requestId = buffer.readUInt32LE(start + MSG_OFFSET_REQUEST_ID);
      const call = this.pending.size === 0 ? undefined : this.pending.get(requestId);
      if (call !== undefined) this.answer(call, requestId, kind, buffer, start + MSG_BODY_OFFSET, end);
      else if (this.loadHandler !== null) this.loadHandler.onMessage(kind, buffer, start, end);
      return;
    }
    switch (kind) {
      case FrameKind.OPNF: {
        const r = this.reader.setBuffer(buffer, start + HEADER_SIZE, end);
        try {
          skipAsymmetricHeader(r);
          r.readUInt32(); // SequenceNumber
          const requestId = r.readUInt32();
          const call = this.pending.get(requestId);
          if (call) this.answer(call, requestId, FrameKind.MSGF, buffer, r.pos, end);
        } catch (err) {
          this.fail(new LoadClientError("EPROTOCOL", `bad OPN response: ${(err as Error).message}`));
        }
        return;
      }
      case FrameKind.ACKF: {
        const waiter = this.ackWaiter;
        this.ackWaiter = null;
        try {
          this.serverLimits = readAcknowledge(this.reader.setBuffer(buffer, start + HEADER_SIZE, end));
          waiter?.resolve();
        } catch (err) {
          waiter?.reject(new LoadClientError("EPROTOCOL", `bad Acknowledge: ${(err as Error).message}`));
        }
        return;
      }
      case FrameKind.ERRF: {
        const { error, reason } = readErrorMessage(this.reader.setBuffer(buffer, start + HEADER_SIZE, end));
        this.fail(new LoadClientError("EPROTOCOL", `server sent Error ${statusCodeName(error)}${reason ? `: ${reason}` : ""}`, error));
        return;
      }
      default:
        this.fail(new LoadClientError("EPROTOCOL", `unexpected message type 0x${(kind >>> 0).toString(16)}`));
    }
  }

  onFramingError(message: string): void {
    this.fail(new LoadClientError("EPROTOCOL", message));
  }

  /** Completes a set-up call; intermediate chunks are collected first (rare: large CreateSession responses). */
  private answer(call: PendingCall, requestId: number, kind: FrameKind, buffer: Buffer, bodyStart: number, end: number): void {
    if (kind === FrameKind.MSGC) {
      (call.parts ??= []).push(Buffer.from(buffer.subarray(bodyStart, end)));
      return;
    }
    this.pending.delete(requestId);
    clearTimeout(call.timer);
    if (kind === FrameKind.MSGA) {
      call.reject(new LoadClientError("ESERVICE", `${call.service}: the server aborted the response`));
      return;
    }
    let r: BinaryReader;
    if (call.parts !== null) {
      call.parts.push(buffer.subarray(bodyStart, end));
      const whole = Buffer.concat(call.parts);
      r = this.reader.setBuffer(whole);
    } else {
      r = this.reader.setBuffer(buffer, bodyStart, end);
    }
    try {
      const typeId = decodeNodeId(r);
      const id = typeId.namespace === 0 && typeof typeId.value === "number" ? typeId.value : -1;
      if (id === ObjectIds.ServiceFault_Encoding_DefaultBinary) {
        const header = decodeResponseHeader(r);
        call.reject(new LoadClientError("ESERVICE", `${call.service}: ServiceFault ${statusCodeName(header.serviceResult)}`, header.serviceResult));
        return;
      }
      if (id !== call.responseEncodingId) {
        call.reject(new LoadClientError("EPROTOCOL", `${call.service}: response type i=${id}, expected i=${call.responseEncodingId}`));
        return;
      }
      const response = call.decode(r) as { responseHeader?: { serviceResult: number } };
      const sr = response.responseHeader?.serviceResult ?? StatusCodes.Good;
      if (sr >>> 30 !== 0) {
        call.reject(new LoadClientError("ESERVICE", `${call.service}: ${statusCodeName(sr)}`, sr));
        return;
      }
      call.resolve(response);
    } catch (err) {
      const status = err instanceof UaStatusError ? err.statusCode : undefined;
      call.reject(new LoadClientError("EPROTOCOL", `${call.service}: cannot decode the response: ${(err as Error).message}`, status));
    }
  }

  private fail(err: Error): void {
    if (this.closed && this.closeError !== null) return;
    const wasClosed = this.closed;
    this.closed = true;
    this.closeError = err;
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.renewTimer = null;
    this.ackWaiter?.reject(err);
    this.ackWaiter = null;
    for (const [, call] of this.pending) {
      clearTimeout(call.timer);
      call.reject(err);
    }
    this.pending.clear();
    // A close after our own close() is the expected end, not a failure of the load.
    if (!wasClosed) this.loadHandler?.onChannelError(err);
    this.socket.destroy();
  }
}
