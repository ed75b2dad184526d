// UA-TCP wire constants and the connection-protocol messages (Part 6 §7.1.2): HEL, ACK, ERR, RHE.
// Message types are compared as the little-endian UInt24 of their three ASCII letters, so a
// header check is one integer compare.
import type { BinaryReader } from "../ua/binary-reader.js";
import type { BinaryWriter } from "../ua/binary-writer.js";
import { UaStatusError } from "../ua/errors.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { putInt32 } from "../ua/le.js";

export const enum MessageType {
  HEL = 0x4c4548,
  ACK = 0x4b4341,
  ERR = 0x525245,
  RHE = 0x454852,
  MSG = 0x47534d,
  OPN = 0x4e504f,
  CLO = 0x4f4c43,
}

export const enum ChunkType {
  Final = 0x46, // 'F'
  Intermediate = 0x43, // 'C'
  Abort = 0x41, // 'A'
}

/** MessageType (3) + chunk type (1) + MessageSize (4), Part 6 §7.1.2.2. */
export const HEADER_SIZE = 8;
/** Header + ProtocolVersion, ReceiveBufferSize, SendBufferSize, MaxMessageSize, MaxChunkCount + EndpointUrl length. */
export const MIN_HEL_SIZE = HEADER_SIZE + 20 + 4;
/** Header + SecureChannelId + TokenId + SequenceNumber + RequestId (Part 6 §6.7.2). */
export const SYMMETRIC_HEADERS_SIZE = HEADER_SIZE + 4 + 4 + 8;
/** Header + SecureChannelId + three null Strings/ByteStrings + sequence header. */
export const MIN_OPN_SIZE = HEADER_SIZE + 4 + 12 + 8;
/** Part 6 §7.1.2.3 / §7.1.2.5: EndpointUrl, ServerUri and ERR Reason are at most 4096 bytes. */
export const MAX_URL_LENGTH = 4096;
/** The UACP protocol version we speak (Part 6 §7.1.2.3). */
export const PROTOCOL_VERSION = 0;

/** The three message-type letters read at `pos`. */
export function readMessageType(buf: Buffer, pos: number): number {
  return buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16);
}

/** The smallest valid MessageSize for a message type, or 0 for a type not known. */
export function minMessageSize(type: number): number {
  switch (type) {
    case MessageType.HEL:
      return MIN_HEL_SIZE;
    case MessageType.MSG:
    case MessageType.CLO:
      return SYMMETRIC_HEADERS_SIZE;
    case MessageType.OPN:
      return MIN_OPN_SIZE;
    default:
      return 0;
  }
}

export function messageTypeName(type: number): string {
  return String.fromCharCode(type & 0xff, (type >> 8) & 0xff, (type >> 16) & 0xff);
}

/** Writes an 8-byte message header at `pos` of `buf`. */
export function writeHeader(buf: Buffer, pos: number, type: number, chunkType: number, size: number): void {
  buf[pos] = type & 0xff;
  buf[pos + 1] = (type >> 8) & 0xff;
  buf[pos + 2] = (type >> 16) & 0xff;
  buf[pos + 3] = chunkType;
  putInt32(buf, pos + 4, size);
}

/** The fields of a HEL (Part 6 §7.1.2.3, Table 69). */
export interface Hello {
  protocolVersion: number;
  receiveBufferSize: number;
  sendBufferSize: number;
  maxMessageSize: number;
  maxChunkCount: number;
  endpointUrl: string;
}

/** Reads a HEL body; an EndpointUrl over 4096 bytes is BadTcpEndpointUrlInvalid (Part 6 §7.1.2.3). */
export function readHello(r: BinaryReader): Hello {
  const protocolVersion = r.readUInt32();
  const receiveBufferSize = r.readUInt32();
  const sendBufferSize = r.readUInt32();
  const maxMessageSize = r.readUInt32();
  const maxChunkCount = r.readUInt32();
  const urlLength = r.readLength();
  if (urlLength > MAX_URL_LENGTH) throw new UaStatusError(StatusCodes.BadTcpEndpointUrlInvalid, `EndpointUrl of ${urlLength} bytes`);
  r.pos -= 4;
  const endpointUrl = r.readString() ?? "";
  return { protocolVersion, receiveBufferSize, sendBufferSize, maxMessageSize, maxChunkCount, endpointUrl };
}

export interface Acknowledge {
  protocolVersion: number;
  receiveBufferSize: number;
  sendBufferSize: number;
  maxMessageSize: number;
  maxChunkCount: number;
}

export function writeAcknowledge(w: BinaryWriter, ack: Acknowledge): void {
  const start = w.pos;
  w.ensure(HEADER_SIZE + 20);
  w.pos += HEADER_SIZE;
  w.writeUInt32(ack.protocolVersion);
  w.writeUInt32(ack.receiveBufferSize);
  w.writeUInt32(ack.sendBufferSize);
  w.writeUInt32(ack.maxMessageSize);
  w.writeUInt32(ack.maxChunkCount);
  writeHeader(w.buffer, start, MessageType.ACK, ChunkType.Final, w.pos - start);
}

/** ERR (Part 6 §7.1.2.5): Error UInt32 + Reason String (at most 4096 bytes, cut if longer). */
export function writeError(w: BinaryWriter, status: number, reason: string): void {
  const start = w.pos;
  w.ensure(HEADER_SIZE + 8);
  w.pos += HEADER_SIZE;
  w.writeUInt32(status);
  w.writeString(reason.length > MAX_URL_LENGTH / 4 ? reason.slice(0, MAX_URL_LENGTH / 4) : reason);
  writeHeader(w.buffer, start, MessageType.ERR, ChunkType.Final, w.pos - start);
}

/** RHE (Part 6 §7.1.2.6): ServerUri String + EndpointUrl String. */
export function writeReverseHello(w: BinaryWriter, serverUri: string, endpointUrl: string): void {
  const start = w.pos;
  w.ensure(HEADER_SIZE);
  w.pos += HEADER_SIZE;
  w.writeString(serverUri);
  w.writeString(endpointUrl);
  writeHeader(w.buffer, start, MessageType.RHE, ChunkType.Final, w.pos - start);
}

/** What a HEL settles for one connection (Part 6 §7.1.2.3, §7.1.2.4). */
export interface Negotiated {
  readonly receiveBufferSize: number;
  readonly sendBufferSize: number;
  /** Largest response body the client takes: its MaxMessageSize (0 = any), capped by ours. */
  readonly maxResponseSize: number;
  /** Most chunks of one response, 0 = no limit. */
  readonly maxResponseChunks: number;
}

/**
 * The sizes of the ACK to a HEL, given our own: ACK ReceiveBufferSize <= HEL SendBufferSize and
 * ACK SendBufferSize <= HEL ReceiveBufferSize; buffers below `minBufferSize` close the connection
 * (BadCommunicationError).
 */
export function negotiateHello(hel: Hello, ours: { readonly receiveBufferSize: number; readonly sendBufferSize: number; readonly maxMessageSize: number }, minBufferSize: number): Negotiated {
  const { receiveBufferSize, sendBufferSize, maxMessageSize } = hel;
  if (receiveBufferSize < minBufferSize || sendBufferSize < minBufferSize) {
    throw new UaStatusError(StatusCodes.BadCommunicationError, `buffer sizes ${receiveBufferSize}/${sendBufferSize} below ${minBufferSize}`);
  }
  return {
    receiveBufferSize: Math.min(ours.receiveBufferSize, sendBufferSize),
    sendBufferSize: Math.min(ours.sendBufferSize, receiveBufferSize),
    maxResponseSize: maxMessageSize === 0 ? ours.maxMessageSize : Math.min(maxMessageSize, ours.maxMessageSize),
    maxResponseChunks: hel.maxChunkCount,
  };
}

