// A & C Exclusive Limit (Part 7; Part 9 §5.8.19): a tag with `alarms:` in the device map gets an
// ExclusiveLimitAlarmType condition, driven here end to end by node-opcua-client writing the
// simulator's holding register through the gateway (the value the alarm judges is the one the
// poller reads back):
//   an event of ExclusiveLimitAlarmType when the value goes above high, then highHigh, then
//   back, with LimitState/CurrentState (and its Id, the state machine's state object), the
//   limits as HighLimit/HighHighLimit/LowLimit, Severity per state, LimitState null while
//   inactive (Part 9 §5.8.19.3); Acknowledge; a reload that moves the limits re-judges the
//   current value; a reload that drops the alarm ends the condition (Retain false).
import {
  AttributeIds,
  ContentFilter,
  ContentFilterElement,
  DataType,
  FilterOperator,
  LiteralOperand,
  LocalizedText,
  NodeId,
  StatusCodes,
  Variant,
  resolveNodeId,
  type ClientSubscription,
} from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, gatewayWith, monitorEvents, subscribe, type Connection, type EventMonitor, type Gateway } from "./helpers.js";

const FIELDS = [
  "EventId",
  "EventType",
  "SourceNode",
  "SourceName",
  "Message",
  "Severity",
  "ConditionId",
  "ConditionName",
  "ConditionClassName",
  "Retain",
  "ActiveState.Id",
  "AckedState.Id",
  "LimitState.CurrentState",
  "LimitState.CurrentState.Id",
  "HighHighLimit",
  "HighLimit",
  "LowLimit",
  "LowLowLimit",
  "InputNode",
];

const map = (alarms: string) => `devices:
  - name: tank
    driver: simulator
    rate: 50ms
    tags:
      - { name: level, address: holding:5, access: readwrite${alarms ? `, alarms: ${alarms}` : ""} }
      - { name: ramp, address: input:0 }
`;

const EXCLUSIVE_LIMIT_ALARM = "ns=0;i=9341";

describe("A & C Exclusive Limit: a limit alarm on a tag", () => {
  let gw: Gateway;
  let op: Connection;
  let sub: ClientSubscription;
  let events: EventMonitor;
  let ns: number;
  const level = () => `ns=${ns};s=tank.level`;
  const isLimit = (e: Record<string, unknown>) => (e.EventType as NodeId | undefined)?.toString() === EXCLUSIVE_LIMIT_ALARM;
  const write = async (v: number) => {
    const status = await op.session.write({ nodeId: level(), attributeId: AttributeIds.Value, value: { value: new Variant({ dataType: DataType.UInt16, value: v }) } });
    expect(status).toBe(StatusCodes.Good);
  };

  beforeAll(async () => {
    gw = await gatewayWith(map("{ highHigh: 95, high: 90, low: 10 }"), "security:\n  anonymousRole: operator\n");
    op = await connect(gw.url);
    ns = ((await op.session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value as string[]).indexOf("urn:fieldgate:devices");
    sub = await subscribe(op.session);
    // Only limit alarms, by a where clause on the type (OfType).
    const ofType = new ContentFilter({
      elements: [
        new ContentFilterElement({
          filterOperator: FilterOperator.OfType,
          filterOperands: [new LiteralOperand({ value: new Variant({ dataType: DataType.NodeId, value: resolveNodeId("ExclusiveLimitAlarmType") }) })],
        }),
      ],
    });
    events = await monitorEvents(sub, `ns=${ns};s=tank`, FIELDS, { where: ofType });
    await write(50);
  }, 30_000);

  afterAll(async () => {
    await op?.close();
    await gw?.stop();
  });

  it("goes active in High above the high limit, naming the state and the limits", async () => {
    await write(92);
    // (The register starts at 0, below the low limit: the alarm may have been in Low before 50 was written.)
    const high = await events.next((e) => isLimit(e) && (e["LimitState.CurrentState"] as LocalizedText | null)?.text === "High", "the alarm in High");
    expect(high["ActiveState.Id"]).toBe(true);
    expect((high.ConditionId as NodeId).toString()).toBe(`ns=${ns};s=tank.level/LimitAlarm`);
    expect(high.ConditionName).toBe("LimitAlarm");
    expect((high.ConditionClassName as LocalizedText).text).toBe("Process");
    expect((high.SourceNode as NodeId).toString()).toBe(level());
    expect((high.InputNode as NodeId).toString()).toBe(level());
    expect(high.SourceName).toBe("tank.level");
    expect((high["LimitState.CurrentState"] as LocalizedText).text).toBe("High");
    expect((high["LimitState.CurrentState.Id"] as NodeId).toString()).toBe("ns=0;i=9331"); // ExclusiveLimitStateMachineType High
    expect(high.Severity).toBe(500);
    expect(high.HighLimit).toBe(90);
    expect(high.HighHighLimit).toBe(95);
    expect(high.LowLimit).toBe(10);
    expect(high.LowLowLimit).toBeNull(); // not configured
    expect(high.Retain).toBe(true);
    expect(high["AckedState.Id"]).toBe(false);
    expect((high.Message as LocalizedText).text).toBe("tank.level: High, 92 above 90");
  });

  it("moves to HighHigh above the high-high limit, with a higher severity", async () => {
    await write(97);
    const hh = await events.next((e) => isLimit(e) && (e["LimitState.CurrentState"] as LocalizedText | null)?.text === "HighHigh", "the alarm in HighHigh");
    expect((hh["LimitState.CurrentState.Id"] as NodeId).toString()).toBe("ns=0;i=9329");
    expect(hh.Severity).toBe(800);
    expect(hh["ActiveState.Id"]).toBe(true);
    // Below the low limit it is Low.
    await write(5);
    const low = await events.next((e) => isLimit(e) && (e["LimitState.CurrentState"] as LocalizedText | null)?.text === "Low", "the alarm in Low");
    expect((low["LimitState.CurrentState.Id"] as NodeId).toString()).toBe("ns=0;i=9333");
    expect(low.Severity).toBe(500);
  });

  it("goes inactive within the limits, LimitState null; an operator acknowledges it", async () => {
    // A value equal to a limit is not beyond it.
    await write(10);
    const back = await events.next((e) => isLimit(e) && e["ActiveState.Id"] === false, "the alarm going inactive");
    expect(back["LimitState.CurrentState"]).toBeNull();
    expect(back["LimitState.CurrentState.Id"]).toBeNull();
    expect(back.Retain).toBe(true); // not acknowledged yet
    const ok = await op.session.acknowledgeCondition(back.ConditionId as NodeId, back.EventId as Buffer, "level back");
    expect(ok).toBe(StatusCodes.Good);
    const acked = await events.next((e) => isLimit(e) && e["AckedState.Id"] === true, "the acknowledged state");
    expect((acked.Message as LocalizedText).text).toBe("tank.level: back within its limits (10)");
  });

  it("a reload that lowers the limit judges the current value at once", async () => {
    await gw.reload(map("{ high: 5 }"));
    const e = await events.next((x) => isLimit(x) && x["ActiveState.Id"] === true, "the alarm after the reload");
    expect((e["LimitState.CurrentState"] as LocalizedText).text).toBe("High");
    expect(e.HighLimit).toBe(5);
    expect(e.HighHighLimit).toBeNull();
    expect(e.LowLimit).toBeNull();
  });

  it("a reload that drops `alarms` ends the condition: a last event without Retain", async () => {
    await gw.reload(map(""));
    const last = await events.next((e) => isLimit(e) && e.Retain === false, "the condition's last event");
    expect((last.ConditionId as NodeId).toString()).toBe(`ns=${ns};s=tank.level/LimitAlarm`);
    const gone = await op.session.call({
      objectId: `ns=${ns};s=tank.level/LimitAlarm`,
      methodId: "i=9111",
      inputArguments: [new Variant({ dataType: DataType.ByteString, value: last.EventId as Buffer }), new Variant({ dataType: DataType.LocalizedText, value: new LocalizedText({ text: "x" }) })],
    });
    expect(gone.statusCode).toBe(StatusCodes.BadNodeIdUnknown);
  });
});
