// The subscription engine on a FakeClock: exact publishing cycles, keep-alive counts, lifetime
// expiry, sampling slots, queues, filters, the retransmission queue and the Publish queue.
import { describe, expect, it } from "vitest";
import { BuiltinType, numericNodeId, type ExtensionObject } from "../../src/ua/builtins.js";
import { DataChangeTrigger, DeadbandType, MonitoringMode, TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { AttributeIds, ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import type { DataChangeNotification } from "../../src/ua/generated/types.js";
import { OVERFLOW_INFO_BITS } from "../../src/subscriptions/notification-encoder.js";
import { createMonitoredItemsInSlices, deleteMonitoredItems } from "../../src/subscriptions/items.js";
import { COUNTER, Fixture, changes, decodeMessage, isKeepAlive, statusChange } from "./fixture.js";
import { testSlicer, WorkClock } from "../helpers/slicer.js";

const OVERFLOW = OVERFLOW_INFO_BITS;

function filter(trigger: DataChangeTrigger, deadbandType = DeadbandType.None, deadbandValue = 0): ExtensionObject {
  return { typeId: numericNodeId(ObjectIds.DataChangeFilter_Encoding_DefaultBinary), body: { trigger, deadbandType, deadbandValue } };
}

describe("publishing cycle", () => {
  it("answers the first cycle, then sends a keep-alive every maxKeepAliveCount quiet cycles", async () => {
    const f = await Fixture.start();
    const s = f.session();
    f.subscribe(s, { interval: 100, keepAlive: 3, lifetime: 30 });
    f.publish(s);
    const times: number[] = [];
    for (let i = 0; i < 100; i++) {
      await f.advance(10);
      for (const a of f.take()) {
        expect(isKeepAlive(a.response)).toBe(true);
        // A keep-alive carries the next sequence number without using it up (Part 4 §7.21).
        expect(a.response!.notificationMessage.sequenceNumber).toBe(1);
        times.push(a.t);
        f.publish(s);
      }
    }
    expect(times).toEqual([100, 400, 700, 1000]);
  });

  it("expires after lifetimeCount cycles without a Publish request, and says so with the next one", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100, keepAlive: 1, lifetime: 3 });
    await f.advance(290);
    expect(f.engine.subscriptions.has(id)).toBe(true);
    await f.advance(10);
    expect(f.engine.subscriptions.has(id)).toBe(false);
    expect(f.engine.stats.subscriptionsExpired).toBe(1);
    f.publish(s);
    const [expired] = f.take();
    expect(expired.t).toBe(300);
    expect(expired.response!.subscriptionId).toBe(id);
    expect(statusChange(expired.response!.notificationMessage)).toBe(StatusCodes.BadTimeout);
    f.publish(s);
    expect(f.take()).toEqual([{ t: 300, status: StatusCodes.BadNoSubscription }]);
  });

  it("counts the lifetime from the last Publish request", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100, keepAlive: 1, lifetime: 3 });
    f.publish(s); // answered by the first cycle, at 100
    await f.advance(390);
    expect(f.take().map((a) => a.t)).toEqual([100]);
    expect(f.engine.subscriptions.has(id)).toBe(true);
    await f.advance(10);
    expect(f.engine.subscriptions.has(id)).toBe(false);
  });

  it("goes late when it has notifications and no request, and answers the next request at once", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    const v = f.variable("late", { feedInterval: 50 });
    f.monitor(s, id, f.nodeId("late"), { samplingInterval: 50, clientHandle: 9, queueSize: 2 });
    await f.advance(150);
    expect(f.engine.stats.latePublishes).toBe(1);
    f.set(v, 4);
    f.publish(s);
    const [a] = f.take();
    expect(a.t).toBe(150);
    expect(changes(a.response!.notificationMessage)).toEqual([
      [9, 0, 0],
      [9, 4, 0],
    ]);
  });

  /**
   * 2,000 items with a value each, four Publish requests queued, and the publishing cycle at
   * 100 ms: it answers one request. A slice of 0 ms: each message closes at its first look at
   * the clock (after 512).
   */
  async function fourPartsDue(): Promise<Fixture> {
    const f = await Fixture.start({}, 10, 0);
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    for (let k = 1; k <= 2000; k++) {
      f.variable(`n${k}`, { feedInterval: 50, value: k });
      f.monitor(s, id, f.nodeId(`n${k}`), { samplingInterval: 50, clientHandle: k });
    }
    for (let i = 0; i < 4; i++) f.publish(s);
    f.clock.advance(100);
    // (Answers land in the fixture's list in a microtask.)
    await Promise.resolve();
    await Promise.resolve();
    expect(f.answers.length).toBe(1);
    return f;
  }

  it("builds a message of many notifications in slices, one per turn of the event loop, in order", async () => {
    // The next part waits for the next turn.
    const f = await fourPartsDue();
    await new Promise((r) => setImmediate(r));
    expect(f.answers.length).toBe(2);
    // One part per turn: two more turns for the last two.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    const got = f.take();
    expect(got.map((a) => changes(a.response!.notificationMessage).length)).toEqual([512, 512, 512, 464]);
    expect(got.map((a) => a.response!.moreNotifications)).toEqual([true, true, true, false]);
    expect(got.flatMap((a) => changes(a.response!.notificationMessage).map((c) => c[0]))).toEqual(Array.from({ length: 2000 }, (_, i) => i + 1));
    expect(got.map((a) => a.response!.notificationMessage.sequenceNumber)).toEqual([1, 2, 3, 4]);
  });

  it("sends the next part of a message after a client socket read, before the turn of the loop (the rest of a Publish goes before client requests)", async () => {
    const f = await fourPartsDue();
    const flush = async () => {
      await Promise.resolve();
      await Promise.resolve();
    };
    // Three client socket reads (the loop governor calls runSoon after each): a part after each,
    // all within one turn of the loop.
    for (let read = 2; read <= 4; read++) {
      f.engine.slicer.runSoon();
      await flush();
      expect(f.answers.length).toBe(read);
    }
    const got = f.take();
    expect(got.map((a) => a.response!.moreNotifications)).toEqual([true, true, true, false]);
    expect(got.flatMap((a) => changes(a.response!.notificationMessage).map((c) => c[0]))).toEqual(Array.from({ length: 2000 }, (_, i) => i + 1));
  });

  it("makes 1000 items of one CreateMonitoredItems in slices, reporting none of them before all are made", async () => {
    // The engine's slices measured on a clock that moves 0.1 ms a look: a slice of the test budget is ten looks, 32 items apart.
    const work = new WorkClock(0.1);
    const f = await Fixture.start({}, 10, testSlicer(work));
    const s = f.session();
    const id = f.subscribe(s, { interval: 100, keepAlive: 1 });
    for (let k = 1; k <= 1000; k++) f.variable(`c${k}`, { feedInterval: 50, value: k });
    const requests = Array.from({ length: 1000 }, (_, i) => ({
      itemToMonitor: { nodeId: f.nodeId(`c${i + 1}`), attributeId: AttributeIds.Value },
      monitoringMode: MonitoringMode.Reporting,
      requestedParameters: { clientHandle: i + 1, samplingInterval: 50, queueSize: 1, discardOldest: true },
    }));
    const pending = createMonitoredItemsInSlices(f.engine, s, id, TimestampsToReturn.Both, requests);
    expect(pending).toBeInstanceOf(Promise);
    // The first slice is made at once; a publishing cycle before the last one reports nothing.
    const first = f.engine.subscriptions.get(id)!.items.size;
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThan(1000);
    f.publish(s);
    f.clock.advance(100);
    await Promise.resolve();
    await Promise.resolve();
    expect(isKeepAlive(f.take()[0]?.response)).toBe(true);
    const results = await pending;
    expect(results.map((r) => r.statusCode)).toEqual(new Array(1000).fill(StatusCodes.Good));
    expect(new Set(results.map((r) => r.monitoredItemId)).size).toBe(1000);
    // The message of all 1000 in one slice: the clock stands still from here.
    work.step = 0;
    f.publish(s);
    await f.advance(100);
    const [a] = f.take();
    expect(changes(a!.response!.notificationMessage).map((c) => c[0])).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
  });

  it("splits notifications by maxNotificationsPerPublish and says moreNotifications", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100, maxNotifications: 2 });
    for (let k = 1; k <= 5; k++) {
      f.variable(`m${k}`, { feedInterval: 50, value: k });
      f.monitor(s, id, f.nodeId(`m${k}`), { samplingInterval: 50, clientHandle: k });
    }
    f.publish(s);
    f.publish(s);
    await f.advance(100);
    const [a, b] = f.take();
    expect(changes(a.response!.notificationMessage).map((c) => c[0])).toEqual([1, 2]);
    expect(a.response!.moreNotifications).toBe(true);
    expect(changes(b.response!.notificationMessage).map((c) => c[0])).toEqual([3, 4]);
    expect(b.response!.moreNotifications).toBe(true);
    // Out of requests: the rest goes with the next one, at once.
    f.publish(s);
    const [c] = f.take();
    expect(c.t).toBe(100);
    expect(changes(c.response!.notificationMessage).map((x) => x[0])).toEqual([5]);
    expect(c.response!.moreNotifications).toBe(false);
    expect([a, b, c].map((x) => x.response!.notificationMessage.sequenceNumber)).toEqual([1, 2, 3]);
  });
});

describe("publishing mode", () => {
  it("sends only keep-alives while publishing is disabled, then what was queued", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100, keepAlive: 2, enabled: false });
    const v = f.variable("pm", { feedInterval: 50 });
    f.monitor(s, id, f.nodeId("pm"), { samplingInterval: 50, queueSize: 5, clientHandle: 4 });
    f.set(v, 1);
    f.publish(s);
    f.publish(s);
    await f.advance(300);
    expect(f.take().map((a) => [a.t, isKeepAlive(a.response)])).toEqual([
      [100, true],
      [300, true],
    ]);
    expect(f.engine.setPublishingMode(s, true, [id, 55])).toEqual([StatusCodes.Good, StatusCodes.BadSubscriptionIdInvalid]);
    f.publish(s);
    await f.advance(100);
    expect(changes(f.take()[0].response!.notificationMessage)).toEqual([
      [4, 0, 0],
      [4, 1, 0],
    ]);
  });
});

describe("the Publish queue", () => {
  it("answers the oldest request BadTooManyPublishRequests when the queue is full", async () => {
    const f = await Fixture.start({ maxPublishRequestsPerSession: 2 });
    const s = f.session();
    f.subscribe(s, { interval: 100 });
    f.publish(s);
    f.publish(s);
    f.publish(s);
    await f.advance(0);
    expect(f.take()).toEqual([{ t: 0, status: StatusCodes.BadTooManyPublishRequests }]);
    await f.advance(100);
    expect(f.take().map((a) => isKeepAlive(a.response))).toEqual([true]);
  });

  it("answers a request BadTimeout once its timeoutHint has passed", async () => {
    const f = await Fixture.start();
    const s = f.session();
    f.subscribe(s, { interval: 100, keepAlive: 100, lifetime: 1000 });
    f.publish(s, [], 500);
    f.publish(s, [], 500);
    await f.advance(1000);
    expect(f.take().map((a) => [a.t, a.status ?? "keep-alive"])).toEqual([
      [100, "keep-alive"],
      [1000, StatusCodes.BadTimeout],
    ]);
    expect(f.engine.stats.publishTimeouts).toBe(1);
  });

  it("drops requests whose channel closed instead of answering on them", async () => {
    const f = await Fixture.start();
    const s = f.session();
    f.subscribe(s, { interval: 100 });
    const gone = f.newChannel();
    f.publish(s, [], 0, gone);
    f.publish(s);
    gone.isOpen = false;
    await f.advance(100);
    const answers = f.take();
    expect(answers.map((a) => a.status ?? "keep-alive")).toEqual([StatusCodes.BadSecureChannelClosed, "keep-alive"]);
  });

  it("answers queued requests BadNoSubscription when the last subscription is deleted", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    f.publish(s);
    f.publish(s);
    await f.advance(100); // the first is answered by the first cycle
    f.take();
    expect(f.engine.deleteSubscriptions(s, [id, 77])).toEqual([StatusCodes.Good, StatusCodes.BadSubscriptionIdInvalid]);
    await f.advance(0);
    expect(f.take()).toEqual([{ t: 100, status: StatusCodes.BadNoSubscription }]);
  });

  it("keeps messages for Republish until acknowledged, bounded", async () => {
    const f = await Fixture.start({ maxPublishRequestsPerSession: 2 }); // keeps max(4, 2 x 2) messages
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    const v = f.variable("r", { feedInterval: 50 });
    f.monitor(s, id, f.nodeId("r"), { samplingInterval: 50, clientHandle: 3 });
    f.publish(s);
    await f.advance(100);
    const [first] = f.take();
    expect(first.response!.availableSequenceNumbers).toEqual([1]);
    const again = decodeMessage(f.engine.republish(s, id, 1));
    expect(again).toEqual(first.response!.notificationMessage);
    expect(() => f.engine.republish(f.session(2), id, 1)).toThrow(/BadSubscriptionIdInvalid/);
    for (let i = 1; i <= 5; i++) {
      f.set(v, i);
      f.publish(s);
      await f.advance(100);
    }
    const last = f.take().pop()!;
    expect(last.response!.notificationMessage.sequenceNumber).toBe(6);
    expect(last.response!.availableSequenceNumbers).toEqual([3, 4, 5, 6]);
    expect(() => f.engine.republish(s, id, 2)).toThrow(/BadMessageNotAvailable/);
    f.set(v, 9);
    f.publish(s, [
      { subscriptionId: id, sequenceNumber: 3 },
      { subscriptionId: id, sequenceNumber: 2 },
      { subscriptionId: 999, sequenceNumber: 4 },
    ]);
    await f.advance(100);
    const [acked] = f.take();
    expect(acked.response!.results).toEqual([StatusCodes.Good, StatusCodes.BadSequenceNumberUnknown, StatusCodes.BadSubscriptionIdInvalid]);
    expect(acked.response!.availableSequenceNumbers).toEqual([4, 5, 6, 7]);
  });
});

describe("sampling", () => {
  it("samples items of one interval in one pass at t0 + k*interval, and skips missed slots", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 1000, keepAlive: 100, lifetime: 1000 });
    // Memory variables that nobody feeds: sampled through read(), one group per interval.
    const vs = [1, 2, 3, 4].map((k) => f.variable(`v${k}`, { value: k }));
    for (let k = 1; k <= 3; k++) f.monitor(s, id, f.nodeId(`v${k}`), { samplingInterval: 10, clientHandle: k });
    f.monitor(s, id, f.nodeId("v4"), { samplingInterval: 20, clientHandle: 4 });
    expect(f.engine.sampler.groupCount).toBe(2);
    await f.advance(100);
    expect(f.engine.sampler.passes).toBe(15);
    // The event loop stalls for 35 ms: the 10 ms slots due at 110 and 120 are skipped and
    // counted, the one of 130 runs once, late; the 20 ms group's slot of 120 runs late.
    const stats = f.engine.sampler.groupStats(10)!;
    const skipped = stats.skipped;
    f.clock.stall(35);
    await f.advance(0);
    expect(f.engine.sampler.passes).toBe(17);
    expect(stats.skipped - skipped).toBe(2);
    for (const [k, v] of vs.entries()) f.set(v, 10 * (k + 1));
    f.publish(s);
    await f.advance(1000 - 135);
    const [a] = f.take();
    // Queue size 1: each item's latest value.
    expect(changes(a.response!.notificationMessage)).toEqual([
      [1, 10, 0],
      [2, 20, 0],
      [3, 30, 0],
      [4, 40, 0],
    ]);
  });

  it("feeds items on counters at their poll rate, samples slower ones, and hands UInt64 counters on as UInt64", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 1000, keepAlive: 100, lifetime: 1000 });
    for (let k = 1; k <= 3; k++) f.monitor(s, id, COUNTER(k), { samplingInterval: 10, clientHandle: k });
    f.monitor(s, id, COUNTER(4), { samplingInterval: 20, clientHandle: 4 });
    // The 10 ms items are fed by the counters' poll group: only the 20 ms one is sampled.
    expect(f.engine.sampler.fedItemCount).toBe(3);
    expect(f.engine.sampler.groupCount).toBe(1);
    await f.now();
    await f.advance(100);
    // Every counter counts its polls (0, 10, ..., 100 ms), whoever watches it.
    expect([1, 2, 3, 4].map((k) => f.bench.count(k))).toEqual([11, 11, 11, 11]);
    // Polling stops: what the items hold is the counters' last value.
    await f.runtime.stop();
    f.publish(s);
    await f.advance(1000);
    const [a] = f.take();
    // UInt64 counters reach the client as UInt64, their latest values (queue size 1); the
    // sampled one as of its last sample, at most one of its intervals (two polls) behind.
    const got = changes(a.response!.notificationMessage);
    expect(got.slice(0, 3)).toEqual([
      [1, 11n, 0],
      [2, 11n, 0],
      [3, 11n, 0],
    ]);
    expect(got[3]![0]).toBe(4);
    expect(Number(got[3]![1])).toBeGreaterThanOrEqual(9);
  });

  it("feeds items on a fed variable at its rate through setValue, with no timer", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    const v = f.variable("fed", { feedInterval: 50 });
    expect(v.minimumSamplingInterval).toBe(50);
    const slots = f.scheduler.size;
    f.monitor(s, id, f.nodeId("fed"), { samplingInterval: 50, queueSize: 5, clientHandle: 1 });
    // Faster than the feed is revised up to it (the node's MinimumSamplingInterval) and fed too.
    const r = f.monitor(s, id, f.nodeId("fed"), { samplingInterval: 0, queueSize: 5, clientHandle: 2 });
    expect(r.revisedSamplingInterval).toBe(50);
    expect(f.scheduler.size).toBe(slots);
    expect(f.engine.sampler.fedItemCount).toBe(2);
    for (const x of [1, 2, 3]) f.set(v, x);
    f.publish(s);
    await f.advance(100);
    expect(changes(f.take()[0].response!.notificationMessage).filter((c) => c[0] === 1).map((c) => c[1])).toEqual([0, 1, 2, 3]);
    // A slower item on the same variable is sampled by its own interval group.
    f.monitor(s, id, f.nodeId("fed"), { samplingInterval: 200 });
    expect(f.engine.sampler.groupCount).toBe(1);
  });

  it("moves fed items to the new variable when a reload replaces it", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    f.variable("same", { feedInterval: 50 });
    f.variable("slower", { feedInterval: 50 });
    f.monitor(s, id, f.nodeId("same"), { samplingInterval: 50, queueSize: 5, clientHandle: 1 });
    f.monitor(s, id, f.nodeId("slower"), { samplingInterval: 50, queueSize: 5, clientHandle: 2 });
    f.publish(s);
    await f.advance(100);
    f.take();
    // The device map is reloaded: both tags get new variables, one of them at another rate.
    f.mem.removeNode(f.nodeId("same"));
    f.mem.removeNode(f.nodeId("slower"));
    const same = f.variable("same", { feedInterval: 50 });
    const slower = f.variable("slower", { feedInterval: 200 });
    // Their items are bound again in the engine's next slice.
    await new Promise((resolve) => setImmediate(resolve));
    f.set(same, 5);
    f.set(slower, 6);
    expect(f.engine.sampler.fedItemCount).toBe(1);
    expect(f.engine.sampler.groupCount).toBe(1);
    f.publish(s);
    await f.advance(100);
    expect(changes(f.take()[0].response!.notificationMessage)).toEqual([
      [1, 5, 0],
      [2, 6, 0],
    ]);
  });

  it("stops sampling and cancels the slot when the last item of an interval goes", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    const slots = f.scheduler.size;
    // Slower than the counter's poll: sampled by a group of its own (at 10 ms it would be fed).
    const item = f.monitor(s, id, COUNTER(1), { samplingInterval: 20 });
    expect(f.scheduler.size).toBe(slots + 1);
    expect(deleteMonitoredItems(f.engine, s, id, [item.monitoredItemId, 12345])).toEqual([StatusCodes.Good, StatusCodes.BadMonitoredItemIdInvalid]);
    expect(f.scheduler.size).toBe(slots);
    f.engine.deleteSessionSubscriptions(s);
    expect(f.scheduler.size).toBe(slots - 1); // only housekeeping is left
    expect(f.engine.monitoredItemCount).toBe(0);
  });
});

describe("monitored item queues and filters", () => {
  async function values(f: Fixture, s: ReturnType<Fixture["session"]>): Promise<[number, unknown, number][]> {
    f.publish(s);
    await f.advance(100);
    return changes(f.take()[0]?.response?.notificationMessage);
  }

  it("discards the oldest or the newest value and sets the Overflow bit where Part 4 says", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    const v = f.variable("q", { feedInterval: 50 });
    f.monitor(s, id, f.nodeId("q"), { samplingInterval: 50, queueSize: 3, discardOldest: true, clientHandle: 1 });
    f.monitor(s, id, f.nodeId("q"), { samplingInterval: 50, queueSize: 3, discardOldest: false, clientHandle: 2 });
    f.monitor(s, id, f.nodeId("q"), { samplingInterval: 50, queueSize: 1, clientHandle: 3 });
    await values(f, s); // initial values
    for (let x = 1; x <= 5; x++) f.set(v, x);
    const got = await values(f, s);
    expect(got.filter((c) => c[0] === 1)).toEqual([
      [1, 3, OVERFLOW],
      [1, 4, 0],
      [1, 5, 0],
    ]);
    expect(got.filter((c) => c[0] === 2)).toEqual([
      [2, 1, 0],
      [2, 2, 0],
      [2, 5, OVERFLOW],
    ]);
    expect(got.filter((c) => c[0] === 3)).toEqual([[3, 5, 0]]);
    expect(f.engine.stats.queueOverflows).toBe(2 + 2 + 4);
  });

  it("reports by trigger: Status, StatusValue, StatusValueTimestamp", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    const v = f.variable("t", { feedInterval: 50 });
    f.monitor(s, id, f.nodeId("t"), { samplingInterval: 50, queueSize: 10, clientHandle: 1, filter: filter(DataChangeTrigger.Status) });
    f.monitor(s, id, f.nodeId("t"), { samplingInterval: 50, queueSize: 10, clientHandle: 2, filter: filter(DataChangeTrigger.StatusValue) });
    f.monitor(s, id, f.nodeId("t"), { samplingInterval: 50, queueSize: 10, clientHandle: 3, filter: filter(DataChangeTrigger.StatusValueTimestamp) });
    await values(f, s);
    f.set(v, 1); // value
    f.clock.advance(1);
    f.set(v, 1); // timestamp only
    f.set(v, 1, StatusCodes.UncertainLastUsableValue); // status
    const got = await values(f, s);
    expect(got.filter((c) => c[0] === 1).map((c) => c[2])).toEqual([StatusCodes.UncertainLastUsableValue]);
    expect(got.filter((c) => c[0] === 2).map((c) => [c[1], c[2]])).toEqual([
      [1, 0],
      [1, StatusCodes.UncertainLastUsableValue],
    ]);
    expect(got.filter((c) => c[0] === 3).length).toBe(3);
  });

  it("applies an absolute deadband against the last reported value", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    const v = f.variable("d", { feedInterval: 50 });
    f.monitor(s, id, f.nodeId("d"), { samplingInterval: 50, queueSize: 10, filter: filter(DataChangeTrigger.StatusValue, DeadbandType.Absolute, 5) });
    await values(f, s);
    for (const x of [3, 6, 2, 11, 12, -1]) f.set(v, x);
    expect((await values(f, s)).map((c) => c[1])).toEqual([6, 12, -1]);
  });

  it("refuses filters the node or attribute cannot take", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s);
    f.variable("str", { type: BuiltinType.String, value: "x" });
    const statusOf = (name: string, flt: ExtensionObject) => f.monitor(s, id, f.nodeId(name), { filter: flt }).statusCode;
    f.variable("n");
    expect(statusOf("str", filter(DataChangeTrigger.StatusValue, DeadbandType.Absolute, 1))).toBe(StatusCodes.BadFilterNotAllowed);
    expect(statusOf("n", filter(DataChangeTrigger.StatusValue, DeadbandType.Percent, 10))).toBe(StatusCodes.BadMonitoredItemFilterUnsupported);
    expect(statusOf("n", filter(DataChangeTrigger.StatusValue, DeadbandType.Percent, 101))).toBe(StatusCodes.BadDeadbandFilterInvalid);
    expect(statusOf("n", filter(DataChangeTrigger.StatusValue, DeadbandType.Absolute, -1))).toBe(StatusCodes.BadDeadbandFilterInvalid);
    expect(statusOf("n", filter(9 as DataChangeTrigger))).toBe(StatusCodes.BadMonitoredItemFilterInvalid);
    const eventFilter: ExtensionObject = { typeId: numericNodeId(ObjectIds.EventFilter_Encoding_DefaultBinary), body: { selectClauses: [], whereClause: { elements: [] } } };
    expect(statusOf("n", eventFilter)).toBe(StatusCodes.BadFilterNotAllowed);
    expect(f.engine.monitoredItemCount).toBe(0);
  });

  it("returns the timestamps asked for", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    f.variable("ts", { feedInterval: 50 });
    const modes = [TimestampsToReturn.Source, TimestampsToReturn.Server, TimestampsToReturn.Both, TimestampsToReturn.Neither];
    modes.forEach((timestamps, i) => f.monitor(s, id, f.nodeId("ts"), { samplingInterval: 50, clientHandle: i, timestamps }));
    f.publish(s);
    await f.advance(100);
    const eo = f.take()[0].response!.notificationMessage.notificationData![0];
    const decoded = (eo.body as DataChangeNotification).monitoredItems ?? [];
    expect(decoded.map((n) => [n.value.sourceTimestamp !== undefined, n.value.serverTimestamp !== undefined])).toEqual([
      [true, false],
      [false, true],
      [true, true],
      [false, false],
    ]);
  });
});
