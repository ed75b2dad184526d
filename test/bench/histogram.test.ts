import { describe, expect, it } from "vitest";
import { HISTOGRAM_MAX_VALUE, Histogram } from "../../bench/client/histogram.js";

describe("Histogram", () => {
  it("is exact below 256 and reports nearest-rank percentiles", () => {
    const h = new Histogram();
    for (let v = 1; v <= 100; v++) h.record(v);
    expect(h.count).toBe(100);
    expect(h.percentile(50)).toBe(50);
    expect(h.percentile(99)).toBe(99);
    expect(h.percentile(100)).toBe(100);
    expect(h.percentile(0)).toBe(1);
    expect(h.min).toBe(1);
    expect(h.max).toBe(100);
    expect(h.mean()).toBeCloseTo(50.5, 10);
  });

  it("keeps every value within 1/128 of its bucket's reported value", () => {
    for (const v of [255, 256, 257, 1000, 4097, 65_535, 1_000_000, 123_456_789, HISTOGRAM_MAX_VALUE]) {
      const h = new Histogram();
      h.record(v);
      h.record(HISTOGRAM_MAX_VALUE); // keeps max above v, so the bucket bound shows
      const reported = h.percentile(50);
      expect(reported).toBeGreaterThanOrEqual(v);
      expect((reported - v) / v).toBeLessThanOrEqual(1 / 128);
    }
  });

  it("orders percentiles and never reports above the maximum", () => {
    const h = new Histogram();
    let x = 12345;
    for (let i = 0; i < 100_000; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      h.record(20 + (x % 5000));
    }
    const ps = [0, 10, 50, 90, 99, 99.9, 100].map((p) => h.percentile(p));
    for (let i = 1; i < ps.length; i++) expect(ps[i]).toBeGreaterThanOrEqual(ps[i - 1]);
    expect(ps[ps.length - 1]).toBe(h.max);
    expect(h.max).toBeLessThan(5020);
  });

  it("clamps values it cannot hold and says so", () => {
    const h = new Histogram();
    h.record(-5);
    h.record(HISTOGRAM_MAX_VALUE * 4);
    h.record(Number.NaN);
    expect(h.count).toBe(3);
    expect(h.clamped).toBe(3);
    expect(h.percentile(100)).toBe(HISTOGRAM_MAX_VALUE);
  });

  it("is empty after reset and reports NaN", () => {
    const h = new Histogram();
    h.record(10);
    h.reset();
    expect(h.count).toBe(0);
    expect(h.percentile(50)).toBeNaN();
    expect(h.mean()).toBeNaN();
  });

  it("merges histograms and survives a JSON round trip of its snapshot", () => {
    const a = new Histogram();
    const b = new Histogram();
    for (let i = 0; i < 1000; i++) a.record(100 + i);
    for (let i = 0; i < 1000; i++) b.record(5000 + i * 10);
    const total = new Histogram();
    total.add(a);
    total.add(JSON.parse(JSON.stringify(b.snapshot())));
    total.add(new Histogram().snapshot()); // empty: changes nothing, min stays finite
    expect(total.count).toBe(2000);
    expect(total.min).toBe(100);
    expect(total.max).toBe(b.max);
    expect(total.sum).toBe(a.sum + b.sum);
    const copy = Histogram.from(JSON.parse(JSON.stringify(total.snapshot())));
    for (const p of [1, 50, 75, 99, 99.9]) expect(copy.percentile(p)).toBe(total.percentile(p));
    expect(total.percentile(50)).toBeGreaterThanOrEqual(1099);
    expect(total.percentile(50)).toBeLessThanOrEqual(1099 * (1 + 1 / 128));
    expect(total.percentile(51)).toBeGreaterThanOrEqual(5000);
  });

  it("rejects a snapshot with a bucket out of range", () => {
    expect(() => Histogram.from({ buckets: [1e9], counts: [1], min: 0, max: 0, sum: 0, clamped: 0 })).toThrow(RangeError);
  });
});
