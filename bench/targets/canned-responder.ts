// A UA-TCP responder that answers from canned frames: Hello, OPN, CreateSession,
// ActivateSession, CloseSession and CLO are decoded and answered properly (they are few), and
// every Read is answered with a response encoded once per request size, with only requestId,
// sequence number and requestHandle patched. It does no per-request decoding and no service
// work, so it measures what the load client and Node's socket I/O can do on this machine:
// the `echo` target (the client's ceiling) runs it in its own process, and the `floor` target
// with the gateway's node flags (what Node costs per Read, echo.ts). Tests use it as a fake
// server, with ServiceFaults every Nth Read and responses split across socket writes.
//
// A cached Read response is keyed by the request's byte length and its TimestampsToReturn: one
// bench run reads the same nodes in every request, so one size means one set of nodes.
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { decodeNodeId, encodeNodeId } from "../../src/ua/builtin-codec.js";
import { BuiltinType, IdType, NULL_NODE_ID, numericNodeId, scalar, type ExtensionObject } from "../../src/ua/builtins.js";
import { ApplicationType, MessageSecurityMode, TimestampsToReturn, UserTokenType } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import {
  decodeActivateSessionRequest,
  decodeReadRequest,
  decodeRequestHeader,
  encodeActivateSessionResponse,
  encodeCloseSessionResponse,
  encodeCreateSessionResponse,
  encodeOpenSecureChannelResponse,
  encodeReadResponse,
  encodeServiceFault,
  type ResponseHeader,
} from "../../src/ua/generated/types.js";
import {
  FrameKind,
  FrameSplitter,
  HEADER_SIZE,
  MSG_BODY_OFFSET,
  MSG_OFFSET_REQUEST_ID,
  MSG_OFFSET_SEQUENCE,
  SECURITY_POLICY_NONE,
  beginFrame,
  beginMessageFrame,
  beginOpenFrame,
  finishFrame,
  skipAsymmetricHeader,
  type FrameSink,
} from "../client/ua-tcp.js";

export interface CannedResponderOptions {
  /** Answer every Nth Read with a ServiceFault (0: never). */
  faultEvery?: number;
  /** Write each socket batch in two writes split at this byte (0: one write), to exercise reassembly. */
  splitAt?: number;
  /** Send each Read response as two chunks (MSG "C" then "F"), the first with this many body bytes (0: one chunk). */
  chunkBodyAt?: number;
  /** The anonymous policyId offered in CreateSession's endpoints. */
  anonymousPolicyId?: string;
  host?: string;
  port?: number;
}

export interface CannedResponder {
  readonly port: number;
  readonly host: string;
  /** Read requests answered (counted across connections). */
  reads: number;
  /** policyIds the clients activated with. */
  readonly activatedPolicies: string[];
  closedSessions: number;
  closedChannels: number;
  close(): Promise<void>;
}

const CHANNEL_ID = 7;
const TOKEN_ID = 1;
const NO_HEADER: ExtensionObject = Object.freeze({ typeId: NULL_NODE_ID, body: null });
const AUTH_TOKEN = Object.freeze({ namespace: 0, idType: IdType.Opaque, value: Buffer.from("canned-session-token") });
/** FourByte NodeId of ReadRequest's encoding, as the body of a MSG starts with it. */
const READ_REQUEST_TYPE = 0x01 | (0 << 8) | (ObjectIds.ReadRequest_Encoding_DefaultBinary << 16);
/** requestHandle in a ReadRequest: type id (4), authenticationToken (added per session), timestamp (8). */
const REQUEST_HANDLE_AT = MSG_BODY_OFFSET + 4 + 8;

function responseHeader(requestHandle: number, serviceResult: number = StatusCodes.Good): ResponseHeader {
  return { timestamp: Date.now(), requestHandle, serviceResult, serviceDiagnostics: {}, stringTable: undefined, additionalHeader: NO_HEADER };
}

/** A Read response made once, for requests of one size and one TimestampsToReturn. */
interface CannedRead {
  readonly bytes: Buffer;
  /** Where the request's TimestampsToReturn is, from the frame's start, and its low byte. */
  readonly modeAt: number;
  readonly mode: number;
}

class Connection implements FrameSink {
  private readonly splitter = new FrameSplitter(this, 1 << 16);
  private readonly w = new BinaryWriter(Buffer.allocUnsafe(1 << 16));
  private readonly r = new BinaryReader();
  /** Responses of one socket read, sent in one write. */
  private out = Buffer.allocUnsafe(1 << 16);
  private outLen = 0;
  private seq = 0;

  constructor(
    private readonly socket: Socket,
    private readonly responder: Responder,
  ) {}

  feed(chunk: Buffer): void {
    this.splitter.feed(chunk);
    if (this.outLen > 0 && this.socket.writable) this.flush();
  }

  private flush(): void {
    // A copy: `out` is reused for the next batch while this one may still be queued.
    const bytes = Buffer.from(this.out.subarray(0, this.outLen));
    this.outLen = 0;
    const cut = this.responder.options.splitAt ?? 0;
    if (cut > 0 && cut < bytes.length) {
      this.socket.write(bytes.subarray(0, cut));
      this.socket.write(bytes.subarray(cut));
    } else {
      this.socket.write(bytes);
    }
  }

  private append(frame: Buffer, start = 0, end = frame.length): number {
    const n = end - start;
    if (this.outLen + n > this.out.length) {
      const next = Buffer.allocUnsafe(Math.max(this.out.length * 2, this.outLen + n));
      this.out.copy(next, 0, 0, this.outLen);
      this.out = next;
    }
    const at = this.outLen;
    frame.copy(this.out, at, start, end);
    this.outLen += n;
    return at;
  }

  onFramingError(): void {
    this.socket.destroy();
  }

  onFrame(buffer: Buffer, start: number, end: number): void {
    const kind = buffer.readUInt32LE(start);
    if (kind === FrameKind.MSGF) {
      if (end - start >= MSG_BODY_OFFSET + 4 && buffer.readUInt32LE(start + MSG_BODY_OFFSET) === READ_REQUEST_TYPE) {
        this.read(buffer, start, end);
      } else {
        this.service(buffer, start, end);
      }
    } else if (kind === FrameKind.HELF) {
      const w = this.w.reset();
      const at = beginFrame(w, FrameKind.ACKF);
      for (const v of [0, 1 << 16, 1 << 16, 0, 0]) w.writeUInt32(v);
      finishFrame(w, at);
      this.append(w.buffer, 0, w.pos);
    } else if (kind === FrameKind.OPNF) {
      this.open(buffer, start, end);
    } else if (kind === FrameKind.CLOF) {
      this.responder.state.closedChannels++;
      if (this.outLen > 0) this.flush();
      this.socket.end();
    } else {
      this.socket.destroy();
    }
  }

  private read(buffer: Buffer, start: number, end: number): void {
    const responder = this.responder;
    const n = ++responder.state.reads;
    const requestId = buffer.readUInt32LE(start + MSG_OFFSET_REQUEST_ID);
    const faultEvery = responder.options.faultEvery ?? 0;
    const handleAt = start + REQUEST_HANDLE_AT + responder.tokenLength;
    if (faultEvery > 0 && n % faultEvery === 0) {
      const w = this.beginReply(requestId, ObjectIds.ServiceFault_Encoding_DefaultBinary);
      encodeServiceFault(w, { responseHeader: responseHeader(buffer.readUInt32LE(handleAt), StatusCodes.BadTooManyOperations) });
      finishFrame(w, 0);
      this.append(w.buffer, 0, w.pos);
      return;
    }
    const template = this.readResponse(buffer, start, end);
    const at = this.append(template);
    const out = this.out;
    out.writeUInt32LE(++this.seq, at + MSG_OFFSET_SEQUENCE);
    out.writeUInt32LE(requestId, at + MSG_OFFSET_REQUEST_ID);
    // ResponseHeader: type id (4), timestamp (8), then requestHandle.
    out.writeUInt32LE(buffer.readUInt32LE(handleAt), at + MSG_BODY_OFFSET + 4 + 8);
    const cut = responder.options.chunkBodyAt ?? 0;
    if (cut > 0 && cut < template.length - MSG_BODY_OFFSET) this.rechunk(at, cut);
  }

  /**
   * Part 6 §6.7.2: turns the single-chunk message at `at` into an intermediate chunk with the
   * first `cut` body bytes and a final chunk with the rest, each with its own headers.
   */
  private rechunk(at: number, cut: number): void {
    const whole = Buffer.from(this.out.subarray(at, this.outLen));
    this.outLen = at;
    const first = Buffer.concat([whole.subarray(0, MSG_BODY_OFFSET), whole.subarray(MSG_BODY_OFFSET, MSG_BODY_OFFSET + cut)]);
    const last = Buffer.concat([whole.subarray(0, MSG_BODY_OFFSET), whole.subarray(MSG_BODY_OFFSET + cut)]);
    first.writeUInt32LE(FrameKind.MSGC, 0);
    first.writeUInt32LE(first.length, 4);
    last.writeUInt32LE(last.length, 4);
    last.writeUInt32LE(++this.seq, MSG_OFFSET_SEQUENCE);
    this.append(first);
    this.append(last);
  }

  /** The canned response to this request: by its size, and its TimestampsToReturn (one byte looked at). */
  private readResponse(buffer: Buffer, start: number, end: number): Buffer {
    const size = end - start;
    let cached = this.responder.readResponses.get(size);
    if (cached !== undefined) {
      for (const c of cached) if (buffer[start + c.modeAt] === c.mode) return c.bytes;
    } else {
      this.responder.readResponses.set(size, (cached = []));
    }
    const made = this.encodeReadResponse(buffer, start, end);
    cached.push(made);
    return made.bytes;
  }

  /**
   * The one full decode per request size and TimestampsToReturn: as many DateTime results as nodes read, each with the
   * timestamps the request asks for (Part 4 §7.40), as a server answers a Read of
   * Server_ServerStatus_CurrentTime: the same bytes on the wire as fieldgate's response.
   */
  private encodeReadResponse(buffer: Buffer, start: number, end: number): CannedRead {
    const r = this.r.setBuffer(buffer, start + MSG_BODY_OFFSET, end);
    decodeNodeId(r);
    decodeRequestHeader(r);
    r.readDouble(); // maxAge
    const modeAt = r.pos - start;
    r.pos = start + MSG_BODY_OFFSET;
    decodeNodeId(r);
    const request = decodeReadRequest(r);
    const now = Date.now();
    const mode = request.timestampsToReturn;
    const source = mode === TimestampsToReturn.Source || mode === TimestampsToReturn.Both ? now : undefined;
    const server = mode === TimestampsToReturn.Server || mode === TimestampsToReturn.Both ? now : undefined;
    const w = this.beginReply(0, ObjectIds.ReadResponse_Encoding_DefaultBinary);
    encodeReadResponse(w, {
      responseHeader: responseHeader(0),
      results: (request.nodesToRead ?? []).map(() => ({ value: scalar(BuiltinType.DateTime, now), sourceTimestamp: source, serverTimestamp: server })),
      diagnosticInfos: undefined,
    });
    finishFrame(w, 0);
    // TimestampsToReturn is an Int32 of 0-3: its low byte tells it.
    return { bytes: Buffer.from(w.view()), modeAt, mode: mode & 0xff };
  }

  private beginReply(requestId: number, typeId: number): BinaryWriter {
    const w = this.w.reset();
    beginMessageFrame(w, FrameKind.MSGF, CHANNEL_ID, TOKEN_ID, ++this.seq, requestId);
    encodeNodeId(w, numericNodeId(typeId));
    return w;
  }

  private open(buffer: Buffer, start: number, end: number): void {
    const r = this.r.setBuffer(buffer, start + HEADER_SIZE, end);
    skipAsymmetricHeader(r);
    r.readUInt32(); // SequenceNumber
    const requestId = r.readUInt32();
    decodeNodeId(r);
    const header = decodeRequestHeader(r);
    const w = this.w.reset();
    beginOpenFrame(w, CHANNEL_ID, ++this.seq, requestId);
    encodeNodeId(w, numericNodeId(ObjectIds.OpenSecureChannelResponse_Encoding_DefaultBinary));
    encodeOpenSecureChannelResponse(w, {
      responseHeader: responseHeader(header.requestHandle),
      serverProtocolVersion: 0,
      securityToken: { channelId: CHANNEL_ID, tokenId: TOKEN_ID, createdAt: Date.now(), revisedLifetime: 3_600_000 },
      serverNonce: undefined,
    });
    finishFrame(w, 0);
    this.append(w.buffer, 0, w.pos);
  }

  private service(buffer: Buffer, start: number, end: number): void {
    const state = this.responder.state;
    const requestId = buffer.readUInt32LE(start + MSG_OFFSET_REQUEST_ID);
    const r = this.r.setBuffer(buffer, start + MSG_BODY_OFFSET, end);
    const typeId = decodeNodeId(r).value;
    let w: BinaryWriter;
    if (typeId === ObjectIds.CreateSessionRequest_Encoding_DefaultBinary) {
      const header = decodeRequestHeader(r);
      w = this.beginReply(requestId, ObjectIds.CreateSessionResponse_Encoding_DefaultBinary);
      encodeCreateSessionResponse(w, {
        responseHeader: responseHeader(header.requestHandle),
        sessionId: numericNodeId(1, 1),
        authenticationToken: AUTH_TOKEN,
        revisedSessionTimeout: 60_000,
        serverNonce: undefined,
        serverCertificate: undefined,
        serverEndpoints: [
          {
            endpointUrl: `opc.tcp://${this.responder.host}:${this.responder.port}`,
            server: {
              applicationUri: "urn:fieldgate:bench:canned",
              productUri: "urn:fieldgate:bench",
              applicationName: { text: "canned responder" },
              applicationType: ApplicationType.Server,
              gatewayServerUri: undefined,
              discoveryProfileUri: undefined,
              discoveryUrls: undefined,
            },
            serverCertificate: undefined,
            securityMode: MessageSecurityMode.None,
            securityPolicyUri: SECURITY_POLICY_NONE,
            userIdentityTokens: [
              {
                policyId: this.responder.options.anonymousPolicyId ?? "anonymous",
                tokenType: UserTokenType.Anonymous,
                issuedTokenType: undefined,
                issuerEndpointUrl: undefined,
                securityPolicyUri: undefined,
              },
            ],
            transportProfileUri: "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary",
            securityLevel: 0,
          },
        ],
        serverSoftwareCertificates: undefined,
        serverSignature: { algorithm: undefined, signature: undefined },
        maxRequestMessageSize: 0,
      });
    } else if (typeId === ObjectIds.ActivateSessionRequest_Encoding_DefaultBinary) {
      const request = decodeActivateSessionRequest(r);
      const token = request.userIdentityToken?.body as { policyId?: string } | undefined;
      state.activatedPolicies.push(token?.policyId ?? "");
      w = this.beginReply(requestId, ObjectIds.ActivateSessionResponse_Encoding_DefaultBinary);
      encodeActivateSessionResponse(w, {
        responseHeader: responseHeader(request.requestHeader.requestHandle),
        serverNonce: undefined,
        results: undefined,
        diagnosticInfos: undefined,
      });
    } else if (typeId === ObjectIds.CloseSessionRequest_Encoding_DefaultBinary) {
      const header = decodeRequestHeader(r);
      state.closedSessions++;
      w = this.beginReply(requestId, ObjectIds.CloseSessionResponse_Encoding_DefaultBinary);
      encodeCloseSessionResponse(w, { responseHeader: responseHeader(header.requestHandle) });
    } else {
      w = this.beginReply(requestId, ObjectIds.ServiceFault_Encoding_DefaultBinary);
      encodeServiceFault(w, { responseHeader: responseHeader(0, StatusCodes.BadServiceUnsupported) });
    }
    finishFrame(w, 0);
    this.append(w.buffer, 0, w.pos);
  }
}

class Responder {
  readonly readResponses = new Map<number, CannedRead[]>();
  /** Bytes of the authenticationToken NodeId in requests (Opaque: 1 + 2 + 4 + length). */
  readonly tokenLength = 7 + AUTH_TOKEN.value.length;
  host = "127.0.0.1";
  port = 0;

  constructor(
    readonly options: CannedResponderOptions,
    readonly state: CannedResponder,
  ) {}
}

export async function startCannedResponder(options: CannedResponderOptions = {}): Promise<CannedResponder> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const state: CannedResponder = {
    get port() {
      return responder.port;
    },
    get host() {
      return responder.host;
    },
    reads: 0,
    activatedPolicies: [],
    closedSessions: 0,
    closedChannels: 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        if (server) server.close(() => resolve());
        else resolve();
      }),
  };
  const responder = new Responder(options, state);
  server = createServer((socket) => {
    sockets.add(socket);
    socket.setNoDelay(true);
    const connection = new Connection(socket, responder);
    socket.on("data", (chunk: Buffer) => connection.feed(chunk));
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  });
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server!.once("error", reject);
    server!.listen(options.port ?? 0, host, resolve);
  });
  responder.host = host;
  responder.port = (server.address() as AddressInfo).port;
  return state;
}
