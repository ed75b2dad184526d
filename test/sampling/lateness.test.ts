// src/sampling/lateness.ts: the interval's quantiles, and totals since start that keep every
// interval folded in by reset(), whichever buckets each interval used (the fold stops at the
// highest one recorded into).
import { describe, expect, it } from "vitest";
import { LatenessHistogram } from "../../src/sampling/lateness.js";

describe("the poll lateness histogram", () => {
  it("keeps every interval's counts in its totals since start, the overflow bucket too", () => {
    const h = new LatenessHistogram();
    for (let i = 0; i < 10; i++) h.record(0.3);
    h.record(2);
    expect(h.quantile(0.5)).toBe(0.3);
    expect(h.quantile(1)).toBe(2);
    h.reset();
    expect(h.quantile(0.5)).toBe(0);
    // A later interval with a lower top, then one past 1 s (the overflow bucket).
    h.record(0.1);
    h.reset();
    h.record(5);
    h.record(1500);
    expect(h.quantile(1)).toBe(1000);
    h.reset();
    const t = h.totals([0.1, 0.3, 2, 5, 999.9]);
    expect(t.le).toEqual([1, 11, 12, 13, 13]);
    expect(t.count).toBe(14);
    const buckets = h.bucketsSinceStart();
    expect([buckets[1], buckets[3], buckets[20], buckets[50], buckets[10_000]]).toEqual([1, 10, 1, 1, 1]);
    expect(buckets.reduce((a, b) => a + b, 0)).toBe(14);
    // Nothing of the earlier intervals is left in the current one.
    h.record(0.2);
    expect(h.quantile(1)).toBe(0.2);
    expect(h.count).toBe(1);
  });
});
