// Alarms & Conditions (Part 9) as the A & C facets of Part 7 check them, against node-opcua's
// client and its condition helpers (acknowledgeCondition, confirmCondition, callConditionRefresh):
// the gateway's per-device communication-failure alarm, driven by Debian's python3-pymodbus
// stopped and started again.
//   A & C Basic / Alarm: an event of DiscreteAlarmType with ConditionId, ConditionName, Retain,
//     ActiveState, Severity, Message when the device stops answering, and when it answers again.
//   A & C Acknowledge / Confirm: Acknowledge and Confirm with the EventId, each state change
//     reported; a second Acknowledge is BadConditionBranchAlreadyAcked, an unknown EventId
//     BadEventIdUnknown (a viewer's Acknowledge, BadUserAccessDenied: method-server.test.ts).
//   A & C Refresh: ConditionRefresh sends RefreshStart, the retained conditions, RefreshEnd.
//   A & C Enable: Disable and Enable, BadConditionAlreadyDisabled.
import {
  AttributeIds,
  DataType,
  LocalizedText,
  NodeId,
  StatusCodes,
  Variant,
  callConditionRefresh,
  type ClientSubscription,
} from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAVE_PYMODBUS, PYMODBUS_MISSING, startPymodbus, type PythonPeer } from "../drivers/peers.js";
import { connect, gatewayWith, monitorEvents, subscribe, type Connection, type EventMonitor, type Gateway } from "./helpers.js";

const FIELDS = [
  "EventId",
  "EventType",
  "SourceName",
  "Message",
  "Severity",
  "ConditionId",
  "ConditionName",
  "Retain",
  "ActiveState.Id",
  "AckedState.Id",
  "ConfirmedState.Id",
  "EnabledState.Id",
  "Comment",
];

const runPeer = HAVE_PYMODBUS || process.env.CI === "true";

describe.skipIf(!runPeer)(`device communication-failure alarm${runPeer ? "" : ` (skipped: ${PYMODBUS_MISSING})`}`, () => {
  let peer: PythonPeer;
  let port: number;
  let gw: Gateway;
  let op: Connection;
  let sub: ClientSubscription;
  let onDevice: EventMonitor;
  let onServer: EventMonitor;
  let ns: number;

  const map = () => `devices:
  - name: plc
    driver: modbus-tcp
    host: 127.0.0.1
    port: ${port}
    timeout: 300ms
    rate: 200ms
    retryBackoff: 100ms
    maxBackoff: 300ms
    demoteAfter: 3
    tags:
      - { name: h5, address: holding:5 }
`;
  const device = () => `ns=${ns};s=plc`;
  const isAlarm = (e: Record<string, unknown>) => (e.EventType as NodeId | undefined)?.toString() === "ns=0;i=10523";

  beforeAll(async () => {
    peer = await startPymodbus("tcp");
    port = peer.port;
    gw = await gatewayWith(map(), "security:\n  anonymousRole: operator\n");
    op = await connect(gw.url);
    ns = ((await op.session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value as string[]).indexOf("urn:fieldgate:devices");
    sub = await subscribe(op.session);
    onDevice = await monitorEvents(sub, device(), FIELDS);
    onServer = await monitorEvents(sub, "i=2253", FIELDS);
  }, 30_000);

  afterAll(async () => {
    await op?.close();
    await gw?.stop();
    await peer?.stop();
  });

  it("the device object is an event notifier", async () => {
    const dv = await op.session.read({ nodeId: device(), attributeId: AttributeIds.EventNotifier });
    expect(dv.value.value & 1).toBe(1);
  });

  let active: Record<string, unknown>;

  it("goes active when the device stops answering, with its severity rising when it is demoted", async () => {
    await peer.stop();
    active = await onDevice.next((e) => isAlarm(e) && e["ActiveState.Id"] === true, "the alarm going active");
    expect(active.ConditionName).toBe("CommunicationFailure");
    expect((active.ConditionId as NodeId).toString()).toBe(`ns=${ns};s=plc/CommunicationFailure`);
    expect(active.SourceName).toBe("plc");
    expect(active.Retain).toBe(true);
    expect(active["AckedState.Id"]).toBe(false);
    expect(active["ConfirmedState.Id"]).toBe(false);
    expect(active.Severity).toBe(500);
    expect((active.Message as LocalizedText).text).toContain("plc: no answer");
    const demoted = await onDevice.next((e) => isAlarm(e) && e.Severity === 700, "the demoted alarm");
    expect(demoted["ActiveState.Id"]).toBe(true);
    // The Server is the notifier of every event: it saw the same state changes.
    await onServer.next((e) => isAlarm(e) && e.Severity === 700, "the alarm through the Server");
    active = demoted;
  }, 20_000);

  it("ConditionRefresh sends the retained condition between RefreshStart and RefreshEnd", async () => {
    const from = onDevice.events.length;
    const status = await callConditionRefresh(op.session, sub.subscriptionId);
    expect(status.name).toBe("Good");
    const end = await onDevice.next((e) => (e.EventType as NodeId).toString() === "ns=0;i=2788", "RefreshEnd");
    const between = onDevice.events.slice(from, onDevice.events.indexOf(end));
    const types = between.map((e) => (e.EventType as NodeId).toString());
    expect(types[0]).toBe("ns=0;i=2787");
    const refreshed = between.filter(isAlarm);
    expect(refreshed).toHaveLength(1);
    expect(refreshed[0].Retain).toBe(true);
    expect((refreshed[0].EventId as Buffer).equals(active.EventId as Buffer)).toBe(true);
    // ConditionRefresh of a subscription that is not the session's.
    const wrong = await op.session.call({
      objectId: "i=2782",
      methodId: "i=3875",
      inputArguments: [new Variant({ dataType: DataType.UInt32, value: 999_999 })],
    });
    expect(wrong.statusCode).toBe(StatusCodes.BadSubscriptionIdInvalid);
  });

  it("is acknowledged with its EventId, once", async () => {
    const conditionId = active.ConditionId as NodeId;
    const unknown = await op.session.acknowledgeCondition(conditionId, Buffer.alloc(16, 7), "wrong id");
    expect(unknown).toBe(StatusCodes.BadEventIdUnknown);
    const ok = await op.session.acknowledgeCondition(conditionId, active.EventId as Buffer, "seen, calling maintenance");
    expect(ok).toBe(StatusCodes.Good);
    const acked = await onDevice.next((e) => isAlarm(e) && e["AckedState.Id"] === true, "the acknowledged state");
    expect(acked["ActiveState.Id"]).toBe(true);
    expect(acked.Retain).toBe(true);
    expect((acked.Comment as LocalizedText).text).toBe("seen, calling maintenance");
    const again = await op.session.acknowledgeCondition(conditionId, acked.EventId as Buffer, "again");
    expect(again).toBe(StatusCodes.BadConditionBranchAlreadyAcked);
  });

  it("goes inactive when the device answers again, and leaves the retained set once confirmed", async () => {
    peer = await startPymodbus("tcp", String(port));
    const back = await onDevice.next((e) => isAlarm(e) && e["ActiveState.Id"] === false, "the alarm going inactive", 15_000);
    expect((back.Message as LocalizedText).text).toBe("plc: communication restored");
    expect(back.Retain).toBe(true); // acknowledged, not yet confirmed
    const status = await op.session.confirmCondition(back.ConditionId as NodeId, back.EventId as Buffer, "fixed: cable");
    expect(status).toBe(StatusCodes.Good);
    const confirmed = await onDevice.next((e) => isAlarm(e) && e["ConfirmedState.Id"] === true, "the confirmed state");
    expect(confirmed.Retain).toBe(false);
    const twice = await op.session.confirmCondition(back.ConditionId as NodeId, confirmed.EventId as Buffer, "again");
    expect(twice).toBe(StatusCodes.BadConditionBranchAlreadyConfirmed);
    // Nothing retained: a refresh sends only the two markers.
    const from = onDevice.events.length;
    await callConditionRefresh(op.session, sub.subscriptionId);
    const end = await onDevice.next((e) => (e.EventType as NodeId).toString() === "ns=0;i=2788", "RefreshEnd");
    expect(onDevice.events.slice(from, onDevice.events.indexOf(end) + 1).map((e) => (e.EventType as NodeId).toString())).toEqual(["ns=0;i=2787", "ns=0;i=2788"]);
  }, 20_000);

  it("is disabled and enabled by Disable and Enable", async () => {
    const conditionId = `ns=${ns};s=plc/CommunicationFailure`;
    const disable = await op.session.call({ objectId: conditionId, methodId: "i=9028", inputArguments: [] });
    expect(disable.statusCode).toBe(StatusCodes.Good);
    const off = await onDevice.next((e) => isAlarm(e) && e["EnabledState.Id"] === false, "the disabled state");
    expect(off.Retain).toBe(false);
    const twice = await op.session.call({ objectId: conditionId, methodId: "i=9028", inputArguments: [] });
    expect(twice.statusCode).toBe(StatusCodes.BadConditionAlreadyDisabled);
    const enable = await op.session.call({ objectId: conditionId, methodId: "i=9027", inputArguments: [] });
    expect(enable.statusCode).toBe(StatusCodes.Good);
    await onDevice.next((e) => isAlarm(e) && e["EnabledState.Id"] === true, "the enabled state");
  });

  it("refuses Acknowledge on the type node and on an unknown condition", async () => {
    const args = [new Variant({ dataType: DataType.ByteString, value: Buffer.alloc(16) }), new Variant({ dataType: DataType.LocalizedText, value: new LocalizedText({ text: "x" }) })];
    // Part 9 §5.7.3: the ConditionId is the ObjectId, never the AcknowledgeableConditionType.
    const onType = await op.session.call({ objectId: "i=2881", methodId: "i=9111", inputArguments: args });
    expect(onType.statusCode).toBe(StatusCodes.BadNodeIdInvalid);
    const unknown = await op.session.call({ objectId: `ns=${ns};s=nosuch/CommunicationFailure`, methodId: "i=9111", inputArguments: args });
    expect(unknown.statusCode).toBe(StatusCodes.BadNodeIdUnknown);
  });
});
