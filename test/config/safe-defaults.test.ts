// The shipped configuration (config/gateway.yaml with its device map) gives an anonymous client
// nothing to write: every variable it can browse to has no CurrentWrite in its
// UserAccessLevel, and a write to a simulator setpoint is refused with BadUserAccessDenied
// (issue 15). Checked with node-opcua-client against the gateway started on the shipped files,
// moved to 127.0.0.1 and an ephemeral port, with a temporary data folder.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDocument } from "yaml";
import {
  AttributeIds,
  BrowseDirection,
  DataType,
  MessageSecurityMode,
  NodeClassMask,
  OPCUAClient,
  SecurityPolicy,
  StatusCodes,
  type ClientSession,
  type ReferenceDescription,
} from "node-opcua-client";
import { loadGatewayConfig } from "../../src/config/load.js";
import { FieldgateServer } from "../../src/server/server.js";

const repo = join(import.meta.dirname, "../..");
const CURRENT_WRITE = 0x02;

let dir: string;
let server: FieldgateServer;
let client: OPCUAClient;
let session: ClientSession;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fieldgate-safe-defaults-"));
  const doc = parseDocument(readFileSync(join(repo, "config/gateway.yaml"), "utf8"));
  doc.setIn(["server", "host"], "127.0.0.1");
  doc.setIn(["server", "port"], 0);
  doc.setIn(["dataDir"], join(dir, "data"));
  doc.setIn(["devices"], join(repo, "config/devices.yaml"));
  // Only None: the signed policies would make a certificate, which this check does not need.
  doc.setIn(["security", "securityPolicies"], ["None"]);
  doc.deleteIn(["security", "securityModes"]);
  const file = join(dir, "gateway.yaml");
  writeFileSync(file, doc.toString());
  server = new FieldgateServer(loadGatewayConfig(file), { info: () => undefined, warn: () => undefined });
  await server.start();
  client = OPCUAClient.create({
    applicationName: "fieldgate-safe-defaults",
    endpointMustExist: false,
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
  });
  await client.connect(`opc.tcp://127.0.0.1:${server.port}`);
  session = await client.createSession();
}, 30_000);

afterAll(async () => {
  await session?.close();
  await client?.disconnect();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Every Variable below Objects, following hierarchical references. */
async function allVariables(): Promise<string[]> {
  const seen = new Set<string>(["i=85"]);
  const variables: string[] = [];
  let frontier = ["i=85"];
  while (frontier.length > 0) {
    const results = await session.browse(
      frontier.map((nodeId) => ({
        nodeId,
        browseDirection: BrowseDirection.Forward,
        referenceTypeId: "HierarchicalReferences",
        includeSubtypes: true,
        nodeClassMask: NodeClassMask.Object | NodeClassMask.Variable,
        resultMask: 0x3f,
      })),
    );
    const next: string[] = [];
    for (const r of results) {
      let refs: ReferenceDescription[] = r.references ?? [];
      let cp = r.continuationPoint;
      while (cp && cp.length > 0) {
        const more = await session.browseNext(cp, false);
        refs = refs.concat(more.references ?? []);
        cp = more.continuationPoint;
      }
      for (const ref of refs) {
        const id = ref.nodeId.toString();
        if (seen.has(id)) continue;
        seen.add(id);
        if (ref.nodeClass === 2) variables.push(id);
        next.push(id);
      }
    }
    frontier = next;
  }
  return variables;
}

describe("the shipped configuration, for an anonymous client", () => {
  it("has no test namespace", async () => {
    const ns = await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value });
    expect(ns.value.value as string[]).not.toContain("urn:fieldgate:test");
  });

  it("shows no variable as writable", async () => {
    const variables = await allVariables();
    // The simulator's tags and the System object at least.
    expect(variables.length).toBeGreaterThan(20);
    const levels = await session.read(variables.map((nodeId) => ({ nodeId, attributeId: AttributeIds.UserAccessLevel })));
    const writable = variables.filter((_, i) => ((levels[i]!.value.value as number) & CURRENT_WRITE) !== 0);
    expect(writable).toEqual([]);
  });

  it("is refused a write to the simulator's setpoint with BadUserAccessDenied", async () => {
    const status = await session.write({
      nodeId: "ns=1;s=simulator.setpoint",
      attributeId: AttributeIds.Value,
      value: { value: { dataType: DataType.UInt16, value: 42 } },
    });
    expect(status).toBe(StatusCodes.BadUserAccessDenied);
  });
});
