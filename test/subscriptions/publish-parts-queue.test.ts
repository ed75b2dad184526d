// A publishing cycle takes what the items' queues hold when it begins, even when its message
// goes out in parts (Part 4 §5.13.1.1, moreNotifications): a sample taken before an item's part
// is sent must not push that item's taken notifications out of its queue (§5.12.1.5 applies to
// the samples after the cycle). On the fake clock: two counters sampled every 10 ms (at 0, 10,
// ...), queues of 10 (one publishing interval), messages of at most 10 notifications, cycles at
// 3 ms past a sample, and a client with one Publish request out, sending the next at 1 ms past a
// sample: each cycle's 20 notifications take two messages, the second after the next sample.
// The first case holds with or without the cycle's hold (a part that comes late takes the
// samples since, so the next cycle finds fewer); the second is the one a queue loses without it.
import { describe, expect, it } from "vitest";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import type { SubscriptionSession } from "../../src/subscriptions/publisher.js";
import { COUNTER, Fixture, changes, type Answer } from "./fixture.js";

const ITEMS = 2;

async function setUp(discardOldest = true) {
  const f = await Fixture.start({}, ITEMS);
  await f.now();
  await f.advance(3);
  const s = f.session();
  const id = f.subscribe(s, { interval: 100, maxNotifications: 10 });
  for (let k = 1; k <= ITEMS; k++) f.monitor(s, id, COUNTER(k), { samplingInterval: 10, queueSize: 10, discardOldest, clientHandle: k });
  await f.advance(8); // t = 11
  return { f, s };
}

/** Each item's [value, status] received in `answers`, by client handle. */
function byItem(answers: readonly Answer[], got = new Map<number, [number, number][]>()): Map<number, [number, number][]> {
  for (const a of answers) {
    for (const [handle, value, status] of changes(a.response?.notificationMessage)) {
      const list = got.get(handle) ?? [];
      list.push([Number(value), status]);
      got.set(handle, list);
    }
  }
  return got;
}

/** Values missing between an item's first and last received value, and those with a status other than Good. */
function gaps(list: readonly [number, number][]): { missing: number; flagged: number; received: number } {
  let missing = 0;
  for (let i = 1; i < list.length; i++) missing += list[i][0] - list[i - 1][0] - 1;
  return { missing, flagged: list.filter(([, status]) => status !== StatusCodes.Good).length, received: list.length };
}

/** A client that keeps one Publish request out, sending the next 1 ms past a sample: the answers of `steps` samples. */
async function oneRequestOut(f: Fixture, s: SubscriptionSession, client: { out: number }, steps: number): Promise<Answer[]> {
  const all: Answer[] = [];
  for (let step = 0; step < steps; step++) {
    if (client.out === 0) {
      f.publish(s);
      client.out++;
    }
    await f.advance(10);
    const answers = f.take();
    client.out -= answers.length;
    all.push(...answers);
  }
  return all;
}

describe("a cycle's message in parts and the items' queues", () => {
  it("delivers every sample of every item while each cycle's second part comes a sample later", async () => {
    const { f, s } = await setUp();
    // The first cycle (t = 103) finds the initial value and 10 samples in a queue of 10: the
    // oldest goes, as Part 4 says. What follows is counted.
    const client = { out: 0 };
    await oneRequestOut(f, s, client, 20);
    const overflowsBefore = f.engine.stats.queueOverflows;
    const answers = await oneRequestOut(f, s, client, 100);
    const got = byItem(answers);
    const parts = answers.filter((a) => a.response?.moreNotifications === true).length;
    // Most cycles went out in two parts.
    expect(parts).toBeGreaterThan(5);
    for (let k = 1; k <= ITEMS; k++) {
      const g = gaps(got.get(k)!);
      expect(g.received).toBeGreaterThan(80);
      expect({ item: k, missing: g.missing, flagged: g.flagged }).toEqual({ item: k, missing: 0, flagged: 0 });
    }
    expect(f.engine.stats.queueOverflows - overflowsBefore).toBe(0);
  });

  it("delivers what a cycle took and then the newest samples in order when the client stops sending Publish requests", async () => {
    const { f, s } = await setUp();
    const client = { out: 0 };
    // Cycles in two parts: each item's ring grows to twice its queue while a part waits.
    await oneRequestOut(f, s, client, 30);
    // The client stops sending Publish requests: the subscription goes late, and the items'
    // queues of 10 overflow sample after sample (discardOldest).
    await f.advance(300);
    expect(f.take()).toEqual([]);
    const got = new Map<number, [number, number][]>();
    for (let i = 0; i < 6; i++) {
      f.publish(s);
      await f.advance(0);
      byItem(f.take(), got);
    }
    for (let k = 1; k <= ITEMS; k++) {
      const list = got.get(k)!;
      const values = list.map(([v]) => v);
      // What the open cycle took, if the item's part was still to come (consecutive, at most a
      // queue's worth), then a queue of 10 of the newest samples, consecutive, ending at the
      // counter's last; the oldest of those carries the Overflow bit, no other one does.
      const jumps = values.flatMap((v, i) => (i > 0 && v !== values[i - 1] + 1 ? [i] : []));
      expect({ item: k, jumps: jumps.length <= 1, after: values.length - (jumps[0] ?? 0) }).toEqual({ item: k, jumps: true, after: 10 });
      const newest = values.slice(jumps[0] ?? 0);
      expect(newest).toEqual(newest.map((_, i) => f.bench.count(k) - 9 + i));
      expect(list.map(([, status]) => status !== StatusCodes.Good)).toEqual(list.map((_, i) => i === (jumps[0] ?? 0)));
    }
  });

  for (const discardOldest of [true, false]) {
    it(`keeps what a cycle took while its part waits, and applies the overflow policy to the samples since (discardOldest ${discardOldest})`, async () => {
      const { f, s } = await setUp(discardOldest);
      const client = { out: 0 };
      await oneRequestOut(f, s, client, 19); // t = 201, one request out
      expect(client.out).toBe(1);
      const overflowsBefore = f.engine.stats.queueOverflows;
      await f.advance(10); // the cycle at 203: its first part
      const first = f.take();
      expect(first).toHaveLength(1);
      expect(first[0].response?.moreNotifications).toBe(true);
      const part1 = changes(first[0].response?.notificationMessage);
      expect(part1).toHaveLength(10);
      // The item the first part ended in: the cycle took 10 of its values, the rest wait.
      const cut = part1[9][0];
      const taken = part1.filter(([h]) => h === cut).length;
      expect(taken).toBeLessThan(10);
      await f.advance(120); // t = 331: 13 samples while its part waited (the cycle at 303 finds it still going)
      const got = new Map<number, [number, number][]>();
      for (let i = 0; i < 4; i++) {
        f.publish(s);
        await f.advance(0);
        byItem(f.take(), got);
      }
      const rest = got.get(cut)!;
      // What the cycle took and its first part left, then a queue of 10 of the samples since:
      // their oldest discarded and the first kept flagged, or their newest in the last place, flagged.
      const values = [Number(part1[9][1]), ...rest.map(([v]) => v)];
      const steps = values.slice(1).map((v, i) => v - values[i]);
      const jump = steps.findIndex((d) => d > 1);
      expect(steps.filter((d) => d !== 1)).toEqual([steps[jump]]);
      const held = discardOldest ? jump : rest.length - 10;
      expect(held).toBeGreaterThan(0);
      expect(taken + held).toBeLessThanOrEqual(10);
      expect(rest.length - held).toBe(10);
      expect(jump).toBe(discardOldest ? held : rest.length - 1);
      expect(rest.map(([, status]) => status !== StatusCodes.Good)).toEqual(rest.map((_, i) => i === jump));
      // The other item's own queue overflowed by as many (it was listed again after the cycle began).
      expect(f.engine.stats.queueOverflows - overflowsBefore).toBe(2 * (steps[jump] - 1));
    });
  }
});
