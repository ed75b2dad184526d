// Keeps an OpenSecureChannel flood from starving established channels. An OPN Issue
// with a signing policy costs several RSA private-key operations (milliseconds each on a small
// ARM core), far more than any request on an open channel. So:
//  - each remote address has a token bucket of new secure channels (rate and burst); beyond it
//    the OPN is refused at once with BadTcpNotEnoughResources, before any RSA work;
//  - accepted handshakes wait in one bounded FIFO; a full queue refuses the same way;
//  - the queue runs at most `maxConcurrent` handshakes per event-loop turn, then yields, so the
//    sockets of established channels are read between batches. RSA in node:crypto is
//    synchronous: "at once" means back to back without letting other I/O in.
import { performance } from "node:perf_hooks";

export interface HandshakeLimits {
  /** Handshakes run back to back before other I/O gets a turn. */
  maxConcurrent: number;
  /** Handshakes waiting for their turn; more are refused. */
  maxQueued: number;
  /** New secure channels per second from one address (sustained). */
  ratePerAddress: number;
  /** New secure channels one address may open at once before the rate applies. */
  burstPerAddress: number;
}

export const DEFAULT_HANDSHAKE_LIMITS: Readonly<HandshakeLimits> = Object.freeze({
  maxConcurrent: 2,
  maxQueued: 32,
  ratePerAddress: 10,
  burstPerAddress: 20,
});

export interface HandshakeJob {
  /** Runs the queued handshake (called once, from the limiter's turn). */
  runHandshake(): void;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** Addresses remembered at most; full buckets are forgotten first. */
const MAX_BUCKETS = 4096;

export class HandshakeLimiter {
  readonly limits: HandshakeLimits;
  /** Handshakes refused by the per-address rate or the full queue (diagnostics). */
  refused = 0;
  /** Handshakes run. */
  completed = 0;
  private readonly queue: HandshakeJob[] = [];
  private head = 0;
  private readonly buckets = new Map<string, Bucket>();
  private scheduled: NodeJS.Immediate | null = null;
  private readonly now: () => number;

  constructor(limits: Partial<HandshakeLimits> = {}, now: () => number = () => performance.now()) {
    this.limits = { ...DEFAULT_HANDSHAKE_LIMITS, ...definedOnly(limits) };
    this.now = now;
  }

  get queued(): number {
    return this.queue.length - this.head;
  }

  /** Takes one token of `address`'s bucket; false (and counted) when it is empty. */
  admit(address: string): boolean {
    const t = this.now();
    const { ratePerAddress, burstPerAddress } = this.limits;
    let b = this.buckets.get(address);
    if (b === undefined) {
      if (this.buckets.size >= MAX_BUCKETS) this.prune(t);
      b = { tokens: burstPerAddress, at: t };
      this.buckets.set(address, b);
    } else {
      b.tokens = Math.min(burstPerAddress, b.tokens + ((t - b.at) / 1000) * ratePerAddress);
      b.at = t;
    }
    if (b.tokens < 1) {
      this.refused++;
      return false;
    }
    b.tokens -= 1;
    return true;
  }

  /** Queues a handshake; false (and counted) when the queue is full. */
  submit(job: HandshakeJob): boolean {
    if (this.queued >= this.limits.maxQueued) {
      this.refused++;
      return false;
    }
    this.queue.push(job);
    if (this.scheduled === null) this.scheduled = setImmediate(runTurn, this);
    return true;
  }

  /** Drops queued handshakes (server stopping). */
  clear(): void {
    this.queue.length = 0;
    this.head = 0;
    if (this.scheduled !== null) clearImmediate(this.scheduled);
    this.scheduled = null;
  }

  /** @internal one turn: up to maxConcurrent handshakes, then yield. */
  turn(): void {
    this.scheduled = null;
    for (let i = 0; i < this.limits.maxConcurrent && this.head < this.queue.length; i++) {
      const job = this.queue[this.head];
      this.queue[this.head++] = undefined as unknown as HandshakeJob;
      this.completed++;
      job.runHandshake();
    }
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else {
      if (this.head > 64) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      this.scheduled = setImmediate(runTurn, this);
    }
  }

  private prune(t: number): void {
    const { ratePerAddress, burstPerAddress } = this.limits;
    for (const [k, b] of this.buckets) {
      if (b.tokens + ((t - b.at) / 1000) * ratePerAddress >= burstPerAddress) this.buckets.delete(k);
    }
    // Still full: an address-spraying flood; forget the oldest half rather than grow.
    if (this.buckets.size >= MAX_BUCKETS) {
      let n = this.buckets.size >> 1;
      for (const k of this.buckets.keys()) {
        if (n-- <= 0) break;
        this.buckets.delete(k);
      }
    }
  }
}

function runTurn(l: HandshakeLimiter): void {
  l.turn();
}

function definedOnly<T extends object>(o: Partial<T>): Partial<T> {
  const out: Partial<T> = {};
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] !== undefined) out[k] = o[k];
  return out;
}
