// Large responses that leave over several turns of the loop (transport/output-slicer.ts), seen
// by a client nobody here wrote (node-opcua-client): a HistoryRead of 40,000 values (its bodies
// lent from the read worker's shared memory), Reads of a 1 MB ByteString, and small requests
// pipelined on the same connection meanwhile, in security None and in SignAndEncrypt (each chunk
// sealed and encrypted as a slice fills it). Every response comes whole, each in its request's
// order on the connection, and the server's counts show that the large ones went in slices.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AttributeIds,
  ClientSession,
  HistoryReadRequest,
  MessageSecurityMode,
  OPCUAClient,
  ReadRawModifiedDetails,
  SecurityPolicy,
  StatusCodes as UaStatus,
  TimestampsToReturn,
  type HistoryData,
} from "node-opcua-client";
import { MemoryNamespace } from "../../src/address-space/memory-namespace.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { BuiltinType, numericNodeId, scalar } from "../../src/ua/builtins.js";
import { slicedOutput, SLICE_BYTES } from "../../src/transport/output-slicer.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { makeCert } from "../security/certs.js";
import { secureClient } from "../security/client.js";
import { T0 } from "./helpers.js";

let gw: TestGateway;
let dir: string;
const clients: OPCUAClient[] = [];
const sessions = new Map<string, ClientSession>();
let ns: number;
/** Stored values: ~18 bytes each encoded, 720 KB of HistoryData, several slices. */
const N = 40_000;
const BIG = Buffer.alloc(1 << 20);
for (let i = 0; i < BIG.length; i++) BIG[i] = (i * 7 + 3) & 0xff;

const id = (name: string) => `ns=${ns};s=${name}`;

beforeAll(async () => {
  gw = await startGateway();
  const registry = gw.server.registry;
  ns = registry.register("urn:fieldgate:sliced-test");
  const mem = new MemoryNamespace(ns, registry);
  registry.register("urn:fieldgate:sliced-test", mem);
  const folder = mem.addFolder({ nodeId: "Sliced", browseName: "Sliced", parent: numericNodeId(85) });
  const historized = AccessLevel.CurrentRead | AccessLevel.HistoryRead;
  mem.addVariable({ nodeId: "Temp", browseName: "Temp", parent: folder.nodeId, dataType: BuiltinType.Double, accessLevel: historized, historizing: true });
  mem.addVariable({ nodeId: "Big", browseName: "Big", parent: folder.nodeId, dataType: BuiltinType.ByteString, value: scalar(BuiltinType.ByteString, BIG) });
  mem.addVariable({ nodeId: "Small", browseName: "Small", parent: folder.nodeId, dataType: BuiltinType.Int32, value: scalar(BuiltinType.Int32, 42) });
  const sink = gw.server.history.writer;
  const temp = { namespace: ns, idType: 1, value: "Temp" } as const;
  sink.declare(temp);
  for (let i = 0; i < N; i++) sink.record(temp, { value: scalar(BuiltinType.Double, i * 0.5), sourceTimestamp: T0 + i * 10 });
  sink.flushAll();
  const plain = OPCUAClient.create({
    applicationName: "fieldgate-sliced-interop",
    endpointMustExist: false,
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 60_000,
  });
  dir = mkdtempSync(join(tmpdir(), "fieldgate-sliced-"));
  const cert = await makeCert({ commonName: "sliced client" });
  writeFileSync(join(gw.server.pki!.root, "trusted", "certs", "client.der"), cert.der);
  const secure = secureClient({ dir, cert, policy: SecurityPolicy.Basic256Sha256, mode: MessageSecurityMode.SignAndEncrypt });
  for (const [name, c] of [["None", plain], ["SignAndEncrypt", secure]] as const) {
    clients.push(c);
    await c.connect(gw.url);
    sessions.set(name, await c.createSession());
  }
}, 60_000);

afterAll(async () => {
  for (const s of sessions.values()) await s.close();
  for (const c of clients) await c.disconnect();
  await gw?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

function historyRequest() {
  return new HistoryReadRequest({
    historyReadDetails: new ReadRawModifiedDetails({ startTime: new Date(T0), endTime: new Date(T0 + N * 10), numValuesPerNode: N, returnBounds: false, isReadModified: false }),
    nodesToRead: [{ nodeId: id("Temp") }],
    timestampsToReturn: TimestampsToReturn.Source,
    releaseContinuationPoints: false,
  });
}

describe.each(["None", "SignAndEncrypt"])("large responses in slices, with node-opcua-client, security %s", (mode) => {
  it("a HistoryRead of 40,000 values and 1 MB Reads come whole and in order while small requests are pipelined beside them", async () => {
    const session = sessions.get(mode)!;
    const before = { ...slicedOutput };
    const order: string[] = [];
    const note = <T>(name: string, p: Promise<T>): Promise<T> => p.then((v) => (order.push(name), v));
    // Sent back to back on one connection: the server reads them together, so the small Read
    // arrives while the big one is leaving and must wait behind it.
    const history = note("history", session.historyRead(historyRequest()));
    const big1 = note("big 1", session.read({ nodeId: id("Big"), attributeId: AttributeIds.Value }));
    const small1 = note("small 1", session.read({ nodeId: id("Small"), attributeId: AttributeIds.Value }));
    const big2 = note("big 2", session.read({ nodeId: id("Big"), attributeId: AttributeIds.Value }));
    const small2 = note("small 2", session.read({ nodeId: id("Small"), attributeId: AttributeIds.Value }));
    const [h, b1, s1, b2, s2] = await Promise.all([history, big1, small1, big2, small2]);

    expect(h.responseHeader.serviceResult.value).toBe(UaStatus.Good.value);
    const r = h.results![0];
    expect(r.statusCode.value).toBe(UaStatus.Good.value);
    const dvs = (r.historyData as HistoryData).dataValues!;
    expect(dvs.length).toBe(N);
    for (let i = 0; i < N; i += 997) {
      expect(dvs[i].value.value).toBe(i * 0.5);
      expect(dvs[i].sourceTimestamp!.getTime()).toBe(T0 + i * 10);
    }
    expect(dvs[N - 1].value.value).toBe((N - 1) * 0.5);
    for (const b of [b1, b2]) {
      expect(b.statusCode.value).toBe(UaStatus.Good.value);
      expect(Buffer.compare(b.value.value as Buffer, BIG)).toBe(0);
    }
    expect(s1.value.value).toBe(42);
    expect(s2.value.value).toBe(42);
    // The Reads are answered in the order they came, each small one behind the big one before it.
    const reads = order.filter((n) => n !== "history");
    expect(reads).toEqual(["big 1", "small 1", "big 2", "small 2"]);
    // Three large responses, each in more than one slice (SLICE_BYTES bounds a slice).
    expect(slicedOutput.messages - before.messages).toBe(3);
    expect(slicedOutput.slices - before.slices).toBeGreaterThanOrEqual(2 * Math.ceil(BIG.length / SLICE_BYTES) + Math.ceil((N * 18) / SLICE_BYTES));
  }, 60_000);

  it("HistoryReads one after the other on the worker's lent memory: each page as stored (the next read waits until the last response is out)", async () => {
    const session = sessions.get(mode)!;
    const pages = await Promise.all([0, 1, 2].map(() => session.historyRead(historyRequest())));
    for (const p of pages) {
      const dvs = (p.results![0].historyData as HistoryData).dataValues!;
      expect(dvs.length).toBe(N);
      for (let i = 0; i < N; i += 1009) expect(dvs[i].value.value).toBe(i * 0.5);
    }
  }, 60_000);
});
