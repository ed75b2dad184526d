// A latency histogram with log-linear buckets in the manner of HdrHistogram: every value keeps
// its top 8 significant bits, so a bucket is at most 1/128 (0.8 %) wide relative to its values.
// The counts live in one preallocated array; recording is an index computation and an
// increment, never an allocation, so the load loop can record every response.

/** Significant bits kept per value beyond the leading one. */
const SUB_BITS = 7;
const SUB_COUNT = 1 << SUB_BITS; // 128
/** Values below this are their own bucket (exact). */
const LINEAR_LIMIT = SUB_COUNT << 1; // 256
/** Largest recordable value; larger ones are clamped into the last bucket (and counted). */
export const HISTOGRAM_MAX_VALUE = 0x7fffffff;
const MAX_SHIFT = 30 - SUB_BITS; // msb of HISTOGRAM_MAX_VALUE is bit 30
const BUCKET_COUNT = LINEAR_LIMIT + MAX_SHIFT * SUB_COUNT;

function bucketOf(v: number): number {
  if (v < LINEAR_LIMIT) return v;
  const msb = 31 - Math.clz32(v);
  const shift = msb - SUB_BITS;
  return LINEAR_LIMIT + (shift - 1) * SUB_COUNT + ((v >>> shift) - SUB_COUNT);
}

/** The highest value that falls into bucket `i` (what a percentile reports, as HdrHistogram does). */
function bucketHigh(i: number): number {
  if (i < LINEAR_LIMIT) return i;
  const k = i - LINEAR_LIMIT;
  const shift = (k >>> SUB_BITS) + 1;
  const mantissa = (k & (SUB_COUNT - 1)) + SUB_COUNT;
  return (mantissa + 1) * 2 ** shift - 1;
}

/** The plain-data form of a histogram, to cross a process boundary (only non-empty buckets). */
export interface HistogramSnapshot {
  readonly buckets: readonly number[];
  readonly counts: readonly number[];
  readonly min: number;
  readonly max: number;
  readonly sum: number;
  readonly clamped: number;
}

export class Histogram {
  private readonly counts = new Float64Array(BUCKET_COUNT);
  count = 0;
  min = Infinity;
  max = 0;
  sum = 0;
  /** Values above HISTOGRAM_MAX_VALUE or below 0, recorded at the nearest end. */
  clamped = 0;

  /** Records one value in the histogram's unit (the load client uses microseconds). */
  record(value: number): void {
    let v = Math.round(value);
    if (v < 0 || v > HISTOGRAM_MAX_VALUE || v !== v) {
      this.clamped++;
      v = v > 0 ? HISTOGRAM_MAX_VALUE : 0;
    }
    this.counts[bucketOf(v)]++;
    this.count++;
    this.sum += v;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
  }

  reset(): void {
    this.counts.fill(0);
    this.count = 0;
    this.min = Infinity;
    this.max = 0;
    this.sum = 0;
    this.clamped = 0;
  }

  /**
   * The value at percentile `p` (0..100): the smallest recorded bucket whose cumulative count
   * reaches ceil(p% of count), reported as that bucket's highest value but never above the
   * recorded maximum. NaN when empty.
   */
  percentile(p: number): number {
    if (this.count === 0) return NaN;
    const rank = Math.max(1, Math.ceil((Math.min(Math.max(p, 0), 100) / 100) * this.count));
    let seen = 0;
    for (let i = 0; i < BUCKET_COUNT; i++) {
      seen += this.counts[i];
      if (seen >= rank) return Math.min(bucketHigh(i), this.max);
    }
    return this.max;
  }

  mean(): number {
    return this.count === 0 ? NaN : this.sum / this.count;
  }

  /** Adds another histogram's counts (connections, or load processes, into one total). */
  add(other: Histogram | HistogramSnapshot): void {
    let added = 0;
    if (other instanceof Histogram) {
      for (let i = 0; i < BUCKET_COUNT; i++) this.counts[i] += other.counts[i];
      added = other.count;
    } else {
      for (let j = 0; j < other.buckets.length; j++) {
        const i = other.buckets[j];
        if (!(i >= 0 && i < BUCKET_COUNT)) throw new RangeError(`histogram bucket ${i} out of range`);
        this.counts[i] += other.counts[j];
        added += other.counts[j];
      }
    }
    if (added === 0) return;
    this.count += added;
    this.sum += other.sum;
    this.clamped += other.clamped;
    if (other.min < this.min) this.min = other.min;
    if (other.max > this.max) this.max = other.max;
  }

  snapshot(): HistogramSnapshot {
    const buckets: number[] = [];
    const counts: number[] = [];
    for (let i = 0; i < BUCKET_COUNT; i++) {
      if (this.counts[i] !== 0) {
        buckets.push(i);
        counts.push(this.counts[i]);
      }
    }
    // An empty histogram's min is Infinity, which JSON cannot carry.
    return { buckets, counts, min: this.count === 0 ? 0 : this.min, max: this.max, sum: this.sum, clamped: this.clamped };
  }

  static from(snapshot: HistogramSnapshot): Histogram {
    const h = new Histogram();
    h.add(snapshot);
    return h;
  }
}
