// UA-TCP framing for the load client (Part 6 §7.1): the 8-byte message header, Hello /
// Acknowledge / Error, and the OPN and MSG chunk headers of SecurityPolicy None. Only what a
// client needs; the server has its own transport in src/transport.
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";

/**
 * Message type and chunk type as one little-endian UInt32 of the header's first 4 bytes, so a
 * frame is classified with one read and one compare.
 */
export enum FrameKind {
  HELF = 0x464c4548,
  ACKF = 0x464b4341,
  ERRF = 0x46525245,
  OPNF = 0x464e504f,
  CLOF = 0x464f4c43,
  MSGF = 0x4647534d,
  MSGC = 0x4347534d,
  MSGA = 0x4147534d,
}

export const HEADER_SIZE = 8;
/** MSG / CLO: header, SecureChannelId, TokenId, SequenceNumber, RequestId (Part 6 §6.7.2). */
export const MSG_BODY_OFFSET = 24;
export const MSG_OFFSET_CHANNEL_ID = 8;
export const MSG_OFFSET_TOKEN_ID = 12;
export const MSG_OFFSET_SEQUENCE = 16;
export const MSG_OFFSET_REQUEST_ID = 20;

export const SECURITY_POLICY_NONE = "http://opcfoundation.org/UA/SecurityPolicy#None";
/** Part 6 §7.1.2.3: the only protocol version so far. */
export const UA_TCP_PROTOCOL_VERSION = 0;
/** Part 6 §7.1.2.3: receive and send buffers are at least 8192 bytes. */
export const MIN_BUFFER_SIZE = 8192;

export interface TransportLimits {
  receiveBufferSize: number;
  sendBufferSize: number;
  maxMessageSize: number;
  maxChunkCount: number;
}

/** Writes the 8-byte header with a placeholder size; `finishFrame` patches the size. */
export function beginFrame(w: BinaryWriter, kind: FrameKind): number {
  const start = w.pos;
  w.writeUInt32(kind);
  w.writeUInt32(0);
  return start;
}

export function finishFrame(w: BinaryWriter, start: number): void {
  w.buffer.writeUInt32LE(w.pos - start, start + 4);
}

/** Hello (Part 6 §7.1.2.3). */
export function writeHello(w: BinaryWriter, endpointUrl: string, limits: TransportLimits): void {
  const start = beginFrame(w, FrameKind.HELF);
  w.writeUInt32(UA_TCP_PROTOCOL_VERSION);
  w.writeUInt32(limits.receiveBufferSize);
  w.writeUInt32(limits.sendBufferSize);
  w.writeUInt32(limits.maxMessageSize);
  w.writeUInt32(limits.maxChunkCount);
  w.writeString(endpointUrl);
  finishFrame(w, start);
}

/** Acknowledge (Part 6 §7.1.2.4), from the body after the 8-byte header. */
export function readAcknowledge(r: BinaryReader): TransportLimits & { protocolVersion: number } {
  return {
    protocolVersion: r.readUInt32(),
    receiveBufferSize: r.readUInt32(),
    sendBufferSize: r.readUInt32(),
    maxMessageSize: r.readUInt32(),
    maxChunkCount: r.readUInt32(),
  };
}

/** Error (Part 6 §7.1.2.5), from the body after the 8-byte header. */
export function readErrorMessage(r: BinaryReader): { error: number; reason: string } {
  const error = r.readUInt32();
  let reason = "";
  try {
    reason = r.readString() ?? "";
  } catch {
    // A truncated reason still leaves the StatusCode, which is what matters.
  }
  return { error, reason };
}

/**
 * OPN chunk header up to the body: asymmetric security header of SecurityPolicy None (no
 * certificates: both ByteStrings null, Part 6 §6.7.2.3), then the sequence header.
 */
export function beginOpenFrame(w: BinaryWriter, channelId: number, sequenceNumber: number, requestId: number): number {
  const start = beginFrame(w, FrameKind.OPNF);
  w.writeUInt32(channelId);
  w.writeString(SECURITY_POLICY_NONE);
  w.writeByteString(null);
  w.writeByteString(null);
  w.writeUInt32(sequenceNumber);
  w.writeUInt32(requestId);
  return start;
}

/** MSG or CLO chunk header up to the body: symmetric security header and sequence header. */
export function beginMessageFrame(
  w: BinaryWriter,
  kind: FrameKind.MSGF | FrameKind.CLOF,
  channelId: number,
  tokenId: number,
  sequenceNumber: number,
  requestId: number,
): number {
  const start = beginFrame(w, kind);
  w.writeUInt32(channelId);
  w.writeUInt32(tokenId);
  w.writeUInt32(sequenceNumber);
  w.writeUInt32(requestId);
  return start;
}

/** Skips an OPN chunk's asymmetric security header; leaves the reader at the sequence header. */
export function skipAsymmetricHeader(r: BinaryReader): void {
  r.readUInt32(); // SecureChannelId
  r.readString(); // SecurityPolicyUri
  r.readByteStringView(); // SenderCertificate
  r.readByteStringView(); // ReceiverCertificateThumbprint
}

/** Receives complete frames, as views valid only for the duration of the call. */
export interface FrameSink {
  onFrame(buffer: Buffer, start: number, end: number): void;
  onFramingError(message: string): void;
}

/**
 * Splits a TCP byte stream into UA-TCP frames. Frames that lie whole inside one socket chunk
 * are handed over as views of it; only a frame split across chunks is copied, into one
 * accumulation buffer that is reused (it grows only up to `maxFrameSize`).
 */
export class FrameSplitter {
  private acc: Buffer;
  private accLen = 0;
  private failed = false;

  constructor(
    private readonly sink: FrameSink,
    private readonly maxFrameSize: number,
  ) {
    this.acc = Buffer.allocUnsafe(Math.min(maxFrameSize, 1 << 16));
  }

  feed(chunk: Buffer): void {
    if (this.failed) return;
    let pos = 0;
    const len = chunk.length;
    if (this.accLen > 0) {
      pos = this.completeAccumulated(chunk);
      if (pos < 0) return;
    }
    while (len - pos >= HEADER_SIZE) {
      const size = chunk.readUInt32LE(pos + 4);
      if (size < HEADER_SIZE || size > this.maxFrameSize) {
        this.fail(`frame size ${size} outside ${HEADER_SIZE}..${this.maxFrameSize}`);
        return;
      }
      if (len - pos < size) break;
      this.sink.onFrame(chunk, pos, pos + size);
      if (this.failed) return;
      pos += size;
    }
    if (pos < len) this.stash(chunk, pos, len);
  }

  /** Fills the pending partial frame from `chunk`; returns the offset consumed, or -1 if still partial. */
  private completeAccumulated(chunk: Buffer): number {
    let pos = 0;
    if (this.accLen < HEADER_SIZE) {
      const take = Math.min(HEADER_SIZE - this.accLen, chunk.length);
      chunk.copy(this.acc, this.accLen, 0, take);
      this.accLen += take;
      pos = take;
      if (this.accLen < HEADER_SIZE) return -1;
    }
    const size = this.acc.readUInt32LE(4);
    if (size < HEADER_SIZE || size > this.maxFrameSize) {
      this.fail(`frame size ${size} outside ${HEADER_SIZE}..${this.maxFrameSize}`);
      return -1;
    }
    if (size > this.acc.length) this.grow(size);
    const take = Math.min(size - this.accLen, chunk.length - pos);
    chunk.copy(this.acc, this.accLen, pos, pos + take);
    this.accLen += take;
    pos += take;
    if (this.accLen < size) return -1;
    this.accLen = 0;
    this.sink.onFrame(this.acc, 0, size);
    return this.failed ? -1 : pos;
  }

  private stash(chunk: Buffer, from: number, to: number): void {
    const n = to - from;
    if (n > this.acc.length) this.grow(n);
    chunk.copy(this.acc, 0, from, to);
    this.accLen = n;
  }

  private grow(min: number): void {
    let size = this.acc.length * 2;
    while (size < min) size *= 2;
    const next = Buffer.allocUnsafe(Math.min(size, this.maxFrameSize));
    this.acc.copy(next, 0, 0, this.accLen);
    this.acc = next;
  }

  private fail(message: string): void {
    this.failed = true;
    this.accLen = 0;
    this.sink.onFramingError(message);
  }
}
