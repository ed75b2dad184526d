// The subscription engine on a FakeClock, continued from engine.test.ts: revised values,
// ModifyMonitoredItems, limits, monitoring modes and triggering, and what happens to
// subscriptions when their session closes or another session takes them over.
import { describe, expect, it } from "vitest";
import { numericNodeId, type ExtensionObject } from "../../src/ua/builtins.js";
import { DataChangeTrigger, DeadbandType, MonitoringMode, TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { OVERFLOW_INFO_BITS } from "../../src/subscriptions/notification-encoder.js";
import { modifyMonitoredItems, setMonitoringMode, setTriggering } from "../../src/subscriptions/items.js";
import { COUNTER, Fixture, changes, isKeepAlive, statusChange } from "./fixture.js";

const OVERFLOW = OVERFLOW_INFO_BITS;

function filter(trigger: DataChangeTrigger, deadbandType = DeadbandType.None, deadbandValue = 0): ExtensionObject {
  return { typeId: numericNodeId(ObjectIds.DataChangeFilter_Encoding_DefaultBinary), body: { trigger, deadbandType, deadbandValue } };
}

describe("modes, triggering and revised values", () => {
  it("revises requested values into the configured bounds", async () => {
    const f = await Fixture.start({ minPublishingInterval: 50, maxPublishingInterval: 10_000, maxKeepAliveCount: 20, maxLifetimeCount: 90, maxMonitoredItemsQueueSize: 100, minSamplingInterval: 25 });
    const s = f.session();
    const r = (interval: number, keepAlive: number, lifetime: number) =>
      f.engine.createSubscription(s, { publishingInterval: interval, maxKeepAliveCount: keepAlive, lifetimeCount: lifetime, maxNotificationsPerPublish: 0, priority: 0 }, true);
    expect(r(1, 0, 0)).toMatchObject({ revisedPublishingInterval: 50, revisedMaxKeepAliveCount: 1, revisedLifetimeCount: 3 });
    expect(r(1e9, 1000, 10)).toMatchObject({ revisedPublishingInterval: 10_000, revisedMaxKeepAliveCount: 20, revisedLifetimeCount: 60 });
    expect(r(-5, 40, 1e6)).toMatchObject({ revisedPublishingInterval: 50, revisedMaxKeepAliveCount: 20, revisedLifetimeCount: 90 });
    const id = f.subscribe(s, { interval: 200 });
    f.variable("rv");
    const item = (samplingInterval: number, queueSize: number) => f.monitor(s, id, f.nodeId("rv"), { samplingInterval, queueSize });
    expect(item(-1, 0)).toMatchObject({ revisedSamplingInterval: 200, revisedQueueSize: 1 });
    expect(item(0, 5000)).toMatchObject({ revisedSamplingInterval: 25, revisedQueueSize: 100 });
    expect(item(1e12, 7)).toMatchObject({ revisedSamplingInterval: 86_400_000, revisedQueueSize: 7 });
  });

  it("modifies items: sampling interval, queue size, client handle and filter", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    const v = f.variable("mod", { feedInterval: 50 });
    const item = f.monitor(s, id, f.nodeId("mod"), { samplingInterval: 50, queueSize: 5, clientHandle: 1 });
    for (const x of [1, 2, 3, 4]) f.set(v, x);
    const r = modifyMonitoredItems(f.engine, s, id, TimestampsToReturn.Both, [
      { monitoredItemId: item.monitoredItemId, requestedParameters: { clientHandle: 7, samplingInterval: 200, queueSize: 2, discardOldest: true, filter: filter(DataChangeTrigger.StatusValue, DeadbandType.Absolute, 10) } },
      { monitoredItemId: 999, requestedParameters: { clientHandle: 8, samplingInterval: 200, queueSize: 2, discardOldest: true } },
    ]);
    expect(r).toEqual([
      { statusCode: StatusCodes.Good, revisedSamplingInterval: 200, revisedQueueSize: 2 },
      { statusCode: StatusCodes.BadMonitoredItemIdInvalid, revisedSamplingInterval: 0, revisedQueueSize: 0 },
    ]);
    // Now sampled every 200 ms instead of fed; the queue kept its newest two, marked.
    expect(f.engine.sampler.fedItemCount).toBe(0);
    expect(f.engine.sampler.groupCount).toBe(1);
    f.publish(s);
    await f.advance(100);
    expect(changes(f.take()[0].response!.notificationMessage)).toEqual([
      [7, 3, OVERFLOW],
      [7, 4, 0],
    ]);
    f.set(v, 9); // within the new deadband of 10 from 4
    f.publish(s, [], 0);
    await f.advance(300);
    expect(isKeepAlive(f.take()[0]?.response) || f.answers.length === 0).toBe(true);
  });

  it("refuses subscriptions and items past the limits", async () => {
    const f = await Fixture.start({ maxSubscriptionsPerSession: 1, maxMonitoredItemsPerSubscription: 2 });
    const s = f.session();
    const id = f.subscribe(s);
    expect(() => f.subscribe(s)).toThrow(/BadTooManySubscriptions/);
    const codes = [1, 2, 3].map((k) => f.monitor(s, id, COUNTER(k)).statusCode);
    expect(codes).toEqual([StatusCodes.Good, StatusCodes.Good, StatusCodes.BadTooManyMonitoredItems]);
  });

  it("holds values while Sampling and releases them on Reporting; a trigger releases them too", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    const a = f.variable("a", { feedInterval: 50 });
    const b = f.variable("b", { feedInterval: 50 });
    const ia = f.monitor(s, id, f.nodeId("a"), { samplingInterval: 50, clientHandle: 1 });
    const ib = f.monitor(s, id, f.nodeId("b"), { samplingInterval: 50, clientHandle: 2, mode: MonitoringMode.Sampling });
    f.publish(s);
    await f.advance(100);
    expect(changes(f.take()[0].response!.notificationMessage).map((c) => c[0])).toEqual([1]);
    const links = setTriggering(f.engine, s, id, ia.monitoredItemId, [ib.monitoredItemId, 4242], []);
    expect(links.addResults).toEqual([StatusCodes.Good, StatusCodes.BadMonitoredItemIdInvalid]);
    f.set(b, 7);
    f.publish(s);
    await f.advance(100);
    expect(isKeepAlive(f.take()[0]?.response) || f.answers.length === 0).toBe(true);
    f.set(a, 1);
    f.publish(s);
    await f.advance(100);
    expect(changes(f.take()[0].response!.notificationMessage)).toEqual([
      [1, 1, 0],
      [2, 7, 0],
    ]);
    expect(setTriggering(f.engine, s, id, ia.monitoredItemId, [], [ib.monitoredItemId]).removeResults).toEqual([StatusCodes.Good]);
    f.set(b, 8);
    expect(setMonitoringMode(f.engine, s, id, MonitoringMode.Reporting, [ib.monitoredItemId])).toEqual([StatusCodes.Good]);
    f.publish(s);
    await f.advance(100);
    expect(changes(f.take()[0].response!.notificationMessage)).toEqual([[2, 8, 0]]);
    expect(() => setMonitoringMode(f.engine, s, id, 7 as MonitoringMode, [ib.monitoredItemId])).toThrow(/BadMonitoringModeInvalid/);
  });
});

describe("sessions and transfers", () => {
  it("answers queued requests BadSessionClosed and keeps the subscriptions for a transfer", async () => {
    const f = await Fixture.start();
    const s = f.session(1);
    const id = f.subscribe(s, { interval: 100, lifetime: 50 });
    f.variable("x", { feedInterval: 50, value: 3 });
    f.monitor(s, id, f.nodeId("x"), { samplingInterval: 50, clientHandle: 5 });
    f.publish(s);
    await f.advance(100);
    f.take();
    f.publish(s);
    f.engine.sessionClosed(s);
    await f.advance(0);
    expect(f.take()).toEqual([{ t: 100, status: StatusCodes.BadSessionClosed }]);
    expect(f.engine.subscriptions.has(id)).toBe(true);
    const stranger = f.session(3, "user:bob");
    expect(f.engine.transferSubscriptions(stranger, [id], true)[0].statusCode).toBe(StatusCodes.BadUserAccessDenied);
    const next = f.session(2);
    const [t] = f.engine.transferSubscriptions(next, [id, 99], true).slice(0, 1);
    expect(t).toEqual({ statusCode: StatusCodes.Good, availableSequenceNumbers: [1] });
    f.publish(next);
    await f.advance(100);
    expect(changes(f.take()[0].response!.notificationMessage)).toEqual([[5, 3, 0]]);
  });

  it("tells the previous session of a transfer with GoodSubscriptionTransferred", async () => {
    const f = await Fixture.start();
    const a = f.session(1);
    const b = f.session(2);
    const id = f.subscribe(a, { interval: 100 });
    f.engine.transferSubscriptions(b, [id], false);
    f.publish(a);
    const [told] = f.take();
    expect(told.response!.subscriptionId).toBe(id);
    expect(statusChange(told.response!.notificationMessage)).toBe(StatusCodes.GoodSubscriptionTransferred);
    expect(() => f.engine.subscriptionOf(a, id)).toThrow(/BadSubscriptionIdInvalid/);
    f.publish(a);
    expect(f.take()[0].status).toBe(StatusCodes.BadNoSubscription);
  });

  it("lets a live session take the place of the oldest abandoned subscription at the server's cap", async () => {
    const f = await Fixture.start({ maxSubscriptions: 2 });
    const gone = f.session(1);
    const first = f.subscribe(gone);
    const second = f.subscribe(gone);
    const live = f.session(2);
    expect(() => f.subscribe(live)).toThrow(/BadTooManySubscriptions/);
    f.engine.sessionClosed(gone);
    f.subscribe(live);
    expect([f.engine.subscriptions.has(first), f.engine.subscriptions.has(second)]).toEqual([false, true]);
    f.subscribe(live);
    expect(() => f.subscribe(live)).toThrow(/BadTooManySubscriptions/);
  });

  it("expires the subscriptions of a closed session when nobody takes them", async () => {
    const f = await Fixture.start();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100, keepAlive: 1, lifetime: 5 });
    f.engine.sessionClosed(s);
    await f.advance(500);
    expect(f.engine.subscriptions.has(id)).toBe(false);
  });
});
