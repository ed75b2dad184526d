// How late device polls start against their absolute deadlines (poll jitter), in a fixed
// histogram: recording is one array increment, no allocation. The System object reads and
// resets it once per interval, so its quantiles describe the last interval; a reset folds the
// interval into totals since start, which /metrics reads as a Prometheus histogram.

/** 0.1 ms buckets up to 1 s, and one overflow bucket. */
const BUCKETS = 10_001;

export class LatenessHistogram {
  private readonly counts = new Uint32Array(BUCKETS);
  count = 0;
  /** Largest lateness recorded, ms. */
  max = 0;
  /** Sum of the lateness recorded in this interval, ms. */
  sum = 0;
  /** The highest bucket recorded into since the last reset (-1: none): reset() folds up to it only. */
  private top = -1;
  /** Intervals before this one (counts, total and sum), folded in by reset(). */
  private readonly folded = new Float64Array(BUCKETS);
  private foldedCount = 0;
  private foldedSum = 0;

  record(lateMs: number): void {
    const ms = lateMs > 0 ? lateMs : 0;
    const bucket = Math.min(BUCKETS - 1, Math.round(ms * 10));
    this.counts[bucket]!++;
    if (bucket > this.top) this.top = bucket;
    this.count++;
    this.sum += ms;
    if (ms > this.max) this.max = ms;
  }

  /**
   * Since start: how many were at most each of `boundsMs` (ascending; cumulative, as Prometheus
   * `le` buckets are), the count and the sum in ms. Resolution 0.1 ms; a bound between two
   * buckets counts the bucket it rounds to.
   */
  totals(boundsMs: readonly number[]): { readonly le: number[]; readonly count: number; readonly sum: number } {
    const le: number[] = [];
    let seen = 0;
    let i = 0;
    for (const bound of boundsMs) {
      const last = Math.min(BUCKETS - 2, Math.round(bound * 10));
      for (; i <= last; i++) seen += this.counts[i]! + this.folded[i]!;
      le.push(seen);
    }
    return { le, count: this.count + this.foldedCount, sum: this.sum + this.foldedSum };
  }

  /** Since start: the count in each 0.1 ms bucket (the last one 1 s and more), a copy. */
  bucketsSinceStart(): Uint32Array {
    const out = new Uint32Array(BUCKETS);
    for (let i = 0; i < BUCKETS; i++) out[i] = this.counts[i]! + this.folded[i]!;
    return out;
  }

  /** Lateness at quantile q (0..1), ms, to 0.1 ms; 0 when nothing was recorded. */
  quantile(q: number): number {
    if (this.count === 0) return 0;
    const target = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i <= this.top; i++) {
      seen += this.counts[i]!;
      if (seen >= target) return i / 10;
    }
    return (BUCKETS - 1) / 10;
  }

  /**
   * Ends the interval. Polls are late by a few ms at most, so the buckets in use are the first
   * tens: folding all 10,001 each interval was a loop V8 compiled on the event loop (OSR).
   */
  reset(): void {
    const top = this.top;
    for (let i = 0; i <= top; i++) this.folded[i]! += this.counts[i]!;
    this.foldedCount += this.count;
    this.foldedSum += this.sum;
    if (top >= 0) this.counts.fill(0, 0, top + 1);
    this.top = -1;
    this.count = 0;
    this.sum = 0;
    this.max = 0;
  }
}
