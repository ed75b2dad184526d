// The output path of a connection: encoders write straight into pool buffers, chunk by chunk
// (DESIGN: "Memory has one bound"; open62541 sends a full output buffer as a chunk and goes on in
// a fresh one the same way). The writer is a BinaryWriter whose `ensure` answers "no room" by
// finishing the chunk it fills (its sealer writes header, sequence number, signature, encryption)
// and starting the next, so no message exists whole in memory and each byte is written once,
// where it leaves from (encryption aside: node:crypto has no in-place AES). A chunk is final only
// when the message ends; a message that fails after some of its chunks were sealed ends with an
// abort chunk (Part 6 §6.7.3), one that fails before leaves nothing behind and the caller may
// answer otherwise (a ServiceFault).
//
// A primitive needs its bytes contiguous (`ensure(n)`): one that finds fewer left in a chunk
// starts the next, so an intermediate chunk may end up to 15 bytes (a Guid) short of full.
//
// Chunks are laid out back to back in a pool buffer, those of one message and of the next, until
// the buffer is full or the connection flushes (once it has handled the input it has): one
// socket write carries many small responses, as a stream would, and a buffer holds what was
// answered since the last flush, never more than it can hold.
//
// Positions to fill in later (a length that follows the bytes it counts, a flag known only at the
// end) go through `mark()`/`patchInt32()`/`patchByte()`: while a mark is open, chunks are kept
// unsealed (their room is kept for the signature), then sealed and handed on in order once it is
// patched. `copyFrom(mark)` copies out what was written since an open mark (the NotificationMessage
// of a Publish, which the retransmission queue keeps as it was sent: subscription.ts), `unmark()`
// closes a mark that patches nothing. Strings, byte strings and raw bytes longer than a chunk are
// split across chunks here.
//
// Lent bytes (a message begun with `lend`): copying a large body (a HistoryRead's megabytes of
// encoded values, out of the read worker's shared memory, in one go) is what
// makes such a message long, not its encoding. So raw bytes of at least LEND_MIN are not copied
// while the message is encoded: they are kept by reference, and what is written after them goes
// to a small heap buffer of its own (`scratch`, in order, as parts between the references). The
// encode ends with `end()` answering false: the message is complete but not yet laid out, and
// `feed()` copies its parts into chunks (sealing each as it fills) until a time given, called
// again on later turns of the loop until it answers true. The caller keeps the lent bytes alive
// until then. A mark taken while bytes are lent, or more than SCRATCH_MAX of writes after them,
// lays what was kept out at once and goes on as usual (correct, only not sliced).
import { BinaryWriter } from "../ua/binary-writer.js";
import { UaStatusError } from "../ua/errors.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { putInt32 } from "../ua/le.js";
import { ChunkType, MAX_URL_LENGTH } from "./ua-tcp.js";

/** What goes around a chunk's body: the secure channel's part (src/security/secure-channel.ts). */
export interface ChunkSealer {
  /** Where the body starts in a chunk (message header, security header, sequence header). */
  readonly bodyOffset: number;
  /** Body bytes that fit a chunk of at most `room` bytes (and of at most the negotiated chunk size). */
  maxBodyIn(room: number): number;
  /** Bytes on the wire of a chunk with `bodyLength` bytes of body (padding and signature included). */
  wireLength(bodyLength: number): number;
  /**
   * Completes the chunk at buf[chunkStart...] whose body ends at `bodyEnd`: header with
   * `chunkType`, sequence number, padding, signature, encryption. Returns its size on the wire.
   */
  seal(buf: Buffer, chunkStart: number, bodyEnd: number, chunkType: number): number;
}

/** Where the writer's buffers come from and go to (the connection). */
export interface ChunkOutput {
  /** A pool buffer to lay chunks out in, or undefined when the budget has none for this connection. */
  takeBuffer(): Buffer | undefined;
  /** A buffer with nothing to send goes back. */
  dropBuffer(buf: Buffer): void;
  /** Sealed chunks in buf[0, length), to be sent in order; `responses` of them end a response. The buffer goes back once written. */
  sendBuffer(buf: Buffer, length: number, responses: number): void;
}

/** Raw bytes at least this long are lent to a message begun with `lend` (kept by reference, copied by feed()). */
export const LEND_MIN = 16 * 1024;
/** Bytes written after lent bytes that are kept in the scratch buffer at most; past it they are laid out at once. */
const SCRATCH_MAX = 64 * 1024;
/** A chunk starts in what is left of a buffer only if its body gets at least this much (or a quarter of a whole chunk's). */
const MIN_CHUNK_BODY = 1024;
const EMPTY = Buffer.alloc(0);
const encoder = new TextEncoder();
const neverLate = (): number => 0;

function tooLarge(reason: string): UaStatusError {
  return new UaStatusError(StatusCodes.BadResponseTooLarge, reason);
}

export class ChunkWriter extends BinaryWriter {
  private readonly out: ChunkOutput;
  /** Body bytes a chunk in a whole buffer holds (set with each message's sealer). */
  private fullBody = 0;
  private sealer: ChunkSealer | null = null;
  private bodyOffset = 0;
  private maxBodyTotal = 0;
  private maxChunks = 0;

  // The buffer being filled: chunks up to `fill`, sealed up to `sealedEnd`; responses that end in it.
  private cur: Buffer | null = null;
  private fill = 0;
  private sealedEnd = 0;
  private curResponses = 0;
  // Full buffers kept back while chunks in them are unsealed (an open mark): sealed prefix, responses.
  private readonly closedBufs: Buffer[] = [];
  private readonly closedFill: number[] = [];
  private readonly closedSealed: number[] = [];
  private readonly closedResponses: number[] = [];

  // The message being written.
  private chunkStart = 0;
  /** offset() of the current chunk's first body byte. */
  private base = 0;
  /** Chunks of this message sealed. */
  private sealed = 0;
  // Chunks kept unsealed while a mark is open: buffer, start, body end, offset() of their first body byte.
  private readonly heldBuf: Buffer[] = [];
  private readonly heldStart: number[] = [];
  private readonly heldEnd: number[] = [];
  private readonly heldBase: number[] = [];
  private marks = 0;
  /** Where bufferAt found the byte it was asked for. */
  private patchAt = 0;

  // Lent bytes (see the head comment): whether this message may lend, whether it does now
  // (buffer/pos/limit then point into scratch; the chunk's are kept in real*), its parts (lent
  // arrays and scratch ranges, in order), and while feeding, how far they were laid out.
  private lend = false;
  private lending = false;
  private feeding = false;
  private feedResponse = false;
  private scratch: Buffer = EMPTY;
  private rangeStart = 0;
  /** offset() where lending began, and the bytes of the parts closed since. */
  private lendBase = 0;
  private lent = 0;
  private scratchUsed = 0;
  private readonly parts: Uint8Array[] = [];
  private feedPart = 0;
  private feedAt = 0;
  private realBuffer: Buffer = EMPTY;
  private realPos = 0;
  private realLimit = 0;

  constructor(out: ChunkOutput) {
    super(EMPTY, 0);
    this.out = out;
  }

  /** Whether a message is being written (or laid out by feed()). */
  get active(): boolean {
    return this.sealer !== null;
  }

  /** Whether the message ended with its parts still to lay out (`feed`). */
  get pending(): boolean {
    return this.feeding;
  }

  /**
   * Starts a message. `maxBody` bounds its body (the client's MaxMessageSize), `maxChunks` its
   * chunks (MaxChunkCount, 0 = any). Throws UaStatusError(BadTcpNotEnoughResources) when the
   * budget has no buffer for it.
   */
  begin(sealer: ChunkSealer, maxBody: number, maxChunks: number, bufferSize: number, lend = false): void {
    if (this.sealer !== null) throw new UaStatusError(StatusCodes.BadInternalError, "a message is already being written on this connection");
    this.sealer = sealer;
    this.bodyOffset = sealer.bodyOffset;
    this.fullBody = sealer.maxBodyIn(bufferSize);
    this.maxBodyTotal = maxBody;
    this.maxChunks = maxChunks;
    this.base = 0;
    this.sealed = 0;
    this.marks = 0;
    this.depth = 0;
    this.lend = lend;
    try {
      this.startChunk();
    } catch (err) {
      this.sealer = null;
      throw err;
    }
  }

  /**
   * Ends the message: what was kept is sealed, the last chunk final; true. False when it lent
   * bytes: it is complete, and feed() lays it out. Throws BadResponseTooLarge past the limits
   * (then `abort`).
   */
  end(isResponse: boolean): boolean {
    if (this.marks !== 0) throw new UaStatusError(StatusCodes.BadInternalError, "a mark was never patched");
    if (this.offset() > this.maxBodyTotal) throw tooLarge(`response over ${this.maxBodyTotal} bytes`);
    if (this.lending) {
      this.stopLending();
      this.feeding = true;
      this.feedResponse = isResponse;
      this.feedPart = this.feedAt = 0;
      return false;
    }
    this.finish(isResponse);
    return true;
  }

  /**
   * Lays out the parts of a message that end() left pending, chunk by chunk, until `now()`
   * reaches `until` or `maxBytes` are copied (at least one chunk's worth each call); true once
   * the message is finished (its last chunk final). Throws as end() and the writes do (then `abort`).
   */
  feed(until: number, now: () => number, maxBytes = Infinity): boolean {
    if (!this.feeding) throw new UaStatusError(StatusCodes.BadInternalError, "no message to lay out");
    if (!this.copyParts(until, now, maxBytes)) return false;
    this.dropParts();
    this.finish(this.feedResponse);
    return true;
  }

  /** Copies the parts on into chunks until `until` or `maxBytes`; true when all are. */
  private copyParts(until: number, now: () => number, maxBytes: number): boolean {
    const parts = this.parts;
    let copied = 0;
    while (this.feedPart < parts.length) {
      const p = parts[this.feedPart];
      if (this.pos === this.limit) this.nextChunk();
      const k = Math.min(this.limit - this.pos, p.length - this.feedAt);
      this.buffer.set(this.feedAt === 0 && k === p.length ? p : p.subarray(this.feedAt, this.feedAt + k), this.pos);
      this.pos += k;
      this.feedAt += k;
      copied += k;
      if (this.feedAt === p.length) {
        this.feedPart++;
        this.feedAt = 0;
      }
      if (this.feedPart < parts.length && (copied >= maxBytes || now() >= until)) return false;
    }
    return true;
  }

  private finish(isResponse: boolean): void {
    const sealer = this.sealer!;
    if (this.heldBuf.length > 0 || this.closedBufs.length > 0) this.sealHeld();
    const wire = sealer.seal(this.cur!, this.chunkStart, this.pos, ChunkType.Final);
    this.fill = this.sealedEnd = this.chunkStart + wire;
    if (isResponse) this.curResponses++;
    this.endMessage();
  }

  /**
   * Abandons the message after a failure. True when none of it was sealed (nothing of it will be
   * sent; the caller may answer otherwise); false when chunks of it were: an abort chunk carrying
   * `status` and `reason` follows them (Part 6 §6.7.3), and the message is over for the peer.
   */
  abort(status: number, reason: string, isResponse: boolean): boolean {
    const sealer = this.sealer;
    if (sealer === null) return true;
    if (this.lending) this.stopLending();
    this.dropParts();
    if (this.heldBuf.length > 0) this.clearHeld();
    this.marks = 0;
    // Unsealed chunks are dropped; buffers kept back go on with what was sealed in them.
    for (let i = 0; i < this.closedBufs.length; i++) {
      if (this.closedSealed[i] > 0) this.out.sendBuffer(this.closedBufs[i], this.closedSealed[i], this.closedResponses[i]);
      else this.out.dropBuffer(this.closedBufs[i]);
    }
    if (this.closedBufs.length > 0) this.clearClosed();
    this.fill = this.sealedEnd;
    if (this.sealed === 0) {
      this.endMessage();
      return true;
    }
    // The abort body: Error UInt32, Reason String, in a chunk of its own. Without a buffer for it
    // the message is cut off half-way: the connection must end (the caller closes it).
    const text = reason.length > MAX_URL_LENGTH / 4 ? reason.slice(0, MAX_URL_LENGTH / 4) : reason;
    try {
      this.startChunk(8 + Buffer.byteLength(text));
    } catch (err) {
      this.endMessage();
      throw err;
    }
    this.writeUInt32(status);
    this.writeString(text);
    const wire = sealer.seal(this.cur!, this.chunkStart, this.pos, ChunkType.Abort);
    this.fill = this.sealedEnd = this.chunkStart + wire;
    if (isResponse) this.curResponses++;
    this.endMessage();
    return false;
  }

  /** Hands the buffer being filled on (between messages): the connection calls this once it has handled its input. */
  flush(): void {
    if (this.sealer !== null || this.cur === null) return;
    const buf = this.cur;
    this.cur = null;
    if (this.fill > 0) this.out.sendBuffer(buf, this.fill, this.curResponses);
    else this.out.dropBuffer(buf);
    this.fill = this.sealedEnd = this.curResponses = 0;
  }

  override offset(): number {
    if (this.lending) return this.lendBase + this.lent + this.pos - this.rangeStart;
    return this.base + this.pos - this.chunkStart - this.bodyOffset;
  }

  override mark(): number {
    // Patches and copies reach into chunks only (bufferAt, copyFrom): what was lent goes there first.
    if (this.lending) this.layOut();
    this.marks++;
    return this.offset();
  }

  override patchInt32(mark: number, v: number): void {
    const buf = this.bufferAt(mark);
    putInt32(buf, this.patchAt, v);
    if (--this.marks === 0 && this.heldBuf.length > 0) this.sealHeld();
  }

  override patchByte(mark: number, v: number): void {
    const buf = this.bufferAt(mark);
    buf[this.patchAt] = v;
    if (--this.marks === 0 && this.heldBuf.length > 0) this.sealHeld();
  }

  /** The buffer with the byte at offset() `mark` (the current chunk's, or one kept for a mark); its position goes to patchAt. */
  private bufferAt(mark: number): Buffer {
    if (mark >= this.base) {
      this.patchAt = this.chunkStart + this.bodyOffset + mark - this.base;
      return this.buffer;
    }
    let i = this.heldBuf.length - 1;
    while (this.heldBase[i] > mark) i--;
    this.patchAt = this.heldStart[i] + this.bodyOffset + mark - this.heldBase[i];
    return this.heldBuf[i];
  }

  override copyFrom(mark: number): Buffer {
    const out = Buffer.allocUnsafe(this.offset() - mark);
    let at = 0;
    for (let i = 0; i < this.heldBuf.length; i++) {
      const bodyStart = this.heldStart[i] + this.bodyOffset;
      const base = this.heldBase[i];
      const end = base + this.heldEnd[i] - bodyStart;
      if (end <= mark) continue;
      const from = bodyStart + Math.max(0, mark - base);
      at += this.heldBuf[i].copy(out, at, from, this.heldEnd[i]);
    }
    const bodyStart = this.chunkStart + this.bodyOffset;
    this.buffer.copy(out, at, bodyStart + Math.max(0, mark - this.base), this.pos);
    return out;
  }

  override unmark(): void {
    if (--this.marks === 0 && this.heldBuf.length > 0) this.sealHeld();
  }

  protected override overflow(n: number): void {
    if (this.sealer === null) throw new UaStatusError(StatusCodes.BadInternalError, "write outside a message");
    if (this.lending) {
      if (this.growScratch(n)) return;
      this.layOut();
      if (this.pos + n <= this.limit) return;
    }
    if (n > this.fullBody) throw new UaStatusError(StatusCodes.BadEncodingError, `${n} contiguous bytes do not fit a chunk`);
    this.nextChunk();
  }

  override writeBytes(v: Uint8Array): void {
    const n = v.length;
    if (n >= LEND_MIN && this.lend && this.marks === 0) {
      this.lendBytes(v);
      return;
    }
    if (this.lending) {
      this.ensure(n);
      if (this.lending) {
        this.buffer.set(v, this.pos);
        this.pos += n;
        return;
      }
    }
    let at = 0;
    while (at < n) {
      if (this.pos === this.limit) this.nextChunk();
      const k = Math.min(this.limit - this.pos, n - at);
      this.buffer.set(at === 0 && k === n ? v : v.subarray(at, at + k), this.pos);
      this.pos += k;
      at += k;
    }
  }

  override writeByteString(v: Uint8Array | undefined | null): void {
    if (v instanceof Uint8Array && 4 + v.length > this.limit - this.pos) {
      this.writeInt32(v.length);
      this.writeBytes(v);
      return;
    }
    super.writeByteString(v);
  }

  override writeString(v: string | undefined | null): void {
    if (this.lending && typeof v === "string") {
      const need = 4 + v.length * 3;
      if (need <= this.limit - this.pos || this.growScratch(need)) {
        super.writeString(v);
        return;
      }
      this.layOut();
    }
    if (typeof v !== "string" || 4 + v.length * 3 <= this.limit - this.pos) {
      super.writeString(v);
      return;
    }
    this.writeInt32(Buffer.byteLength(v, "utf8"));
    let rest = v;
    while (rest.length > 0) {
      // A code point takes at most 4 bytes: with less room the chunk ends here.
      if (this.limit - this.pos < 4) this.nextChunk();
      const r = encoder.encodeInto(rest, this.buffer.subarray(this.pos, this.limit));
      this.pos += r.written;
      rest = rest.slice(r.read);
    }
  }

  /** Starts a chunk at `fill` in the current buffer, or in a new one when too little is left. */
  private startChunk(minBody = Math.min(MIN_CHUNK_BODY, this.fullBody >> 2)): void {
    const sealer = this.sealer!;
    let body = this.cur === null ? 0 : sealer.maxBodyIn(this.cur.length - this.fill);
    if (body < minBody) {
      this.closeBuffer();
      const next = this.out.takeBuffer();
      if (next === undefined) throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "no memory left for a response");
      this.cur = next;
      this.fill = this.sealedEnd = this.curResponses = 0;
      body = this.fullBody;
    }
    this.chunkStart = this.fill;
    this.buffer = this.cur!;
    this.pos = this.fill + this.bodyOffset;
    this.limit = this.pos + body;
  }

  /** The current chunk is full: it is kept (open mark) or sealed; the next one starts. */
  private nextChunk(): void {
    const sealer = this.sealer!;
    if (this.chunkStart > 0 && this.sealed === 0 && this.heldBuf.length === 0 && this.pos - this.chunkStart - this.bodyOffset < this.fullBody) {
      // The message outgrows the room earlier messages left in this buffer: its first chunk moves
      // once to the start of a fresh buffer (at most one chunk's bytes, once per message), so that
      // its intermediate chunks are full and how a message is cut does not depend on what came
      // before it. The bytes of earlier messages go on as they are.
      this.relocate();
      return;
    }
    const body = this.pos - this.chunkStart - this.bodyOffset;
    // The message goes on: this chunk and at least one more.
    if (this.base + body >= this.maxBodyTotal) throw tooLarge(`response over ${this.maxBodyTotal} bytes`);
    if (this.maxChunks !== 0 && this.sealed + this.heldBuf.length + 2 > this.maxChunks) throw tooLarge(`response over ${this.maxChunks} chunks`);
    if (this.marks > 0) {
      this.heldBuf.push(this.cur!);
      this.heldStart.push(this.chunkStart);
      this.heldEnd.push(this.pos);
      this.heldBase.push(this.base);
      // Its room on the wire stays reserved: sealing adds padding and signature in place.
      this.fill = this.chunkStart + sealer.wireLength(body);
    } else {
      const wire = sealer.seal(this.cur!, this.chunkStart, this.pos, ChunkType.Intermediate);
      this.fill = this.sealedEnd = this.chunkStart + wire;
      this.sealed++;
    }
    this.base += body;
    this.startChunk();
  }

  private relocate(): void {
    const next = this.out.takeBuffer();
    if (next === undefined) throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "no memory left for the rest of a response");
    const from = this.cur!;
    const start = this.chunkStart;
    const used = this.pos - start;
    from.copy(next, 0, start, this.pos);
    // What is before the chunk is sealed (earlier messages): it is sent, or kept back in order.
    this.fill = start;
    this.closeBuffer();
    this.cur = next;
    this.fill = this.sealedEnd = this.curResponses = 0;
    this.chunkStart = 0;
    this.buffer = next;
    this.pos = used;
    this.limit = this.bodyOffset + this.fullBody;
  }

  /** The buffer being filled is done with: handed on, or kept back while it has unsealed chunks. */
  private closeBuffer(): void {
    const buf = this.cur;
    if (buf === null) return;
    this.cur = null;
    if (this.marks > 0 || this.closedBufs.length > 0) {
      this.closedBufs.push(buf);
      this.closedFill.push(this.fill);
      this.closedSealed.push(this.sealedEnd);
      this.closedResponses.push(this.curResponses);
    } else if (this.fill > 0) {
      this.out.sendBuffer(buf, this.fill, this.curResponses);
    } else {
      this.out.dropBuffer(buf);
    }
  }

  /** Seals the chunks kept for a mark, in order, and hands on the buffers kept back for them. */
  private sealHeld(): void {
    const sealer = this.sealer!;
    for (let i = 0; i < this.heldBuf.length; i++) {
      const buf = this.heldBuf[i];
      const end = this.heldStart[i] + sealer.seal(buf, this.heldStart[i], this.heldEnd[i], ChunkType.Intermediate);
      if (buf === this.cur) this.sealedEnd = end;
      this.sealed++;
    }
    this.clearHeld();
    // Everything in them is sealed now.
    for (let i = 0; i < this.closedBufs.length; i++) this.out.sendBuffer(this.closedBufs[i], this.closedFill[i], this.closedResponses[i]);
    this.clearClosed();
  }

  private clearHeld(): void {
    this.heldBuf.length = this.heldStart.length = this.heldEnd.length = this.heldBase.length = 0;
  }

  private clearClosed(): void {
    this.closedBufs.length = this.closedFill.length = this.closedSealed.length = this.closedResponses.length = 0;
  }

  /** Keeps `v` by reference; what follows goes to scratch. */
  private lendBytes(v: Uint8Array): void {
    if (!this.lending) {
      this.lendBase = this.offset();
      this.lent = this.scratchUsed = 0;
      this.realBuffer = this.buffer;
      this.realPos = this.pos;
      this.realLimit = this.limit;
      if (this.scratch.length === 0) this.scratch = Buffer.allocUnsafe(4096);
      this.buffer = this.scratch;
      this.pos = this.rangeStart = 0;
      this.limit = this.scratch.length;
      this.lending = true;
    } else {
      this.closeRange();
    }
    this.parts.push(v);
    this.lent += v.length;
  }

  /** The scratch written since the last part becomes a part. */
  private closeRange(): void {
    if (this.pos === this.rangeStart) return;
    this.parts.push(this.buffer.subarray(this.rangeStart, this.pos));
    this.lent += this.pos - this.rangeStart;
    this.scratchUsed += this.pos - this.rangeStart;
    this.rangeStart = this.pos;
  }

  /** Room for `n` more bytes in scratch: a bigger one (parts keep the old one); false past SCRATCH_MAX. */
  private growScratch(n: number): boolean {
    const open = this.pos - this.rangeStart;
    if (this.scratchUsed + open + n > SCRATCH_MAX) return false;
    let size = this.scratch.length * 2;
    while (size < open + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buffer.copy(next, 0, this.rangeStart, this.pos);
    this.scratch = this.buffer = next;
    this.rangeStart = 0;
    this.pos = open;
    this.limit = size;
    return true;
  }

  /** Back to the chunk: writes go there again (the parts wait for feed()). */
  private stopLending(): void {
    this.closeRange();
    this.lending = false;
    this.buffer = this.realBuffer;
    this.pos = this.realPos;
    this.limit = this.realLimit;
    this.realBuffer = EMPTY;
  }

  /** Lays out what was kept now and writes on into the chunks (see the head comment). */
  private layOut(): void {
    this.stopLending();
    this.copyParts(Infinity, neverLate, Infinity);
    this.dropParts();
  }

  private dropParts(): void {
    // Not kept between messages: scratch is heap outside the pool's budget (64 KiB at most, while a message lends).
    this.scratch = EMPTY;
    this.parts.length = 0;
    this.feedPart = this.feedAt = 0;
    this.lent = 0;
    this.feeding = false;
  }

  private endMessage(): void {
    this.lend = false;
    this.sealer = null;
    this.buffer = EMPTY;
    this.pos = 0;
    this.limit = 0;
    this.marks = 0;
    this.depth = 0;
  }
}
