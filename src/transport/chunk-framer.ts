// Cutting a connection's incoming bytes into UA-TCP chunks (Part 6 §7.1.2), after ws' receiver
// and pg-protocol's parser: the 8-byte header is checked as soon as it is there, before anything
// is buffered. A chunk that lies whole in one socket read is handed on as a view of that read;
// only a chunk that spans reads is copied, into one pool buffer. Socket reads that cannot be
// processed yet (waiting for a pool buffer, or the connection refuses more input for now) are
// kept by reference, and charged to the memory budget while kept (`settleCharge`); the
// connection pauses its socket meanwhile.
//
// What a chunk means, and whether the connection takes more input, is the connection's business
// (tcp-connection.ts); messages of several chunks are put together above, in message-assembler.ts.
import { performance } from "node:perf_hooks";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { getUInt32 } from "../ua/le.js";
import type { BufferPool, PoolHolder, PoolWaiter } from "./buffer-pool.js";
import { ChunkType, HEADER_SIZE, MessageType, messageTypeName, minMessageSize, readMessageType } from "./ua-tcp.js";

/** ArrayBuffer.prototype.transfer (ES2024; in Node 20 with --harmony-rab-gsab-transfer, as the gateway runs). */
const transfer = (ArrayBuffer.prototype as { transfer?: (this: ArrayBuffer, length?: number) => ArrayBuffer }).transfer;

/**
 * Frees a socket read that has been handled in full now, rather than at some later GC: under a
 * flood, reads come by the hundred megabytes and would otherwise wait as garbage for V8 to count
 * enough of them (tens of megabytes) before it collects. Only a read that owns its whole memory
 * (as Node's socket reads do) is freed; every consumer of the bytes copies what it keeps (the
 * chunks handed on are "valid only during the call"), and a view kept against that rule sees an
 * empty buffer rather than memory reused for something else. Small reads too: left to the
 * scavenger, their memory is freed inside its pause, on the event loop (--single-threaded-gc).
 */
export function freeRead(b: Buffer): void {
  if (transfer !== undefined && b.byteOffset === 0 && b.length === b.buffer.byteLength && b.length > 0) transfer.call(b.buffer as ArrayBuffer, 0);
}

/** The connection a framer works for. */
export interface FramerOwner extends PoolWaiter, PoolHolder {
  /** Whether another chunk may be processed now (backpressure, a suspended handshake, closing). */
  canRead(): boolean;
  /** Until HEL has come, no other message type is allowed (Part 6 §7.1.3). */
  readonly awaitingHello: boolean;
  /** Largest chunk the peer may send: our negotiated ReceiveBufferSize. */
  readonly receiveBufferSize: number;
  /** A complete chunk buf[start, end), header included; valid only during the call. */
  onChunk(buf: Buffer, start: number, end: number): void;
  /** A chunk began that is not complete yet: its deadline (`incompleteSince`) starts. */
  onIncomplete(): void;
  /** The input broke a framing rule: the connection closes with this status. */
  close(status: number, reason: string): void;
}

export class ChunkFramer {
  /** performance.now() when the chunk being collected began, 0 when none. */
  incompleteSince = 0;
  /** A chunk spans reads and the pool had no buffer for it: input waits for `bufferArrived()`. */
  waitingBuffer = false;

  private readonly owner: FramerOwner;
  private readonly pool: BufferPool;
  private readonly hdr = Buffer.allocUnsafe(HEADER_SIZE);
  private hdrLen = 0;
  private partial: Buffer | null = null;
  private partialLen = 0;
  private partialNeed = 0;
  private readonly queue: Buffer[] = [];
  private queuePos = 0;
  /** Bytes of kept reads not processed yet (as of the last `settleCharge`), charged to the budget. */
  private charged = 0;

  constructor(owner: FramerOwner, pool: BufferPool) {
    this.owner = owner;
    this.pool = pool;
  }

  /** Socket reads not yet processed. */
  get pending(): boolean {
    return this.queue.length > 0;
  }

  /** Keeps a socket read (by reference) until `run()` gets to it. */
  push(data: Buffer): void {
    this.queue.push(data);
  }

  /** Processes kept reads as far as the owner takes chunks and the pool has buffers. */
  run(): void {
    const queue = this.queue;
    while (queue.length > 0 && this.owner.canRead()) {
      const data = queue[0];
      const pos = this.parse(data, this.queuePos);
      if (pos >= data.length) {
        // Nothing of it is needed any more (a chunk that spanned it was copied out).
        if (queue.shift() === data) freeRead(data);
        this.queuePos = 0;
      } else {
        this.queuePos = pos;
      }
    }
  }

  /** Bytes of socket reads kept and not processed, as of the last `settleCharge`. */
  get keptBytes(): number {
    return this.charged;
  }

  /** Charges the budget for the reads kept now (or gives back what was processed). */
  settleCharge(): void {
    let kept = 0;
    if (this.queue.length > 0) {
      for (const b of this.queue) kept += b.length;
      kept -= this.queuePos;
    }
    if (kept > this.charged) this.pool.charge(kept - this.charged, true);
    else if (kept < this.charged) this.pool.uncharge(this.charged - kept);
    this.charged = kept;
  }

  /** The pool has a buffer again. */
  bufferArrived(): void {
    if (!this.waitingBuffer) return;
    this.waitingBuffer = false;
    // The wait was ours, not the peer's: the chunk deadline starts again.
    if (this.incompleteSince !== 0) this.incompleteSince = performance.now();
  }

  /** Drops all input (the connection is closing) and returns the pool buffer it held. */
  release(): void {
    if (this.partial !== null) {
      this.pool.release(this.partial, this.owner);
      this.partial = null;
    }
    this.hdrLen = 0;
    this.incompleteSince = 0;
    for (const b of this.queue) freeRead(b);
    this.queue.length = 0;
    this.queuePos = 0;
    this.waitingBuffer = false;
    this.settleCharge();
  }

  /** Parses data[pos...]; returns where it stopped (data.length when all is consumed). */
  private parse(data: Buffer, pos: number): number {
    const owner = this.owner;
    const len = data.length;
    while (pos < len) {
      if (!owner.canRead()) return pos;
      if (this.partial !== null) {
        const n = Math.min(this.partialNeed - this.partialLen, len - pos);
        data.copy(this.partial, this.partialLen, pos, pos + n);
        this.partialLen += n;
        pos += n;
        if (this.partialLen < this.partialNeed) return pos;
        const buf = this.partial;
        this.partial = null;
        this.incompleteSince = 0;
        owner.onChunk(buf, 0, this.partialNeed);
        this.pool.release(buf, owner);
        continue;
      }
      if (this.hdrLen > 0 || len - pos < HEADER_SIZE) {
        // The header spans socket reads: collect it in the 8-byte scratch, no pool buffer yet.
        const n = Math.min(HEADER_SIZE - this.hdrLen, len - pos);
        data.copy(this.hdr, this.hdrLen, pos, pos + n);
        this.hdrLen += n;
        pos += n;
        this.markIncomplete();
        if (this.hdrLen < HEADER_SIZE) return pos;
        const size = this.checkHeader(this.hdr, 0);
        if (size < 0) return len;
        const buf = this.pool.acquire(owner);
        if (buf === undefined) return this.waitForBuffer() ? pos : len;
        this.hdr.copy(buf, 0, 0, HEADER_SIZE);
        this.hdrLen = 0;
        this.partial = buf;
        this.partialLen = HEADER_SIZE;
        this.partialNeed = size;
        continue;
      }
      const size = this.checkHeader(data, pos);
      if (size < 0) return len;
      if (len - pos >= size) {
        this.incompleteSince = 0;
        owner.onChunk(data, pos, pos + size);
        pos += size;
        continue;
      }
      const buf = this.pool.acquire(owner);
      if (buf === undefined) return this.waitForBuffer() ? pos : len;
      data.copy(buf, 0, pos, len);
      this.partial = buf;
      this.partialLen = len - pos;
      this.partialNeed = size;
      this.markIncomplete();
      return len;
    }
    return pos;
  }

  /** Validates the header at buf[p]; returns MessageSize, or -1 after closing the connection. */
  private checkHeader(buf: Buffer, p: number): number {
    const type = readMessageType(buf, p);
    const chunkType = buf[p + 3];
    const size = getUInt32(buf, p + 4);
    if (this.owner.awaitingHello) {
      // Part 6 §7.1.3: the first message on a connection is HEL.
      if (type !== MessageType.HEL) return this.fail(StatusCodes.BadTcpMessageTypeInvalid, `expected HEL, got ${messageTypeName(type)}`);
    } else if (type !== MessageType.MSG && type !== MessageType.OPN && type !== MessageType.CLO) {
      return this.fail(StatusCodes.BadTcpMessageTypeInvalid, `unexpected message type ${messageTypeName(type)}`);
    }
    if (chunkType !== ChunkType.Final && !(type === MessageType.MSG && (chunkType === ChunkType.Intermediate || chunkType === ChunkType.Abort))) {
      return this.fail(StatusCodes.BadTcpMessageTypeInvalid, `invalid chunk type ${chunkType} for ${messageTypeName(type)}`);
    }
    // Part 6 §7.1.2.3: no chunk larger than the negotiated ReceiveBufferSize; checked before buffering.
    if (size > this.owner.receiveBufferSize) return this.fail(StatusCodes.BadTcpMessageTooLarge, `chunk of ${size} bytes`);
    if (size < minMessageSize(type)) return this.fail(StatusCodes.BadDecodingError, `MessageSize ${size} too small for ${messageTypeName(type)}`);
    return size;
  }

  private fail(status: number, reason: string): -1 {
    this.owner.close(status, reason);
    return -1;
  }

  private markIncomplete(): void {
    if (this.incompleteSince !== 0) return;
    this.incompleteSince = performance.now();
    this.owner.onIncomplete();
  }

  /**
   * No receive buffer for a chunk that spans reads. A connection that holds little waits for one
   * (backpressure); one that already holds more than its fair share of the budget (the chunks of
   * a message it has not finished) would wait holding it, while others wait for what it holds:
   * it is refused. Returns false when the connection was closed.
   */
  private waitForBuffer(): boolean {
    if (this.owner.heldBytes >= this.pool.fairShare) {
      this.owner.close(StatusCodes.BadTcpNotEnoughResources, "the server's memory for incoming messages is spent");
      return false;
    }
    this.waitingBuffer = true;
    this.pool.waitForReceive(this.owner);
    return true;
  }
}
