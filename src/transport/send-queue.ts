// The send path of one connection: complete chunks are written into the connection's reusable
// writer (staging), then copied into pool buffers and written to the socket; a buffer returns to
// the pool in its write callback. Writes respect `socket.write()` returning false and wait for
// 'drain' (DESIGN: Transport); an empty pool makes the queue wait for a send buffer, never
// allocate past the bound.
//
// The queue also knows where each response ends in the stream, so the connection can count the
// responses not yet written out for its backpressure (tcp-connection.ts decides what to do).
import type { Socket } from "node:net";
import { BinaryWriter } from "../ua/binary-writer.js";
import type { BufferPool, PoolWaiter } from "./buffer-pool.js";

/** Staging writers above this size are dropped once empty, so one big response does not pin memory. */
const STAGING_KEEP = 256 * 1024;

export class SendQueue {
  /** Staging for outgoing chunks; stream offsets [base, base + writer.pos). */
  readonly writer: BinaryWriter;

  private readonly socket: Socket;
  private readonly pool: BufferPool;
  private readonly waiter: PoolWaiter;
  private readonly stagingSize: number;
  private base = 0;
  private sent = 0;
  /** Stream offsets where the responses not yet written out end, oldest first. */
  private ring = new Float64Array(64);
  private ringHead = 0;
  private ringLen = 0;
  private waitingDrain = false;
  private waitingBuffer = false;
  private readonly inflight: Buffer[] = [];
  private readonly onWriteDone: (err?: Error | null) => void;

  constructor(socket: Socket, pool: BufferPool, waiter: PoolWaiter, stagingSize: number) {
    this.socket = socket;
    this.pool = pool;
    this.waiter = waiter;
    this.stagingSize = stagingSize;
    this.writer = new BinaryWriter(Buffer.allocUnsafe(stagingSize), 0x7fffffff);
    // One callback per connection (not per write): writes complete in order, so it frees the oldest.
    this.onWriteDone = () => {
      const buf = this.inflight.shift();
      if (buf !== undefined) this.pool.release(buf);
    };
  }

  /** Bytes staged and not yet handed to the socket. */
  get unsentBytes(): number {
    return this.base + this.writer.pos - this.sent;
  }

  /** Responses committed and not yet handed to the socket in full. */
  get unsentResponses(): number {
    return this.ringLen;
  }

  /** Prepares the staging writer for one more message; returns the offset it starts at. */
  begin(): number {
    const w = this.writer;
    const unsent = this.sent - this.base;
    if (unsent > 0 && unsent >= w.pos >> 1) {
      // Most of the staging is already written out: move the rest to the front.
      w.buffer.copyWithin(0, unsent, w.pos);
      w.pos -= unsent;
      this.base = this.sent;
    }
    return w.pos;
  }

  /** The bytes appended since `begin()` are complete chunks; a response counts until written. */
  commit(isResponse: boolean): void {
    if (!isResponse) return;
    if (this.ringLen === this.ring.length) this.growRing();
    this.ring[(this.ringHead + this.ringLen) % this.ring.length] = this.base + this.writer.pos;
    this.ringLen++;
  }

  /** Drops bytes appended since `begin()` (an encoding failed). */
  rollback(start: number): void {
    this.writer.reset(start);
  }

  /** Writes what is staged as far as the socket and the pool allow; true when all of it went. */
  flush(): boolean {
    if (this.waitingDrain || this.waitingBuffer) return false;
    const w = this.writer;
    const end = this.base + w.pos;
    let corked = false;
    while (this.sent < end) {
      const buf = this.pool.acquireForSend();
      if (buf === undefined) {
        this.waitingBuffer = true;
        this.pool.waitForSend(this.waiter);
        break;
      }
      const off = this.sent - this.base;
      const n = Math.min(buf.length, w.pos - off);
      w.buffer.copy(buf, 0, off, off + n);
      this.sent += n;
      if (!corked && this.sent < end) {
        // More than one buffer to go: let them leave in one writev.
        this.socket.cork();
        corked = true;
      }
      this.inflight.push(buf);
      const ok = this.socket.write(n === buf.length ? buf : buf.subarray(0, n), this.onWriteDone);
      while (this.ringLen > 0 && this.ring[this.ringHead] <= this.sent) {
        this.ringHead = (this.ringHead + 1) % this.ring.length;
        this.ringLen--;
      }
      if (!ok) {
        this.waitingDrain = true;
        break;
      }
    }
    if (corked) this.socket.uncork();
    if (this.sent !== end) return false;
    this.base = this.sent;
    w.reset(0);
    if (w.buffer.length > STAGING_KEEP) w.buffer = Buffer.allocUnsafe(this.stagingSize);
    return true;
  }

  /** The socket took its buffered writes ('drain'). */
  drained(): void {
    this.waitingDrain = false;
  }

  /** The pool may have a send buffer again. */
  bufferArrived(): void {
    this.waitingBuffer = false;
  }

  /** The socket is gone: nothing staged will be sent. */
  clear(): void {
    this.writer.reset(0);
    this.base = this.sent = 0;
    this.ringLen = 0;
  }

  private growRing(): void {
    const next = new Float64Array(this.ring.length * 2);
    for (let i = 0; i < this.ringLen; i++) next[i] = this.ring[(this.ringHead + i) % this.ring.length];
    this.ring = next;
    this.ringHead = 0;
  }
}
