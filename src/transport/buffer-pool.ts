// The transport's one memory budget and the chunk buffers lent from it (DESIGN: "Memory has one
// bound"). `limit` bytes cover everything the connections of a server hold: the pool's buffers
// (chunks being received, messages being assembled, responses being sent) and what `charge`
// takes besides (socket reads waiting to be parsed, the reassembly scratch). Buffers are cut
// from slabs of about 256 KiB, made lazily and charged whole; an empty budget makes a connection
// wait or refuse, never allocate past the bound.
//
// How sends avoid deadlock: receiving takes a buffer for a chunk that spans socket reads or for
// a message being assembled, and keeps it until the peer completes it. If receives could take
// everything, a channel paused for backpressure would hold its partial chunk while its response
// waits for a send buffer: nothing would move. So the last `sendReserve` bytes are for sends
// only. And a connection that already holds more than `fairShare` (a slow reader with its
// responses piling up) may not take from that reserve either: the reserve is what keeps the
// sessions that read their socket served while the budget is spent.
//
// Memory comes back: `trim()` (once a second, from the server) releases slabs with no buffer
// lent beyond what the last few seconds needed, down to `floor`. A released slab's ArrayBuffer
// is detached (handed to a clone that is dropped at once), so its memory goes with the next
// minor GC instead of waiting for a full one; slabs are large enough for malloc to map them on
// their own, and unmapping gives the pages back (README "Memory": MALLOC_MMAP_THRESHOLD_).

/** Something that waits for a buffer; called (on the next tick) once one may be available. */
export interface PoolWaiter {
  onPoolBuffer(): void;
}

/** Whoever takes from the pool (a connection): the pool counts its bytes for the fair share. */
export interface PoolHolder {
  heldBytes: number;
}

export interface BufferPoolOptions {
  bufferSize: number;
  /** The budget, bytes: slabs and charges together never pass it. */
  limit: number;
  /** Bytes only sends (of holders within their fair share) may take; default limit / 8. */
  sendReserve?: number;
  /** Bytes of slabs kept when idle; default one slab (see the constructor). */
  floor?: number;
  /** A holder with less than this may use the send reserve; default 4 buffers. */
  fairShare?: number;
}

/** Slabs this size or larger are mapped by malloc on their own (above its mmap threshold). */
const SLAB_TARGET = 256 * 1024;
/** trim() looks back this many calls (seconds) for the most buffers in use. */
const TRIM_WINDOW = 5;

interface Slab {
  readonly index: number;
  buffer: Buffer;
  readonly chunks: Buffer[];
  /** Indexes of free chunks (a stack). */
  readonly free: number[];
  readonly lent: Uint8Array;
}

export class BufferPool {
  readonly bufferSize: number;
  readonly limit: number;
  readonly sendReserve: number;
  readonly floor: number;
  readonly fairShare: number;
  /** Buffers per slab, and bytes of one slab. */
  readonly slabBuffers: number;
  readonly slabBytes: number;
  /** Most buffers that can ever be lent at once (the whole budget in slabs). */
  readonly capacity: number;

  /** Bytes charged: live slabs plus `charge`s. */
  used = 0;
  /** Highest `used` seen. */
  maxUsed = 0;
  /** Buffers lent and not yet released. */
  inUse = 0;
  /** Highest `inUse` seen. */
  maxInUse = 0;
  /** Times an acquire or charge found no room. */
  misses = 0;
  /** Slabs made and released over the pool's life. */
  slabsMade = 0;
  slabsReleased = 0;

  private readonly slabs: (Slab | null)[] = [];
  private readonly slabOf = new Map<ArrayBufferLike, Slab>();
  private liveSlabs = 0;
  private freeBuffers = 0;
  /** No slab below this index has a free buffer. */
  private firstFree = 0;
  private readonly receiveWaiters: PoolWaiter[] = [];
  private notifyScheduled = false;
  private readonly peaks = new Int32Array(TRIM_WINDOW);
  private peakNow = 0;
  private trimTick = 0;

  constructor(options: BufferPoolOptions) {
    const { bufferSize, limit } = options;
    if (!(bufferSize > 0) || !Number.isInteger(bufferSize)) throw new RangeError("BufferPool needs an integer bufferSize > 0");
    this.bufferSize = bufferSize;
    this.slabBuffers = Math.max(1, Math.floor(SLAB_TARGET / bufferSize));
    this.slabBytes = this.slabBuffers * bufferSize;
    if (!(limit >= 2 * this.slabBytes)) throw new RangeError(`BufferPool limit must be at least two slabs (${2 * this.slabBytes} bytes)`);
    this.limit = limit;
    this.capacity = Math.floor(limit / this.slabBytes) * this.slabBuffers;
    this.sendReserve = options.sendReserve ?? Math.max(bufferSize, Math.floor(limit / 8));
    if (!(this.sendReserve >= bufferSize && this.sendReserve < limit)) throw new RangeError("BufferPool sendReserve must be at least one buffer and below the limit");
    // One slab, as much as a gateway nobody talks to makes (slabs are made lazily): what an
    // attack took all goes back: a larger floor is kept for good by a pool that once had a
    // burst. A bigger floor would only save re-making a slab when traffic comes back
    // after more than TRIM_WINDOW idle seconds, one 256 KiB allocation; traffic that goes on
    // keeps what its last seconds used through `trim`'s window.
    this.floor = options.floor ?? this.slabBytes;
    this.fairShare = options.fairShare ?? 4 * bufferSize;
  }

  /** Bytes that could still be lent: free buffers of live slabs and whole slabs the budget allows. */
  get headroom(): number {
    const slabs = Math.max(0, Math.floor((this.limit - this.used) / this.slabBytes));
    return this.freeBuffers * this.bufferSize + slabs * this.slabBytes;
  }

  /** Whether the receive side is spent (only the send reserve is left): new connections are refused then. */
  get exhausted(): boolean {
    return this.headroom - this.bufferSize < this.sendReserve;
  }

  /** Slabs alive now. */
  get slabCount(): number {
    return this.liveSlabs;
  }

  /** A buffer for receiving, or undefined when that would eat into the send reserve. */
  acquire(holder: PoolHolder): Buffer | undefined {
    if (this.headroom - this.bufferSize < this.sendReserve) {
      this.misses++;
      return undefined;
    }
    return this.take(holder);
  }

  /** A buffer for sending, or undefined when there is none this holder may take. */
  acquireForSend(holder: PoolHolder): Buffer | undefined {
    const room = this.headroom;
    if (room < this.bufferSize || (room - this.bufferSize < this.sendReserve && holder.heldBytes >= this.fairShare)) {
      this.misses++;
      return undefined;
    }
    return this.take(holder);
  }

  /** Returns a buffer taken from this pool; false (and no effect) for a foreign or double release. */
  release(buf: Buffer, holder: PoolHolder): boolean {
    const slab = this.slabOf.get(buf.buffer);
    if (slab === undefined) return false;
    const i = (buf.byteOffset - slab.buffer.byteOffset) / this.bufferSize;
    if (slab.lent[i] !== 1 || slab.chunks[i] !== buf) return false;
    slab.lent[i] = 0;
    slab.free.push(i);
    this.freeBuffers++;
    if (slab.index < this.firstFree) this.firstFree = slab.index;
    this.inUse--;
    holder.heldBytes -= this.bufferSize;
    this.wake();
    return true;
  }

  /**
   * Charges `bytes` of memory that is not a pool buffer. With `force`, the bytes are already
   * taken (a socket read that arrived): charged even past the limit, so what is left shrinks.
   * Otherwise refused (false) when it would eat into the send reserve.
   */
  charge(bytes: number, force = false): boolean {
    if (!force && this.used + bytes > this.limit - this.sendReserve) {
      // Slabs with nothing lent make room before a charge is refused.
      this.releaseIdleSlabs(this.used + bytes - (this.limit - this.sendReserve));
      if (this.used + bytes > this.limit - this.sendReserve) {
        this.misses++;
        return false;
      }
    }
    this.used += bytes;
    if (this.used > this.maxUsed) this.maxUsed = this.used;
    return true;
  }

  /** Gives back what `charge` took. */
  uncharge(bytes: number): void {
    this.used -= bytes;
    this.wake();
  }

  /** Calls `w.onPoolBuffer()` once a receive buffer may be available. */
  waitForReceive(w: PoolWaiter): void {
    if (!this.receiveWaiters.includes(w)) this.receiveWaiters.push(w);
  }

  /** Forgets a waiter (its connection closed). */
  cancelWait(w: PoolWaiter): void {
    const i = this.receiveWaiters.indexOf(w);
    if (i >= 0) this.receiveWaiters.splice(i, 1);
  }

  /**
   * Called about once a second: releases slabs nothing is lent from, keeping what the most
   * buffers in use over the last TRIM_WINDOW calls needed (plus one slab) and at least `floor`.
   */
  trim(): void {
    this.peaks[this.trimTick++ % TRIM_WINDOW] = this.peakNow;
    this.peakNow = this.inUse;
    let peak = 0;
    for (let i = 0; i < TRIM_WINDOW; i++) if (this.peaks[i] > peak) peak = this.peaks[i];
    const keep = Math.max(Math.ceil(this.floor / this.slabBytes), Math.ceil(peak / this.slabBuffers) + 1);
    if (this.liveSlabs > keep) this.releaseIdleSlabs((this.liveSlabs - keep) * this.slabBytes);
  }

  private take(holder: PoolHolder): Buffer {
    let slab: Slab | null = null;
    if (this.freeBuffers > 0) {
      const slabs = this.slabs;
      let i = this.firstFree;
      while (i < slabs.length && (slabs[i] === null || slabs[i]!.free.length === 0)) i++;
      this.firstFree = i;
      slab = slabs[i]!;
    } else {
      slab = this.makeSlab();
    }
    const k = slab.free.pop()!;
    slab.lent[k] = 1;
    this.freeBuffers--;
    holder.heldBytes += this.bufferSize;
    if (++this.inUse > this.maxInUse) this.maxInUse = this.inUse;
    if (this.inUse > this.peakNow) this.peakNow = this.inUse;
    return slab.chunks[k];
  }

  private makeSlab(): Slab {
    let index = this.slabs.indexOf(null);
    if (index < 0) index = this.slabs.length;
    // allocUnsafeSlow: memory of its own, not a slice of Node's shared 8 KiB pool.
    const buffer = Buffer.allocUnsafeSlow(this.slabBytes);
    const n = this.slabBuffers;
    const chunks = new Array<Buffer>(n);
    const free = new Array<number>(n);
    for (let k = 0; k < n; k++) {
      chunks[k] = buffer.subarray(k * this.bufferSize, (k + 1) * this.bufferSize);
      // Popped from the end: buffers are lent from the slab's start.
      free[k] = n - 1 - k;
    }
    const slab: Slab = { index, buffer, chunks, free, lent: new Uint8Array(n) };
    this.slabs[index] = slab;
    this.slabOf.set(buffer.buffer, slab);
    this.liveSlabs++;
    this.slabsMade++;
    this.freeBuffers += n;
    if (index < this.firstFree) this.firstFree = index;
    this.used += this.slabBytes;
    if (this.used > this.maxUsed) this.maxUsed = this.used;
    return slab;
  }

  /** Releases slabs with nothing lent, highest first, until `bytes` are given back or none is left. */
  private releaseIdleSlabs(bytes: number): void {
    for (let i = this.slabs.length - 1; i >= 0 && bytes > 0; i--) {
      const slab = this.slabs[i];
      if (slab === null || slab.free.length !== this.slabBuffers) continue;
      this.slabs[i] = null;
      this.slabOf.delete(slab.buffer.buffer);
      this.liveSlabs--;
      this.slabsReleased++;
      this.freeBuffers -= this.slabBuffers;
      this.used -= this.slabBytes;
      bytes -= this.slabBytes;
      // Detached: the chunk views become empty (a stale one can no longer write into memory
      // that is gone) and the memory is freed with the clone, which no one keeps.
      structuredClone(slab.buffer.buffer, { transfer: [slab.buffer.buffer as ArrayBuffer] });
    }
    while (this.slabs.length > 0 && this.slabs[this.slabs.length - 1] === null) this.slabs.pop();
  }

  private wake(): void {
    if (this.receiveWaiters.length > 0 && !this.notifyScheduled) {
      // Deferred so a waiter never runs inside another connection's parse or write callback.
      this.notifyScheduled = true;
      process.nextTick(notifyWaiters, this);
    }
  }

  /** @internal Wakes receive waiters, as many as there is room for. Sends never wait: a response
   * is encoded at once, into what the budget has, or refused (chunk-writer.ts). */
  notify(): void {
    this.notifyScheduled = false;
    let room = Math.floor((this.headroom - this.sendReserve) / this.bufferSize);
    while (room > 0 && this.receiveWaiters.length > 0) {
      this.receiveWaiters.shift()!.onPoolBuffer();
      room--;
    }
  }
}

function notifyWaiters(pool: BufferPool): void {
  pool.notify();
}
