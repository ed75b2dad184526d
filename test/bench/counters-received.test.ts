// The counters scenario counts what the subscriber received beside what the server sampled
// (bench/scenarios/counters-load.ts): an item whose counter says every sample was taken but
// whose notifications came with gaps (a queue that overflowed, a lost Publish) falls short.
import { describe, expect, it } from "vitest";
import { deliveryOf, hasOverflowBit, verdictOf } from "../../bench/scenarios/counters-delivery.js";
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

describe("counters: where the samples not received went", () => {
  /**
   * Over 1,000 ms at 10 ms (100 expected after the first): item 1 gets every sample; item 2's
   * server took only every other one (50 taken, all received); item 3 had 10 taken samples
   * discarded in its queue, the next notification flagged Overflow; item 4 lost 5 with no
   * InfoBit (a lost message).
   */
  function lossy(): Tally {
    const t = new Tally(4);
    t.windowStart = 0;
    t.windowEnd = 1_000;
    for (let i = 0; i <= 100; i++) {
      t.record(1, i, i * 10);
      if (i % 2 === 0) t.record(2, i / 2, i * 10);
      if (i <= 40 || i > 50) t.record(3, i, i * 10, i === 51);
      if (i < 60 || i >= 65) t.record(4, i, i * 10);
    }
    return t;
  }

  it("tells the samples not taken from those lost in the queue (Overflow InfoBit) and those lost otherwise", () => {
    const d = deliveryOf(lossy(), 4, 10, 10);
    expect(d.sampling.worst).toBeCloseTo(0.5, 6);
    expect(d.sampling.mean).toBeCloseTo(0.5 / 4, 6);
    expect(d.queue.worst).toBeCloseTo(0.1, 6);
    expect(d.queue.mean).toBeCloseTo(0.1 / 4, 6);
    expect(d.other.worst).toBeCloseTo(0.05, 6);
    expect(d.overflowBits).toBe(1);
    expect(d.itemsWithOverflow).toBe(1);
    expect(d.outOfOrder).toBe(0);
    // What itemShares counts as received falls short by exactly the losses after sampling.
    const s = itemShares(lossy(), 4, 10, 0.99);
    expect(s.receivedSum).toBeCloseTo(4 - 4 * (d.sampling.mean + d.queue.mean + d.other.mean), 6);
  });

  it("counts every gap of a queue of one as the queue's: it replaces its value without the Overflow bit", () => {
    const d = deliveryOf(lossy(), 4, 10, 1);
    expect(d.queue.worst).toBeCloseTo(0.1, 6);
    expect(d.queue.mean).toBeCloseTo(0.15 / 4, 6);
    expect(d.other.mean).toBe(0);
  });

  it("counts a counter that goes back as out of order", () => {
    const t = new Tally(1);
    t.windowStart = 0;
    t.windowEnd = 1_000;
    for (const [v, ts] of [
      [1, 10],
      [2, 20],
      [9, 30],
      [3, 40],
    ])
      t.record(1, v, ts);
    expect(deliveryOf(t, 1, 10, 10).outOfOrder).toBe(1);
  });

  it("splits the queue's losses by the share of the server's overflows that waited for a Publish request", () => {
    const d = deliveryOf(lossy(), 4, 10, 10);
    const server = { at: 10_000, queueOverflows: 40, lateQueueOverflows: 30, latePublishMs: 800, channelWaitMs: 0, latePublishes: 9 };
    const v = verdictOf(d, server);
    expect(v.publish).toBeCloseTo(0.75 * d.queue.mean, 9);
    expect(v.queue).toBeCloseTo(0.25 * d.queue.mean, 9);
    expect(v.text).toMatch(/^lost in sampling 12\.50 % \/ lost in the queue 0\.62 % \/ lost waiting for Publish 1\.88 % \/ lost otherwise 1\.25 % \(mean per item\)$/);
    // A server without the counts: every queue loss is "in the queue", and the line says so.
    const none = verdictOf(d, { at: NaN, queueOverflows: NaN, lateQueueOverflows: NaN, latePublishMs: NaN, channelWaitMs: NaN, latePublishes: NaN });
    expect(none.publish).toBe(0);
    expect(none.text).toMatch(/does not say which overflows waited for Publish/);
  });

  it("reads the Overflow InfoBit as Part 4 §7.39.1 defines it", () => {
    expect(hasOverflowBit(0x0000_0480)).toBe(true);
    expect(hasOverflowBit(0x0000_0000)).toBe(false);
    // The Overflow bit's position with InfoType NotUsed means nothing.
    expect(hasOverflowBit(0x0000_0080)).toBe(false);
    expect(hasOverflowBit(0x4000_0480)).toBe(true);
  });
});
