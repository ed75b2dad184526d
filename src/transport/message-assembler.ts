// Reassembles multi-chunk request messages (Part 6 §6.7.2: chunks 'C' ... 'F' with one RequestId,
// 'A' aborts). A single 'F' chunk needs no assembly and is never copied. Bodies of 'C' chunks are
// copied into one contiguous buffer per message, because the service layer decodes a message as
// one slice; those buffers are heap memory outside the chunk pool, so they are bounded by the
// pending-bytes budgets (per channel and for the whole process) and by a deadline instead.
import { StatusCodes } from "../ua/generated/status-codes.js";
import { UaStatusError } from "../ua/errors.js";
import type { TransportLimits } from "./limits.js";

/** Bytes of incomplete messages held by all channels of one server. */
export interface PendingBudget {
  pendingBytes: number;
  readonly limit: number;
}

export interface Assembly {
  readonly requestId: number;
  buffer: Buffer;
  /** Body bytes so far, in buffer[0, length). */
  length: number;
  chunks: number;
  /** performance.now() of the first chunk. */
  readonly startedAt: number;
}

export class MessageAssembler {
  private readonly open: Assembly[] = [];
  /** Capacity of the open buffers, charged to this channel and to the budget. */
  private charged = 0;

  constructor(
    private readonly limits: TransportLimits,
    private readonly budget: PendingBudget,
  ) {}

  get incompleteCount(): number {
    return this.open.length;
  }

  /** An intermediate chunk 'C' with body buf[start, end). Throws UaStatusError when a limit is passed. */
  append(requestId: number, buf: Buffer, start: number, end: number, now: number): void {
    let a = this.find(requestId);
    if (a === undefined) {
      if (this.open.length >= this.limits.maxIncompleteMessagesPerChannel) {
        throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "too many incomplete messages on one channel");
      }
      a = { requestId, buffer: EMPTY, length: 0, chunks: 0, startedAt: now };
      this.open.push(a);
    }
    this.add(a, buf, start, end);
  }

  /**
   * A final chunk 'F'. Returns undefined when no chunks came before it (the caller hands the
   * chunk body up as it is), else the completed assembly: its body is buffer[0, length), valid
   * until `finish(a)`.
   */
  final(requestId: number, buf: Buffer, start: number, end: number): Assembly | undefined {
    const a = this.find(requestId);
    if (a === undefined) return undefined;
    this.add(a, buf, start, end);
    return a;
  }

  /** Releases a completed assembly returned by `final`. */
  finish(a: Assembly): void {
    this.remove(a);
  }

  /** An abort chunk 'A' (Part 6 §6.7.3): the message is dropped, the channel stays open. */
  abort(requestId: number): boolean {
    const a = this.find(requestId);
    if (a === undefined) return false;
    this.remove(a);
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
    while (this.open.length > 0) this.remove(this.open[this.open.length - 1]);
  }

  private find(requestId: number): Assembly | undefined {
    for (const a of this.open) if (a.requestId === requestId) return a;
    return undefined;
  }

  private add(a: Assembly, buf: Buffer, start: number, end: number): void {
    const n = end - start;
    const length = a.length + n;
    // Part 6 §7.1.2.4: the ACK told the client MaxMessageSize and MaxChunkCount; a client that
    // sends more breaks them, and the message cannot be taken.
    if (++a.chunks > this.limits.maxChunkCount) {
      throw new UaStatusError(StatusCodes.BadRequestTooLarge, `more than ${this.limits.maxChunkCount} chunks`);
    }
    if (length > this.limits.maxMessageSize) {
      throw new UaStatusError(StatusCodes.BadRequestTooLarge, `message over ${this.limits.maxMessageSize} bytes`);
    }
    if (length > a.buffer.length) this.grow(a, length, n);
    buf.copy(a.buffer, a.length, start, end);
    a.length = length;
  }

  private grow(a: Assembly, needed: number, chunkBytes: number): void {
    let size = a.buffer.length === 0 ? Math.max(2 * chunkBytes, 8192) : a.buffer.length * 2;
    while (size < needed) size *= 2;
    if (size > this.limits.maxMessageSize) size = this.limits.maxMessageSize;
    const delta = size - a.buffer.length;
    if (this.charged + delta > this.limits.maxPendingBytesPerChannel) {
      throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "pending message bytes of this channel exhausted");
    }
    if (this.budget.pendingBytes + delta > this.budget.limit) {
      throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "pending message bytes of the server exhausted");
    }
    const next = Buffer.allocUnsafe(size);
    a.buffer.copy(next, 0, 0, a.length);
    a.buffer = next;
    this.charged += delta;
    this.budget.pendingBytes += delta;
  }

  private remove(a: Assembly): void {
    const i = this.open.indexOf(a);
    if (i < 0) return;
    this.open.splice(i, 1);
    this.charged -= a.buffer.length;
    this.budget.pendingBytes -= a.buffer.length;
    a.buffer = EMPTY;
  }
}

const EMPTY = Buffer.alloc(0);
