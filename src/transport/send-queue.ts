// The send path of one connection: pool buffers of sealed chunks (chunk-writer.ts lays them out),
// written to the socket in order; a buffer returns to the pool in its write callback. Writes
// respect `socket.write()` returning false and wait for 'drain' (DESIGN: Transport). The queue
// also knows which chunk ends a response, so the connection can count the responses not yet
// written out for its backpressure, and it counts completed writes, so the server can tell a
// peer that stopped reading (tcp-connection.ts decides what to do about either).
import type { Socket } from "node:net";
import type { BufferPool, PoolHolder } from "./buffer-pool.js";

const EMPTY = Buffer.alloc(0);

/** The connection a queue sends for. */
export interface SendOwner extends PoolHolder {
  /** A write completed (its buffer went back): input held back for queued bytes may go on. */
  onSent(): void;
}

/** Slots a queue starts with; it doubles when full (a connection rarely queues more than a few). */
const INITIAL_SLOTS = 8;

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
  // Two rings, each slot used over and over (a response's send neither grows nor shrinks an
  // array): the buffers queued, oldest at `head`, `count` of them, with their bytes to send and
  // the responses that end in them; and the buffers written whose callback is pending, oldest at
  // `doneHead` (writes complete in order).
  private bufs: Buffer[] = new Array<Buffer>(INITIAL_SLOTS).fill(EMPTY);
  private lens = new Int32Array(INITIAL_SLOTS);
  private ends = new Int32Array(INITIAL_SLOTS);
  private head = 0;
  private count = 0;
  private inflight: Buffer[] = new Array<Buffer>(INITIAL_SLOTS).fill(EMPTY);
  private doneHead = 0;
  private written = 0;
  private waitingDrain = false;
  private readonly onWriteDone: (err?: Error | null) => void;

  constructor(socket: Socket, pool: BufferPool, holder: SendOwner) {
    this.socket = socket;
    this.pool = pool;
    this.holder = holder;
    // One callback per connection (not per write): writes complete in order, so it frees the oldest.
    this.onWriteDone = () => {
      if (this.written > 0) {
        const i = this.doneHead;
        const buf = this.inflight[i];
        this.inflight[i] = EMPTY;
        this.doneHead = (i + 1) & (this.inflight.length - 1);
        this.written--;
        this.pool.release(buf, this.holder);
      }
      this.writesDone++;
      this.holder.onSent();
    };
  }

  /** Buffers held: queued, and written but not yet taken by the kernel. */
  get buffers(): number {
    return this.count + this.written;
  }

  /** The socket said it is full (`write()` returned false) and has not drained since. */
  get blocked(): boolean {
    return this.waitingDrain;
  }

  /** Writes are pending that the peer has not taken yet. */
  get pending(): boolean {
    return this.written > 0 || this.count > 0;
  }

  /** Queues buf[0, length) of sealed chunks, in which `responses` responses end (they count for backpressure until written). */
  enqueue(buf: Buffer, length: number, responses: number): void {
    if (this.count === this.bufs.length) this.growQueue();
    const i = (this.head + this.count) & (this.bufs.length - 1);
    this.bufs[i] = buf;
    this.lens[i] = length;
    this.ends[i] = responses;
    this.count++;
    this.unsentBytes += length;
    this.unsentResponses += responses;
  }

  /** Writes what is queued as far as the socket allows; true when all of it went. */
  flush(): boolean {
    if (this.waitingDrain) return false;
    const { bufs, lens, ends } = this;
    const mask = bufs.length - 1;
    // More than one buffer to go: let them leave in one writev.
    const corked = this.count > 1;
    if (corked) this.socket.cork();
    while (this.count > 0) {
      const i = this.head;
      const buf = bufs[i];
      const n = lens[i];
      bufs[i] = EMPTY;
      this.head = (i + 1) & mask;
      this.count--;
      this.unsentBytes -= n;
      this.unsentResponses -= ends[i];
      this.keepWritten(buf);
      const ok = this.socket.write(n === buf.length ? buf : buf.subarray(0, n), this.onWriteDone);
      if (!ok) {
        this.waitingDrain = true;
        break;
      }
    }
    if (corked) this.socket.uncork();
    return this.count === 0;
  }

  /** The socket took its buffered writes ('drain'). */
  drained(): void {
    this.waitingDrain = false;
  }

  /** The socket is gone: queued chunks go back unsent (written ones come back through their callbacks). */
  clear(): void {
    const mask = this.bufs.length - 1;
    for (; this.count > 0; this.count--) {
      const i = this.head;
      const buf = this.bufs[i];
      this.bufs[i] = EMPTY;
      this.head = (i + 1) & mask;
      this.pool.release(buf, this.holder);
    }
    this.head = 0;
    this.unsentBytes = 0;
    this.unsentResponses = 0;
  }

  /** A buffer handed to the socket: kept until its write callback. */
  private keepWritten(buf: Buffer): void {
    if (this.written === this.inflight.length) {
      this.inflight = unroll(this.inflight, this.doneHead, this.written);
      this.doneHead = 0;
    }
    this.inflight[(this.doneHead + this.written) & (this.inflight.length - 1)] = buf;
    this.written++;
  }

  private growQueue(): void {
    const n = this.bufs.length;
    const lens = new Int32Array(n * 2);
    const ends = new Int32Array(n * 2);
    for (let k = 0; k < this.count; k++) {
      const i = (this.head + k) & (n - 1);
      lens[k] = this.lens[i];
      ends[k] = this.ends[i];
    }
    this.bufs = unroll(this.bufs, this.head, this.count);
    this.lens = lens;
    this.ends = ends;
    this.head = 0;
  }
}

/** The `count` slots of a full ring from `head` on, in order, at the start of a ring twice its size. */
function unroll(ring: Buffer[], head: number, count: number): Buffer[] {
  const n = ring.length;
  const next = new Array<Buffer>(n * 2).fill(EMPTY);
  for (let k = 0; k < count; k++) next[k] = ring[(head + k) & (n - 1)];
  return next;
}
