// Method Server Facet (Part 7): the Call service (Part 4 §5.11) with node-opcua-client, on the
// Server's own Methods (Part 5 §9) and a condition's.
//   Method Call: GetMonitoredItems answers the handles of data and event items of the caller's
//     subscription; a request calls several methods in one go; MaxNodesPerMethodCall is published
//     and enforced (BadTooManyOperations, BadNothingToDo).
//   Argument checks (Part 4 §5.11.2 Table 66): BadArgumentsMissing, BadTooManyArguments,
//     BadInvalidArgument with BadTypeMismatch for the wrong argument, BadMethodInvalid (unknown
//     method, or not a method of the object), BadNodeIdUnknown (unknown object), BadNotExecutable
//     (a Method the server shows but does not run),
//     BadUserAccessDenied (a viewer acknowledging an alarm; another session's subscription).
//   Executable / UserExecutable follow the method table and the caller's role.
//   ResendData sends the current values again; SetSubscriptionDurable is BadNotSupported.
import {
  AttributeIds,
  DataType,
  LocalizedText,
  StatusCodes,
  TimestampsToReturn,
  Variant,
  type CallMethodRequestOptions,
  type ClientSubscription,
  type DataValue,
} from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, gatewayWith, monitorEvents, subscribe, waitFor, type Connection, type Gateway } from "./helpers.js";

const SERVER = "i=2253";
const GET_MONITORED_ITEMS = "i=11492";
const RESEND_DATA = "i=12873";
const SET_DURABLE = "i=12749";
const u32 = (value: number) => new Variant({ dataType: DataType.UInt32, value });

let gw: Gateway;
let viewer: Connection;
let other: Connection;
let sub: ClientSubscription;
let ns: number;

const MAP = `devices:
  - name: sim
    driver: simulator
    rate: 100ms
    tags:
      - { name: setpoint, address: holding:0 }
`;

beforeAll(async () => {
  gw = await gatewayWith(MAP);
  viewer = await connect(gw.url);
  other = await connect(gw.url);
  ns = ((await viewer.session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value as string[]).indexOf("urn:fieldgate:devices");
  sub = await subscribe(viewer.session);
}, 30_000);

afterAll(async () => {
  await viewer?.close();
  await other?.close();
  await gw?.stop();
});

async function callOne(c: Connection, req: CallMethodRequestOptions) {
  return c.session.call(req);
}

describe("Method Call", () => {
  it("GetMonitoredItems answers the server and client handles of every item of the subscription", async () => {
    const data = await sub.monitor({ nodeId: `ns=${ns};s=sim.setpoint`, attributeId: AttributeIds.Value }, { samplingInterval: 100, queueSize: 1 }, TimestampsToReturn.Both);
    const events = await monitorEvents(sub, SERVER, ["EventType"]);
    const r = await callOne(viewer, { objectId: SERVER, methodId: GET_MONITORED_ITEMS, inputArguments: [u32(sub.subscriptionId)] });
    expect(r.statusCode).toBe(StatusCodes.Good);
    const [serverHandles, clientHandles] = r.outputArguments!.map((v) => Array.from(v.value as Uint32Array));
    expect(serverHandles.sort()).toEqual([data.monitoredItemId, events.item.monitoredItemId].sort());
    expect(clientHandles).toHaveLength(2);
    const handleOf = (i: unknown) => (i as { monitoringParameters: { clientHandle: number } }).monitoringParameters.clientHandle;
    expect(clientHandles.sort()).toEqual([handleOf(data), handleOf(events.item)].sort());
    // node-opcua's own helper over the same method.
    const viaHelper = await viewer.session.getMonitoredItems(sub.subscriptionId);
    expect(Array.from(viaHelper.serverHandles).sort()).toEqual(serverHandles.sort());
  });

  it("calls several methods in one request, each with its own result", async () => {
    const results = await viewer.session.call([
      { objectId: SERVER, methodId: GET_MONITORED_ITEMS, inputArguments: [u32(sub.subscriptionId)] },
      { objectId: SERVER, methodId: GET_MONITORED_ITEMS, inputArguments: [u32(123_456)] },
    ]);
    expect(results.map((r) => r.statusCode)).toEqual([StatusCodes.Good, StatusCodes.BadSubscriptionIdInvalid]);
  });

  it("publishes MaxNodesPerMethodCall and refuses more, and none", async () => {
    const dv = await viewer.session.read({ nodeId: "i=11709", attributeId: AttributeIds.Value });
    expect(dv.value.value).toBe(100);
    const many = Array.from({ length: 101 }, () => ({ objectId: SERVER, methodId: GET_MONITORED_ITEMS, inputArguments: [u32(sub.subscriptionId)] }));
    await expect(viewer.session.call(many)).rejects.toThrow(/BadTooManyOperations/);
    await expect(viewer.session.call([])).rejects.toThrow(/BadNothingToDo/);
  });
});

describe("argument checks", () => {
  it("refuses too few, too many and wrongly typed arguments", async () => {
    const missing = await callOne(viewer, { objectId: SERVER, methodId: GET_MONITORED_ITEMS, inputArguments: [] });
    expect(missing.statusCode).toBe(StatusCodes.BadArgumentsMissing);
    const tooMany = await callOne(viewer, { objectId: SERVER, methodId: GET_MONITORED_ITEMS, inputArguments: [u32(1), u32(2)] });
    expect(tooMany.statusCode).toBe(StatusCodes.BadTooManyArguments);
    const wrong = await callOne(viewer, { objectId: SERVER, methodId: GET_MONITORED_ITEMS, inputArguments: [new Variant({ dataType: DataType.Double, value: 1 })] });
    expect(wrong.statusCode).toBe(StatusCodes.BadInvalidArgument);
    expect(wrong.inputArgumentResults).toEqual([StatusCodes.BadTypeMismatch]);
    const array = await callOne(viewer, { objectId: SERVER, methodId: GET_MONITORED_ITEMS, inputArguments: [new Variant({ dataType: DataType.UInt32, value: [1, 2] as unknown as number, arrayType: 1 })] });
    expect(array.statusCode).toBe(StatusCodes.BadInvalidArgument);
    expect(array.inputArgumentResults).toEqual([StatusCodes.BadTypeMismatch]);
  });

  it("refuses unknown methods and objects, and a method on an object that has none", async () => {
    const unknownMethod = await callOne(viewer, { objectId: SERVER, methodId: "i=987654", inputArguments: [] });
    expect(unknownMethod.statusCode).toBe(StatusCodes.BadMethodInvalid);
    const notAMethod = await callOne(viewer, { objectId: SERVER, methodId: "i=2256", inputArguments: [] });
    expect(notAMethod.statusCode).toBe(StatusCodes.BadMethodInvalid);
    const wrongObject = await callOne(viewer, { objectId: "i=85", methodId: GET_MONITORED_ITEMS, inputArguments: [u32(sub.subscriptionId)] });
    expect(wrongObject.statusCode).toBe(StatusCodes.BadMethodInvalid);
    const unknownObject = await callOne(viewer, { objectId: "ns=1;s=no.such.object", methodId: GET_MONITORED_ITEMS, inputArguments: [u32(sub.subscriptionId)] });
    expect(unknownObject.statusCode).toBe(StatusCodes.BadNodeIdUnknown);
  });

  it("refuses a Method the server shows but does not run with BadNotExecutable", async () => {
    // Server.RequestServerStateChange (Part 5 §9.5): in the address space, not implemented.
    const executable = await viewer.session.read({ nodeId: "i=12886", attributeId: AttributeIds.Executable });
    expect(executable.value.value).toBe(false);
    const r = await callOne(viewer, {
      objectId: SERVER,
      methodId: "i=12886",
      inputArguments: [new Variant({ dataType: DataType.Int32, value: 0 }), new Variant({ dataType: DataType.DateTime, value: new Date() }), u32(0), new Variant({ dataType: DataType.LocalizedText, value: new LocalizedText({ text: "x" }) }), new Variant({ dataType: DataType.Boolean, value: false })],
    });
    expect(r.statusCode).toBe(StatusCodes.BadNotExecutable);
  });

  it("refuses another session's subscription with BadUserAccessDenied", async () => {
    const r = await callOne(other, { objectId: SERVER, methodId: GET_MONITORED_ITEMS, inputArguments: [u32(sub.subscriptionId)] });
    expect(r.statusCode).toBe(StatusCodes.BadUserAccessDenied);
  });

  it("refuses a viewer's Acknowledge with BadUserAccessDenied, and says so in UserExecutable", async () => {
    const conditionId = `ns=${ns};s=sim/CommunicationFailure`;
    // The device's condition exists once its poller has reported.
    await waitFor(() => gw.server.deviceAlarms.condition("sim") !== undefined, "the simulator's first poll");
    const r = await callOne(viewer, {
      objectId: conditionId,
      methodId: "i=9111",
      inputArguments: [new Variant({ dataType: DataType.ByteString, value: Buffer.alloc(16) }), new Variant({ dataType: DataType.LocalizedText, value: new LocalizedText({ text: "ok" }) })],
    });
    expect(r.statusCode).toBe(StatusCodes.BadUserAccessDenied);
    const [executable, userExecutable] = (await viewer.session.read([
      { nodeId: "i=9111", attributeId: AttributeIds.Executable },
      { nodeId: "i=9111", attributeId: AttributeIds.UserExecutable },
    ])) as DataValue[];
    expect(executable.value.value).toBe(true);
    expect(userExecutable.value.value).toBe(false);
    const getItems = await viewer.session.read({ nodeId: GET_MONITORED_ITEMS, attributeId: AttributeIds.UserExecutable });
    expect(getItems.value.value).toBe(true);
  });
});

describe("Server methods", () => {
  it("ResendData sends the current value of the subscription's data items again", async () => {
    const item = await sub.monitor({ nodeId: `ns=${ns};s=sim.setpoint`, attributeId: AttributeIds.Value }, { samplingInterval: 100, queueSize: 1 }, TimestampsToReturn.Both);
    let changes = 0;
    item.on("changed", () => changes++);
    await waitFor(() => changes >= 1, "the first value");
    // The setpoint stays 50: nothing else would be sent without ResendData.
    await new Promise((r) => setTimeout(r, 300));
    const before = changes;
    const r = await callOne(viewer, { objectId: SERVER, methodId: RESEND_DATA, inputArguments: [u32(sub.subscriptionId)] });
    expect(r.statusCode).toBe(StatusCodes.Good);
    await waitFor(() => changes > before, "the value sent again");
    const foreign = await callOne(other, { objectId: SERVER, methodId: RESEND_DATA, inputArguments: [u32(sub.subscriptionId)] });
    expect(foreign.statusCode).toBe(StatusCodes.BadUserAccessDenied);
  });

  it("SetSubscriptionDurable is not supported", async () => {
    const r = await callOne(viewer, { objectId: SERVER, methodId: SET_DURABLE, inputArguments: [u32(sub.subscriptionId), u32(1)] });
    expect(r.statusCode).toBe(StatusCodes.BadNotSupported);
    const unknown = await callOne(viewer, { objectId: SERVER, methodId: SET_DURABLE, inputArguments: [u32(999_999), u32(1)] });
    expect(unknown.statusCode).toBe(StatusCodes.BadSubscriptionIdInvalid);
  });
});
