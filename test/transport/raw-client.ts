// A tiny raw UA-TCP client for the transport tests. It encodes every frame by hand (not with the
// code under test), so the tests check the wire format independently, and can send anything,
// split anywhere.
import net from "node:net";

export const POLICY_NONE = "http://opcfoundation.org/UA/SecurityPolicy#None";
export const OPN_REQUEST_ENCODING = 446;
export const OPN_RESPONSE_ENCODING = 449;
/** The request type the test handler answers (any numeric id works; the handler does not decode it). */
export const TEST_REQUEST_ENCODING = 631;
export const TEST_RESPONSE_ENCODING = 634;

class Out {
  private parts: Buffer[] = [];
  u8(v: number): this {
    this.parts.push(Buffer.from([v & 0xff]));
    return this;
  }
  u32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v >>> 0);
    this.parts.push(b);
    return this;
  }
  i32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.parts.push(b);
    return this;
  }
  u16(v: number): this {
    const b = Buffer.alloc(2);
    b.writeUInt16LE(v);
    this.parts.push(b);
    return this;
  }
  i64(v: bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigInt64LE(v);
    this.parts.push(b);
    return this;
  }
  str(v: string | null): this {
    if (v === null) return this.i32(-1);
    const b = Buffer.from(v, "utf8");
    return this.i32(b.length).bytes(b);
  }
  bytes(b: Buffer): this {
    this.parts.push(b);
    return this;
  }
  /** A numeric NodeId in the four-byte form (namespace 0, id < 65536). */
  nodeId(id: number): this {
    return this.u8(0x01).u8(0).u16(id);
  }
  done(): Buffer {
    return Buffer.concat(this.parts);
  }
}

export function frame(type: string, chunkType: string, body: Buffer, sizeOverride?: number): Buffer {
  const head = Buffer.alloc(8);
  head.write(type, 0, 3, "latin1");
  head.write(chunkType, 3, 1, "latin1");
  head.writeUInt32LE(sizeOverride ?? body.length + 8, 4);
  return Buffer.concat([head, body]);
}

export interface HelloOptions {
  protocolVersion?: number;
  receiveBufferSize?: number;
  sendBufferSize?: number;
  maxMessageSize?: number;
  maxChunkCount?: number;
  endpointUrl?: string;
}

export function hello(o: HelloOptions = {}): Buffer {
  const body = new Out()
    .u32(o.protocolVersion ?? 0)
    .u32(o.receiveBufferSize ?? 65536)
    .u32(o.sendBufferSize ?? 65536)
    .u32(o.maxMessageSize ?? 0)
    .u32(o.maxChunkCount ?? 0)
    .str(o.endpointUrl ?? "opc.tcp://127.0.0.1:4840")
    .done();
  return frame("HEL", "F", body);
}

/** A RequestHeader with a null token, the given handle, and no extras. */
function requestHeader(out: Out, requestHandle: number): Out {
  return out
    .u8(0x00)
    .u8(0x00) // authenticationToken: TwoByte NodeId 0
    .i64(0n) // timestamp
    .u32(requestHandle)
    .u32(0) // returnDiagnostics
    .str(null) // auditEntryId
    .u32(10000) // timeoutHint
    .u8(0)
    .u8(0)
    .u8(0); // additionalHeader: null ExtensionObject
}

export interface OpenOptions {
  channelId?: number;
  policyUri?: string;
  sequenceNumber: number;
  requestId: number;
  requestType?: 0 | 1;
  securityMode?: number;
  requestedLifetime?: number;
  clientProtocolVersion?: number;
  requestHandle?: number;
}

export function open(o: OpenOptions): Buffer {
  const body = new Out()
    .u32(o.channelId ?? 0)
    .str(o.policyUri ?? POLICY_NONE)
    .i32(-1)
    .i32(-1)
    .u32(o.sequenceNumber)
    .u32(o.requestId)
    .nodeId(OPN_REQUEST_ENCODING);
  requestHeader(body, o.requestHandle ?? 1)
    .u32(o.clientProtocolVersion ?? 0)
    .u32(o.requestType ?? 0)
    .u32(o.securityMode ?? 1)
    .i32(-1) // clientNonce
    .u32(o.requestedLifetime ?? 600000);
  return frame("OPN", "F", body.done());
}

export interface SymmetricOptions {
  channelId: number;
  tokenId: number;
  sequenceNumber: number;
  requestId: number;
  chunkType?: "F" | "C" | "A";
}

/** A MSG chunk whose body is `payload` (for the first chunk of a request: testRequest(...)). */
export function msg(o: SymmetricOptions, payload: Buffer): Buffer {
  const body = new Out().u32(o.channelId).u32(o.tokenId).u32(o.sequenceNumber).u32(o.requestId).bytes(payload).done();
  return frame("MSG", o.chunkType ?? "F", body);
}

export function clo(o: SymmetricOptions): Buffer {
  const body = new Out().u32(o.channelId).u32(o.tokenId).u32(o.sequenceNumber).u32(o.requestId).nodeId(452);
  requestHeader(body, 99);
  return frame("CLO", "F", body.done());
}

/**
 * The body of a request the test handler understands: encoding NodeId, then the size of the
 * response body it should send, then `padding` bytes of filler.
 */
export function testRequest(responseSize: number, padding = 0): Buffer {
  return new Out().nodeId(TEST_REQUEST_ENCODING).u32(responseSize).bytes(Buffer.alloc(padding, 0x5a)).done();
}

export interface Frame {
  type: string;
  chunkType: string;
  size: number;
  /** Everything after the 8-byte header. */
  body: Buffer;
}

export interface Ack {
  protocolVersion: number;
  receiveBufferSize: number;
  sendBufferSize: number;
  maxMessageSize: number;
  maxChunkCount: number;
}

export function parseAck(f: Frame): Ack {
  const b = f.body;
  return {
    protocolVersion: b.readUInt32LE(0),
    receiveBufferSize: b.readUInt32LE(4),
    sendBufferSize: b.readUInt32LE(8),
    maxMessageSize: b.readUInt32LE(12),
    maxChunkCount: b.readUInt32LE(16),
  };
}

export function parseErr(f: Frame): { status: number; reason: string } {
  const n = f.body.readInt32LE(4);
  return { status: f.body.readUInt32LE(0), reason: n > 0 ? f.body.toString("utf8", 8, 8 + n) : "" };
}

export interface OpenResult {
  channelId: number;
  policyUri: string;
  sequenceNumber: number;
  requestId: number;
  requestHandle: number;
  serviceResult: number;
  tokenChannelId: number;
  tokenId: number;
  revisedLifetime: number;
}

/** Decodes an OPN response by hand (policy None: no certificates, empty nonce). */
export function parseOpen(f: Frame): OpenResult {
  const b = f.body;
  let p = 0;
  const channelId = b.readUInt32LE(p);
  p += 4;
  const uriLen = b.readInt32LE(p);
  p += 4;
  const policyUri = b.toString("utf8", p, p + Math.max(0, uriLen));
  p += Math.max(0, uriLen);
  for (let i = 0; i < 2; i++) {
    const n = b.readInt32LE(p);
    p += 4 + Math.max(0, n);
  }
  const sequenceNumber = b.readUInt32LE(p);
  const requestId = b.readUInt32LE(p + 4);
  p += 8;
  if (b[p] !== 0x01 || b.readUInt16LE(p + 2) !== OPN_RESPONSE_ENCODING) throw new Error("not an OpenSecureChannelResponse");
  p += 4;
  p += 8; // timestamp
  const requestHandle = b.readUInt32LE(p);
  const serviceResult = b.readUInt32LE(p + 4);
  p += 8;
  if (b[p] !== 0) throw new Error("unexpected diagnostics");
  p += 1;
  if (b.readInt32LE(p) !== -1) throw new Error("unexpected string table");
  p += 4;
  p += 3; // null additionalHeader
  p += 4; // serverProtocolVersion
  const tokenChannelId = b.readUInt32LE(p);
  const tokenId = b.readUInt32LE(p + 4);
  const revisedLifetime = b.readUInt32LE(p + 16);
  return { channelId, policyUri, sequenceNumber, requestId, requestHandle, serviceResult, tokenChannelId, tokenId, revisedLifetime };
}

export interface MsgChunk {
  channelId: number;
  tokenId: number;
  sequenceNumber: number;
  requestId: number;
  body: Buffer;
}

export function parseMsg(f: Frame): MsgChunk {
  const b = f.body;
  return {
    channelId: b.readUInt32LE(0),
    tokenId: b.readUInt32LE(4),
    sequenceNumber: b.readUInt32LE(8),
    requestId: b.readUInt32LE(12),
    body: b.subarray(16),
  };
}

export class RawClient {
  readonly socket: net.Socket;
  readonly frames: Frame[] = [];
  closed = false;
  private acc: Buffer = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  /** Bytes received in total. */
  received = 0;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on("data", (d: Buffer) => {
      this.received += d.length;
      this.acc = this.acc.length === 0 ? d : Buffer.concat([this.acc, d]);
      while (this.acc.length >= 8) {
        const size = this.acc.readUInt32LE(4);
        if (this.acc.length < size) break;
        this.frames.push({
          type: this.acc.toString("latin1", 0, 3),
          chunkType: this.acc.toString("latin1", 3, 4),
          size,
          body: Buffer.from(this.acc.subarray(8, size)),
        });
        this.acc = this.acc.subarray(size);
      }
      this.wake();
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      this.closed = true;
      this.wake();
    });
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: "127.0.0.1", port });
      s.once("connect", () => resolve(new RawClient(s)));
      s.once("error", reject);
    });
  }

  /** Wraps a socket some other way connected (reverse connections). */
  static wrap(socket: net.Socket): RawClient {
    return new RawClient(socket);
  }

  write(b: Buffer): Promise<void> {
    return new Promise((resolve) => this.socket.write(b, () => resolve()));
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private waitChange(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve(false);
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(t);
        resolve(true);
      };
      this.waiters.push(done);
    });
  }

  /** The next frame; throws on timeout or when the socket closes first. */
  async next(timeoutMs = 2000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const f = this.frames.shift();
      if (f !== undefined) return f;
      if (this.closed) throw new Error("connection closed");
      const left = deadline - Date.now();
      if (left <= 0 || !(await this.waitChange(left))) throw new Error(`no frame within ${timeoutMs} ms`);
    }
  }

  /** Resolves true once the server has closed the connection. */
  async waitClosed(timeoutMs = 2000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      const left = deadline - Date.now();
      if (left <= 0 || !(await this.waitChange(left))) return this.closed;
    }
    return true;
  }

  /** Expects an ERR frame, then the server closing the connection; returns the StatusCode. */
  async expectErr(timeoutMs = 2000): Promise<number> {
    const f = await this.next(timeoutMs);
    if (f.type !== "ERR") throw new Error(`expected ERR, got ${f.type}`);
    if (!(await this.waitClosed(timeoutMs))) throw new Error("server did not close after ERR");
    return parseErr(f).status;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** A client session on the channel level: HEL/ACK, OPN, then numbered requests. */
export class ChannelClient {
  channelId = 0;
  tokenId = 0;
  sequenceNumber: number;
  requestId = 1;
  ack!: Ack;
  opened!: OpenResult;

  constructor(
    readonly raw: RawClient,
    firstSequenceNumber = 1,
  ) {
    this.sequenceNumber = firstSequenceNumber;
  }

  static async open(port: number, helloOptions: HelloOptions = {}, openOptions: Partial<OpenOptions> = {}): Promise<ChannelClient> {
    const c = new ChannelClient(await RawClient.connect(port), openOptions.sequenceNumber ?? 1);
    await c.handshake(helloOptions, openOptions);
    return c;
  }

  async handshake(helloOptions: HelloOptions = {}, openOptions: Partial<OpenOptions> = {}): Promise<void> {
    await this.raw.write(hello(helloOptions));
    const ack = await this.raw.next();
    if (ack.type !== "ACK") throw new Error(`expected ACK, got ${ack.type}`);
    this.ack = parseAck(ack);
    await this.raw.write(open({ ...openOptions, sequenceNumber: this.sequenceNumber++, requestId: this.requestId++ }));
    const f = await this.raw.next();
    if (f.type !== "OPN") throw new Error(`expected OPN, got ${f.type} ${f.type === "ERR" ? parseErr(f).status.toString(16) : ""}`);
    this.opened = parseOpen(f);
    this.channelId = this.opened.tokenChannelId;
    this.tokenId = this.opened.tokenId;
  }

  /** The next MSG chunk options, consuming a sequence number. */
  next(requestId: number, chunkType: "F" | "C" | "A" = "F"): SymmetricOptions {
    return { channelId: this.channelId, tokenId: this.tokenId, sequenceNumber: this.sequenceNumber++, requestId, chunkType };
  }

  /** Sends one single-chunk request asking for `responseSize` bytes back; returns its request id. */
  async send(responseSize = 16): Promise<number> {
    const id = this.requestId++;
    await this.raw.write(msg(this.next(id), testRequest(responseSize)));
    return id;
  }

  /**
   * Reads one whole response message (all its chunks); returns request id and body. A message
   * ended by an abort chunk (Part 6 §6.7.3) returns the abort's Error as `aborted` and its body.
   * Sequence numbers must rise, by one from chunk to chunk of a message (Part 6 §6.7.2.4).
   */
  async response(timeoutMs = 2000): Promise<{ requestId: number; body: Buffer; chunks: number; aborted?: number }> {
    const parts: Buffer[] = [];
    for (;;) {
      const f = await this.raw.next(timeoutMs);
      if (f.type !== "MSG") throw new Error(`expected MSG, got ${f.type} ${f.type === "ERR" ? parseErr(f).status.toString(16) : ""}`);
      const m = parseMsg(f);
      // Within a message each chunk takes the next number; between messages an OPN may take one.
      if (this.serverSequence !== undefined && (parts.length > 0 ? m.sequenceNumber !== this.serverSequence + 1 : m.sequenceNumber <= this.serverSequence)) {
        throw new Error(`server SequenceNumber ${m.sequenceNumber} after ${this.serverSequence}`);
      }
      this.serverSequence = m.sequenceNumber;
      if (parts.length > 0 && m.requestId !== this.partRequestId) throw new Error(`chunk for request ${m.requestId} inside the response to ${this.partRequestId}`);
      this.partRequestId = m.requestId;
      if (f.chunkType === "A") return { requestId: m.requestId, body: m.body, chunks: parts.length + 1, aborted: m.body.readUInt32LE(0) };
      parts.push(m.body);
      if (f.chunkType === "F") return { requestId: m.requestId, body: Buffer.concat(parts), chunks: parts.length };
    }
  }

  /** SequenceNumber of the last MSG chunk from the server. */
  private serverSequence: number | undefined;
  private partRequestId = 0;

  /** One request/response round trip. */
  async roundTrip(responseSize = 16): Promise<Buffer> {
    const id = await this.send(responseSize);
    const r = await this.response();
    if (r.requestId !== id) throw new Error(`response for ${r.requestId}, expected ${id}`);
    return r.body;
  }
}
