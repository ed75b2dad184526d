// A small client secure channel for every policy and mode, on the server's own crypto
// (src/security/policies.ts): HEL/ACK, OPN Issue/Renew with RSA, MSG with the derived keys, a
// session (CreateSession with the client certificate, ActivateSession with clientSignature and
// an anonymous token). Used by the secure bench scenario (handshakes per second, Read in
// SignAndEncrypt against None) and by test/security (exact ERR codes, tampered chunks, replays,
// floods), where node-opcua-client hides the code behind a generic message.
//
// Simple on purpose: one chunk per request, responses of any chunk count, frames copied.
import { X509Certificate, randomBytes, type KeyObject } from "node:crypto";
import { connect, type Socket } from "node:net";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { decodeNodeId, encodeNodeId } from "../../src/ua/builtin-codec.js";
import { NULL_NODE_ID, numericNodeId, type NodeId } from "../../src/ua/builtins.js";
import { ApplicationType, MessageSecurityMode, SecurityTokenRequestType } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes, statusCodeName } from "../../src/ua/generated/status-codes.js";
import {
  decodeActivateSessionResponse,
  decodeCreateSessionResponse,
  decodeOpenSecureChannelResponse,
  decodeResponseHeader,
  encodeActivateSessionRequest,
  encodeCloseSecureChannelRequest,
  encodeCreateSessionRequest,
  encodeOpenSecureChannelRequest,
  type RequestHeader,
} from "../../src/ua/generated/types.js";
import { asymmetricCrypto, asymmetricSign, asymmetricVerify, deriveKeys, policyByUri, symmetricCrypto, thumbprint, type PolicyAlgorithms } from "../../src/security/policies.js";
import { SecurityPolicyNone, type ChunkCrypto } from "../../src/security/security-policy.js";
import { FrameKind, FrameSplitter, HEADER_SIZE, readAcknowledge, readErrorMessage, writeHello, type FrameSink } from "./ua-tcp.js";

export class SecureClientError extends Error {
  constructor(
    message: string,
    readonly statusCode: number,
  ) {
    super(message);
    this.name = "SecureClientError";
  }
}

export interface SecureClientOptions {
  host: string;
  port: number;
  endpointUrl?: string;
  policyUri: string;
  mode: MessageSecurityMode;
  /** Client certificate (DER) and key; needed for the signing policies. */
  certificate?: Buffer;
  privateKey?: KeyObject;
  /** The server's certificate (DER), from GetEndpoints or its pki/own folder. */
  serverCertificate?: Buffer;
  applicationUri?: string;
  requestedLifetimeMs?: number;
  timeoutMs?: number;
}

type Pending = { resolve: (body: Buffer) => void; reject: (e: Error) => void; parts: Buffer[] };

const SYM_HEADERS = 16;

/** Parsing a certificate costs about one RSA operation: once per certificate buffer. */
const publicKeys = new WeakMap<Buffer, KeyObject>();
function publicKeyOf(der: Buffer): KeyObject {
  let k = publicKeys.get(der);
  if (k === undefined) {
    k = new X509Certificate(der).publicKey;
    publicKeys.set(der, k);
  }
  return k;
}
const SEQ = 8;

export class SecureClientChannel implements FrameSink {
  readonly socket: Socket;
  readonly options: SecureClientOptions;
  readonly alg: PolicyAlgorithms | undefined;
  channelId = 0;
  tokenId = 0;
  sequenceNumber = 0;
  requestId = 0;
  authenticationToken: NodeId = NULL_NODE_ID;
  /** The status of the ERR the server sent, or of the failure that closed the channel. */
  errorStatus: number | undefined = undefined;
  /** Resolves when the socket is gone. */
  readonly closed: Promise<void>;

  private readonly splitter = new FrameSplitter(this, 1 << 24);
  private readonly reader = new BinaryReader();
  private readonly pending = new Map<number, Pending>();
  private readonly receiveKeys = new Map<number, ChunkCrypto>();
  private sendKeys: ChunkCrypto | null = null;
  private ack: { resolve: () => void; reject: (e: Error) => void } | null = null;
  private serverNonce: Buffer = Buffer.alloc(0);
  private failure: Error | null = null;

  private constructor(socket: Socket, options: SecureClientOptions) {
    this.socket = socket;
    this.options = options;
    this.alg = policyByUri(options.policyUri);
    socket.setNoDelay(true);
    socket.on("data", (d: Buffer) => this.splitter.feed(d));
    socket.on("error", () => {});
    this.closed = new Promise((resolve) =>
      socket.on("close", () => {
        this.fail(new SecureClientError("connection closed", this.errorStatus ?? StatusCodes.BadConnectionClosed));
        resolve();
      }),
    );
  }

  /** TCP connect and HEL/ACK. */
  static connect(options: SecureClientOptions): Promise<SecureClientChannel> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: options.host, port: options.port });
      socket.once("error", reject);
      socket.once("connect", () => {
        socket.off("error", reject);
        const c = new SecureClientChannel(socket, options);
        c.ack = { resolve: () => resolve(c), reject };
        const w = new BinaryWriter(Buffer.allocUnsafe(256));
        writeHello(w, options.endpointUrl ?? `opc.tcp://${options.host}:${options.port}`, {
          receiveBufferSize: 1 << 16,
          sendBufferSize: 1 << 16,
          maxMessageSize: 0,
          maxChunkCount: 0,
        });
        socket.write(Buffer.from(w.view()));
      });
    });
  }

  /** connect + OPN Issue. */
  static async open(options: SecureClientOptions): Promise<SecureClientChannel> {
    const c = await SecureClientChannel.connect(options);
    try {
      await c.openSecureChannel(SecurityTokenRequestType.Issue);
    } catch (err) {
      c.destroy();
      throw err;
    }
    return c;
  }

  requestHeader(): RequestHeader {
    return {
      authenticationToken: this.authenticationToken,
      timestamp: Date.now(),
      requestHandle: this.requestId + 1,
      returnDiagnostics: 0,
      auditEntryId: undefined,
      timeoutHint: this.options.timeoutMs ?? 10_000,
      additionalHeader: { typeId: NULL_NODE_ID, body: null },
    };
  }

  /** The OPN chunk of an Issue or Renew, secured; `patch` may spoil it (tests). */
  buildOpen(requestType: SecurityTokenRequestType, clientNonce: Buffer): Buffer {
    const o = this.options;
    const w = new BinaryWriter(Buffer.allocUnsafe(8192));
    w.pos = HEADER_SIZE;
    w.writeUInt32(this.channelId);
    w.writeString(o.policyUri);
    const secured = this.alg !== undefined;
    w.writeByteString(secured ? o.certificate : undefined);
    w.writeByteString(secured ? thumbprint(o.serverCertificate!) : undefined);
    const encStart = w.pos;
    w.writeUInt32(++this.sequenceNumber);
    w.writeUInt32(++this.requestId);
    encodeNodeId(w, numericNodeId(ObjectIds.OpenSecureChannelRequest_Encoding_DefaultBinary));
    encodeOpenSecureChannelRequest(w, {
      requestHeader: this.requestHeader(),
      clientProtocolVersion: 0,
      requestType,
      securityMode: o.mode,
      clientNonce: secured ? clientNonce : undefined,
      requestedLifetime: o.requestedLifetimeMs ?? 3_600_000,
    });
    const crypto = secured
      ? asymmetricCrypto(this.alg!, o.privateKey!, publicKeyOf(o.serverCertificate!))
      : SecurityPolicyNone.openAsymmetric(undefined, undefined).send;
    return this.finish(w, FrameKind.OPNF, encStart, crypto);
  }

  async openSecureChannel(requestType: SecurityTokenRequestType): Promise<void> {
    const clientNonce = this.alg ? randomBytes(this.alg.nonceLength) : Buffer.alloc(0);
    const frame = this.buildOpen(requestType, clientNonce);
    const body = await this.send(this.requestId, frame);
    const r = this.reader.setBuffer(body);
    decodeNodeId(r);
    const res = decodeOpenSecureChannelResponse(r);
    if (res.responseHeader.serviceResult !== StatusCodes.Good) throw new SecureClientError("OPN refused", res.responseHeader.serviceResult);
    this.channelId = res.securityToken.channelId;
    this.tokenId = res.securityToken.tokenId;
    if (this.alg) {
      const serverNonce = res.serverNonce ?? Buffer.alloc(0);
      const encrypt = this.options.mode === MessageSecurityMode.SignAndEncrypt;
      // Part 6 §6.7.5: our keys from (ServerNonce, ClientNonce), the server's the other way round.
      this.sendKeys = symmetricCrypto(deriveKeys(this.alg, serverNonce, clientNonce), encrypt);
      this.receiveKeys.set(this.tokenId, symmetricCrypto(deriveKeys(this.alg, clientNonce, serverNonce), encrypt));
    } else {
      const none = SecurityPolicyNone.deriveKeys(MessageSecurityMode.None, undefined, undefined);
      this.sendKeys = none.send;
      this.receiveKeys.set(this.tokenId, none.receive);
    }
  }

  /** One MSG chunk with `body` (an encoding NodeId and a structure), secured with the current token. */
  buildMessage<T>(encodingId: number, encode: (w: BinaryWriter, v: T) => void, value: T, kind = FrameKind.MSGF): Buffer {
    const w = new BinaryWriter(Buffer.allocUnsafe(1024));
    w.pos = HEADER_SIZE;
    w.writeUInt32(this.channelId);
    w.writeUInt32(this.tokenId);
    const encStart = w.pos;
    w.writeUInt32(++this.sequenceNumber);
    w.writeUInt32(++this.requestId);
    encodeNodeId(w, numericNodeId(encodingId));
    encode(w, value);
    return this.finish(w, kind, encStart, this.sendKeys!);
  }

  /** Pads, signs, encrypts the chunk written in `w` from `encStart` on; returns a copy of it. */
  private finish(w: BinaryWriter, kind: FrameKind, encStart: number, crypto: ChunkCrypto): Buffer {
    const plain = w.pos - encStart;
    const size = encStart + crypto.cipherLength(plain + crypto.trailerSize(plain));
    const bodyEnd = w.pos;
    w.ensure(size - w.pos + 16);
    w.buffer.writeUInt32LE(kind, 0);
    w.buffer.writeUInt32LE(size, 4);
    crypto.secure(w.buffer, 0, encStart, bodyEnd);
    return Buffer.from(w.buffer.subarray(0, size));
  }

  /** Sends one request, resolves with the response body (from its encoding NodeId on). */
  async call<Req, Res>(requestEncodingId: number, encode: (w: BinaryWriter, v: Req) => void, request: Req, decode: (r: BinaryReader) => Res): Promise<Res> {
    const frame = this.buildMessage(requestEncodingId, encode, request);
    const body = await this.send(this.requestId, frame);
    const r = new BinaryReader().setBuffer(body);
    const typeId = decodeNodeId(r);
    if (typeId.value === ObjectIds.ServiceFault_Encoding_DefaultBinary) {
      const h = decodeResponseHeader(r);
      throw new SecureClientError(`ServiceFault ${statusCodeName(h.serviceResult)}`, h.serviceResult);
    }
    return decode(r);
  }

  /** Writes a frame and waits for the response to `requestId`. */
  send(requestId: number, frame: Buffer): Promise<Buffer> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(requestId);
        reject(new SecureClientError("timeout", StatusCodes.BadTimeout));
      }, this.options.timeoutMs ?? 10_000);
      this.pending.set(requestId, {
        resolve: (b) => {
          clearTimeout(timer);
          resolve(b);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
        parts: [],
      });
      this.socket.write(frame);
    });
  }

  /** CreateSession (with our certificate, checking serverSignature) and ActivateSession (clientSignature, anonymous). */
  async createSession(): Promise<void> {
    const clientNonce = randomBytes(32);
    const o = this.options;
    const created = await this.call(
      ObjectIds.CreateSessionRequest_Encoding_DefaultBinary,
      encodeCreateSessionRequest,
      {
        requestHeader: this.requestHeader(),
        clientDescription: {
          applicationUri: o.applicationUri ?? "urn:fieldgate:test-client",
          productUri: "urn:fieldgate:bench",
          applicationName: { text: "fieldgate secure client" },
          applicationType: ApplicationType.Client,
          gatewayServerUri: undefined,
          discoveryProfileUri: undefined,
          discoveryUrls: undefined,
        },
        serverUri: undefined,
        endpointUrl: o.endpointUrl ?? `opc.tcp://${o.host}:${o.port}`,
        sessionName: "secure",
        clientNonce,
        clientCertificate: this.alg ? o.certificate : undefined,
        requestedSessionTimeout: 60_000,
        maxResponseMessageSize: 0,
      },
      decodeCreateSessionResponse,
    );
    if (created.responseHeader.serviceResult !== StatusCodes.Good) throw new SecureClientError("CreateSession", created.responseHeader.serviceResult);
    this.authenticationToken = created.authenticationToken;
    this.serverNonce = created.serverNonce ?? Buffer.alloc(0);
    let clientSignature: { algorithm: string | undefined; signature: Buffer | undefined } = { algorithm: undefined, signature: undefined };
    if (this.alg) {
      const sig = created.serverSignature.signature ?? Buffer.alloc(0);
      const serverKey = publicKeyOf(o.serverCertificate!);
      if (!asymmetricVerify(this.alg, [o.certificate!, clientNonce], sig, serverKey)) {
        throw new SecureClientError("serverSignature does not verify", StatusCodes.BadApplicationSignatureInvalid);
      }
      clientSignature = { algorithm: this.alg.asymmetricSignatureUri, signature: asymmetricSign(this.alg, [o.serverCertificate!, this.serverNonce], o.privateKey!) };
    }
    const activated = await this.call(
      ObjectIds.ActivateSessionRequest_Encoding_DefaultBinary,
      encodeActivateSessionRequest,
      {
        requestHeader: this.requestHeader(),
        clientSignature,
        clientSoftwareCertificates: undefined,
        localeIds: undefined,
        userIdentityToken: { typeId: numericNodeId(ObjectIds.AnonymousIdentityToken_Encoding_DefaultBinary), body: { policyId: "anonymous" } },
        userTokenSignature: { algorithm: undefined, signature: undefined },
      },
      decodeActivateSessionResponse,
    );
    if (activated.responseHeader.serviceResult !== StatusCodes.Good) throw new SecureClientError("ActivateSession", activated.responseHeader.serviceResult);
  }

  /** CloseSecureChannel (no response) and end the socket. */
  async close(): Promise<void> {
    if (!this.failure && this.sendKeys) {
      this.socket.end(this.buildMessage(ObjectIds.CloseSecureChannelRequest_Encoding_DefaultBinary, encodeCloseSecureChannelRequest, { requestHeader: this.requestHeader() }, FrameKind.CLOF));
    } else {
      this.socket.destroy();
    }
    await this.closed;
  }

  destroy(): void {
    this.socket.destroy();
  }

  // ---------------------------------------------------------------- FrameSink

  onFrame(buffer: Buffer, start: number, end: number): void {
    const kind = buffer.readUInt32LE(start) as FrameKind;
    const frame = Buffer.from(buffer.subarray(start, end));
    try {
      if (kind === FrameKind.ACKF) {
        readAcknowledge(this.reader.setBuffer(frame, HEADER_SIZE));
        const a = this.ack;
        this.ack = null;
        a?.resolve();
      } else if (kind === FrameKind.ERRF) {
        const { error, reason } = readErrorMessage(this.reader.setBuffer(frame, HEADER_SIZE));
        this.errorStatus = error;
        this.fail(new SecureClientError(`ERR ${statusCodeName(error)}${reason ? `: ${reason}` : ""}`, error));
      } else if (kind === FrameKind.OPNF) {
        this.onOpenResponse(frame);
      } else if (kind === FrameKind.MSGF || kind === FrameKind.MSGC || kind === FrameKind.MSGA) {
        this.onMessage(kind, frame);
      }
    } catch (err) {
      this.fail(err instanceof Error ? err : new Error(String(err)));
      this.socket.destroy();
    }
  }

  onFramingError(message: string): void {
    this.fail(new SecureClientError(message, StatusCodes.BadDecodingError));
    this.socket.destroy();
  }

  private onOpenResponse(frame: Buffer): void {
    const r = this.reader.setBuffer(frame, HEADER_SIZE);
    r.readUInt32();
    r.readString();
    r.readByteStringView();
    r.readByteStringView();
    const encStart = r.pos;
    let end = frame.length;
    if (this.alg) {
      const o = this.options;
      end = asymmetricCrypto(this.alg, publicKeyOf(o.serverCertificate!), o.privateKey!).unsecure(frame, 0, encStart, frame.length);
    }
    this.deliver(FrameKind.MSGF, frame.readUInt32LE(encStart + 4), frame.subarray(encStart + SEQ, end));
  }

  private onMessage(kind: FrameKind, frame: Buffer): void {
    const keys = this.receiveKeys.get(frame.readUInt32LE(12));
    if (keys === undefined) throw new SecureClientError("response with an unknown token", StatusCodes.BadSecureChannelTokenUnknown);
    const end = keys.unsecure(frame, 0, SYM_HEADERS, frame.length);
    this.deliver(kind, frame.readUInt32LE(SYM_HEADERS + 4), frame.subarray(SYM_HEADERS + SEQ, end));
  }

  private deliver(kind: FrameKind, requestId: number, body: Buffer): void {
    const p = this.pending.get(requestId);
    if (p === undefined) return;
    if (kind === FrameKind.MSGC) {
      p.parts.push(body);
      return;
    }
    this.pending.delete(requestId);
    if (kind === FrameKind.MSGA) p.reject(new SecureClientError("aborted", StatusCodes.BadRequestInterrupted));
    else p.resolve(p.parts.length > 0 ? Buffer.concat([...p.parts, body]) : body);
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    const a = this.ack;
    this.ack = null;
    a?.reject(err);
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
}
