// Standard Event Subscription Server Facet (Part 7) with node-opcua-client:
//   Address Space Events: the Server object, the Devices folder and each device are event
//     notifiers; other nodes refuse event items (BadNotSupported, BadAttributeIdInvalid).
//   Monitor Events: select clauses by browse path (unknown fields and other types' fields are
//     null, ConditionId by the NodeId attribute), EventFilterResult for bad clauses, where
//     clauses with each operator of the facet, BadEventFilterInvalid with per-element results,
//     ModifyMonitoredItems and SetMonitoringMode of event items.
//   Monitor QueueSize_ServerMax / events queue sizes (Part 4 §7.21): 0 the default, 1 the
//     minimum, MaxUInt32 the maximum; Base Info EventQueueOverflow EventType at the head
//     (discardOldest) or the tail.
//   Base Info Model Change (GeneralModelChangeEvent on a device-map reload) and Base Info System
//     Status (SystemStatusChangeEvent at shutdown).
// Events whose fields the test chooses (severities, messages) are raised through the server's
// own events layer and reach the client over the wire like every other event.
import {
  AttributeIds,
  ContentFilter,
  ContentFilterElement,
  DataChangeFilter,
  DataType,
  ElementOperand,
  EventFilter,
  FilterOperator,
  LiteralOperand,
  MonitoringMode,
  NodeId,
  SimpleAttributeOperand,
  StatusCodes,
  TimestampsToReturn,
  Variant,
  coerceQualifiedName,
  constructEventFilter,
  resolveNodeId,
  type ClientSubscription,
  type EventFilterResult,
  type LocalizedText,
} from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UaEvent } from "../../src/events/event.js";
import { numericNodeId } from "../../src/ua/builtins.js";
import { ObjectIds, ObjectTypeIds } from "../../src/ua/generated/node-ids.js";
import { connect, gatewayWith, monitorEvents, sleep, subscribe, waitFor, type Connection, type EventMonitor, type Gateway } from "./helpers.js";
import { MAX_MODEL_CHANGES } from "../../src/events/server-events.js";

const SERVER = "i=2253";
const BASE_EVENT = resolveNodeId("BaseEventType");

const field = (path: string, type: NodeId = BASE_EVENT) =>
  new SimpleAttributeOperand({ typeDefinitionId: type, browsePath: path.split(".").map((p) => coerceQualifiedName(p)), attributeId: AttributeIds.Value });
const lit = (dataType: DataType, value: unknown) => new LiteralOperand({ value: new Variant({ dataType, value }) });
const el = (index: number) => new ElementOperand({ index });
const element = (op: FilterOperator, ...operands: (SimpleAttributeOperand | LiteralOperand | ElementOperand)[]) => new ContentFilterElement({ filterOperator: op, filterOperands: operands });
const where = (...elements: ContentFilterElement[]) => new ContentFilter({ elements });

const MAP = (extra = "") => `devices:
  - name: sim
    driver: simulator
    rate: 100ms
    tags:
      - { name: ramp, address: input:0 }
      - { name: saw, address: input:1 }
      - { name: temp, address: input:2, type: float32, unit: "°C" }
${extra}`;

let gw: Gateway;
let c: Connection;
let sub: ClientSubscription;
let ns: number;

/** A SystemEventType event with the given severity and message, reported through the Server. */
function raise(severity: number, message: string, typeId: number = ObjectTypeIds.SystemEventType): void {
  gw.server.events.raise(new UaEvent(typeId, { sourceNode: numericNodeId(ObjectIds.Server), sourceName: "Test", message, severity }));
}

/**
 * Creates an event item with a raw EventFilter (node-opcua's helpers build only valid ones) and
 * returns the create result; the item, if made, is deleted again.
 */
async function create(filter: unknown, nodeId = SERVER, queueSize = 0, discardOldest = true) {
  const session = c.session as unknown as {
    createMonitoredItems(r: unknown): Promise<{ results: Array<{ statusCode: StatusCodes; monitoredItemId: number; revisedQueueSize: number; revisedSamplingInterval: number; filterResult: { toJSON?: () => unknown } & Record<string, unknown> }> }>;
  };
  const r = await session.createMonitoredItems({
    subscriptionId: sub.subscriptionId,
    timestampsToReturn: TimestampsToReturn.Neither,
    itemsToCreate: [{ itemToMonitor: { nodeId: resolveNodeId(nodeId), attributeId: AttributeIds.EventNotifier }, monitoringMode: MonitoringMode.Reporting, requestedParameters: { clientHandle: 77, samplingInterval: 0, queueSize, discardOldest, filter } }],
  });
  const result = r.results[0];
  if (result.monitoredItemId !== 0) await c.session.deleteMonitoredItems({ subscriptionId: sub.subscriptionId, monitoredItemIds: [result.monitoredItemId] });
  return result;
}

beforeAll(async () => {
  gw = await gatewayWith(MAP());
  c = await connect(gw.url);
  ns = ((await c.session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value as string[]).indexOf("urn:fieldgate:devices");
  sub = await subscribe(c.session);
}, 30_000);

afterAll(async () => {
  await c?.close();
  await gw?.stop();
});

describe("Address Space Events", () => {
  it("the Server, the Devices folder and each device are event notifiers; other objects are not", async () => {
    const values = await c.session.read([SERVER, `ns=${ns};i=1`, `ns=${ns};s=sim`, "i=85"].map((nodeId) => ({ nodeId, attributeId: AttributeIds.EventNotifier })));
    expect(values.map((v) => v.value.value & 1)).toEqual([1, 1, 1, 0]);
    const onObjects = await create(constructEventFilter(["EventId"]), "i=85");
    expect(onObjects.statusCode).toBe(StatusCodes.BadNotSupported);
    const onVariable = await create(constructEventFilter(["EventId"]), `ns=${ns};s=sim.ramp`);
    expect(onVariable.statusCode).toBe(StatusCodes.BadAttributeIdInvalid);
    const unknown = await create(constructEventFilter(["EventId"]), `ns=${ns};s=nothing`);
    expect(unknown.statusCode).toBe(StatusCodes.BadNodeIdUnknown);
  });
});

describe("select clauses", () => {
  it("report the fields asked for, null for fields the event does not have", async () => {
    const m = await monitorEvents(sub, SERVER, ["EventType", "SourceName", "Severity", "Message", "Time", "ReceiveTime", "EventId", "NoSuchField", "ConditionId"]);
    raise(321, "hello");
    const e = await m.next((x) => x.Severity === 321, "the raised event");
    expect((e.EventType as NodeId).toString()).toBe("ns=0;i=2130");
    expect(e.SourceName).toBe("Test");
    expect((e.Message as LocalizedText).text).toBe("hello");
    expect(e.Time).toBeInstanceOf(Date);
    expect((e.EventId as Buffer).length).toBe(16);
    expect(e.NoSuchField).toBeNull();
    // Not a condition: no ConditionId.
    expect(e.ConditionId).toBeNull();
    await m.item.terminate();
  });

  it("a field asked for on another EventType is null for events not of that type", async () => {
    const filter = new EventFilter({ selectClauses: [field("Severity"), field("SystemState", resolveNodeId("SystemStatusChangeEventType")), field("Severity", resolveNodeId("AuditEventType"))], whereClause: where() });
    const m = await monitorEvents(sub, SERVER, ["Severity", "SystemState", "AuditSeverity"], { filter });
    raise(444, "typed");
    const e = await m.next((x) => x.Severity === 444, "the event");
    expect(e.SystemState).toBeNull();
    expect(e.AuditSeverity).toBeNull();
    await m.item.terminate();
  });

  it("answers EventFilterResult for bad clauses, and BadEventFilterInvalid when none is good", async () => {
    const mixed = new EventFilter({
      selectClauses: [field("Severity"), new SimpleAttributeOperand({ typeDefinitionId: resolveNodeId("i=85"), browsePath: [coerceQualifiedName("Severity")], attributeId: AttributeIds.Value }), new SimpleAttributeOperand({ typeDefinitionId: BASE_EVENT, browsePath: [], attributeId: AttributeIds.Value })],
      whereClause: where(),
    });
    const r = await create(mixed);
    expect(r.statusCode).toBe(StatusCodes.Good);
    const result = r.filterResult as unknown as EventFilterResult;
    expect(result.selectClauseResults).toEqual([StatusCodes.Good, StatusCodes.BadTypeDefinitionInvalid, StatusCodes.BadBrowseNameInvalid]);
    const none = await create(new EventFilter({ selectClauses: [new SimpleAttributeOperand({ typeDefinitionId: resolveNodeId("i=85"), browsePath: [coerceQualifiedName("Severity")], attributeId: AttributeIds.Value })], whereClause: where() }));
    expect(none.statusCode).toBe(StatusCodes.BadEventFilterInvalid);
    const noFilter = await create(null);
    expect(noFilter.statusCode).toBe(StatusCodes.BadEventFilterInvalid);
    const dataChange = await create(new DataChangeFilter({ trigger: 1 }));
    expect(dataChange.statusCode).toBe(StatusCodes.BadFilterNotAllowed);
  });
});

describe("where clauses", () => {
  const severities = [100, 300, 500, 700, 900];
  const cases: Array<[string, ContentFilter, number[]]> = [
    ["Equals", where(element(FilterOperator.Equals, field("Severity"), lit(DataType.UInt16, 500))), [500]],
    ["GreaterThan", where(element(FilterOperator.GreaterThan, field("Severity"), lit(DataType.Int32, 500))), [700, 900]],
    ["LessThan", where(element(FilterOperator.LessThan, field("Severity"), lit(DataType.Double, 300))), [100]],
    ["GreaterThanOrEqual", where(element(FilterOperator.GreaterThanOrEqual, field("Severity"), lit(DataType.UInt16, 700))), [700, 900]],
    ["LessThanOrEqual", where(element(FilterOperator.LessThanOrEqual, field("Severity"), lit(DataType.UInt16, 300))), [100, 300]],
    ["Between", where(element(FilterOperator.Between, field("Severity"), lit(DataType.UInt16, 300), lit(DataType.UInt16, 700))), [300, 500, 700]],
    ["InList", where(element(FilterOperator.InList, field("Severity"), lit(DataType.UInt16, 100), lit(DataType.UInt16, 900), lit(DataType.UInt16, 42))), [100, 900]],
    ["Like", where(element(FilterOperator.Like, field("Message"), lit(DataType.String, "pump _ %tripped"))), [700]],
    ["Not", where(element(FilterOperator.Not, el(1)), element(FilterOperator.Equals, field("Severity"), lit(DataType.UInt16, 100))), [300, 500, 700, 900]],
    [
      "And",
      where(element(FilterOperator.And, el(1), el(2)), element(FilterOperator.GreaterThan, field("Severity"), lit(DataType.UInt16, 100)), element(FilterOperator.LessThan, field("Severity"), lit(DataType.UInt16, 900))),
      [300, 500, 700],
    ],
    [
      "Or",
      where(element(FilterOperator.Or, el(1), el(2)), element(FilterOperator.Equals, field("Severity"), lit(DataType.UInt16, 100)), element(FilterOperator.Equals, field("Severity"), lit(DataType.UInt16, 900))),
      [100, 900],
    ],
    ["OfType", where(element(FilterOperator.OfType, lit(DataType.NodeId, resolveNodeId("DeviceFailureEventType")))), [900]],
    ["IsNull", where(element(FilterOperator.Not, el(1)), element(FilterOperator.IsNull, field("Message"))), severities],
    ["Cast", where(element(FilterOperator.Equals, el(1), lit(DataType.String, "300")), element(FilterOperator.Cast, field("Severity"), lit(DataType.NodeId, resolveNodeId("String")))), [300]],
    [
      "BitwiseAnd",
      where(element(FilterOperator.Equals, el(1), lit(DataType.UInt16, 8)), element(FilterOperator.BitwiseAnd, field("Severity"), lit(DataType.UInt16, 8))),
      [100, 300, 500, 700, 900].filter((s) => (s & 8) === 8),
    ],
    [
      "BitwiseOr",
      where(element(FilterOperator.Equals, el(1), lit(DataType.UInt16, 501)), element(FilterOperator.BitwiseOr, field("Severity"), lit(DataType.UInt16, 1))),
      [500],
    ],
  ];
  const messages: Record<number, string> = { 100: "pump 1 started", 300: "pump 2 stopped", 500: "valve 3 open", 700: "pump 4 tripped", 900: "pump 5 tripped hard" };

  it.each(cases)("%s passes exactly the events it should", async (_name, filter, expected) => {
    const m = await monitorEvents(sub, SERVER, ["Severity", "Message"], { where: filter });
    for (const s of severities) raise(s, messages[s], s === 900 ? ObjectTypeIds.DeviceFailureEventType : ObjectTypeIds.SystemEventType);
    raise(1, "end marker");
    // The end marker passes no filter but an unfiltered item sees it; wait until this one has its set.
    const all = await monitorEvents(sub, SERVER, ["Severity"]);
    raise(2, "second marker");
    await all.next((e) => e.Severity === 2, "the second marker");
    await sleep(150);
    expect(m.events.map((e) => e.Severity).filter((s) => s !== 1 && s !== 2)).toEqual(expected);
    await m.item.terminate();
    await all.item.terminate();
  });

  it("refuses bad elements with BadEventFilterInvalid and a result per element", async () => {
    const bad = new EventFilter({
      selectClauses: [field("Severity")],
      whereClause: where(
        element(FilterOperator.And, el(1), el(2)),
        element(FilterOperator.Equals, field("Severity")),
        new ContentFilterElement({ filterOperator: FilterOperator.InView, filterOperands: [lit(DataType.NodeId, resolveNodeId("i=85"))] }),
        element(FilterOperator.Not, el(0)),
        element(FilterOperator.OfType, lit(DataType.String, "SystemEventType")),
      ),
    });
    const r = await create(bad);
    expect(r.statusCode).toBe(StatusCodes.BadEventFilterInvalid);
    const result = (r.filterResult as unknown as EventFilterResult).whereClauseResult;
    expect(result.elementResults!.map((e) => e.statusCode)).toEqual([
      StatusCodes.Good,
      StatusCodes.BadFilterOperandCountMismatch,
      StatusCodes.BadFilterOperatorUnsupported,
      StatusCodes.BadFilterOperandInvalid, // refers back to element 0
      StatusCodes.BadFilterOperandInvalid, // OfType needs a NodeId
    ]);
  });
});

describe("event items: modify, monitoring mode, queues", () => {
  it("revises the queue size as Part 4 §7.21 says for events", async () => {
    const sizes = await Promise.all([0, 1, 50, 4294967295, 5].map((q) => create(constructEventFilter(["Severity"]), SERVER, q)));
    expect(sizes.map((r) => r.revisedQueueSize)).toEqual([100, 10, 50, 1000, 10]);
    expect(sizes.every((r) => r.revisedSamplingInterval === 0)).toBe(true);
  });

  it("puts one EventQueueOverflow event at the head of an overflowing queue with discardOldest", async () => {
    const s2 = await subscribe(c.session);
    const m = await monitorEvents(s2, SERVER, ["EventType", "Severity", "SourceName"], { queueSize: 10, discardOldest: true });
    await s2.setPublishingMode(false);
    for (let i = 1; i <= 15; i++) raise(i * 10, `e${i}`);
    await s2.setPublishingMode(true);
    await waitFor(() => m.events.length >= 11, "the queued events");
    await sleep(150);
    expect(m.events).toHaveLength(11);
    expect((m.events[0].EventType as NodeId).toString()).toBe("ns=0;i=3035");
    expect(m.events[0].SourceName).toBe("Internal/EventQueueOverflow");
    expect(m.events.slice(1).map((e) => e.Severity)).toEqual([60, 70, 80, 90, 100, 110, 120, 130, 140, 150]);
    await s2.terminate();
  });

  it("keeps the oldest and the newest and puts the overflow event at the tail without discardOldest", async () => {
    const s3 = await subscribe(c.session);
    const m = await monitorEvents(s3, SERVER, ["EventType", "Severity"], { queueSize: 10, discardOldest: false });
    await s3.setPublishingMode(false);
    for (let i = 1; i <= 15; i++) raise(i * 10, `e${i}`);
    await s3.setPublishingMode(true);
    await waitFor(() => m.events.length >= 11, "the queued events");
    await sleep(150);
    expect(m.events.slice(0, 10).map((e) => e.Severity)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 150]);
    expect((m.events[10].EventType as NodeId).toString()).toBe("ns=0;i=3035");
    await s3.terminate();
  });

  it("queues while Sampling, reports when Reporting, drops while Disabled", async () => {
    const m = await monitorEvents(sub, SERVER, ["Severity"]);
    await m.item.setMonitoringMode(MonitoringMode.Sampling);
    raise(611, "sampled");
    await sleep(200);
    expect(m.events.some((e) => e.Severity === 611)).toBe(false);
    await m.item.setMonitoringMode(MonitoringMode.Reporting);
    await m.next((e) => e.Severity === 611, "the event queued while sampling");
    await m.item.setMonitoringMode(MonitoringMode.Disabled);
    raise(612, "dropped");
    await m.item.setMonitoringMode(MonitoringMode.Reporting);
    raise(613, "after");
    await m.next((e) => e.Severity === 613, "the event after");
    expect(m.events.some((e) => e.Severity === 612)).toBe(false);
  });

  it("ModifyMonitoredItems changes the where clause of an event item", async () => {
    const m = await monitorEvents(sub, SERVER, ["Severity"], { where: where(element(FilterOperator.Equals, field("Severity"), lit(DataType.UInt16, 701))) });
    const filter = new EventFilter({ selectClauses: [field("Severity")], whereClause: where(element(FilterOperator.Equals, field("Severity"), lit(DataType.UInt16, 702))) });
    const r = await m.item.modify({ filter, queueSize: 5 } as never);
    expect(r.revisedQueueSize).toBe(10);
    raise(701, "old");
    raise(702, "new");
    await m.next((e) => e.Severity === 702, "the event the new filter passes");
    expect(m.events.some((e) => e.Severity === 701)).toBe(false);
  });
});

describe("Base Info Model Change", () => {
  it("a reload raises one GeneralModelChangeEvent naming the nodes added, removed and replaced", async () => {
    const m = await monitorEvents(sub, SERVER, ["EventType", "Changes", "SourceNode"], { where: where(element(FilterOperator.OfType, lit(DataType.NodeId, resolveNodeId("GeneralModelChangeEventType")))) });
    // saw removed, ramp unchanged, temp changed (a new unit: a new node under the same NodeId),
    // a tag and a device added.
    await gw.reload(`devices:
  - name: sim
    driver: simulator
    rate: 100ms
    tags:
      - { name: ramp, address: input:0 }
      - { name: temp, address: input:2, type: float32, unit: "K" }
      - { name: counter, address: input:4, type: uint32 }
  - name: sim2
    driver: simulator
    rate: 100ms
    tags:
      - { name: ramp, address: input:0 }
`);
    const e = await m.next(() => true, "the model change event");
    expect((e.SourceNode as NodeId).toString()).toBe("ns=0;i=2253");
    const changes = (e.Changes as Array<{ affected: NodeId; verb: number; affectedType: NodeId }>).map((ch) => [ch.affected.toString(), ch.verb] as const);
    const verbOf = new Map(changes);
    expect(verbOf.get(`ns=${ns};s=sim.saw`)).toBe(2); // NodeDeleted
    expect(verbOf.get(`ns=${ns};s=sim.counter`)).toBe(1); // NodeAdded
    expect(verbOf.get(`ns=${ns};s=sim.temp`)).toBe(3); // deleted and added again
    expect(verbOf.get(`ns=${ns};s=sim2`)).toBe(1);
    expect(verbOf.get(`ns=${ns};s=sim2.ramp`)).toBe(1);
    expect(verbOf.has(`ns=${ns};s=sim.ramp`)).toBe(false);
    const counter = (e.Changes as Array<{ affected: NodeId; affectedType: NodeId }>).find((ch) => ch.affected.toString() === `ns=${ns};s=sim.counter`)!;
    expect(counter.affectedType.toString()).toBe("ns=0;i=63"); // BaseDataVariableType
    // One event for the whole reload.
    await sleep(200);
    expect(m.events).toHaveLength(1);
  });

  it("a reload that changes more nodes than a GeneralModelChangeEvent lists raises one BaseModelChangeEvent", async () => {
    const m = await monitorEvents(sub, SERVER, ["EventType", "Changes"], { where: where(element(FilterOperator.OfType, lit(DataType.NodeId, resolveNodeId("BaseModelChangeEventType")))) });
    const tags = Array.from({ length: MAX_MODEL_CHANGES }, (_, t) => `      - { name: t${t}, address: "input:${20 + (t % 5000)}" }`).join("\n");
    await gw.reload(`devices:
  - name: sim
    driver: simulator
    rate: 100ms
    tags:
      - { name: ramp, address: input:0 }
  - name: big
    driver: simulator
    rate: 10s
    tags:
${tags}
`);
    const e = await m.next(() => true, "the model change event");
    expect((e.EventType as NodeId).toString()).toBe("ns=0;i=2132"); // BaseModelChangeEventType
    expect(e.Changes ?? null).toBeNull();
  });
});

describe("Base Info System Status", () => {
  it("a client waiting with a Publish request hears of the shutdown before its session closes", async () => {
    const own = await gatewayWith(undefined);
    const cl = await connect(own.url);
    try {
      const s = await subscribe(cl.session);
      const m: EventMonitor = await monitorEvents(s, SERVER, ["EventType", "SystemState", "Severity"]);
      await sleep(200); // a Publish request is waiting in the server
      await own.stop();
      const e = await m.next((x) => (x.EventType as NodeId).toString() === "ns=0;i=11446", "the SystemStatusChangeEvent");
      expect(e.SystemState).toBe(4); // ServerState.Shutdown
    } finally {
      await cl.client.disconnect().catch(() => undefined);
    }
  });
});
