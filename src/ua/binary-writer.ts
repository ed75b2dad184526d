// Writes the primitive types of Part 6 §5.2.2 into a Buffer at a position. The buffer grows
// (doubling) up to `maxSize`; past that, BadEncodingLimitsExceeded. One writer per channel is
// reused: `reset()` keeps the buffer, so steady-state encoding allocates nothing.
//
// Every write asks `ensure(n)` for n contiguous bytes first. A subclass may answer the overflow
// differently: the transport's ChunkWriter (src/transport/chunk-writer.ts) finishes the chunk it
// is filling and goes on in the next one instead of growing. So encoders never keep a position to
// write at later except through `mark()` / `patchInt32()` / `patchByte()`, and write what may be
// longer than a chunk (strings, byte strings, raw bytes) through the methods here, which the
// subclass splits.
import { UaStatusError, encodingLimitsError } from "./errors.js";
import { StatusCodes } from "./generated/status-codes.js";
import { putInt32, putUInt16 } from "./le.js";

const EPOCH_OFFSET_MS = 11644473600000;
const TICKS_PER_MS = 10000;
const TWO_32 = 4294967296;
/** 9999-12-31T23:59:59Z: at or past it, DateTime encodes as Int64 max (Part 6 §5.2.2.5). */
const DATETIME_MAX_MS = 253402300799000;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/**
 * A value that does not fit its wire type is a bug of the caller, not of the peer: it ends the
 * message with BadEncodingError instead of Node's RangeError/TypeError (or a silent wrap).
 */
function badValue(type: string, v: unknown): UaStatusError {
  return new UaStatusError(StatusCodes.BadEncodingError, `${String(v)} (${typeof v}) is not a valid ${type}`);
}

const GUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export class BinaryWriter {
  buffer: Buffer;
  pos: number;
  maxSize: number;
  /** Writes up to here need nothing from `ensure` (buffer.length here; a chunk's body end in ChunkWriter). */
  limit: number;
  /** Nesting depth of the value being encoded; builtin-codec.ts bounds it like the reader's. */
  depth = 0;
  /** Max nesting written; the same bound as the decoder's so we never emit what we cannot read. */
  maxDepth = 100;

  constructor(buffer: Buffer = Buffer.allocUnsafe(8192), maxSize = 64 << 20) {
    this.buffer = buffer;
    this.pos = 0;
    this.maxSize = maxSize;
    this.limit = buffer.length;
  }

  /** Writes into `buffer` from `pos` on (a caller's buffer; it grows only up to `maxSize`). */
  setBuffer(buffer: Buffer, pos = 0): this {
    this.buffer = buffer;
    this.limit = buffer.length;
    this.pos = pos;
    this.depth = 0;
    return this;
  }

  /** Rewinds to `pos` for a new message; also clears the nesting depth left by a failed encode. */
  reset(pos = 0): this {
    this.pos = pos;
    this.depth = 0;
    return this;
  }

  /** Makes room for `n` more contiguous bytes at `pos` (`buffer` and `pos` may change). */
  ensure(n: number): void {
    if (this.pos + n <= this.limit) return;
    this.overflow(n);
  }

  /** `ensure` found too little room: this writer grows its buffer. */
  protected overflow(n: number): void {
    const needed = this.pos + n;
    if (needed > this.maxSize) throw encodingLimitsError(`message of more than ${this.maxSize} bytes`);
    // max(): a writer built over an empty buffer would otherwise never grow.
    let size = Math.max(this.buffer.length * 2, 256);
    while (size < needed) size *= 2;
    const next = Buffer.allocUnsafe(Math.min(size, this.maxSize));
    this.buffer.copy(next, 0, 0, this.pos);
    this.buffer = next;
    this.limit = next.length;
  }

  /** Bytes written since the start of the message (equal to `pos` here; chunk headers excluded in ChunkWriter). */
  offset(): number {
    return this.pos;
  }

  /**
   * `offset()` of the next byte, for a 4-byte field to be filled in later with `patchInt32` (a
   * length known only once what follows is written). Every mark must be patched: ChunkWriter
   * keeps the chunks from the mark on unsent until then.
   */
  mark(): number {
    return this.pos;
  }

  /** Writes Int32 `v` at a position `mark()` returned, where 4 bytes were written meanwhile; the mark is done with. */
  patchInt32(mark: number, v: number): void {
    putInt32(this.buffer, mark, v);
  }

  /** Writes Byte `v` at a position `mark()` returned, where 1 byte was written meanwhile; the mark is done with. */
  patchByte(mark: number, v: number): void {
    this.buffer[mark] = v;
  }

  /** A copy of what was written since `mark` (the mark stays open). */
  copyFrom(mark: number): Buffer {
    return Buffer.from(this.buffer.subarray(mark, this.pos));
  }

  /** A mark that was only needed for `copyFrom` is done with. */
  unmark(): void {}

  /** The bytes written so far, as a view of the writer's buffer (valid until the next write). */
  view(start = 0): Buffer {
    return this.buffer.subarray(start, this.pos);
  }

  writeBoolean(v: boolean): void {
    if (typeof v !== "boolean") throw badValue("Boolean", v);
    this.ensure(1);
    this.buffer[this.pos++] = v ? 1 : 0;
  }

  writeSByte(v: number): void {
    if (((v << 24) >> 24) !== v) throw badValue("SByte", v);
    this.ensure(1);
    this.buffer[this.pos++] = v & 0xff;
  }

  writeByte(v: number): void {
    if ((v & 0xff) !== v) throw badValue("Byte", v);
    this.ensure(1);
    this.buffer[this.pos++] = v & 0xff;
  }

  writeInt16(v: number): void {
    if (((v << 16) >> 16) !== v) throw badValue("Int16", v);
    this.ensure(2);
    this.pos = this.buffer.writeInt16LE(v, this.pos);
  }

  writeUInt16(v: number): void {
    if ((v & 0xffff) !== v) throw badValue("UInt16", v);
    this.ensure(2);
    putUInt16(this.buffer, this.pos, v);
    this.pos += 2;
  }

  writeInt32(v: number): void {
    if ((v | 0) !== v) throw badValue("Int32", v);
    this.ensure(4);
    putInt32(this.buffer, this.pos, v);
    this.pos += 4;
  }

  writeUInt32(v: number): void {
    if (v >>> 0 !== v) throw badValue("UInt32", v);
    this.ensure(4);
    putInt32(this.buffer, this.pos, v);
    this.pos += 4;
  }

  writeInt64(v: bigint): void {
    if (typeof v !== "bigint" || v < INT64_MIN || v > INT64_MAX) throw badValue("Int64", v);
    this.ensure(8);
    this.pos = this.buffer.writeBigInt64LE(v, this.pos);
  }

  writeUInt64(v: bigint): void {
    if (typeof v !== "bigint" || v < 0n || v > UINT64_MAX) throw badValue("UInt64", v);
    this.ensure(8);
    this.pos = this.buffer.writeBigUInt64LE(v, this.pos);
  }

  /** Float: any number; magnitudes past the Float range become ±Infinity, as in IEEE conversion. */
  writeFloat(v: number): void {
    if (typeof v !== "number") throw badValue("Float", v);
    this.ensure(4);
    this.pos = this.buffer.writeFloatLE(v, this.pos);
  }

  writeDouble(v: number): void {
    if (typeof v !== "number") throw badValue("Double", v);
    this.ensure(8);
    this.pos = this.buffer.writeDoubleLE(v, this.pos);
  }

  /** DateTime from a JS time value in ms (Part 6 §5.2.2.5: before 1601 is 0, from 9999 on Int64 max). */
  writeDateTime(ms: number): void {
    if (typeof ms !== "number") throw badValue("DateTime", ms);
    this.ensure(8);
    if (!(ms > -EPOCH_OFFSET_MS)) {
      this.buffer.fill(0, this.pos, this.pos + 8);
    } else if (ms >= DATETIME_MAX_MS) {
      putInt32(this.buffer, this.pos, 0xffffffff);
      putInt32(this.buffer, this.pos + 4, 0x7fffffff);
    } else {
      const ticks = Math.round((ms + EPOCH_OFFSET_MS) * TICKS_PER_MS);
      const hi = Math.floor(ticks / TWO_32);
      putInt32(this.buffer, this.pos, ticks - hi * TWO_32);
      putInt32(this.buffer, this.pos + 4, hi);
    }
    this.pos += 8;
  }

  /** String: undefined or null encodes as the null string (length -1). */
  writeString(v: string | undefined | null): void {
    if (v == null) {
      this.writeInt32(-1);
      return;
    }
    if (typeof v !== "string") throw badValue("String", v);
    // Worst case 3 bytes per UTF-16 unit; write, then patch the length.
    this.ensure(4 + v.length * 3);
    const n = this.buffer.write(v, this.pos + 4, "utf8");
    putInt32(this.buffer, this.pos, n);
    this.pos += 4 + n;
  }

  writeByteString(v: Uint8Array | undefined | null): void {
    if (v == null) {
      this.writeInt32(-1);
      return;
    }
    if (!(v instanceof Uint8Array)) throw badValue("ByteString", v);
    this.ensure(4 + v.length);
    putInt32(this.buffer, this.pos, v.length);
    this.pos += 4;
    this.buffer.set(v, this.pos);
    this.pos += v.length;
  }

  /** Guid from an 8-4-4-4-12 hex string (either case). */
  writeGuid(v: string): void {
    if (typeof v !== "string" || !GUID_RE.test(v)) throw badValue("Guid", v);
    const hex = v.replace(/-/g, "");
    this.ensure(16);
    this.buffer.writeUInt32LE(parseInt(hex.slice(0, 8), 16), this.pos);
    this.buffer.writeUInt16LE(parseInt(hex.slice(8, 12), 16), this.pos + 4);
    this.buffer.writeUInt16LE(parseInt(hex.slice(12, 16), 16), this.pos + 6);
    this.buffer.write(hex.slice(16), this.pos + 8, "hex");
    this.pos += 16;
  }

  /** Copies raw bytes. */
  writeBytes(v: Uint8Array): void {
    this.ensure(v.length);
    this.buffer.set(v, this.pos);
    this.pos += v.length;
  }
}
