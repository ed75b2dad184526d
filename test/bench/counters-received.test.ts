// The counters scenario counts what the subscriber received beside what the server sampled
// (bench/scenarios/counters-load.ts): an item whose counter says every sample was taken but
// whose notifications came with gaps (a queue that overflowed, a lost Publish) falls short.
import { describe, expect, it } from "vitest";
import { itemShares, Tally } from "../../bench/scenarios/counters-load.js";

/** Item 1 gets every sample 10 ms apart; item 2 the same counter values, every third notification missing. */
function tallyOf(): Tally {
  const t = new Tally(2);
  t.windowStart = 0;
  t.windowEnd = 1_000;
  for (let i = 0; i <= 100; i++) {
    t.record(1, i, i * 10);
    if (i % 3 !== 1 || i === 100) t.record(2, i, i * 10);
  }
  return t;
}

describe("counters: samples taken and samples received", () => {
  it("counts an item's notifications in the window apart from its counter", () => {
    const s = itemShares(tallyOf(), 2, 10, 0.99);
    expect(s.measured).toBe(2);
    // Both counters went up by 100 over 1,000 ms: every sample was taken.
    expect(s.below).toBe(0);
    expect(s.minRatio).toBeCloseTo(1, 6);
    // Item 2 received 68 of its 101 notifications: 67 after its first, of 100 expected.
    expect(s.receivedBelow).toBe(1);
    expect(s.receivedMin).toBeCloseTo(0.67, 6);
    expect(s.receivedSum).toBeCloseTo(1.67, 6);
  });

  it("leaves out notifications sampled outside the window", () => {
    const t = tallyOf();
    t.record(1, 101, 1_010);
    t.record(1, 200, -5);
    expect(t.received[1]).toBe(101);
  });
});
