// How late device polls start against their absolute deadlines (poll jitter), in a fixed
// histogram: recording is one array increment, no allocation. The System object reads and
// resets it once per interval, so its quantiles describe the last interval.

/** 0.1 ms buckets up to 1 s, and one overflow bucket. */
const BUCKETS = 10_001;

export class LatenessHistogram {
  private readonly counts = new Uint32Array(BUCKETS);
  count = 0;
  /** Largest lateness recorded, ms. */
  max = 0;

  record(lateMs: number): void {
    const ms = lateMs > 0 ? lateMs : 0;
    this.counts[Math.min(BUCKETS - 1, Math.round(ms * 10))]!++;
    this.count++;
    if (ms > this.max) this.max = ms;
  }

  /** Lateness at quantile q (0..1), ms, to 0.1 ms; 0 when nothing was recorded. */
  quantile(q: number): number {
    if (this.count === 0) return 0;
    const target = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i]!;
      if (seen >= target) return i / 10;
    }
    return (BUCKETS - 1) / 10;
  }

  reset(): void {
    this.counts.fill(0);
    this.count = 0;
    this.max = 0;
  }
}
