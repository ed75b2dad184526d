// Reads the primitive types of Part 6 §5.2.2 from a Buffer slice without copying.
// Every read checks its length against the end of the slice first; structured built-ins
// (NodeId, Variant, ...) are decoded by builtin-codec.ts on top of these.
import { isUtf8 } from "node:buffer";
import { decodingError } from "./errors.js";
import { getInt32, getUInt16, getUInt32 } from "./le.js";

export interface DecodingLimits {
  /** Max bytes of one String or XmlElement. */
  maxStringLength: number;
  /** Max bytes of one ByteString. */
  maxByteStringLength: number;
  /** Max elements of one array. */
  maxArrayLength: number;
  /** Max nesting of Variant / ExtensionObject / DataValue / DiagnosticInfo (Part 6 §5.2.2.18: at least 100). */
  maxDepth: number;
}

export const DEFAULT_DECODING_LIMITS: Readonly<DecodingLimits> = Object.freeze({
  maxStringLength: 1 << 20,
  maxByteStringLength: 16 << 20,
  maxArrayLength: 1 << 20,
  maxDepth: 100,
});

/** 100 ns ticks between 1601-01-01 and 1970-01-01. */
const EPOCH_OFFSET_MS = 11644473600000;
const TICKS_PER_MS = 10000;
const TWO_32 = 4294967296;
/** ByteStrings up to this long are copied byte by byte (no view of the input made for the copy). */
const SHORT_COPY = 64;

export class BinaryReader {
  buffer: Buffer;
  pos: number;
  end: number;
  limits: DecodingLimits;
  /** Current nesting depth; builtin-codec.ts raises and lowers it around nested types. */
  depth = 0;
  /**
   * A NodeId the caller knows is encoded at buffer[knownAt, knownEnd) (a request's session token,
   * which the dispatcher found by its bytes): decodeNodeId at knownAt returns it rather than make
   * a new one and copy its identifier. -1: none; setBuffer clears it.
   */
  knownAt = -1;
  knownEnd = 0;
  known: object | undefined = undefined;

  constructor(buffer: Buffer = Buffer.alloc(0), start = 0, end = buffer.length, limits: DecodingLimits = DEFAULT_DECODING_LIMITS) {
    this.buffer = buffer;
    this.pos = start;
    this.end = end;
    this.limits = limits;
  }

  /** Points the reader at a new slice; one reader per channel is reused across messages. */
  setBuffer(buffer: Buffer, start = 0, end = buffer.length): this {
    this.buffer = buffer;
    this.pos = start;
    this.end = end;
    this.depth = 0;
    this.knownAt = -1;
    return this;
  }

  /** `value` is what buffer[at, end) decodes to (see knownAt). */
  know(at: number, end: number, value: object): void {
    this.knownAt = at;
    this.knownEnd = end;
    this.known = value;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  /** Throws BadDecodingError unless `n` more bytes are there. */
  need(n: number): void {
    if (n > this.end - this.pos || n < 0) {
      throw decodingError(`need ${n} bytes at offset ${this.pos}, ${this.end - this.pos} left`);
    }
  }

  readBoolean(): boolean {
    this.need(1);
    return this.buffer[this.pos++] !== 0;
  }

  readSByte(): number {
    this.need(1);
    return this.buffer.readInt8(this.pos++);
  }

  readByte(): number {
    this.need(1);
    return this.buffer[this.pos++];
  }

  readInt16(): number {
    this.need(2);
    const v = this.buffer.readInt16LE(this.pos);
    this.pos += 2;
    return v;
  }

  readUInt16(): number {
    this.need(2);
    const v = getUInt16(this.buffer, this.pos);
    this.pos += 2;
    return v;
  }

  readInt32(): number {
    this.need(4);
    const v = getInt32(this.buffer, this.pos);
    this.pos += 4;
    return v;
  }

  readUInt32(): number {
    this.need(4);
    const v = getUInt32(this.buffer, this.pos);
    this.pos += 4;
    return v;
  }

  readInt64(): bigint {
    this.need(8);
    const v = this.buffer.readBigInt64LE(this.pos);
    this.pos += 8;
    return v;
  }

  readUInt64(): bigint {
    this.need(8);
    const v = this.buffer.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }

  readFloat(): number {
    this.need(4);
    const v = this.buffer.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }

  readDouble(): number {
    this.need(8);
    const v = this.buffer.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  /** DateTime (Part 6 §5.2.2.5) as a JS time value in ms; 0 ticks is DATETIME_MIN. */
  readDateTime(): number {
    this.need(8);
    const lo = getUInt32(this.buffer, this.pos);
    const hi = getInt32(this.buffer, this.pos + 4);
    this.pos += 8;
    // Two 32-bit halves keep this free of bigint allocation; precision below 1 µs rounds.
    return (hi * TWO_32 + lo) / TICKS_PER_MS - EPOCH_OFFSET_MS;
  }

  /** A length prefix of a String, ByteString or array: -1 is null, other negatives are invalid. */
  readLength(): number {
    const n = this.readInt32();
    if (n < -1) throw decodingError(`negative length ${n}`);
    return n;
  }

  /** String (Part 6 §5.2.2.4): UTF-8 with an Int32 length; null is returned as undefined. */
  readString(): string | undefined {
    const n = this.readLength();
    if (n === -1) return undefined;
    if (n > this.limits.maxStringLength) throw decodingError(`string of ${n} bytes exceeds limit`);
    this.need(n);
    const start = this.pos;
    this.pos += n;
    if (n === 0) return "";
    const bytes = this.buffer.subarray(start, start + n);
    if (!isUtf8(bytes)) throw decodingError("invalid UTF-8 in String");
    return bytes.toString("utf8");
  }

  /**
   * ByteString as a view of the input buffer (no copy): consumers that keep it past the
   * message (it may be a pooled buffer) must copy. Null is undefined.
   */
  readByteStringView(): Buffer | undefined {
    const n = this.readLength();
    if (n === -1) return undefined;
    if (n > this.limits.maxByteStringLength) throw decodingError(`ByteString of ${n} bytes exceeds limit`);
    this.need(n);
    const start = this.pos;
    this.pos += n;
    return this.buffer.subarray(start, start + n);
  }

  /** ByteString copied out of the input, safe to keep. */
  readByteString(): Buffer | undefined {
    const n = this.readLength();
    if (n === -1) return undefined;
    if (n > this.limits.maxByteStringLength) throw decodingError(`ByteString of ${n} bytes exceeds limit`);
    this.need(n);
    // One Buffer made: Buffer.from(view) and buffer.copy both make a view of the input as well,
    // and every request's session token is a ByteString of 32 bytes.
    const out = Buffer.allocUnsafe(n);
    const b = this.buffer;
    const p = this.pos;
    if (n <= SHORT_COPY) for (let i = 0; i < n; i++) out[i] = b[p + i];
    else b.copy(out, 0, p, p + n);
    this.pos = p + n;
    return out;
  }

  /** Guid (Part 6 §5.2.2.7) as a lower-case 8-4-4-4-12 string. */
  readGuid(): string {
    this.need(16);
    const b = this.buffer;
    const p = this.pos;
    this.pos += 16;
    const d1 = b.readUInt32LE(p).toString(16).padStart(8, "0");
    const d2 = b.readUInt16LE(p + 4).toString(16).padStart(4, "0");
    const d3 = b.readUInt16LE(p + 6).toString(16).padStart(4, "0");
    const d4 = b.toString("hex", p + 8, p + 10);
    const d5 = b.toString("hex", p + 10, p + 16);
    return `${d1}-${d2}-${d3}-${d4}-${d5}`;
  }

  /**
   * An array length prefix checked against the limit and against the bytes left (each element
   * takes at least `minElementSize` bytes), before anything is allocated. -1 (null) is returned as -1.
   */
  readArrayLength(minElementSize = 1): number {
    const n = this.readLength();
    if (n === -1) return -1;
    if (n > this.limits.maxArrayLength) throw decodingError(`array of ${n} elements exceeds limit`);
    if (n * minElementSize > this.end - this.pos) {
      throw decodingError(`array of ${n} elements longer than the ${this.end - this.pos} bytes left`);
    }
    return n;
  }

  /** Enters one level of nesting; pair with `leave()`. */
  enter(): void {
    if (++this.depth > this.limits.maxDepth) throw decodingError(`nesting deeper than ${this.limits.maxDepth}`);
  }

  leave(): void {
    this.depth--;
  }
}
