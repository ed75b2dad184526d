// Subscriptions over a SignAndEncrypt channel with node-opcua-client (Basic256Sha256): Publish
// responses that span several chunks (3000 notifications, ~70 KB, in one message) arrive whole,
// and the Publish requests that wait in the server are answered on the secured channel.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AttributeIds, MessageSecurityMode, SecurityPolicy, TimestampsToReturn, type DataValue } from "node-opcua-client";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { makeCert, type TestCert } from "../security/certs.js";
import { secureClient } from "../security/client.js";
import { waitFor } from "./helpers.js";

let gw: TestGateway;
let dir: string;
let cert: TestCert;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fieldgate-sub-secure-"));
  gw = await startGateway();
  cert = await makeCert({ commonName: "subscription client" });
  writeFileSync(join(gw.server.pki!.root, "trusted", "certs", "sub-client.der"), cert.der);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("subscriptions in SignAndEncrypt", { timeout: 60_000 }, () => {
  it("delivers a Publish response of 3000 notifications over many encrypted chunks", async () => {
    const client = secureClient({ dir, cert, policy: SecurityPolicy.Basic256Sha256, mode: MessageSecurityMode.SignAndEncrypt });
    await client.connect(gw.url);
    const session = await client.createSession();
    try {
      const nsArray = await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value });
      const ns = (nsArray.value.value as string[]).indexOf("urn:fieldgate:test");
      const sub = await session.createSubscription2({
        requestedPublishingInterval: 200,
        requestedMaxKeepAliveCount: 10,
        requestedLifetimeCount: 100,
        maxNotificationsPerPublish: 0,
        publishingEnabled: true,
        priority: 1,
      });
      const items = 3000;
      const group = await sub.monitorItems(
        Array.from({ length: items }, () => ({ nodeId: `ns=${ns};s=Scalar.Int16`, attributeId: AttributeIds.Value })),
        { samplingInterval: 20, queueSize: 1, discardOldest: true },
        TimestampsToReturn.Both,
      );
      const seen = new Map<number, unknown>();
      group.on("changed", (item, dv: DataValue) => seen.set(item.monitoredItemId as number, dv.value.value));
      await waitFor(() => seen.size === items, "the initial value of every item");
      const w = await session.write({ nodeId: `ns=${ns};s=Scalar.Int16`, attributeId: AttributeIds.Value, value: { value: { dataType: "Int16", value: 321 } } });
      expect(w.name).toBe("Good");
      await waitFor(() => [...seen.values()].every((v) => v === 321), "321 on every item", 20_000);
      await sub.terminate();
    } finally {
      await session.close();
      await client.disconnect();
    }
  });
});
