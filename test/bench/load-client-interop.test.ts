// The bench's load client checked against node-opcua-client, a client nobody here wrote: what
// our client reads equals what node-opcua-client reads; what the write load wrote is what
// node-opcua-client reads back; the browse request returns the references node-opcua-client
// sees. And the node-opcua peer of the bench answers our load with the same nodes.
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { missingBuild, requirePeers, skipWithout } from "../helpers/built.js";
import { AttributeIds, BrowseDirection, ClientSession, MessageSecurityMode, OPCUAClient, SecurityPolicy } from "node-opcua-client";
import { UaClientChannel } from "../../bench/client/channel.js";
import { readValues, resolveNodes, valueReadOf } from "../../bench/client/nodes.js";
import { browseShape } from "../../bench/client/shapes.js";
import type { BinaryReader } from "../../src/ua/binary-reader.js";
import type { BinaryWriter } from "../../src/ua/binary-writer.js";
import { NULL_NODE_ID, numericNodeId } from "../../src/ua/builtins.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { decodeBrowseResponse, encodeBrowseRequest, type BrowseResponse, type RequestHeader } from "../../src/ua/generated/types.js";
import type { NodeOpcuaTarget } from "../../bench/peers/node-opcua.js";
import type { RunningServer } from "../../bench/harness/target.js";
import { runReadLoad } from "../../bench/scenarios/read-load.js";
import { MULTI_READ_NODES } from "../../bench/scenarios/read.js";
import { runServiceLoad } from "../../bench/scenarios/service-load.js";
import { runSubLoad } from "../../bench/scenarios/sub-load.js";
import { BENCHMARK_VALUE_NODES } from "../../bench/scenarios/sub.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const INT32 = "nsu=urn:fieldgate:test;s=Scalar.Int32";

function newClient(): OPCUAClient {
  return OPCUAClient.create({
    applicationName: "fieldgate-bench-check",
    endpointMustExist: false,
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
  });
}

async function ourSession(url: string): Promise<UaClientChannel> {
  const m = /^opc\.tcp:\/\/([^:]+):(\d+)/.exec(url)!;
  const ch = await UaClientChannel.open({ host: m[1], port: Number(m[2]), endpointUrl: url });
  await ch.openSecureChannel();
  await ch.createAndActivateSession("bench-check");
  return ch;
}

/** Both clients read `texts`; returns [ours, theirs] as comparable plain values. */
async function readBoth(url: string, session: ClientSession, texts: readonly string[]): Promise<[unknown[], unknown[]]> {
  const ch = await ourSession(url);
  try {
    const ids = await resolveNodes(ch, texts);
    const ours = await readValues(ch, ids.map(valueReadOf));
    const theirs = await session.read(ids.map((id) => ({ nodeId: `ns=${id.namespace};s=${String(id.value)}`, attributeId: AttributeIds.Value })));
    const norm = (v: unknown): unknown => (v instanceof Date ? v.getTime() : typeof v === "number" && Number.isNaN(v) ? "NaN" : v);
    return [ours.map((dv) => norm(dv.value?.value)), theirs.map((dv) => norm(dv.value.value))];
  } finally {
    await ch.close();
  }
}

describe("load client against node-opcua-client, on fieldgate", () => {
  let gw: TestGateway;
  let client: OPCUAClient;
  let session: ClientSession;

  beforeAll(async () => {
    gw = await startGateway();
    client = newClient();
    await client.connect(gw.url);
    session = await client.createSession();
  }, 30_000);

  afterAll(async () => {
    await session?.close();
    await client?.disconnect();
    await gw?.stop();
  });

  it("reads the values node-opcua-client reads (after node-opcua-client wrote them)", async () => {
    const ns = (await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value.indexOf("urn:fieldgate:test");
    await session.write([
      { nodeId: `ns=${ns};s=Scalar.Int32`, attributeId: AttributeIds.Value, value: { value: { dataType: "Int32", value: -123456 } } },
      { nodeId: `ns=${ns};s=Scalar.Double`, attributeId: AttributeIds.Value, value: { value: { dataType: "Double", value: 2.5e-3 } } },
      { nodeId: `ns=${ns};s=Scalar.String`, attributeId: AttributeIds.Value, value: { value: { dataType: "String", value: "ümlaut ✓" } } },
    ]);
    const [ours, theirs] = await readBoth(gw.url, session, MULTI_READ_NODES);
    expect(ours).toEqual(theirs);
    expect(ours).toContain(-123456);
    expect(ours).toContain("ümlaut ✓");
  });

  it("a write load leaves the value its requests carry last, as node-opcua-client reads it", async () => {
    const m = /:(\d+)$/.exec(gw.url)!;
    const r = await runServiceLoad({
      host: "127.0.0.1",
      port: Number(m[1]),
      endpointUrl: gw.url,
      connections: 2,
      outstanding: 3,
      request: { service: "write", nodes: [INT32], values: 7 },
      warmupSeconds: 0.1,
      durationSeconds: 0.3,
      verifyEvery: 1,
    });
    expect(r.errorKinds).toEqual({});
    expect(r.requests).toBeGreaterThan(0);
    expect(r.verifiedResponses).toBeGreaterThan(0);
    const ns = (await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value.indexOf("urn:fieldgate:test");
    const dv = await session.read({ nodeId: `ns=${ns};s=Scalar.Int32`, attributeId: AttributeIds.Value });
    // Each request writes 0..6 in order to the one node: the last WriteValue wins (Part 4 §5.10.4).
    expect(dv.value.value).toBe(6);
  });

  it("its Browse of the Server object returns the references node-opcua-client sees", async () => {
    const ch = await ourSession(gw.url);
    try {
      const shape = browseShape([numericNodeId(ObjectIds.Server)]);
      const response = await ch.call<RequestHeader, BrowseResponse>(
        "Browse",
        ObjectIds.BrowseRequest_Encoding_DefaultBinary,
        (w: BinaryWriter, h: RequestHeader) => shape.encode(w, h),
        ch.requestHeader(),
        ObjectIds.BrowseResponse_Encoding_DefaultBinary,
        (r: BinaryReader) => decodeBrowseResponse(r),
      );
      const ours = (response.results?.[0].references ?? []).map((ref) => ref.browseName.name).sort();
      const theirs = await session.browse({
        nodeId: "i=2253",
        browseDirection: BrowseDirection.Forward,
        referenceTypeId: "i=33",
        includeSubtypes: true,
        nodeClassMask: 0,
        resultMask: 0x3f,
      });
      expect(ours.length).toBeGreaterThan(3);
      expect(ours).toEqual((theirs.references ?? []).map((ref) => ref.browseName.name).sort());
      expect(NULL_NODE_ID.value).toBe(0);
    } finally {
      await ch.close();
    }
  });
});

const peerUnbuilt = missingBuild("bench/peers/node-opcua-server.js", "bench/peers/node-opcua.js");

describe.skipIf(skipWithout(peerUnbuilt))("the node-opcua peer", () => {
  beforeAll(() => requirePeers(peerUnbuilt));
  let peer: RunningServer;
  let client: OPCUAClient;
  let session: ClientSession;

  beforeAll(async () => {
    // The compiled peer (dist/bench/peers): the test runs from the sources, the peer as the bench runs it.
    const { NodeOpcuaTarget: Compiled } = (await import(resolve(root, "dist/bench/peers/node-opcua.js"))) as { NodeOpcuaTarget: typeof NodeOpcuaTarget };
    peer = await new Compiled(root).start({ nodes: { benchValues: 100, counters: 3 } });
    client = newClient();
    await client.connect(peer.endpointUrl);
    session = await client.createSession();
  }, 90_000);

  afterAll(async () => {
    await session?.close();
    await client?.disconnect();
    await peer?.stop();
  });

  it("has the nodes of fieldgate's test namespace, read alike by both clients, and answers the read load without errors", async () => {
    const [ours, theirs] = await readBoth(peer.endpointUrl, session, MULTI_READ_NODES);
    expect(ours).toEqual(theirs);
    expect(ours).toHaveLength(MULTI_READ_NODES.length);
    const r = await runReadLoad({
      host: peer.host,
      port: peer.port,
      endpointUrl: peer.endpointUrl,
      connections: 1,
      outstanding: 4,
      values: 11,
      nodes: [...MULTI_READ_NODES],
      warmupSeconds: 0.1,
      durationSeconds: 0.3,
      verifyEvery: 1,
      serverPid: peer.pid,
      serverDiagnostics: peer.diagnostics,
    });
    expect(r.errorKinds).toEqual({});
    expect(r.requests).toBeGreaterThan(0);
  }, 30_000);

  it("has the bench namespace's BenchmarkValues (writable Int32 at i=1001..) and counters that count reads", async () => {
    const ns = (await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value.indexOf("urn:fieldgate:bench");
    expect(ns).toBeGreaterThan(0);
    const w = await session.write({ nodeId: `ns=${ns};i=1100`, attributeId: AttributeIds.Value, value: { value: { dataType: "Int32", value: 77 } } });
    expect(w.name).toBe("Good");
    expect((await session.read({ nodeId: `ns=${ns};i=1100`, attributeId: AttributeIds.Value })).value.value).toBe(77);
    const c1 = await session.read({ nodeId: `ns=${ns};i=1`, attributeId: AttributeIds.Value });
    const c2 = await session.read({ nodeId: `ns=${ns};i=1`, attributeId: AttributeIds.Value });
    expect(c1.statusCode.name).toBe("Good");
    const n = (v: unknown): number => (Array.isArray(v) ? (v[1] as number) : Number(v));
    expect(n(c2.value.value)).toBeGreaterThan(n(c1.value.value));
  });

  it("delivers the data changes of the sub scenario's writer to its subscriber, without gaps or errors", async () => {
    const r = await runSubLoad({
      host: peer.host,
      port: peer.port,
      endpointUrl: peer.endpointUrl,
      nodes: BENCHMARK_VALUE_NODES.slice(0, 10),
      items: 10,
      writesInFlight: 2,
      publishingIntervalMs: 50,
      queueSize: 100,
      publishesInFlight: 3,
      warmupSeconds: 0.5,
      durationSeconds: 1,
    });
    expect(r.errorKinds).toEqual({});
    expect(r.writes).toBeGreaterThan(0);
    expect(r.requests).toBeGreaterThan(0);
    expect(r.channelFaults).toBe(0);
  }, 30_000);

  it("reports its heap and GC pauses on request (the diagnostics preload)", async () => {
    const before = peer.reports.length;
    process.kill(peer.pid, "SIGUSR2");
    for (let i = 0; i < 50 && peer.reports.length === before; i++) await new Promise((r) => setTimeout(r, 20));
    expect(peer.reports.length).toBe(before + 1);
    expect(peer.reports[before].heapUsedBytes).toBeGreaterThan(0);
  });
});
