// Enhanced DataChange Subscription 2017 Server Facet (Part 7), with the Standard and Embedded
// DataChange facets it builds on, against node-opcua-client's raw subscription services:
//   Monitor MinQueueSize_02 / _05 and queues of 10: every value between two publishing cycles
//     kept, the Overflow bit on the notification after a loss (Subscription Publish Discard
//     Policy: discardOldest true and false), a queue of 1 always the newest value.
//   Monitored Items Deadband Filter: Absolute, and Percent of the EURange.
//   Monitor Triggering: a Sampling item reported when its triggering item reports.
//   Subscription Publish Min 10: ten Publish requests queued per session; an eleventh answers the
//     oldest BadTooManyPublishRequests.
//   Subscription Minimum 05 and Monitor Items 500: five subscriptions of 500 items in one session,
//     every item's first value delivered.
//   MaxNotificationsPerPublish: a message holds no more, moreNotifications says the rest follows.
//   A lost connection: the subscription outlives it and TransferSubscriptions moves it to the new
//     session with its current values (sendInitialValues) and its queued ones.
// Values are fed synchronously into variables fed at 50 ms (as device tags are), so what is
// queued does not depend on when a sampling pass runs.
import {
  AttributeIds,
  DataChangeFilter,
  DataChangeNotification,
  DataChangeTrigger,
  DeadbandType,
  MonitoringMode,
  OPCUAClient,
  PublishRequest,
  StatusCodes,
  TimestampsToReturn,
  type ClientSession,
  type MonitoredItemCreateRequestOptions,
  type PublishResponse,
} from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MemoryNamespace, MemoryVariable } from "../../src/address-space/memory-namespace.js";
import { BuiltinType, VariantArrayType, numericNodeId } from "../../src/ua/builtins.js";
import { DataTypeIds, ObjectIds } from "../../src/ua/generated/node-ids.js";
import { connect, gatewayWith, sleep, type Connection, type Gateway } from "./helpers.js";

let gw: Gateway;
let c: Connection;
let ns: number;
let testNs: MemoryNamespace;
const fed = new Map<string, MemoryVariable>();

type Raw = ClientSession & {
  createSubscription(o: unknown): Promise<{ subscriptionId: number; revisedPublishingInterval: number }>;
  createMonitoredItems(o: unknown): Promise<{ results: Array<{ statusCode: StatusCodes; monitoredItemId: number; revisedQueueSize: number }> }>;
  setTriggering(o: unknown): Promise<{ addResults: StatusCodes[] }>;
  deleteSubscriptions(o: unknown): Promise<unknown>;
  transferSubscriptions(o: unknown): Promise<{ results: Array<{ statusCode: StatusCodes }> }>;
  publish(r: PublishRequest, cb: (err: Error | null, r?: PublishResponse) => void): void;
};

function addFed(name: string, dataType = BuiltinType.Int32): void {
  const v = testNs.addVariable({
    nodeId: name,
    browseName: name,
    parent: { namespace: ns, idType: 1, value: "Test" },
    dataType,
    feedInterval: 50,
    value: { value: { dataType, arrayType: VariantArrayType.Scalar, value: 0 }, sourceTimestamp: Date.now() },
  });
  fed.set(name, v);
}

function feed(name: string, value: number): void {
  const v = fed.get(name)!;
  testNs.setValue(v, { value: { dataType: v.expectedType as BuiltinType, arrayType: VariantArrayType.Scalar, value }, sourceTimestamp: Date.now() });
}

const raw = (): Raw => c.session as Raw;

async function subscription(session: Raw, o: { publishingInterval?: number; maxNotificationsPerPublish?: number; publishingEnabled?: boolean } = {}): Promise<number> {
  const r = await session.createSubscription({
    requestedPublishingInterval: o.publishingInterval ?? 50,
    requestedMaxKeepAliveCount: 10,
    requestedLifetimeCount: 300,
    maxNotificationsPerPublish: o.maxNotificationsPerPublish ?? 0,
    publishingEnabled: o.publishingEnabled ?? true,
    priority: 1,
  });
  return r.subscriptionId;
}

function item(name: string, clientHandle: number, o: { queueSize?: number; discardOldest?: boolean; filter?: DataChangeFilter; mode?: MonitoringMode } = {}): MonitoredItemCreateRequestOptions {
  return {
    itemToMonitor: { nodeId: `ns=${ns};s=${name}`, attributeId: AttributeIds.Value },
    monitoringMode: o.mode ?? MonitoringMode.Reporting,
    requestedParameters: { clientHandle, samplingInterval: 50, queueSize: o.queueSize ?? 1, discardOldest: o.discardOldest ?? true, filter: o.filter },
  };
}

async function items(session: Raw, subscriptionId: number, list: MonitoredItemCreateRequestOptions[]) {
  const r = await session.createMonitoredItems({ subscriptionId, timestampsToReturn: TimestampsToReturn.Both, itemsToCreate: list });
  return r.results;
}

function publish(session: Raw, acks: { subscriptionId: number; sequenceNumber: number }[] = []): Promise<PublishResponse> {
  return new Promise((resolve, reject) => session.publish(new PublishRequest({ subscriptionAcknowledgements: acks }), (err, r) => (err ? reject(err) : resolve(r!))));
}

interface Change {
  handle: number;
  value: unknown;
  overflow: boolean;
}

function changes(r: PublishResponse): Change[] {
  const out: Change[] = [];
  for (const n of r.notificationMessage.notificationData ?? []) {
    if (!(n instanceof DataChangeNotification)) continue;
    for (const m of n.monitoredItems ?? []) out.push({ handle: m.clientHandle, value: m.value.value.value, overflow: m.value.statusCode.hasOverflowBit });
  }
  return out;
}

/**
 * Publishes (acknowledging as it goes) until `n` data changes of the subscription have arrived;
 * fails after `ms`, within the test's own timeout (a loop left running would take the next
 * test's messages).
 */
async function collect(session: Raw, subscriptionId: number, n: number, ms = 4000): Promise<Change[]> {
  const out: Change[] = [];
  const end = Date.now() + ms;
  let acks: { subscriptionId: number; sequenceNumber: number }[] = [];
  while (out.length < n) {
    if (Date.now() > end) throw new Error(`only ${out.length} of ${n} data changes arrived`);
    const r = await publish(session, acks);
    acks = r.notificationMessage.notificationData?.length ? [{ subscriptionId: r.subscriptionId, sequenceNumber: r.notificationMessage.sequenceNumber }] : [];
    if (r.subscriptionId === subscriptionId) out.push(...changes(r));
  }
  return out;
}

beforeAll(async () => {
  gw = await gatewayWith(undefined);
  c = await connect(gw.url);
  ns = ((await c.session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value as string[]).indexOf("urn:fieldgate:test");
  testNs = gw.server.registry.managerAt(ns) as MemoryNamespace;
  for (const name of ["Q1", "Q2", "Q5", "Q10", "Q10b", "Abs", "TA", "TB", "Lost"]) addFed(name);
  addFed("Pct", BuiltinType.Double);
  testNs.addProperty(testNs.variable("Pct")!.nodeId, {
    browseName: "EURange",
    dataType: DataTypeIds.Range,
    value: { value: { dataType: BuiltinType.ExtensionObject, arrayType: VariantArrayType.Scalar, value: { typeId: numericNodeId(ObjectIds.Range_Encoding_DefaultBinary), body: { low: 0, high: 200 } } } },
  });
  for (let i = 0; i < 500; i++) addFed(`Many${i}`);
}, 30_000);

afterAll(async () => {
  await c?.close();
  await gw?.stop();
});

describe("queues: MinQueueSize 2, 5, 10 and the discard policy", () => {
  it("keeps every value between two cycles up to the queue size, the Overflow bit after a loss", async () => {
    const session = raw();
    const id = await subscription(session, { publishingInterval: 200, publishingEnabled: false });
    const created = await items(session, id, [
      item("Q1", 1, { queueSize: 1 }),
      item("Q2", 2, { queueSize: 2 }),
      item("Q5", 5, { queueSize: 5 }),
      item("Q10", 10, { queueSize: 10 }),
      item("Q10b", 11, { queueSize: 10, discardOldest: false }),
    ]);
    expect(created.map((r) => r.revisedQueueSize)).toEqual([1, 2, 5, 10, 10]);
    // The first values, then twelve more into each queue while nothing is published.
    for (let v = 1; v <= 12; v++) for (const name of ["Q1", "Q2", "Q5", "Q10", "Q10b"]) feed(name, v);
    await session.setPublishingMode(true, [id] as never);
    const got = await collect(session, id, 1 + 2 + 5 + 10 + 10);
    const of = (h: number) => got.filter((g) => g.handle === h);
    expect(of(1).map((g) => [g.value, g.overflow])).toEqual([[12, false]]);
    expect(of(2).map((g) => [g.value, g.overflow])).toEqual([[11, true], [12, false]]);
    expect(of(5).map((g) => g.value)).toEqual([8, 9, 10, 11, 12]);
    expect(of(5)[0].overflow).toBe(true);
    expect(of(10).map((g) => g.value)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(of(10).map((g) => g.overflow)).toEqual([true, false, false, false, false, false, false, false, false, false]);
    // discardOldest false: the oldest stay, the last slot takes the newest with the Overflow bit.
    expect(of(11).map((g) => g.value)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 12]);
    expect(of(11).map((g) => g.overflow)).toEqual([false, false, false, false, false, false, false, false, false, true]);
    await session.deleteSubscriptions({ subscriptionIds: [id] });
  });
});

describe("deadbands and triggering", () => {
  it("Absolute deadbands report moves larger than the deadband; Percent ones use the EURange", async () => {
    const session = raw();
    const id = await subscription(session);
    const abs = new DataChangeFilter({ trigger: DataChangeTrigger.StatusValue, deadbandType: DeadbandType.Absolute, deadbandValue: 5 });
    const pct = new DataChangeFilter({ trigger: DataChangeTrigger.StatusValue, deadbandType: DeadbandType.Percent, deadbandValue: 10 });
    const r = await items(session, id, [item("Abs", 1, { queueSize: 10, filter: abs }), item("Pct", 2, { queueSize: 10, filter: pct })]);
    expect(r.map((x) => x.statusCode)).toEqual([StatusCodes.Good, StatusCodes.Good]);
    for (const v of [3, 6, 11, 12, 18]) feed("Abs", v); // 0 -> 6 -> 12 -> 18: each more than 5 from the last reported
    for (const v of [10, 21, 25, 45]) feed("Pct", v); // 10 % of 200 = 20: 0 -> 21 -> 45
    const got = await collect(session, id, 4 + 3);
    expect(got.filter((g) => g.handle === 1).map((g) => g.value)).toEqual([0, 6, 12, 18]);
    expect(got.filter((g) => g.handle === 2).map((g) => g.value)).toEqual([0, 21, 45]);
    await session.deleteSubscriptions({ subscriptionIds: [id] });
  });

  it("reports a Sampling item with the notification of its triggering item", async () => {
    const session = raw();
    const id = await subscription(session);
    const [a, b] = await items(session, id, [item("TA", 1), item("TB", 2, { mode: MonitoringMode.Sampling })]);
    const t = await session.setTriggering({ subscriptionId: id, triggeringItemId: a.monitoredItemId, linksToAdd: [b.monitoredItemId], linksToRemove: [] });
    expect(t.addResults).toEqual([StatusCodes.Good]);
    expect((await collect(session, id, 1)).map((g) => g.handle)).toEqual([1]); // A's first value; B is only sampling
    feed("TB", 5);
    feed("TA", 1);
    const got = await collect(session, id, 2);
    expect(got.map((g) => [g.handle, g.value]).sort()).toEqual([[1, 1], [2, 5]]);
    await session.deleteSubscriptions({ subscriptionIds: [id] });
  });
});

describe("limits of the facet", () => {
  it("queues ten Publish requests of a session; an eleventh pushes out the oldest", async () => {
    const other = await connect(gw.url);
    try {
      const session = other.session as Raw;
      const id = await subscription(session, { publishingInterval: 60_000 });
      const answers: string[] = [];
      const pending = Array.from({ length: 11 }, () =>
        publish(session).then(
          (r) => answers.push(r.notificationMessage.notificationData?.length ? "data" : "keep-alive"),
          (err: Error) => answers.push(/Bad\w+/.exec(err.message)?.[0] ?? err.message),
        ),
      );
      await sleep(300);
      // The subscription's first cycle is a minute away: ten requests wait, the oldest went out.
      expect(answers).toEqual(["BadTooManyPublishRequests"]);
      const own = [...gw.server.sessions.sessions()].find((s) => s.sessionId.value === (session.sessionId as unknown as { value: number }).value)!;
      expect(gw.server.subscriptions.publisherOf(own).queued).toBe(10);
      await session.deleteSubscriptions({ subscriptionIds: [id] });
      await Promise.all(pending);
      expect(answers.filter((a) => a === "BadNoSubscription")).toHaveLength(10);
    } finally {
      await other.close();
    }
  });

  it("serves five subscriptions of 500 items each in one session", async () => {
    const session = raw();
    const ids: number[] = [];
    for (let s = 0; s < 5; s++) ids.push(await subscription(session, { publishingInterval: 100 }));
    for (const id of ids) {
      const r = await items(session, id, Array.from({ length: 500 }, (_, i) => item(`Many${i}`, i + 1)));
      expect(r.filter((x) => x.statusCode === StatusCodes.Good)).toHaveLength(500);
    }
    const seen = new Map<number, Set<number>>(ids.map((id) => [id, new Set()]));
    const end = Date.now() + 15_000;
    let acks: { subscriptionId: number; sequenceNumber: number }[] = [];
    while ([...seen.values()].some((s) => s.size < 500)) {
      if (Date.now() > end) throw new Error(`first values: ${[...seen.values()].map((s) => s.size).join(", ")} of 500`);
      const r = await publish(session, acks);
      acks = r.notificationMessage.notificationData?.length ? [{ subscriptionId: r.subscriptionId, sequenceNumber: r.notificationMessage.sequenceNumber }] : [];
      for (const ch of changes(r)) seen.get(r.subscriptionId)?.add(ch.handle);
    }
    expect([...seen.values()].map((s) => s.size)).toEqual([500, 500, 500, 500, 500]);
    await session.deleteSubscriptions({ subscriptionIds: ids });
  }, 30_000);

  it("holds no more than maxNotificationsPerPublish in a message and says more follow", async () => {
    const session = raw();
    const id = await subscription(session, { maxNotificationsPerPublish: 7, publishingInterval: 100 });
    await items(session, id, Array.from({ length: 20 }, (_, i) => item(`Many${i}`, i + 1)));
    const sizes: number[] = [];
    const more: boolean[] = [];
    let acks: { subscriptionId: number; sequenceNumber: number }[] = [];
    while (sizes.reduce((a, b) => a + b, 0) < 20) {
      const r = await publish(session, acks);
      acks = [{ subscriptionId: r.subscriptionId, sequenceNumber: r.notificationMessage.sequenceNumber }];
      const n = changes(r).length;
      if (n === 0) continue;
      sizes.push(n);
      more.push(r.moreNotifications);
    }
    expect(sizes).toEqual([7, 7, 6]);
    expect(more).toEqual([true, true, false]);
    await session.deleteSubscriptions({ subscriptionIds: [id] });
  });
});

describe("a lost connection", () => {
  it("the subscription outlives its channel and moves to the client's new session with its values", async () => {
    // keepPendingSessionsOnDisconnect: the client drops its connection without closing its session.
    const first = OPCUAClient.create({ endpointMustExist: false, keepPendingSessionsOnDisconnect: true, connectionStrategy: { maxRetry: 0 }, requestedSessionTimeout: 60_000 });
    await first.connect(gw.url);
    const old = (await first.createSession()) as unknown as Raw;
    const id = await subscription(old, { publishingInterval: 100 });
    await items(old, id, [item("Lost", 9, { queueSize: 5 })]);
    expect((await collect(old, id, 1)).map((g) => g.value)).toEqual([0]);
    await first.disconnect();
    expect([...gw.server.sessions.sessions()].some((s) => s.sessionId.value === (old.sessionId as unknown as { value: number }).value)).toBe(true);
    feed("Lost", 1);
    feed("Lost", 2);
    await sleep(200);
    expect(gw.server.subscriptions.subscriptions.has(id)).toBe(true);
    const second = await connect(gw.url);
    try {
      const fresh = second.session as Raw;
      const t = await fresh.transferSubscriptions({ subscriptionIds: [id], sendInitialValues: true });
      expect(t.results.map((r) => r.statusCode)).toEqual([StatusCodes.Good]);
      const got = await collect(fresh, id, 2);
      // What was queued while nobody published is delivered; with it goes the current value.
      expect(got.map((g) => g.value)).toContain(1);
      expect(got.map((g) => g.value)).toContain(2);
    } finally {
      await second.close();
    }
  });
});
