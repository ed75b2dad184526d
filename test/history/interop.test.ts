// HistoryRead through the real server and a client nobody here wrote (node-opcua-client): raw
// reads with continuation points, release, forged points, access refusals, processed reads
// (readAggregateValue), ReadAtTime, the published limits. Historized variables come from a
// MemoryNamespace; samples go through the server's HistorySink.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AggregateFunction,
  AttributeIds,
  ClientSession,
  HistoryReadRequest,
  MessageSecurityMode,
  OPCUAClient,
  ReadAtTimeDetails,
  ReadRawModifiedDetails,
  SecurityPolicy,
  StatusCodes as UaStatus,
  TimestampsToReturn,
  type HistoryData,
  type HistoryReadResult,
} from "node-opcua-client";
import { MemoryNamespace } from "../../src/address-space/memory-namespace.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { BuiltinType, numericNodeId, scalar } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { T0 } from "./helpers.js";

let gw: TestGateway;
let client: OPCUAClient;
let session: ClientSession;
let ns: number;
const N = 25;

const id = (name: string) => `ns=${ns};s=${name}`;
const at = (s: number) => new Date(T0 + s * 1000);

beforeAll(async () => {
  gw = await startGateway("history:\n  maxContinuationPoints: 3\n");
  const registry = gw.server.registry;
  ns = registry.register("urn:fieldgate:history-test");
  const mem = new MemoryNamespace(ns, registry);
  registry.register("urn:fieldgate:history-test", mem);
  const folder = mem.addFolder({ nodeId: "History", browseName: "History", parent: numericNodeId(85) });
  const historized = AccessLevel.CurrentRead | AccessLevel.HistoryRead;
  mem.addVariable({ nodeId: "Temp", browseName: "Temp", parent: folder.nodeId, dataType: BuiltinType.Double, accessLevel: historized, historizing: true });
  mem.addVariable({ nodeId: "Flow", browseName: "Flow", parent: folder.nodeId, dataType: BuiltinType.Double, accessLevel: historized, historizing: true });
  mem.addVariable({ nodeId: "Live", browseName: "Live", parent: folder.nodeId, dataType: BuiltinType.Double });
  const sink = gw.server.history.writer;
  sink.declare({ namespace: ns, idType: 1, value: "Temp" });
  sink.declare({ namespace: ns, idType: 1, value: "Flow" });
  for (let i = 0; i < N; i++) {
    sink.record({ namespace: ns, idType: 1, value: "Temp" }, { value: scalar(BuiltinType.Double, i * 1.5), sourceTimestamp: T0 + i * 1000 });
    sink.record({ namespace: ns, idType: 1, value: "Flow" }, {
      value: scalar(BuiltinType.Double, i),
      sourceTimestamp: T0 + i * 1000,
      statusCode: i === 3 ? StatusCodes.BadCommunicationError : StatusCodes.Good,
    });
  }
  sink.flushAll();
  client = OPCUAClient.create({
    applicationName: "fieldgate-history-interop",
    endpointMustExist: false,
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 60_000,
  });
  await client.connect(gw.url);
  session = await client.createSession();
}, 30_000);

afterAll(async () => {
  await session?.close();
  await client?.disconnect();
  await gw?.stop();
});

function values(r: HistoryReadResult): { v: unknown; t: number; s: number }[] {
  const dvs = (r.historyData as HistoryData | null)?.dataValues ?? [];
  return dvs.map((d) => ({ v: d.value.value, t: d.sourceTimestamp!.getTime(), s: d.statusCode.value }));
}

function rawRequest(nodes: { nodeId: string; continuationPoint?: Buffer }[], numValuesPerNode: number, release = false, readModified = false) {
  return new HistoryReadRequest({
    historyReadDetails: new ReadRawModifiedDetails({ startTime: at(0), endTime: at(100), numValuesPerNode, returnBounds: false, isReadModified: readModified }),
    nodesToRead: nodes,
    timestampsToReturn: TimestampsToReturn.Source,
    releaseContinuationPoints: release,
  });
}

describe("HistoryRead with node-opcua-client", () => {
  it("reads raw values page by page with continuation points", async () => {
    const seen: number[] = [];
    let cp: Buffer | null | undefined;
    let pages = 0;
    do {
      const res = await session.historyRead(rawRequest([{ nodeId: id("Temp"), continuationPoint: cp ?? undefined }], 10));
      const r = res.results![0];
      expect(r.statusCode.value).toBe(UaStatus.Good.value);
      seen.push(...values(r).map((x) => x.v as number));
      cp = r.continuationPoint;
      pages++;
    } while (cp && cp.length > 0 && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual(Array.from({ length: N }, (_, i) => i * 1.5));
  });

  it("readHistoryValue: bounds, both timestamps, a Bad sample kept with its status", async () => {
    const r = await session.readHistoryValue(id("Flow"), at(2), at(5));
    expect(r.statusCode.value).toBe(UaStatus.Good.value);
    const got = values(r);
    // A sample lies on the start time: it is its own bound; the end bound is the sample at 5 s.
    expect(got.map((x) => x.v)).toEqual([2, 3, 4, 5]);
    expect(got[1].s).toBe(UaStatus.BadCommunicationError.value);
    const dv = (r.historyData as HistoryData).dataValues![0];
    expect(dv.serverTimestamp?.getTime()).toBe(dv.sourceTimestamp?.getTime());
  });

  it("releases continuation points, and refuses released and forged ones", async () => {
    const first = await session.historyRead(rawRequest([{ nodeId: id("Temp") }], 5));
    const cp = first.results![0].continuationPoint!;
    expect(cp.length).toBeGreaterThan(0);
    const released = await session.historyRead(rawRequest([{ nodeId: id("Temp"), continuationPoint: cp }], 5, true));
    expect(released.results![0].statusCode.value).toBe(UaStatus.Good.value);
    const stale = await session.historyRead(rawRequest([{ nodeId: id("Temp"), continuationPoint: cp }], 5));
    expect(stale.results![0].statusCode.value).toBe(UaStatus.BadContinuationPointInvalid.value);
    const forged = await session.historyRead(rawRequest([{ nodeId: id("Temp"), continuationPoint: Buffer.alloc(16, 7) }], 5));
    expect(forged.results![0].statusCode.value).toBe(UaStatus.BadContinuationPointInvalid.value);
    // A point is only good for the node it was made for.
    const again = await session.historyRead(rawRequest([{ nodeId: id("Temp") }], 5));
    const other = await session.historyRead(rawRequest([{ nodeId: id("Flow"), continuationPoint: again.results![0].continuationPoint! }], 5));
    expect(other.results![0].statusCode.value).toBe(UaStatus.BadContinuationPointInvalid.value);
    // ... and stays valid for its own node.
    const own = await session.historyRead(rawRequest([{ nodeId: id("Temp"), continuationPoint: again.results![0].continuationPoint! }], 5, true));
    expect(own.results![0].statusCode.value).toBe(UaStatus.Good.value);
  });

  it("bounds continuation points per session (BadNoContinuationPoints)", async () => {
    const res = await session.historyRead(rawRequest([1, 2, 3, 4].map(() => ({ nodeId: id("Temp") })), 2));
    const codes = res.results!.map((r) => r.statusCode.value);
    expect(codes.filter((c) => c === UaStatus.Good.value).length).toBe(3);
    expect(codes.at(-1)).toBe(UaStatus.BadNoContinuationPoints.value);
    await session.historyRead(rawRequest(res.results!.slice(0, 3).map((r) => ({ nodeId: id("Temp"), continuationPoint: r.continuationPoint! })), 2, true));
  });

  it("refuses unknown, not historized and non-Variable nodes, and modified reads", async () => {
    const res = await session.historyRead(rawRequest([{ nodeId: id("Nope") }, { nodeId: id("Live") }, { nodeId: "i=85" }], 0));
    expect(res.results!.map((r) => r.statusCode.value)).toEqual([
      UaStatus.BadNodeIdUnknown.value,
      UaStatus.BadNotReadable.value,
      UaStatus.BadHistoryOperationUnsupported.value,
    ]);
    await expect(session.historyRead(rawRequest([{ nodeId: id("Temp") }], 0, false, true))).rejects.toThrow(/BadHistoryOperationUnsupported/);
  });

  it("reads processed values (readAggregateValue)", async () => {
    const avg = await session.readAggregateValue({ nodeId: id("Temp") }, at(0), at(20), AggregateFunction.Average, 10_000);
    expect(avg.statusCode.value).toBe(UaStatus.Good.value);
    // 0..9 → 1.5 * 4.5; 10..19 → 1.5 * 14.5
    expect(values(avg).map((x) => x.v)).toEqual([6.75, 21.75]);
    const count = await session.readAggregateValue({ nodeId: id("Flow") }, at(0), at(10), AggregateFunction.Count, 10_000);
    const c = values(count)[0];
    expect(c.v).toBe(9);
    expect(c.s).toBe((UaStatus.UncertainDataSubNormal.value | 0x401) >>> 0);
    const several = await session.readAggregateValue(
      [{ nodeId: id("Temp") }, { nodeId: id("Temp") }, { nodeId: id("Temp") }],
      at(0),
      at(20),
      [AggregateFunction.Minimum, AggregateFunction.Maximum, AggregateFunction.Interpolative],
      10_000,
    );
    expect(several.map((r) => values(r).map((x) => x.v))).toEqual([
      [0, 15],
      [13.5, 28.5],
      [0, 15],
    ]);
    const unsupported = await session.readAggregateValue({ nodeId: id("Temp") }, at(0), at(20), AggregateFunction.TimeAverage, 10_000);
    expect(unsupported.statusCode.value).toBe(UaStatus.BadAggregateNotSupported.value);
  });

  it("returns the timestamps asked for, and refuses Neither", async () => {
    const req = rawRequest([{ nodeId: id("Temp") }], 2);
    req.timestampsToReturn = TimestampsToReturn.Server;
    const res = await session.historyRead(req);
    const dv = (res.results![0].historyData as HistoryData).dataValues![0];
    expect(dv.serverTimestamp?.getTime()).toBe(T0);
    expect(dv.sourceTimestamp).toBeNull();
    await session.historyRead(rawRequest([{ nodeId: id("Temp"), continuationPoint: res.results![0].continuationPoint! }], 2, true));
    const neither = rawRequest([{ nodeId: id("Temp") }], 2);
    neither.timestampsToReturn = TimestampsToReturn.Neither;
    await expect(session.historyRead(neither)).rejects.toThrow(/BadTimestampsToReturnInvalid/);
  });

  it("reads values at given times", async () => {
    const res = await session.historyRead(
      new HistoryReadRequest({
        historyReadDetails: new ReadAtTimeDetails({ reqTimes: [at(1.5), at(4)], useSimpleBounds: false }),
        nodesToRead: [{ nodeId: id("Temp") }],
        timestampsToReturn: TimestampsToReturn.Source,
      }),
    );
    expect(values(res.results![0]).map((x) => x.v)).toEqual([2.25, 6]);
  });

  it("publishes MaxNodesPerHistoryReadData and MaxHistoryContinuationPoints", async () => {
    const [maxNodes, maxCps] = await session.read([
      { nodeId: "i=12165", attributeId: AttributeIds.Value },
      { nodeId: "i=2737", attributeId: AttributeIds.Value },
    ]);
    expect(maxNodes.value.value).toBe(1000);
    expect(maxCps.value.value).toBe(3);
  });
});
