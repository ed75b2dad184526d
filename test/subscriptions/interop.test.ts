// Subscriptions against a client nobody here wrote: node-opcua-client on loopback, security
// None, anonymous. Data changes, deadbands (absolute, percent of an EURange), queue overflow,
// SetMonitoringMode, SetTriggering, Republish after a lost Publish, TransferSubscriptions after a
// reconnect, lifetime expiry, keep-alives on a quiet subscription.
//
// Values that must arrive in a given order are fed synchronously through MemoryNamespace.setValue
// (a variable with feedInterval, as device tags are), so what the server queues does not depend
// on when a sampling pass happens to run. Nothing here asserts timing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AttributeIds,
  type ClientSession as PublicSession,
  type ClientSessionPublishService,
  type ClientSessionRawSubscriptionService,
  ClientSubscription,
  DataChangeFilter,
  DataChangeNotification,
  DataChangeTrigger,
  DataValue,
  DeadbandType,
  MonitoringMode,
  OPCUAClient,
  PublishRequest,
  PublishResponse,
  RepublishRequest,
  RepublishResponse,
  StatusChangeNotification,
  StatusCodes as UaCodes,
  TimestampsToReturn,
  type ClientMonitoredItem,
  type TransferSubscriptionsResponse,
} from "node-opcua-client";
import type { MemoryNamespace, MemoryVariable } from "../../src/address-space/memory-namespace.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { BuiltinType, VariantArrayType, numericNodeId } from "../../src/ua/builtins.js";
import { DataTypeIds, ObjectIds, VariableIds } from "../../src/ua/generated/node-ids.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { newClient, sleep, waitFor } from "./helpers.js";

/** node-opcua's session object also offers the raw subscription services. */
type ClientSession = PublicSession & ClientSessionRawSubscriptionService & ClientSessionPublishService;

let gw: TestGateway;
let client: OPCUAClient;
let session: ClientSession;
let ns: number;
let testNs: MemoryNamespace;
const fed = new Map<string, MemoryVariable>();
const ANYONE = ["viewer", "operator", "admin"] as const;
const RW = AccessLevel.CurrentRead | AccessLevel.CurrentWrite;

function nodeId(name: string): string {
  return `ns=${ns};s=${name}`;
}

/** A writable variable fed at 50 ms: items sampling at 50 ms receive every setValue and Write. */
function addFed(name: string, dataType: BuiltinType, initial: number): MemoryVariable {
  const v = testNs.addVariable({
    nodeId: name,
    browseName: name,
    parent: { namespace: ns, idType: 1, value: "Test" },
    dataType,
    feedInterval: 50,
    accessLevel: RW,
    writeRoles: ANYONE,
    value: { value: { dataType, arrayType: VariantArrayType.Scalar, value: initial }, sourceTimestamp: Date.now() },
  });
  fed.set(name, v);
  return v;
}

function feed(name: string, value: number): void {
  const v = fed.get(name)!;
  testNs.setValue(v, { value: { dataType: v.expectedType as BuiltinType, arrayType: VariantArrayType.Scalar, value }, sourceTimestamp: Date.now() });
}

async function write(name: string, dataType: "Int32" | "Double", value: number): Promise<void> {
  const status = await session.write({ nodeId: nodeId(name), attributeId: AttributeIds.Value, value: { value: { dataType, value } } });
  expect(status.name).toBe("Good");
}

async function subscription(s: ClientSession = session, publishingInterval = 50, keepAlive = 10): Promise<ClientSubscription> {
  return s.createSubscription2({
    requestedPublishingInterval: publishingInterval,
    requestedMaxKeepAliveCount: keepAlive,
    requestedLifetimeCount: 100,
    maxNotificationsPerPublish: 0,
    publishingEnabled: true,
    priority: 1,
  });
}

interface Recorded {
  values: unknown[];
  dataValues: DataValue[];
  item: ClientMonitoredItem;
}

async function monitor(
  sub: ClientSubscription,
  name: string,
  params: { samplingInterval?: number; queueSize?: number; discardOldest?: boolean; filter?: DataChangeFilter } = {},
  mode = MonitoringMode.Reporting,
): Promise<Recorded> {
  const item = await sub.monitor(
    { nodeId: nodeId(name), attributeId: AttributeIds.Value },
    { samplingInterval: params.samplingInterval ?? 50, queueSize: params.queueSize ?? 1, discardOldest: params.discardOldest ?? true, filter: params.filter },
    TimestampsToReturn.Both,
    mode,
  );
  const rec: Recorded = { values: [], dataValues: [], item };
  item.on("changed", (dv: DataValue) => {
    rec.values.push(dv.value.value);
    rec.dataValues.push(dv);
  });
  return rec;
}

/** The raw Publish service (no ClientSubscription behind it). */
function publish(s: ClientSession, acks: { subscriptionId: number; sequenceNumber: number }[] = []): Promise<PublishResponse> {
  return new Promise((resolve, reject) =>
    s.publish(new PublishRequest({ subscriptionAcknowledgements: acks }), (err, r) => (err ? reject(err) : resolve(r!))),
  );
}

function republish(s: ClientSession, subscriptionId: number, retransmitSequenceNumber: number): Promise<RepublishResponse> {
  return new Promise((resolve, reject) =>
    s.republish(new RepublishRequest({ subscriptionId, retransmitSequenceNumber }), (err, r) => (err ? reject(err) : resolve(r!))),
  );
}

/** The data change values of a Publish response, by client handle. */
function dataChanges(r: PublishResponse): { clientHandle: number; value: unknown }[] {
  const out: { clientHandle: number; value: unknown }[] = [];
  for (const n of r.notificationMessage.notificationData ?? []) {
    if (n instanceof DataChangeNotification) for (const m of n.monitoredItems ?? []) out.push({ clientHandle: m.clientHandle, value: m.value.value.value });
  }
  return out;
}

/** TransferSubscriptions (node-opcua's typings pick the callback overload). */
function transfer(s: ClientSession, subscriptionIds: number[], sendInitialValues: boolean): Promise<TransferSubscriptionsResponse> {
  return s.transferSubscriptions({ subscriptionIds, sendInitialValues }) as unknown as Promise<TransferSubscriptionsResponse>;
}

async function rawSubscription(s: ClientSession, publishingInterval = 50, keepAlive = 10, lifetime = 100): Promise<number> {
  const r = await s.createSubscription({
    requestedPublishingInterval: publishingInterval,
    requestedMaxKeepAliveCount: keepAlive,
    requestedLifetimeCount: lifetime,
    maxNotificationsPerPublish: 0,
    publishingEnabled: true,
    priority: 1,
  });
  return r.subscriptionId;
}

async function rawItem(s: ClientSession, subscriptionId: number, name: string, clientHandle: number, samplingInterval = 50, filter?: DataChangeFilter) {
  const r = await s.createMonitoredItems({
    subscriptionId,
    timestampsToReturn: TimestampsToReturn.Both,
    itemsToCreate: [
      {
        itemToMonitor: { nodeId: nodeId(name), attributeId: AttributeIds.Value },
        monitoringMode: MonitoringMode.Reporting,
        requestedParameters: { clientHandle, samplingInterval, queueSize: 10, discardOldest: true, filter },
      },
    ],
  });
  return r.results![0];
}

beforeAll(async () => {
  gw = await startGateway();
  client = newClient();
  await client.connect(gw.url);
  session = (await client.createSession()) as ClientSession;
  const nsArray = await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value });
  ns = (nsArray.value.value as string[]).indexOf("urn:fieldgate:test");
  testNs = gw.server.registry.managerAt(ns) as MemoryNamespace;
  for (const name of ["FedQ1", "FedQ2", "FedM", "FedTA", "FedTB", "FedR", "FedX", "FedY", "Deadband"]) addFed(name, BuiltinType.Int32, 0);
  addFed("Analog", BuiltinType.Double, 0);
  // Part 8 §5.3.2: EURange of an AnalogItem, the base of percent deadbands.
  testNs.addProperty(testNs.variable("Analog")!.nodeId, {
    browseName: "EURange",
    dataType: DataTypeIds.Range,
    value: {
      value: {
        dataType: BuiltinType.ExtensionObject,
        arrayType: VariantArrayType.Scalar,
        value: { typeId: numericNodeId(ObjectIds.Range_Encoding_DefaultBinary), body: { low: 0, high: 200 } },
      },
    },
  });
}, 30_000);

afterAll(async () => {
  await session?.close();
  await client?.disconnect();
  await gw?.stop();
});

describe("subscriptions with node-opcua-client", { timeout: 20_000 }, () => {
  it("reports data changes of a sampled variable with both timestamps", async () => {
    const sub = await subscription(session, 20);
    const rec = await monitor(sub, "Scalar.Double", { samplingInterval: 10, queueSize: 10 });
    await waitFor(() => rec.values.length === 1, "the initial value");
    await write("Scalar.Double", "Double", 1.5);
    await waitFor(() => rec.values.length === 2, "1.5");
    await write("Scalar.Double", "Double", 2.5);
    await waitFor(() => rec.values.length === 3, "2.5");
    expect(rec.values).toEqual([0, 1.5, 2.5]);
    for (const dv of rec.dataValues) {
      expect(dv.serverTimestamp).toBeInstanceOf(Date);
      expect(dv.sourceTimestamp).toBeInstanceOf(Date);
    }
    await sub.terminate();
  });

  it("applies an absolute deadband to the last reported value", async () => {
    const sub = await subscription();
    const filter = new DataChangeFilter({ trigger: DataChangeTrigger.StatusValue, deadbandType: DeadbandType.Absolute, deadbandValue: 5 });
    const rec = await monitor(sub, "Deadband", { filter, queueSize: 10 });
    await waitFor(() => rec.values.length === 1, "the initial value");
    for (const v of [3, 6, 2, 12]) await write("Deadband", "Int32", v);
    await waitFor(() => rec.values.length === 3, "12");
    expect(rec.values).toEqual([0, 6, 12]);
    await sub.terminate();
  });

  it("applies a percent deadband against the EURange property", async () => {
    const sub = await subscription();
    const filter = new DataChangeFilter({ trigger: DataChangeTrigger.StatusValue, deadbandType: DeadbandType.Percent, deadbandValue: 10 });
    const rec = await monitor(sub, "Analog", { filter, queueSize: 10 });
    await waitFor(() => rec.values.length === 1, "the initial value");
    // 10 % of 0..200 is 20.
    for (const v of [10, 25, 40, 50]) await write("Analog", "Double", v);
    await waitFor(() => rec.values.length === 3, "50");
    expect(rec.values).toEqual([0, 25, 50]);
    await sub.terminate();
  });

  it("refuses deadbands a node cannot take", async () => {
    const id = await rawSubscription(session);
    const percent = new DataChangeFilter({ trigger: DataChangeTrigger.StatusValue, deadbandType: DeadbandType.Percent, deadbandValue: 10 });
    const absolute = new DataChangeFilter({ trigger: DataChangeTrigger.StatusValue, deadbandType: DeadbandType.Absolute, deadbandValue: 1 });
    const invalid = new DataChangeFilter({ trigger: DataChangeTrigger.StatusValue, deadbandType: 7 as DeadbandType, deadbandValue: 1 });
    expect((await rawItem(session, id, "Scalar.Double", 1, 50, percent)).statusCode).toEqual(UaCodes.BadMonitoredItemFilterUnsupported);
    expect((await rawItem(session, id, "Scalar.String", 2, 50, absolute)).statusCode).toEqual(UaCodes.BadFilterNotAllowed);
    expect((await rawItem(session, id, "Scalar.Double", 3, 50, invalid)).statusCode).toEqual(UaCodes.BadDeadbandFilterInvalid);
    expect((await rawItem(session, id, "NoSuchNode", 4)).statusCode).toEqual(UaCodes.BadNodeIdUnknown);
    await session.deleteSubscriptions({ subscriptionIds: [id] });
  });

  it("sets the Overflow bit where the queue dropped values (discardOldest true and false)", async () => {
    const sub = await subscription(session, 100);
    const oldest = await monitor(sub, "FedQ1", { queueSize: 3, discardOldest: true });
    const newest = await monitor(sub, "FedQ2", { queueSize: 3, discardOldest: false });
    await waitFor(() => oldest.values.length === 1 && newest.values.length === 1, "the initial values");
    // Five values between two publishing cycles, into queues of three.
    for (let v = 1; v <= 5; v++) {
      feed("FedQ1", v);
      feed("FedQ2", v);
    }
    await waitFor(() => oldest.values.length === 4 && newest.values.length === 4, "the queued values");
    expect(oldest.values.slice(1)).toEqual([3, 4, 5]);
    expect(oldest.dataValues.slice(1).map((dv) => dv.statusCode.hasOverflowBit)).toEqual([true, false, false]);
    expect(newest.values.slice(1)).toEqual([1, 2, 5]);
    expect(newest.dataValues.slice(1).map((dv) => dv.statusCode.hasOverflowBit)).toEqual([false, false, true]);
    await sub.terminate();
  });

  it("holds values while Sampling, reports them on Reporting, samples anew after Disabled", async () => {
    const sub = await subscription();
    const rec = await monitor(sub, "FedM");
    await waitFor(() => rec.values.length === 1, "the initial value");
    const id = rec.item.monitoredItemId as number;
    let reporting = false;
    const whileReporting: boolean[] = [];
    rec.item.on("changed", () => whileReporting.push(reporting));
    const mode = async (monitoringMode: MonitoringMode) => {
      const r = await session.setMonitoringMode({ subscriptionId: sub.subscriptionId, monitoringMode, monitoredItemIds: [id] });
      expect(r.results?.map((s) => s.name)).toEqual(["Good"]);
    };
    await mode(MonitoringMode.Sampling);
    feed("FedM", 7);
    await sleep(200); // a few publishing cycles in which 7 must not be reported
    reporting = true;
    await mode(MonitoringMode.Reporting);
    await waitFor(() => rec.values.length === 2, "7");
    await mode(MonitoringMode.Disabled);
    feed("FedM", 8);
    await mode(MonitoringMode.Reporting);
    await waitFor(() => rec.values.length === 3, "8");
    expect(rec.values).toEqual([0, 7, 8]);
    expect(whileReporting).toEqual([true, true]);
    await sub.terminate();
  });

  it("reports a Sampling item when the item that triggers it reports", async () => {
    const sub = await subscription();
    const a = await monitor(sub, "FedTA");
    const b = await monitor(sub, "FedTB", {}, MonitoringMode.Sampling);
    await waitFor(() => a.values.length === 1, "the initial value of the triggering item");
    const r = await session.setTriggering({
      subscriptionId: sub.subscriptionId,
      triggeringItemId: a.item.monitoredItemId as number,
      linksToAdd: [b.item.monitoredItemId as number],
      linksToRemove: [],
    });
    expect(r.addResults?.map((s) => s.name)).toEqual(["Good"]);
    feed("FedTB", 5);
    await sleep(200); // B is only Sampling: nothing of it may arrive
    expect(b.values).toEqual([]);
    feed("FedTA", 1);
    await waitFor(() => a.values.length === 2 && b.values.length === 1, "A and the triggered B");
    expect(a.values).toEqual([0, 1]);
    expect(b.values).toEqual([5]);
    await sub.terminate();
  });

  it("keeps sending keep-alives on a quiet subscription", async () => {
    const sub = await subscription(session, 20, 3);
    let keepAlives = 0;
    sub.on("keepalive", () => keepAlives++);
    const rec = await monitor(sub, "ReadOnly.Int32", { samplingInterval: 20 });
    await waitFor(() => keepAlives >= 3, "three keep-alives");
    expect(rec.values).toEqual([42]);
    await sub.terminate();
  });

  it("publishes the subscription limits in ServerCapabilities", async () => {
    const ids = [
      VariableIds.Server_ServerCapabilities_MaxSubscriptionsPerSession,
      VariableIds.Server_ServerCapabilities_MaxMonitoredItemsPerSubscription,
      VariableIds.Server_ServerCapabilities_MaxMonitoredItemsQueueSize,
      VariableIds.Server_ServerCapabilities_MinSupportedSampleRate,
      VariableIds.Server_ServerCapabilities_OperationLimits_MaxMonitoredItemsPerCall,
    ];
    const values = await session.read(ids.map((i) => ({ nodeId: `i=${i}`, attributeId: AttributeIds.Value })));
    expect(values.map((v) => v.value.value)).toEqual([50, 50_000, 1000, 10, 50_000]);
  });
});

describe("Publish, Republish and TransferSubscriptions with raw services", { timeout: 20_000 }, () => {
  it("republishes a message whose Publish response was lost, until it is acknowledged", async () => {
    const raw = (await client.createSession()) as ClientSession;
    try {
      const id = await rawSubscription(raw);
      expect((await rawItem(raw, id, "FedR", 7)).statusCode.name).toBe("Good");
      const first = await publish(raw);
      expect(first.subscriptionId).toBe(id);
      expect(dataChanges(first)).toEqual([{ clientHandle: 7, value: 0 }]);
      const seq = first.notificationMessage.sequenceNumber;
      expect(first.availableSequenceNumbers).toEqual([seq]);
      // The client never saw `first`: it asks for the message again.
      const again = await republish(raw, id, seq);
      expect(again.notificationMessage.sequenceNumber).toBe(seq);
      expect(dataChanges(new PublishResponse({ notificationMessage: again.notificationMessage }))).toEqual([{ clientHandle: 7, value: 0 }]);
      feed("FedR", 9);
      const second = await publish(raw);
      expect(dataChanges(second)).toEqual([{ clientHandle: 7, value: 9 }]);
      expect(second.availableSequenceNumbers).toEqual([seq, seq + 1]);
      feed("FedR", 10);
      const third = await publish(raw, [
        { subscriptionId: id, sequenceNumber: seq },
        { subscriptionId: id, sequenceNumber: seq + 1 },
        { subscriptionId: id, sequenceNumber: 999 },
      ]);
      expect(third.results?.map((s) => s.name)).toEqual(["Good", "Good", "BadSequenceNumberUnknown"]);
      expect(third.availableSequenceNumbers).toEqual([seq + 2]);
      await expect(republish(raw, id, seq)).rejects.toThrow(/BadMessageNotAvailable/);
    } finally {
      await raw.close(true);
    }
  });

  it("moves a subscription to a new session after a reconnect, with its current values", async () => {
    const first = newClient("fieldgate-transfer-1");
    await first.connect(gw.url);
    const old = (await first.createSession()) as ClientSession;
    const id = await rawSubscription(old);
    await rawItem(old, id, "FedX", 21);
    expect(dataChanges(await publish(old))).toEqual([{ clientHandle: 21, value: 0 }]);
    feed("FedX", 4);
    // The client goes away without deleting its subscriptions (Part 4 §5.6.4) ...
    await old.close(false);
    await first.disconnect();
    expect(gw.server.subscriptions.subscriptions.has(id)).toBe(true);
    // ... and comes back on a new connection and session.
    const second = newClient("fieldgate-transfer-2");
    await second.connect(gw.url);
    const fresh = (await second.createSession()) as ClientSession;
    try {
      const t = await transfer(fresh, [id], true);
      expect(t.results?.map((r) => r.statusCode.name)).toEqual(["Good"]);
      const r = await publish(fresh);
      expect(r.subscriptionId).toBe(id);
      expect(dataChanges(r)).toEqual([{ clientHandle: 21, value: 4 }]);
      feed("FedX", 5);
      expect(dataChanges(await publish(fresh))).toEqual([{ clientHandle: 21, value: 5 }]);
    } finally {
      await fresh.close(true);
      await second.disconnect();
    }
  });

  it("tells the previous session that its subscription was transferred", async () => {
    const a = (await client.createSession()) as ClientSession;
    const b = (await client.createSession()) as ClientSession;
    try {
      const id = await rawSubscription(a);
      await rawItem(a, id, "FedY", 31);
      await publish(a);
      const t = await transfer(b, [id], false);
      expect(t.results?.map((r) => r.statusCode.name)).toEqual(["Good"]);
      const r = await publish(a);
      expect(r.subscriptionId).toBe(id);
      const status = r.notificationMessage.notificationData?.[0];
      expect(status).toBeInstanceOf(StatusChangeNotification);
      expect((status as StatusChangeNotification).status).toEqual(UaCodes.GoodSubscriptionTransferred);
      feed("FedY", 6);
      expect(dataChanges(await publish(b))).toEqual([{ clientHandle: 31, value: 6 }]);
    } finally {
      await a.close(true);
      await b.close(true);
    }
  });

  it("expires a subscription without Publish requests and says so with the next one", async () => {
    const raw = (await client.createSession()) as ClientSession;
    try {
      const id = await rawSubscription(raw, 20, 1, 3);
      await waitFor(() => !gw.server.subscriptions.subscriptions.has(id), "the subscription to expire");
      const r = await publish(raw);
      expect(r.subscriptionId).toBe(id);
      const status = r.notificationMessage.notificationData?.[0];
      expect(status).toBeInstanceOf(StatusChangeNotification);
      expect((status as StatusChangeNotification).status).toEqual(UaCodes.BadTimeout);
      await expect(publish(raw)).rejects.toThrow(/BadNoSubscription/);
    } finally {
      await raw.close(true);
    }
  });
});
