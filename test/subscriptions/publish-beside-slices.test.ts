// A client nobody here wrote (node-opcua-client) that keeps its subscription and its large Reads
// on one session, as node-opcua's own applications do: Publish answers fall due while 1 MB Read
// responses leave in slices (transport/output-slicer.ts). They wait for the channel instead of
// forcing what is left of a response out in one task (no `settle()` of a message in slices), and
// no data change is lost: what the client sees goes up to the last value, in order, and every Read
// comes whole.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AttributeIds, ClientMonitoredItem, ClientSession, ClientSubscription, DataValue, MessageSecurityMode, OPCUAClient, SecurityPolicy, StatusCodes as UaStatus, TimestampsToReturn } from "node-opcua-client";
import { MemoryNamespace, type MemoryVariable } from "../../src/address-space/memory-namespace.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { BuiltinType, numericNodeId, scalar } from "../../src/ua/builtins.js";
import { slicedOutput } from "../../src/transport/output-slicer.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

let gw: TestGateway;
let client: OPCUAClient;
let session: ClientSession;
let mem: MemoryNamespace;
let counter: MemoryVariable;
let ns: number;
const BIG = Buffer.alloc(1 << 20);
for (let i = 0; i < BIG.length; i++) BIG[i] = (i * 13 + 1) & 0xff;
const id = (name: string) => `ns=${ns};s=${name}`;

beforeAll(async () => {
  gw = await startGateway();
  const registry = gw.server.registry;
  ns = registry.register("urn:fieldgate:publish-beside-slices");
  mem = new MemoryNamespace(ns, registry);
  registry.register("urn:fieldgate:publish-beside-slices", mem);
  const folder = mem.addFolder({ nodeId: "P", browseName: "P", parent: numericNodeId(85) });
  mem.addVariable({ nodeId: "Big", browseName: "Big", parent: folder.nodeId, dataType: BuiltinType.ByteString, value: scalar(BuiltinType.ByteString, BIG) });
  counter = mem.addVariable({ nodeId: "Count", browseName: "Count", parent: folder.nodeId, dataType: BuiltinType.Int32, accessLevel: AccessLevel.CurrentRead, value: scalar(BuiltinType.Int32, 0) });
  client = OPCUAClient.create({
    applicationName: "fieldgate-publish-beside-slices",
    endpointMustExist: false,
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 60_000,
  });
  await client.connect(gw.url);
  session = await client.createSession();
}, 60_000);

afterAll(async () => {
  await session?.close();
  await client?.disconnect();
  await gw?.stop();
});

describe("Publish beside responses in slices, one node-opcua session", () => {
  it("1 MB Reads come whole while data changes are published on the same channel; none is lost and no sliced response is forced out in one task", async () => {
    const sub = ClientSubscription.create(session, {
      requestedPublishingInterval: 20,
      requestedLifetimeCount: 600,
      requestedMaxKeepAliveCount: 10,
      maxNotificationsPerPublish: 0,
      publishingEnabled: true,
      priority: 1,
    });
    await new Promise<void>((resolve, reject) => {
      sub.once("started", () => resolve());
      sub.once("internal_error", reject);
    });
    const seen: number[] = [];
    const item = ClientMonitoredItem.create(sub, { nodeId: id("Count"), attributeId: AttributeIds.Value }, { samplingInterval: 0, queueSize: 10_000, discardOldest: false }, TimestampsToReturn.Both);
    item.on("changed", (dv: DataValue) => seen.push(dv.value.value as number));
    await new Promise<void>((resolve) => item.once("initialized", () => resolve()));

    const before = { ...slicedOutput };
    // The value changes every 5 ms, so each 20 ms publishing cycle has something to send, and
    // Publish answers fall due while the Reads' responses leave.
    let n = 0;
    const ticker = setInterval(() => mem.setValue(counter, { value: scalar(BuiltinType.Int32, ++n), sourceTimestamp: Date.now() }), 5);
    let seenDuringReads = 0;
    const rounds = 30;
    try {
      for (let round = 0; round < rounds; round++) {
        const reads = await Promise.all([0, 1, 2].map(() => session.read({ nodeId: id("Big"), attributeId: AttributeIds.Value })));
        for (const r of reads) {
          expect(r.statusCode.value).toBe(UaStatus.Good.value);
          expect(Buffer.compare(r.value.value as Buffer, BIG)).toBe(0);
        }
      }
      seenDuringReads = seen.length;
    } finally {
      clearInterval(ticker);
    }
    const last = n;
    const deadline = Date.now() + 10_000;
    while (seen[seen.length - 1] !== last && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await sub.terminate();

    expect(slicedOutput.messages - before.messages).toBe(3 * rounds);
    expect(slicedOutput.slices - before.slices).toBeGreaterThan(3 * rounds);
    // With the Publish forcing it (the behaviour before), several of the 90 responses went out in one task here.
    expect(slicedOutput.settled - before.settled).toBe(0);
    // Publishes were answered between the slices, not only after the Reads ended.
    expect(seenDuringReads).toBeGreaterThan(10);
    // The item samples the value (it does not see every change): what it reports only goes up,
    // each value once, up to the last one.
    expect(seen[seen.length - 1]).toBe(last);
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThan(seen[i - 1]);
  }, 60_000);
});
