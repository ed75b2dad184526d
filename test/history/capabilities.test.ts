// What a historian client can discover about fieldgate's history, checked with a client nobody
// here wrote (node-opcua-client) against a gateway polling modbus-serial's ServerTCP:
// Server/ServerCapabilities/HistoryServerCapabilities (Part 11 §5.4.2) and every property of it,
// Server/DefaultHAConfiguration (Part 11 §5.7.3), the AggregateFunctions folders (Part 13
// §4.2.2.1) holding exactly what ReadProcessed accepts, each of them run over the stored samples,
// one aggregate not in the folders refused, HistoryUpdate refused, and the attributes of
// historized and plain device tags.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AggregateFunction,
  AttributeIds,
  BrowseDirection,
  OPCUAClient,
  StatusCodes as UaStatus,
  type ClientSession,
  type HistoryData,
  type NodeIdLike,
  type ReferenceDescription,
} from "node-opcua-client";
import { HistoryUpdateRequest, UpdateDataDetails } from "node-opcua-types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { SUPPORTED_AGGREGATES } from "../../src/history/aggregates.js";
import { numericNodeId, stringNodeId } from "../../src/ua/builtins.js";
import { ObjectIds, ObjectTypeIds, ReferenceTypeIds } from "../../src/ua/generated/node-ids.js";
import { startModbusSerialServer } from "../drivers/peers.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

const AGGREGATE_FOLDERS = [
  ObjectIds.Server_ServerCapabilities_AggregateFunctions,
  ObjectIds.HistoryServerCapabilities_AggregateFunctions,
  ObjectIds.DefaultHAConfiguration_AggregateFunctions,
];

describe("generated namespace 0", () => {
  it("organizes exactly the aggregates ReadProcessed accepts in each AggregateFunctions folder", () => {
    const ns0 = new Ns0Manager(new NamespaceRegistry(), {
      applicationUri: "urn:test",
      buildInfo: { productUri: "", manufacturerName: "", productName: "", softwareVersion: "", buildNumber: "", buildDate: 0 },
    });
    const want = [...SUPPORTED_AGGREGATES].sort();
    for (const folder of AGGREGATE_FOLDERS) {
      const got = ns0
        .references(numericNodeId(folder))!
        .filter((r) => r.isForward && r.referenceTypeId.value === ReferenceTypeIds.Organizes)
        .map((r) => r.targetId.value as number)
        .sort();
      expect(got, `i=${folder}`).toEqual(want);
    }
  });
});

let counter = 0;
const vector = {
  getInputRegister: (addr: number) => (addr === 0 ? ++counter & 0xffff : 7),
  getHoldingRegister: () => 0,
  getCoil: () => false,
  setRegister: () => undefined,
  setCoil: () => undefined,
};

let peer: { port: number; close(): Promise<void> } | undefined;
let gw: TestGateway;
let client: OPCUAClient;
let session: ClientSession;
let ns: number;
const dir = mkdtempSync(join(tmpdir(), "fieldgate-history-caps-"));
const id = (tag: string) => `ns=${ns};s=plc.${tag}`;

beforeAll(async () => {
  peer = await startModbusSerialServer(vector);
  const map = join(dir, "devices.yaml");
  writeFileSync(
    map,
    `devices:
  - name: plc
    driver: modbus-tcp
    host: 127.0.0.1
    port: ${peer.port}
    rate: 50ms
    timeout: 500ms
    tags:
      - { name: count, address: input:0, history: true }
      - { name: plain, address: input:1 }
`,
  );
  gw = await startGateway(
    `devices: ${map}\nhistory:\n  flushInterval: 50ms\n  maxValuesPerRead: 5000\n  retention: { maxAge: 7d }\n  storage: { mode: change, deadband: 0.5 }\n`,
  );
  client = OPCUAClient.create({ endpointMustExist: false, connectionStrategy: { maxRetry: 0 } });
  await client.connect(gw.url);
  session = await client.createSession();
  const nsArray = await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value });
  ns = (nsArray.value.value as string[]).indexOf("urn:fieldgate:devices");
}, 30_000);

afterAll(async () => {
  await session?.close();
  await client?.disconnect();
  await gw?.stop();
  await peer?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function children(nodeId: NodeIdLike, referenceTypeId: number): Promise<ReferenceDescription[]> {
  const r = await session.browse({
    nodeId,
    referenceTypeId: `i=${referenceTypeId}`,
    includeSubtypes: true,
    browseDirection: BrowseDirection.Forward,
    resultMask: 63,
  });
  expect(r.statusCode.value).toBe(UaStatus.Good.value);
  return r.references ?? [];
}

/** BrowseName -> [value, DataType] of every property below `nodeId`. */
async function properties(nodeId: NodeIdLike): Promise<Record<string, [unknown, number]>> {
  const refs = await children(nodeId, ReferenceTypeIds.HasProperty);
  const dvs = await session.read(refs.map((r) => ({ nodeId: r.nodeId, attributeId: AttributeIds.Value })));
  const out: Record<string, [unknown, number]> = {};
  refs.forEach((r, i) => {
    expect(dvs[i].statusCode.value, r.browseName.name!).toBe(UaStatus.Good.value);
    out[r.browseName.name!] = [dvs[i].value.value, dvs[i].value.dataType];
  });
  return out;
}

function one(refs: ReferenceDescription[], name: string): ReferenceDescription {
  const found = refs.filter((r) => r.browseName.name === name);
  expect(found.length, name).toBe(1);
  return found[0];
}

/** Samples of the counter in the store (flushed), as the server holds them. */
function stored(): { t: number; v: number; s: number }[] {
  const series = gw.server.history.series(stringNodeId("plc.count", ns));
  if (!series) return [];
  return gw.server.history.store.read(series, 0, 8.64e15, true, 1_000_000).map((d) => ({ t: d.sourceTimestamp!, v: d.value?.value as number, s: d.statusCode ?? 0 }));
}

async function waitFor(what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// node-opcua's DataType numbers.
const Boolean = 1;
const Byte = 3;
const Int32 = 6;
const UInt32 = 7;
const Double = 11;

describe("history capabilities through node-opcua-client", () => {
  it("HistoryServerCapabilities is a component of ServerCapabilities and says what the history does", async () => {
    const caps = await children(`i=${ObjectIds.Server_ServerCapabilities}`, ReferenceTypeIds.HasComponent);
    const hsc = one(caps, "HistoryServerCapabilities");
    expect(hsc.typeDefinition.value).toBe(ObjectTypeIds.HistoryServerCapabilitiesType);
    const props = await properties(hsc.nodeId);
    expect(props).toEqual({
      AccessHistoryDataCapability: [true, Boolean],
      AccessHistoryEventsCapability: [false, Boolean],
      MaxReturnDataValues: [5000, UInt32],
      MaxReturnEventValues: [0, UInt32],
      InsertDataCapability: [false, Boolean],
      ReplaceDataCapability: [false, Boolean],
      UpdateDataCapability: [false, Boolean],
      DeleteRawCapability: [false, Boolean],
      DeleteAtTimeCapability: [false, Boolean],
      InsertEventCapability: [false, Boolean],
      ReplaceEventCapability: [false, Boolean],
      UpdateEventCapability: [false, Boolean],
      DeleteEventCapability: [false, Boolean],
      InsertAnnotationCapability: [false, Boolean],
      ServerTimestampSupported: [false, Boolean],
    });
    const folder = one(await children(hsc.nodeId, ReferenceTypeIds.HasComponent), "AggregateFunctions");
    expect(folder.typeDefinition.value).toBe(ObjectTypeIds.FolderType);
  });

  it("DefaultHAConfiguration below Server gives the configuration of every historized tag", async () => {
    const server = await children(`i=${ObjectIds.Server}`, ReferenceTypeIds.HierarchicalReferences);
    const def = one(server, "DefaultHAConfiguration");
    expect(def.typeDefinition.value).toBe(ObjectTypeIds.HistoricalDataConfigurationType);
    expect(await properties(def.nodeId)).toEqual({
      Stepped: [false, Boolean],
      ExceptionDeviation: [0.5, Double],
      ExceptionDeviationFormat: [0, Int32],
      ServerTimestampSupported: [false, Boolean],
      MaxTimeStoredValues: [7 * 86_400_000, Double],
    });
    const agg = one(await children(def.nodeId, ReferenceTypeIds.HasComponent), "AggregateConfiguration");
    // The server's defaults: what useServerCapabilitiesDefaults = true applies (Part 13 §4.2.1.2).
    expect(await properties(agg.nodeId)).toEqual({
      TreatUncertainAsBad: [false, Boolean],
      PercentDataBad: [100, Byte],
      PercentDataGood: [100, Byte],
      UseSlopedExtrapolation: [false, Boolean],
    });
  });

  it("every AggregateFunctions folder holds the same AggregateFunction objects", async () => {
    const sets: number[][] = [];
    for (const folder of AGGREGATE_FOLDERS) {
      const refs = await children(`i=${folder}`, ReferenceTypeIds.Organizes);
      for (const r of refs) expect(r.typeDefinition.value, r.browseName.name!).toBe(ObjectTypeIds.AggregateFunctionType);
      sets.push(refs.map((r) => r.nodeId.value as number).sort());
    }
    expect(sets[0].length).toBeGreaterThan(0);
    expect(sets[1]).toEqual(sets[0]);
    expect(sets[2]).toEqual(sets[0]);
  });

  it("historized device tags say so in Historizing and (User)AccessLevel, plain ones do not", async () => {
    expect(ns).toBeGreaterThan(0);
    const attrs = [AttributeIds.Historizing, AttributeIds.AccessLevel, AttributeIds.UserAccessLevel];
    const read = async (tag: string) => (await session.read(attrs.map((attributeId) => ({ nodeId: id(tag), attributeId })))).map((d) => d.value.value);
    const [h, al, ual] = await read("count");
    expect(h).toBe(true);
    expect(al & AccessLevel.HistoryRead).toBe(AccessLevel.HistoryRead);
    expect(ual & AccessLevel.HistoryRead).toBe(AccessLevel.HistoryRead);
    const [h2, al2, ual2] = await read("plain");
    expect(h2).toBe(false);
    expect(al2 & AccessLevel.HistoryRead).toBe(0);
    expect(ual2 & AccessLevel.HistoryRead).toBe(0);
  });

  it("ReadProcessed computes every aggregate found in the folder, and refuses one that is not there", async () => {
    await waitFor("10 stored samples", () => stored().length >= 10);
    const all = stored();
    const start = all[0].t;
    const end = all.at(-1)!.t + 1;
    const vs = all.map((x) => x.v);
    const expected: Record<number, number> = {
      [AggregateFunction.Interpolative]: vs[0],
      [AggregateFunction.Average]: vs.reduce((a, b) => a + b, 0) / vs.length,
      [AggregateFunction.Minimum]: Math.min(...vs),
      [AggregateFunction.Maximum]: Math.max(...vs),
      [AggregateFunction.Count]: vs.length,
      [AggregateFunction.Start]: vs[0],
      [AggregateFunction.End]: vs.at(-1)!,
    };
    const found = await children(`i=${ObjectIds.Server_ServerCapabilities_AggregateFunctions}`, ReferenceTypeIds.Organizes);
    const ids = found.map((r) => r.nodeId.value as number);
    expect(ids.sort()).toEqual(Object.keys(expected).map(Number).sort());
    const results = await session.readAggregateValue(
      found.map(() => ({ nodeId: id("count") })),
      new Date(start),
      new Date(end),
      found.map((r) => r.nodeId.value as AggregateFunction),
      end - start,
    );
    results.forEach((r, i) => {
      const name = found[i].browseName.name!;
      expect(r.statusCode.value, name).toBe(UaStatus.Good.value);
      const dvs = (r.historyData as HistoryData).dataValues!;
      expect(dvs.length, name).toBe(1);
      expect(dvs[0].statusCode.value >>> 30, name).toBe(0);
      expect(dvs[0].value.value, name).toBe(expected[found[i].nodeId.value as number]);
    });
    // TimeAverage is a standard aggregate fieldgate does not implement: not in the folder, refused.
    expect(ids).not.toContain(AggregateFunction.TimeAverage);
    const [refused] = await session.readAggregateValue([{ nodeId: id("count") }], new Date(start), new Date(end), [AggregateFunction.TimeAverage], end - start);
    expect(refused.statusCode.value).toBe(UaStatus.BadAggregateNotSupported.value);
  }, 30_000);

  it("HistoryUpdate, which the capabilities deny, is refused as a service", async () => {
    const request = new HistoryUpdateRequest({
      historyUpdateDetails: [new UpdateDataDetails({ nodeId: id("count"), performInsertReplace: 1, updateValues: [] })],
    });
    const transact = (session as unknown as { performMessageTransaction(req: unknown, cb: (err: Error | null, res?: unknown) => void): void })
      .performMessageTransaction.bind(session);
    const outcome = await new Promise<Error | unknown>((resolve) => transact(request, (err, res) => resolve(err ?? res)));
    expect(outcome).toBeInstanceOf(Error);
    expect(String((outcome as Error).message)).toMatch(/BadServiceUnsupported/);
    // The session is still good.
    const dv = await session.read({ nodeId: id("plain"), attributeId: AttributeIds.Value });
    expect(dv.statusCode.value).toBe(UaStatus.Good.value);
  });
});
