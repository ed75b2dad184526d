// Reassembles multi-chunk request messages (Part 6 §6.7.2: chunks 'C' ... 'F' with one RequestId,
// 'A' aborts). A single 'F' chunk needs no assembly and is never copied. Bodies of 'C' chunks are
// copied, back to back, into pool buffers taken from the memory budget (buffer-pool.ts) as they
// fill: an incomplete message holds what it has received, rounded up to one buffer, and nothing
// that is not charged. Bounded per channel (maxPendingBytesPerChannel), by the budget for the
// whole process (refused with BadTcpNotEnoughResources before anything is buffered past it), and
// by a deadline (the secure channel's timer).
//
// The service layer decodes a message as one slice: a message that fits one pool buffer is
// decoded from it; a longer one is copied once into the process's reassembly buffer (also
// charged, shrunk when idle), since decoding is synchronous and one message is decoded at a time.
import { UaStatusError } from "../ua/errors.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { BufferPool, PoolHolder } from "./buffer-pool.js";
import type { TransportLimits } from "./limits.js";

/** One contiguous buffer for decoding messages longer than a pool buffer, shared by all channels. */
export class ReassemblyBuffer {
  private buf: Buffer | null = null;
  private busy = false;
  private usedSinceTrim = false;

  constructor(private readonly pool: BufferPool) {}

  /** Bytes it holds now (charged to the pool's budget). */
  get size(): number {
    return this.buf?.length ?? 0;
  }

  /** A buffer of at least `length` bytes until `give()`, or undefined when the budget refuses. */
  take(length: number): Buffer | undefined {
    this.usedSinceTrim = true;
    if (this.busy) {
      // Not reached while decoding is synchronous; a second user gets a charged buffer of its own.
      return this.pool.charge(length) ? Buffer.allocUnsafeSlow(length) : undefined;
    }
    if (this.buf === null || this.buf.length < length) {
      // Rounded up so that messages of similar sizes reuse it.
      const size = Math.ceil(length / 65536) * 65536;
      this.drop();
      if (!this.pool.charge(size)) return undefined;
      this.buf = Buffer.allocUnsafeSlow(size);
    }
    this.busy = true;
    return this.buf;
  }

  give(buf: Buffer): void {
    if (buf === this.buf) this.busy = false;
    else this.pool.uncharge(buf.length);
  }

  /** Called with the pool's trim: a buffer not used since the last call goes. */
  trim(): void {
    if (!this.busy && !this.usedSinceTrim) this.drop();
    this.usedSinceTrim = false;
  }

  private drop(): void {
    const b = this.buf;
    if (b === null) return;
    this.buf = null;
    this.pool.uncharge(b.length);
    // Detached so that the memory goes with the next minor GC (see buffer-pool.ts).
    structuredClone(b.buffer, { transfer: [b.buffer as ArrayBuffer] });
  }
}

interface Assembly {
  readonly requestId: number;
  /** Pool buffers holding the body so far, back to back. */
  readonly blocks: Buffer[];
  /** Body bytes so far. */
  length: number;
  chunks: number;
  /** performance.now() of the first chunk. */
  readonly startedAt: number;
}

/** A completed message: body[start, end), valid until `MessageAssembler.finish()`. */
export interface AssembledMessage {
  body: Buffer;
  start: number;
  end: number;
}

export class MessageAssembler {
  private readonly open: Assembly[] = [];
  /** Pool buffers held by this channel's incomplete messages. */
  private blocks = 0;
  private readonly done: AssembledMessage = { body: Buffer.alloc(0), start: 0, end: 0 };
  private doneBlocks: Buffer[] | null = null;

  constructor(
    private readonly limits: TransportLimits,
    private readonly pool: BufferPool,
    private readonly holder: PoolHolder,
    private readonly scratch: ReassemblyBuffer,
  ) {}

  get incompleteCount(): number {
    return this.open.length;
  }

  /** Bytes of pool buffers this channel's incomplete messages hold. */
  get heldBytes(): number {
    return this.blocks * this.pool.bufferSize;
  }

  /** An intermediate chunk 'C' with body buf[start, end). Throws UaStatusError when a limit is passed. */
  append(requestId: number, buf: Buffer, start: number, end: number, now: number): void {
    let a = this.find(requestId);
    if (a === undefined) {
      if (this.open.length >= this.limits.maxIncompleteMessagesPerChannel) {
        throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "too many incomplete messages on one channel");
      }
      a = { requestId, blocks: [], length: 0, chunks: 0, startedAt: now };
      this.open.push(a);
    }
    this.add(a, buf, start, end);
  }

  /**
   * A final chunk 'F'. Returns undefined when no chunks came before it (the caller hands the
   * chunk body up as it is), else the completed message, valid until `finish()`.
   */
  final(requestId: number, buf: Buffer, start: number, end: number): AssembledMessage | undefined {
    const a = this.find(requestId);
    if (a === undefined) return undefined;
    this.add(a, buf, start, end);
    this.forget(a);
    const out = this.done;
    out.start = 0;
    out.end = a.length;
    if (a.blocks.length === 1) {
      // Decoded where it is; the block goes back in finish().
      out.body = a.blocks[0];
      this.doneBlocks = a.blocks;
      return out;
    }
    const whole = this.scratch.take(a.length);
    if (whole === undefined) {
      this.releaseBlocks(a.blocks);
      throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "no memory left to put a message together");
    }
    const size = this.pool.bufferSize;
    for (let i = 0; i < a.blocks.length; i++) a.blocks[i].copy(whole, i * size, 0, Math.min(size, a.length - i * size));
    this.releaseBlocks(a.blocks);
    out.body = whole;
    this.doneBlocks = null;
    return out;
  }

  /** Releases the message `final` returned. */
  finish(m: AssembledMessage): void {
    if (this.doneBlocks !== null) {
      this.releaseBlocks(this.doneBlocks);
      this.doneBlocks = null;
    } else {
      this.scratch.give(m.body);
    }
  }

  /** An abort chunk 'A' (Part 6 §6.7.3): the message is dropped, the channel stays open. */
  abort(requestId: number): boolean {
    const a = this.find(requestId);
    if (a === undefined) return false;
    this.forget(a);
    this.releaseBlocks(a.blocks);
    return true;
  }

  /** performance.now() of the oldest incomplete message, or Infinity. */
  oldestStart(): number {
    let t = Infinity;
    for (const a of this.open) if (a.startedAt < t) t = a.startedAt;
    return t;
  }

  /** Drops everything (channel closed). */
  clear(): void {
    while (this.open.length > 0) {
      const a = this.open.pop()!;
      this.releaseBlocks(a.blocks);
    }
  }

  private find(requestId: number): Assembly | undefined {
    for (const a of this.open) if (a.requestId === requestId) return a;
    return undefined;
  }

  private forget(a: Assembly): void {
    const i = this.open.indexOf(a);
    if (i >= 0) this.open.splice(i, 1);
  }

  private add(a: Assembly, buf: Buffer, start: number, end: number): void {
    const n = end - start;
    // Part 6 §7.1.2.4: the ACK told the client MaxMessageSize and MaxChunkCount; a client that
    // sends more breaks them, and the message cannot be taken.
    if (++a.chunks > this.limits.maxChunkCount) {
      throw new UaStatusError(StatusCodes.BadRequestTooLarge, `more than ${this.limits.maxChunkCount} chunks`);
    }
    if (a.length + n > this.limits.maxMessageSize) {
      throw new UaStatusError(StatusCodes.BadRequestTooLarge, `message over ${this.limits.maxMessageSize} bytes`);
    }
    const size = this.pool.bufferSize;
    let at = start;
    while (at < end) {
      const used = a.length % size;
      if (used === 0 && a.length === a.blocks.length * size) this.addBlock(a);
      const block = a.blocks[a.blocks.length - 1];
      const k = Math.min(size - used, end - at);
      buf.copy(block, used, at, at + k);
      a.length += k;
      at += k;
    }
  }

  private addBlock(a: Assembly): void {
    if ((this.blocks + 1) * this.pool.bufferSize > this.limits.maxPendingBytesPerChannel) {
      throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "pending message bytes of this channel exhausted");
    }
    const block = this.pool.acquire(this.holder);
    if (block === undefined) throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "the server's memory for incomplete messages is spent");
    a.blocks.push(block);
    this.blocks++;
  }

  private releaseBlocks(blocks: Buffer[]): void {
    for (const b of blocks) this.pool.release(b, this.holder);
    this.blocks -= blocks.length;
    blocks.length = 0;
  }
}
