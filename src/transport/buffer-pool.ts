// The process-wide pool of fixed-size chunk buffers (DESIGN: Transport). Hard bound: at most
// `capacity` buffers of `bufferSize` bytes ever exist; they are created lazily up to that bound and
// never beyond it. An empty pool makes a connection wait (it pauses its socket), never allocate.
//
// How sends avoid deadlock: receiving takes a buffer only for a chunk that spans socket reads
// and keeps it until the chunk is complete, which depends on the peer. If receives could take
// every buffer, a channel paused for backpressure would hold its partial chunk while its
// responses wait for a send buffer: nothing would move. So `sendReserve` buffers are kept for
// sends only: `acquire()` (receive) fails while no more than that many are free, `acquireForSend()`
// may take any. Responses are encoded in the channel's own reusable writer and copied into pool
// buffers as they become available; a send buffer goes back when its socket write callback fires,
// and a connection stops copying while `socket.write()` reports a full socket, so a peer that
// does not read holds at most one or two send buffers.

/** Something that waits for a buffer; called (on the next tick) once one may be available. */
export interface PoolWaiter {
  onPoolBuffer(): void;
}

export interface BufferPoolOptions {
  bufferSize: number;
  capacity: number;
  sendReserve: number;
}

export class BufferPool {
  readonly bufferSize: number;
  readonly capacity: number;
  readonly sendReserve: number;
  /** Buffers handed out and not yet released. */
  inUse = 0;
  /** Highest `inUse` seen: tests and diagnostics check it never passes `capacity`. */
  maxInUse = 0;
  /** Times an acquire found no buffer. */
  misses = 0;

  private readonly free: Buffer[] = [];
  private created = 0;
  private readonly lent = new Set<Buffer>();
  private readonly receiveWaiters: PoolWaiter[] = [];
  private readonly sendWaiters: PoolWaiter[] = [];
  private notifyScheduled = false;

  constructor(options: BufferPoolOptions) {
    if (!(options.bufferSize > 0) || !(options.capacity >= 2)) throw new RangeError("BufferPool needs bufferSize > 0 and capacity >= 2");
    if (!(options.sendReserve >= 1 && options.sendReserve < options.capacity)) {
      throw new RangeError("BufferPool sendReserve must be in [1, capacity)");
    }
    this.bufferSize = options.bufferSize;
    this.capacity = options.capacity;
    this.sendReserve = options.sendReserve;
  }

  get available(): number {
    return this.capacity - this.inUse;
  }

  /** A buffer for receiving, or undefined when only the send reserve is left. */
  acquire(): Buffer | undefined {
    if (this.capacity - this.inUse <= this.sendReserve) {
      this.misses++;
      return undefined;
    }
    return this.take();
  }

  /** A buffer for sending, or undefined when the pool is empty. */
  acquireForSend(): Buffer | undefined {
    if (this.inUse >= this.capacity) {
      this.misses++;
      return undefined;
    }
    return this.take();
  }

  /** Returns a buffer taken from this pool; false (and no effect) for a foreign or double release. */
  release(buf: Buffer): boolean {
    if (!this.lent.delete(buf)) return false;
    this.inUse--;
    this.free.push(buf);
    if ((this.sendWaiters.length > 0 || this.receiveWaiters.length > 0) && !this.notifyScheduled) {
      // Deferred so a waiter never runs inside another connection's parse or write callback.
      this.notifyScheduled = true;
      process.nextTick(notifyWaiters, this);
    }
    return true;
  }

  /** Calls `w.onPoolBuffer()` once a receive buffer may be available. */
  waitForReceive(w: PoolWaiter): void {
    if (!this.receiveWaiters.includes(w)) this.receiveWaiters.push(w);
  }

  /** Calls `w.onPoolBuffer()` once a send buffer may be available. */
  waitForSend(w: PoolWaiter): void {
    if (!this.sendWaiters.includes(w)) this.sendWaiters.push(w);
  }

  /** Forgets a waiter (its connection closed). */
  cancelWait(w: PoolWaiter): void {
    let i = this.receiveWaiters.indexOf(w);
    if (i >= 0) this.receiveWaiters.splice(i, 1);
    i = this.sendWaiters.indexOf(w);
    if (i >= 0) this.sendWaiters.splice(i, 1);
  }

  private take(): Buffer {
    let buf = this.free.pop();
    if (buf === undefined) {
      // allocUnsafeSlow: a buffer of its own, not a slice of Node's shared slab.
      buf = Buffer.allocUnsafeSlow(this.bufferSize);
      this.created++;
    }
    this.lent.add(buf);
    if (++this.inUse > this.maxInUse) this.maxInUse = this.inUse;
    return buf;
  }

  /** @internal Wakes waiters, sends first (they free buffers again), as many as buffers are free. */
  notify(): void {
    this.notifyScheduled = false;
    let free = this.capacity - this.inUse;
    while (free > 0 && this.sendWaiters.length > 0) {
      this.sendWaiters.shift()!.onPoolBuffer();
      free--;
    }
    free = this.capacity - this.inUse - this.sendReserve;
    while (free > 0 && this.receiveWaiters.length > 0) {
      this.receiveWaiters.shift()!.onPoolBuffer();
      free--;
    }
  }
}

function notifyWaiters(pool: BufferPool): void {
  pool.notify();
}
