// The send path of one connection: pool buffers of sealed chunks (chunk-writer.ts lays them out),
// written to the socket in order; a buffer returns to the pool in its write callback. Writes
// respect `socket.write()` returning false and wait for 'drain' (DESIGN: Transport). The queue
// also knows which chunk ends a response, so the connection can count the responses not yet
// written out for its backpressure, and it counts completed writes, so the server can tell a
// peer that stopped reading (tcp-connection.ts decides what to do about either).
import type { Socket } from "node:net";
import type { BufferPool, PoolHolder } from "./buffer-pool.js";

/** The connection a queue sends for. */
export interface SendOwner extends PoolHolder {
  /** A write completed (its buffer went back): input held back for queued bytes may go on. */
  onSent(): void;
}

export class SendQueue {
  /** Responses queued and not yet handed to the socket in full. */
  unsentResponses = 0;
  /** Bytes queued and not yet handed to the socket. */
  unsentBytes = 0;
  /** Write callbacks so far: standing still while writes are pending means the peer reads nothing. */
  writesDone = 0;

  private readonly socket: Socket;
  private readonly pool: BufferPool;
  private readonly holder: SendOwner;
  // Queued buffers, oldest first, from `head` on: bytes to send, responses that end in them.
  private readonly bufs: Buffer[] = [];
  private readonly lens: number[] = [];
  private readonly ends: number[] = [];
  private head = 0;
  /** Written, callback pending, oldest first (writes complete in order). */
  private readonly inflight: Buffer[] = [];
  private waitingDrain = false;
  private readonly onWriteDone: (err?: Error | null) => void;

  constructor(socket: Socket, pool: BufferPool, holder: SendOwner) {
    this.socket = socket;
    this.pool = pool;
    this.holder = holder;
    // One callback per connection (not per write): writes complete in order, so it frees the oldest.
    this.onWriteDone = () => {
      const buf = this.inflight.shift();
      if (buf !== undefined) this.pool.release(buf, this.holder);
      this.writesDone++;
      this.holder.onSent();
    };
  }

  /** Buffers held: queued, and written but not yet taken by the kernel. */
  get buffers(): number {
    return this.bufs.length - this.head + this.inflight.length;
  }

  /** The socket said it is full (`write()` returned false) and has not drained since. */
  get blocked(): boolean {
    return this.waitingDrain;
  }

  /** Writes are pending that the peer has not taken yet. */
  get pending(): boolean {
    return this.inflight.length > 0 || this.head < this.bufs.length;
  }

  /** Queues buf[0, length) of sealed chunks, in which `responses` responses end (they count for backpressure until written). */
  enqueue(buf: Buffer, length: number, responses: number): void {
    this.bufs.push(buf);
    this.lens.push(length);
    this.ends.push(responses);
    this.unsentBytes += length;
    this.unsentResponses += responses;
  }

  /** Writes what is queued as far as the socket allows; true when all of it went. */
  flush(): boolean {
    if (this.waitingDrain) return false;
    const { bufs, lens, ends } = this;
    let corked = false;
    while (this.head < bufs.length) {
      const i = this.head;
      const buf = bufs[i];
      const n = lens[i];
      if (!corked && i + 1 < bufs.length) {
        // More than one chunk to go: let them leave in one writev.
        this.socket.cork();
        corked = true;
      }
      bufs[i] = undefined as unknown as Buffer;
      this.head++;
      this.unsentBytes -= n;
      this.unsentResponses -= ends[i];
      this.inflight.push(buf);
      const ok = this.socket.write(n === buf.length ? buf : buf.subarray(0, n), this.onWriteDone);
      if (!ok) {
        this.waitingDrain = true;
        break;
      }
    }
    if (corked) this.socket.uncork();
    this.compact();
    return this.head === bufs.length;
  }

  /** The socket took its buffered writes ('drain'). */
  drained(): void {
    this.waitingDrain = false;
  }

  /** The socket is gone: queued chunks go back unsent (written ones come back through their callbacks). */
  clear(): void {
    for (let i = this.head; i < this.bufs.length; i++) this.pool.release(this.bufs[i], this.holder);
    this.bufs.length = this.lens.length = this.ends.length = 0;
    this.head = 0;
    this.unsentBytes = 0;
    this.unsentResponses = 0;
  }

  private compact(): void {
    if (this.head === this.bufs.length) {
      this.bufs.length = this.lens.length = this.ends.length = 0;
      this.head = 0;
    } else if (this.head > 64 && this.head * 2 > this.bufs.length) {
      this.bufs.splice(0, this.head);
      this.lens.splice(0, this.head);
      this.ends.splice(0, this.head);
      this.head = 0;
    }
  }
}
