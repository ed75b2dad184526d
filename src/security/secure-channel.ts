// The secure channel over one UA-TCP connection (Part 6 §6.7): OPN Issue/Renew, tokens and their
// lifetimes, sequence numbers, MSG reassembly, CLO, and the chunks of responses: each response is
// encoded into the connection's ChunkWriter (transport/chunk-writer.ts), and this channel seals
// every chunk as it fills (MessageSealer: header, sequence number, signature, encryption). One
// SecureChannel per accepted (or reverse) connection; `channelId` is 0 until the OPN Issue.
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import type { BinaryWriter } from "../ua/binary-writer.js";
import { decodeNodeId, encodeNodeId } from "../ua/builtin-codec.js";
import { encodeNs0NumericNodeId } from "../ua/node-id-codec.js";
import { IdType, numericNodeId, type NodeId } from "../ua/builtins.js";
import { UaStatusError } from "../ua/errors.js";
import { MessageSecurityMode, SecurityTokenRequestType } from "../ua/generated/enums.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes, statusCodeName } from "../ua/generated/status-codes.js";
import { decodeOpenSecureChannelRequest, encodeOpenSecureChannelResponse } from "../ua/generated/types.js";
import { getUInt32, putInt32 } from "../ua/le.js";
import { ConnectionState, TcpConnection, type ConnectionContext, type ConnectionSink } from "../transport/tcp-connection.js";
import type { ChunkSealer } from "../transport/chunk-writer.js";
import { MessageAssembler } from "../transport/message-assembler.js";
import { QueuedResponse, Sent, SlicedResponse, type ResponseHooks } from "./response-queue.js";
import { ChunkType, HEADER_SIZE, MessageType, writeHeader } from "../transport/ua-tcp.js";
import type { HandshakeJob, HandshakeLimiter } from "./handshake-limiter.js";
import type { AsymmetricSecurity, ChunkCrypto, SecurityPolicyRegistry, SymmetricSecurity } from "./security-policy.js";

/** What the sender of a response on a secure channel hears (response-queue.ts). */
export type ChannelHooks<T> = ResponseHooks<T, SecureChannel>;

export interface ChannelHandler {
  /** A complete request: body[start, end) begins with the encoding NodeId of the request type.
   *  The bytes are valid only during this call (they may be a pooled buffer): decode synchronously. */
  onRequest(channel: SecureChannel, requestId: number, body: Buffer, start: number, end: number): void;
  /** The channel (opened by an OPN Issue) is closing; called once. */
  onChannelClosed(channel: SecureChannel): void;
}

/** What a server shares with all its channels. */
export interface ChannelContext extends ConnectionContext {
  readonly handler: ChannelHandler;
  readonly policies: SecurityPolicyRegistry;
  /** Bounds RSA handshakes (OPN Issue with a signing policy); none = run each at once. */
  readonly handshakes?: HandshakeLimiter;
  /** A SecureChannelId not in use on this server, never 0. */
  allocateChannelId(): number;
  /** The socket is gone: forget the channel. */
  channelGone(channel: SecureChannel): void;
}

interface Token {
  readonly id: number;
  readonly keys: SymmetricSecurity;
  /** performance.now() after which the token is no longer accepted. */
  readonly expiresAt: number;
}

/** MessageHeader + SecureChannelId + TokenId (Part 6 §6.7.2.2). */
const SYMMETRIC_HEADER_SIZE = HEADER_SIZE + 8;
const SEQUENCE_HEADER_SIZE = 8;
/** Part 6 §6.7.2.4: legacy sequence numbers may wrap only above UInt32.MaxValue - 1024, to below 1024. */
const SEQUENCE_WRAP_FLOOR = 4294966271;
/**
 * Part 4 §5.5.2.1: clients renew at 75 % of the lifetime, and a channel lives until its last
 * token has expired and the overlap period (25 % of the lifetime) has passed.
 */
const TOKEN_OVERLAP = 1.25;

const OPN_REQUEST_ID = ObjectIds.OpenSecureChannelRequest_Encoding_DefaultBinary;
const OPN_RESPONSE_NODE_ID = numericNodeId(ObjectIds.OpenSecureChannelResponse_Encoding_DefaultBinary);

export class SecureChannel implements ConnectionSink, HandshakeJob {
  /** The connection under this channel (framing, buffers, backpressure). */
  readonly connection: TcpConnection;
  securityPolicyUri = "";
  securityMode = MessageSecurityMode.Invalid;
  /** Set by the session layer; channels without sessions are evicted first. */
  sessionCount = 0;
  /** The client's certificate from the OPN (undefined for policy None). */
  clientCertificate: Buffer | undefined = undefined;
  /** Tokens issued on this channel (1 after the Issue, +1 per Renew). */
  tokensIssued = 0;

  private readonly ctx: ChannelContext;
  private id = 0;
  private asymmetric: AsymmetricSecurity | null = null;
  private current: Token | null = null;
  /** The token before the last Renew, accepted until the client uses the new one or it expires. */
  private previous: Token | null = null;
  /** Part 4 §5.5.2.1: responses use the old token until the client has used the new one. */
  private sendToken: Token | null = null;
  private nextTokenId = 1;
  private lastReceivedSequence = -1;
  /** Part 6 §6.7.2.4: the SequenceNumber of the next chunk sent. */
  nextSendSequence = 1;
  private readonly assembler: MessageAssembler;
  private readonly sealer: MessageSealer;
  private closedNotified = false;
  /** An OPN Issue waiting for the handshake limiter: a copy in a pool buffer (the chunk outlives the read). */
  private pendingOpen: Buffer | null = null;
  private pendingOpenLength = 0;

  constructor(socket: Socket, ctx: ChannelContext) {
    this.ctx = ctx;
    this.connection = new TcpConnection(socket, ctx);
    this.connection.sink = this;
    this.assembler = new MessageAssembler(ctx.limits, ctx.pool, this.connection, ctx.scratch);
    this.sealer = new MessageSealer(this);
  }

  get channelId(): number {
    return this.id;
  }

  get remoteAddress(): string {
    return this.connection.remoteAddress;
  }

  get endpointUrl(): string {
    return this.connection.endpointUrl;
  }

  /** True between the OPN Issue and the start of closing. */
  get isOpen(): boolean {
    return this.current !== null && this.connection.state === ConnectionState.Open;
  }

  /**
   * Encodes `encodingId` as a NodeId then `value` with `encode` straight into pool buffers, each
   * chunk sealed and queued as it fills; marks request `requestId` as answered (backpressure).
   * When the message cannot be completed (over the client's MaxMessageSize or MaxChunkCount,
   * BadResponseTooLarge; the memory budget has no buffer for it, BadTcpNotEnoughResources; or
   * `encode` throws), either nothing was sent yet: the error is thrown and the caller sends a
   * ServiceFault instead; or chunks were out already: an abort chunk with the error ends the
   * message (Part 6 §6.7.3: as §7.1.2.3 asks for responses over MaxMessageSize) and the request
   * counts as answered. A no-op if the channel is already closed. True when the response went
   * out whole, false when it did not (closed channel, abort chunk). Synchronous: a large response
   * still being laid out (`respond`) and what waits behind it go first, now.
   */
  sendResponse<T>(requestId: number, encodingId: number, encode: (w: BinaryWriter, v: T) => void, value: T): boolean {
    const output = this.connection.output;
    if (output.busy) output.settle();
    return this.write(requestId, encodingId, encode, value, undefined) === Sent.Whole;
  }

  /** A large response is leaving in slices, or sends wait behind one: a Publish waits (`whenSendFree`) instead of forcing them out in one task. */
  get sendBusy(): boolean {
    return this.connection.output.busy;
  }

  /** Calls fn once, on a later turn, when sendBusy is false or the channel closed. */
  whenSendFree(fn: () => void): void {
    this.connection.output.whenFree(fn);
  }

  /**
   * Sends a response as sendResponse does, except that its large raw bytes (LEND_MIN and more)
   * may leave over several turns of the event loop (transport/output-slicer.ts), and that while
   * another response is leaving so, it waits behind it. `hooks.sent(value, whole)` is called
   * once the bytes of `value` are no longer needed (the response went out whole, was cut off, or
   * its channel closed); `hooks.refused` when nothing of it went out (then `sent` first).
   */
  respond<T>(requestId: number, encodingId: number, encode: (w: BinaryWriter, v: T) => void, value: T, hooks: ChannelHooks<T>): void {
    if (this.connection.output.busy) {
      this.connection.output.enqueue(new QueuedResponse(this, requestId, encodingId, encode, value, hooks));
      return;
    }
    this.respondNow(requestId, encodingId, encode, value, hooks);
  }

  /** @internal respond() with the writer free. */
  respondNow<T>(requestId: number, encodingId: number, encode: (w: BinaryWriter, v: T) => void, value: T, hooks: ChannelHooks<T>): void {
    let sent: Sent;
    try {
      sent = this.write(requestId, encodingId, encode, value, hooks);
    } catch (err) {
      hooks.sent(value, false);
      hooks.refused(this, requestId, value, err);
      return;
    }
    if (sent !== Sent.Pending) hooks.sent(value, sent === Sent.Whole);
  }

  private write<T>(requestId: number, encodingId: number, encode: (w: BinaryWriter, v: T) => void, value: T, hooks: ChannelHooks<T> | undefined): Sent {
    const conn = this.connection;
    const token = this.sendToken;
    if (conn.state !== ConnectionState.Open || token === null) return Sent.Lost;
    const w = conn.out;
    this.sealer.prepare(token, requestId, conn.sendBufferSize);
    w.begin(this.sealer, conn.maxResponseSize, conn.maxResponseChunks, this.ctx.pool.bufferSize, hooks !== undefined);
    let whole = false;
    try {
      encodeNs0NumericNodeId(w, encodingId);
      encode(w, value);
      if (!w.end(true)) {
        // Complete, its lent bytes still to lay out: the slicer does, in slices, and says how it went.
        conn.output.start(new SlicedResponse(this, requestId, value, hooks!));
        return Sent.Pending;
      }
      whole = true;
    } catch (err) {
      let status = err instanceof UaStatusError ? err.statusCode : StatusCodes.BadEncodingError;
      // Part 6 §7.1.2.3: a response over the client's limits is BadResponseTooLarge.
      if (status === StatusCodes.BadEncodingLimitsExceeded) status = StatusCodes.BadResponseTooLarge;
      let nothingSent: boolean;
      try {
        nothingSent = w.abort(status, statusCodeName(status), true);
      } catch (abortErr) {
        // Chunks went out and not even the abort chunk fits the budget: the message cannot be
        // ended for the peer, so the channel ends.
        conn.close(StatusCodes.BadTcpNotEnoughResources, abortErr instanceof Error ? abortErr.message : String(abortErr));
        return Sent.Lost;
      }
      if (nothingSent) {
        if (status === StatusCodes.BadResponseTooLarge && !(err instanceof UaStatusError && err.statusCode === status)) {
          throw new UaStatusError(status, `response over the client's limits (${conn.maxResponseSize} bytes, ${conn.maxResponseChunks || "any"} chunks)`);
        }
        throw err;
      }
    }
    conn.messageDone(true);
    return whole ? Sent.Whole : Sent.Lost;
  }

  /** Closes the channel; with a status, sends ERR first. */
  close(status?: number): void {
    this.connection.close(status);
  }

  // ---------------------------------------------------------------- ConnectionSink

  onChunk(type: number, chunkType: number, buf: Buffer, start: number, end: number): void {
    try {
      if (type === MessageType.OPN) this.onOpen(buf, start, end);
      else this.onSymmetric(type, chunkType, buf, start, end);
    } catch (err) {
      // Part 6 §6.7.6: on a signed channel, an unknown token, a replayed or missing sequence
      // number, bad padding and a bad signature all end the channel with the same code.
      if (this.securityMode === MessageSecurityMode.Sign || this.securityMode === MessageSecurityMode.SignAndEncrypt) {
        const status = err instanceof UaStatusError ? err.statusCode : 0;
        if (status === StatusCodes.BadSecureChannelTokenUnknown || status === StatusCodes.BadSequenceNumberInvalid) {
          throw new UaStatusError(StatusCodes.BadSecurityChecksFailed);
        }
      }
      throw err;
    }
  }

  /** HandshakeJob: the queued OPN Issue gets its turn. */
  runHandshake(): void {
    const chunk = this.pendingOpen;
    if (chunk === null) return;
    if (this.connection.state !== ConnectionState.Open) {
      this.dropPendingOpen();
      return;
    }
    try {
      this.processOpen(chunk, 0, this.pendingOpenLength);
    } catch (err) {
      this.connection.close(err instanceof UaStatusError ? err.statusCode : StatusCodes.BadInternalError, err instanceof Error ? err.message : String(err));
      return;
    } finally {
      this.dropPendingOpen();
    }
    this.connection.resumeInput();
  }

  private dropPendingOpen(): void {
    if (this.pendingOpen === null) return;
    this.ctx.pool.release(this.pendingOpen, this.connection);
    this.pendingOpen = null;
  }

  nextDeadline(): number {
    let at = this.assembler.oldestStart() + this.ctx.limits.incompleteMessageTimeoutMs;
    if (this.current !== null && this.current.expiresAt < at) at = this.current.expiresAt;
    if (this.previous !== null && this.previous.expiresAt < at) at = this.previous.expiresAt;
    return at;
  }

  onDeadline(now: number): void {
    if (this.assembler.oldestStart() + this.ctx.limits.incompleteMessageTimeoutMs <= now) {
      this.connection.close(StatusCodes.BadTimeout, "message not completed in time");
      return;
    }
    if (this.current !== null && this.current.expiresAt <= now) {
      // Part 4 §5.5.2.1: not renewed in time; the channel ends with its last token.
      this.connection.close(StatusCodes.BadSecureChannelTokenUnknown, "security token expired");
      return;
    }
    if (this.previous !== null && this.previous.expiresAt <= now) {
      if (this.sendToken === this.previous) this.sendToken = this.current;
      this.previous = null;
    }
  }

  onClosing(): void {
    this.assembler.clear();
    this.dropPendingOpen();
    if (this.current !== null && !this.closedNotified) {
      this.closedNotified = true;
      this.ctx.handler.onChannelClosed(this);
    }
  }

  onClosed(): void {
    this.ctx.channelGone(this);
  }

  // ---------------------------------------------------------------- OPN

  private onOpen(buf: Buffer, start: number, end: number): void {
    const limiter = this.ctx.handshakes;
    if (limiter !== undefined && this.current === null && this.pendingOpen === null) {
      // Peek at the policy: only RSA handshakes go through the limiter (None costs nothing).
      const r = this.connection.reader.setBuffer(buf, start + HEADER_SIZE + 4, end);
      const policy = this.ctx.policies.get(r.readString() ?? "");
      if (policy !== undefined && policy.nonceLength > 0) {
        if (!limiter.admit(this.connection.remoteHost)) {
          throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "too many new secure channels from this address");
        }
        const copy = this.ctx.pool.acquire(this.connection);
        if (copy === undefined) throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "no memory left for a handshake");
        buf.copy(copy, 0, start, end);
        this.pendingOpen = copy;
        this.pendingOpenLength = end - start;
        this.connection.suspendInput();
        if (!limiter.submit(this)) {
          this.dropPendingOpen();
          throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "too many secure channel handshakes waiting");
        }
        return;
      }
    }
    this.processOpen(buf, start, end);
  }

  private processOpen(buf: Buffer, start: number, end: number): void {
    const conn = this.connection;
    const r = conn.reader.setBuffer(buf, start + HEADER_SIZE, end);
    // Asymmetric security header, Part 6 §6.7.2.3.
    const headerChannelId = r.readUInt32();
    const policyUri = r.readString() ?? "";
    const senderCertificate = r.readByteStringView();
    const receiverThumbprint = r.readByteStringView();
    const encStart = r.pos;
    const policy = this.ctx.policies.get(policyUri);
    if (policy === undefined) throw new UaStatusError(StatusCodes.BadSecurityPolicyRejected, `policy ${policyUri} not offered`);
    if (this.current !== null) {
      if (headerChannelId !== this.id) throw new UaStatusError(StatusCodes.BadSecureChannelIdInvalid, `OPN for channel ${headerChannelId}`);
      if (policyUri !== this.securityPolicyUri) throw new UaStatusError(StatusCodes.BadSecurityPolicyRejected, "policy changed on renew");
    }
    const asymmetric = policy.openAsymmetric(senderCertificate, receiverThumbprint);
    const bodyEnd = asymmetric.receive.unsecure(buf, start, encStart, end);
    r.setBuffer(buf, encStart, bodyEnd);
    const sequenceNumber = r.readUInt32();
    const requestId = r.readUInt32();
    this.checkSequence(sequenceNumber);

    const typeId = decodeNodeId(r);
    if (typeId.namespace !== 0 || typeId.idType !== IdType.Numeric || typeId.value !== OPN_REQUEST_ID) {
      throw new UaStatusError(StatusCodes.BadDecodingError, "OPN body is not an OpenSecureChannelRequest");
    }
    const req = decodeOpenSecureChannelRequest(r);
    // Part 6 §6.7.4: the OPN versions equal the HEL/ACK versions.
    if (req.clientProtocolVersion !== conn.peerProtocolVersion) {
      throw new UaStatusError(StatusCodes.BadProtocolVersionUnsupported, `OPN version ${req.clientProtocolVersion}, HEL version ${conn.peerProtocolVersion}`);
    }
    if (!policy.supportsMode(req.securityMode)) throw new UaStatusError(StatusCodes.BadSecurityModeRejected, `mode ${req.securityMode}`);
    if (req.requestType === SecurityTokenRequestType.Issue) {
      if (this.current !== null) throw new UaStatusError(StatusCodes.BadRequestTypeInvalid, "Issue on an open channel");
    } else if (req.requestType === SecurityTokenRequestType.Renew) {
      if (this.current === null) throw new UaStatusError(StatusCodes.BadTcpSecureChannelUnknown, "Renew before Issue");
      if (req.securityMode !== this.securityMode) throw new UaStatusError(StatusCodes.BadSecurityModeRejected, "mode changed on renew");
      if (!sameBytes(asymmetric.clientCertificate, this.clientCertificate)) {
        throw new UaStatusError(StatusCodes.BadSecurityChecksFailed, "certificate changed on renew");
      }
    } else {
      throw new UaStatusError(StatusCodes.BadRequestTypeInvalid, `requestType ${req.requestType}`);
    }
    if (policy.nonceLength > 0 && (req.clientNonce === undefined || req.clientNonce.length !== policy.nonceLength)) {
      throw new UaStatusError(StatusCodes.BadNonceInvalid, `ClientNonce must have ${policy.nonceLength} bytes`);
    }

    if (this.current === null) {
      this.id = this.ctx.allocateChannelId();
      this.securityPolicyUri = policyUri;
      this.securityMode = req.securityMode;
      this.clientCertificate = asymmetric.clientCertificate;
    }
    this.asymmetric = asymmetric;
    const serverNonce = policy.createNonce();
    const lifetime = this.reviseLifetime(req.requestedLifetime);
    const token: Token = {
      id: this.nextTokenId,
      keys: policy.deriveKeys(req.securityMode, req.clientNonce, serverNonce),
      expiresAt: performance.now() + lifetime * TOKEN_OVERLAP,
    };
    this.nextTokenId = this.nextTokenId === 0xffffffff ? 1 : this.nextTokenId + 1;
    this.tokensIssued++;
    if (this.current === null) {
      this.sendToken = token;
    } else {
      // A second Renew before the first new token was used: the unused one is simply replaced.
      if (this.previous === null) this.previous = this.current;
    }
    this.current = token;
    this.sendOpenResponse(requestId, req.requestHeader.requestHandle, token.id, lifetime, serverNonce);
    conn.handshakeDone();
    conn.rearm();
  }

  private reviseLifetime(requested: number): number {
    const l = this.ctx.limits;
    if (requested === 0) return l.defaultTokenLifetimeMs;
    return Math.min(l.maxTokenLifetimeMs, Math.max(l.minTokenLifetimeMs, requested));
  }

  private sendOpenResponse(requestId: number, requestHandle: number, tokenId: number, lifetime: number, serverNonce: Buffer): void {
    const conn = this.connection;
    const asymmetric = this.asymmetric!;
    const crypto = asymmetric.send;
    const w = conn.beginControl();
    if (w === undefined) throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "no memory left for the OpenSecureChannel response");
    try {
      // Part 6 §6.7.2: OPN messages are single chunks, encoded in one pool buffer.
      w.pos = HEADER_SIZE;
      w.writeUInt32(this.id);
      w.writeString(this.securityPolicyUri);
      w.writeByteString(asymmetric.senderCertificate);
      w.writeByteString(asymmetric.receiverThumbprint);
      const headersSize = w.pos;
      w.writeUInt32(0);
      w.writeUInt32(0);
      const bodyStart = w.pos;
      encodeNodeId(w, OPN_RESPONSE_NODE_ID);
      encodeOpenSecureChannelResponse(w, {
        responseHeader: {
          timestamp: Date.now(),
          requestHandle,
          serviceResult: StatusCodes.Good,
          serviceDiagnostics: {},
        },
        serverProtocolVersion: conn.protocolVersion,
        securityToken: { channelId: this.id, tokenId, createdAt: Date.now(), revisedLifetime: lifetime },
        serverNonce,
      });
      const bodyEnd = w.pos;
      if (bodyEnd - bodyStart > crypto.maxBodySize(conn.sendBufferSize, headersSize)) {
        // Only a huge certificate chain gets here.
        throw new UaStatusError(StatusCodes.BadTcpInternalError, "OPN response does not fit one chunk");
      }
      w.pos = sealChunk(this, w.buffer, 0, MessageType.OPN, ChunkType.Final, headersSize, bodyEnd, crypto, 0, requestId);
    } catch (err) {
      conn.abandonControl(w);
      // The body ran past the buffer: the same as not fitting the chunk.
      if (err instanceof UaStatusError && err.statusCode === StatusCodes.BadEncodingLimitsExceeded) {
        throw new UaStatusError(StatusCodes.BadTcpInternalError, "OPN response does not fit one chunk");
      }
      throw err;
    }
    conn.endControl(w, false);
  }

  // ---------------------------------------------------------------- MSG / CLO

  private onSymmetric(type: number, chunkType: number, buf: Buffer, start: number, end: number): void {
    const current = this.current;
    // Part 6 §6.7.2.2: MSG and CLO need the channel an OPN Issue created.
    if (current === null) throw new UaStatusError(StatusCodes.BadTcpSecureChannelUnknown, "message before OpenSecureChannel");
    const channelId = getUInt32(buf, start + HEADER_SIZE);
    const tokenId = getUInt32(buf, start + HEADER_SIZE + 4);
    if (channelId !== this.id) throw new UaStatusError(StatusCodes.BadSecureChannelIdInvalid, `channel ${channelId}`);
    let token: Token;
    if (tokenId === current.id) {
      token = current;
      if (this.previous !== null) {
        // Part 4 §5.5.2.1: the client uses the new token, so the old one is done with.
        this.previous = null;
        this.sendToken = current;
      }
    } else if (this.previous !== null && tokenId === this.previous.id) {
      token = this.previous;
    } else {
      throw new UaStatusError(StatusCodes.BadSecureChannelTokenUnknown, `token ${tokenId}`);
    }
    const encStart = start + SYMMETRIC_HEADER_SIZE;
    const bodyEnd = token.keys.receive.unsecure(buf, start, encStart, end);
    if (bodyEnd - encStart < SEQUENCE_HEADER_SIZE) throw new UaStatusError(StatusCodes.BadDecodingError, "chunk without sequence header");
    this.checkSequence(getUInt32(buf, encStart));
    const requestId = getUInt32(buf, encStart + 4);
    const bodyStart = encStart + SEQUENCE_HEADER_SIZE;

    if (type === MessageType.CLO) {
      // Part 6 §6.7.6: CloseSecureChannel has no response; the server closes the socket.
      this.connection.close();
      return;
    }
    if (chunkType === ChunkType.Final) {
      const m = this.assembler.final(requestId, buf, bodyStart, bodyEnd);
      if (m === undefined) {
        this.handUp(requestId, buf, bodyStart, bodyEnd);
      } else {
        // Decoding and running it costs in proportion to the whole message: this connection's
        // share of the event loop is spent for that long (transport/turns.ts).
        this.connection.spend(m.end - m.start);
        try {
          this.handUp(requestId, m.body, m.start, m.end);
        } finally {
          this.assembler.finish(m);
        }
      }
    } else if (chunkType === ChunkType.Intermediate) {
      const before = this.assembler.incompleteCount;
      this.assembler.append(requestId, buf, bodyStart, bodyEnd, performance.now());
      if (this.assembler.incompleteCount !== before) this.connection.rearm();
    } else {
      this.assembler.abort(requestId);
    }
  }

  private handUp(requestId: number, body: Buffer, start: number, end: number): void {
    this.connection.requestHandedUp();
    this.ctx.handler.onRequest(this, requestId, body, start, end);
  }

  /** Part 6 §6.7.2.4: each chunk's SequenceNumber is the previous one plus one; a gap or replay ends the channel. */
  private checkSequence(seq: number): void {
    const last = this.lastReceivedSequence;
    if (last >= 0) {
      const ok = last === 0xffffffff ? seq < 1024 : seq === last + 1 || (last > SEQUENCE_WRAP_FLOOR && seq < 1024);
      if (!ok) throw new UaStatusError(StatusCodes.BadSequenceNumberInvalid, `sequence number ${seq} after ${last}`);
    }
    this.lastReceivedSequence = seq;
  }
}

/**
 * Seals the chunk at buf[chunkStart...]: its body ends at `bodyEnd`, after the message header,
 * the security header (`headersSize` bytes in all) and the sequence header. Writes MessageSize,
 * SecureChannelId and TokenId (MSG, CLO), SequenceNumber and RequestId, then signs and encrypts
 * (Part 6 §6.7.2). Returns the chunk's size on the wire.
 */
function sealChunk(
  channel: SecureChannel,
  buf: Buffer,
  chunkStart: number,
  type: number,
  chunkType: number,
  headersSize: number,
  bodyEnd: number,
  crypto: ChunkCrypto,
  tokenId: number,
  requestId: number,
): number {
  const encStart = chunkStart + headersSize;
  const plain = bodyEnd - encStart;
  const wire = headersSize + crypto.cipherLength(plain + crypto.trailerSize(plain));
  writeHeader(buf, chunkStart, type, chunkType, wire);
  if (type !== MessageType.OPN) {
    putInt32(buf, chunkStart + HEADER_SIZE, channel.channelId);
    putInt32(buf, chunkStart + HEADER_SIZE + 4, tokenId);
  }
  const seq = channel.nextSendSequence;
  putInt32(buf, encStart, seq);
  putInt32(buf, encStart + 4, requestId);
  // Part 6 §6.7.2.4: wraps to 0 after UInt32.MaxValue, which is below 1024 as required.
  channel.nextSendSequence = seq === 0xffffffff ? 0 : seq + 1;
  crypto.secure(buf, chunkStart, encStart, bodyEnd);
  return wire;
}

/** Seals the chunks of one response with the channel's send token (one per channel, reused). */
class MessageSealer implements ChunkSealer {
  readonly bodyOffset = SYMMETRIC_HEADER_SIZE + SEQUENCE_HEADER_SIZE;
  private crypto: ChunkCrypto | null = null;
  private tokenId = 0;
  private requestId = 0;
  private chunkSize = 0;

  constructor(private readonly channel: SecureChannel) {}

  prepare(token: { readonly id: number; readonly keys: SymmetricSecurity }, requestId: number, chunkSize: number): void {
    this.crypto = token.keys.send;
    this.tokenId = token.id;
    this.requestId = requestId;
    this.chunkSize = chunkSize;
  }

  maxBodyIn(room: number): number {
    return this.crypto!.maxBodySize(Math.min(room, this.chunkSize), SYMMETRIC_HEADER_SIZE);
  }

  wireLength(bodyLength: number): number {
    const plain = SEQUENCE_HEADER_SIZE + bodyLength;
    return SYMMETRIC_HEADER_SIZE + this.crypto!.cipherLength(plain + this.crypto!.trailerSize(plain));
  }

  seal(buf: Buffer, chunkStart: number, bodyEnd: number, chunkType: number): number {
    return sealChunk(this.channel, buf, chunkStart, MessageType.MSG, chunkType, SYMMETRIC_HEADER_SIZE, bodyEnd, this.crypto!, this.tokenId, this.requestId);
  }
}

function sameBytes(a: Buffer | undefined, b: Buffer | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.equals(b);
}
