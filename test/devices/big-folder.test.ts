// A device of 3,000 tags browsed by node-opcua-client: pages of the size the client asks for
// behind continuation points (each page describes only its own references), every tag once;
// and one Browse of 1,000 nodes (answered in slices of the event loop) with every result Good.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BrowseDirection, MessageSecurityMode, OPCUAClient, SecurityPolicy, StatusCodes, type ClientSession, type ReferenceDescription } from "node-opcua-client";
import { loadGatewayConfig } from "../../src/config/load.js";
import { FieldgateServer } from "../../src/server/server.js";

const TAGS = 3000;
let dir: string;
let server: FieldgateServer;
let client: OPCUAClient;
let session: ClientSession;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fieldgate-big-folder-"));
  const tags = Array.from({ length: TAGS }, (_, t) => `      - { name: t${t}, address: "holding:${t}" }`).join("\n");
  writeFileSync(join(dir, "devices.yaml"), `devices:\n  - name: plc\n    driver: simulator\n    rate: 5s\n    tags:\n${tags}\n`);
  writeFileSync(join(dir, "gateway.yaml"), "server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\ndevices: ./devices.yaml\nsecurity:\n  securityPolicies: [None]\n");
  server = new FieldgateServer(loadGatewayConfig(join(dir, "gateway.yaml")), { info: () => undefined, warn: () => undefined });
  await server.start();
  client = OPCUAClient.create({ endpointMustExist: false, securityMode: MessageSecurityMode.None, securityPolicy: SecurityPolicy.None, connectionStrategy: { maxRetry: 0 } });
  await client.connect(`opc.tcp://127.0.0.1:${server.port}`);
  session = await client.createSession();
}, 60_000);

afterAll(async () => {
  await session?.close();
  await client?.disconnect();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a folder of 3,000 tags", () => {
  it("comes in pages of the requested size behind continuation points, every tag once", async () => {
    session.requestedMaxReferencesPerNode = 1000;
    let r = await session.browse({ nodeId: "ns=1;s=plc", browseDirection: BrowseDirection.Forward, resultMask: 0x3f, includeSubtypes: true, referenceTypeId: "HierarchicalReferences" });
    const pages: ReferenceDescription[][] = [r.references ?? []];
    while (r.continuationPoint && r.continuationPoint.length > 0) {
      r = await session.browseNext(r.continuationPoint, false);
      expect(r.statusCode).toBe(StatusCodes.Good);
      pages.push(r.references ?? []);
    }
    // 3,000 tags and the Diagnostics folder: 1000, 1000, 1000, 1.
    expect(pages.map((p) => p.length)).toEqual([1000, 1000, 1000, 1]);
    const ids = pages.flat().map((ref) => ref.nodeId.toString());
    expect(new Set(ids).size).toBe(TAGS + 1);
    for (let t = 0; t < TAGS; t += 499) expect(ids).toContain(`ns=1;s=plc.t${t}`);
    expect(pages.flat().find((ref) => ref.nodeId.toString() === "ns=1;s=plc.t7")?.browseName.name).toBe("t7");
  });

  it("answers one Browse of 1,000 nodes, every result Good", async () => {
    const nodes = Array.from({ length: 1000 }, (_, t) => ({ nodeId: `ns=1;s=plc.t${t}`, browseDirection: BrowseDirection.Both, resultMask: 0x3f }));
    const results = await session.browse(nodes);
    expect(results.map((x) => x.statusCode)).toEqual(new Array(1000).fill(StatusCodes.Good));
    // Each tag: its type definition and its device.
    expect(results.every((x) => (x.references ?? []).length === 2)).toBe(true);
  });
});
