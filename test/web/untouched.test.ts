// A change from the status page touches only what it changes: a node-opcua-client subscribed to
// device A's tag keeps its session, its subscription and its item, and keeps receiving Good
// values, while device B is changed, given a tag, moved to another link and removed through the
// settings API; A's poller is the same object throughout (never stopped and started again).
import { createServer } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AttributeIds, ClientMonitoredItem, ClientSubscription, TimestampsToReturn, type DataValue } from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type Connection } from "../conformance/helpers.js";
import { fetchPage, login, startWebGateway, type WebGateway } from "./helpers.js";

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

const mapWith = (b: string) => `devices:\n  - name: a\n    driver: simulator\n    rate: 100ms\n    tags:\n      - { name: ramp, address: input:0 }\n${b}`;

describe("a change to device B", () => {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-untouched-"));
  let g: WebGateway;
  let opc: Connection;
  let cookie: string;
  let csrf: string;
  let portB: number;
  let portB2: number;

  beforeAll(async () => {
    portB = await freePort();
    portB2 = await freePort();
    writeFileSync(join(dir, "devices.yaml"), mapWith(`  - name: b\n    driver: simulator\n    port: ${portB}\n    tags:\n      - { name: level, address: input:1 }\n`));
    g = await startWebGateway({ dir, extraYaml: "devices: ./devices.yaml\n" });
    cookie = await login(g, "admin");
    csrf = JSON.parse((await fetchPage(g, "/api/me", { headers: { cookie } })).body).csrf;
    opc = await connect(g.opcUrl, "fieldgate-untouched");
  }, 60_000);

  afterAll(async () => {
    await opc?.close();
    await g?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("leaves device A's poller, and a client's subscription to it, running", async () => {
    const sub = ClientSubscription.create(opc.session, { requestedPublishingInterval: 100, requestedLifetimeCount: 600, requestedMaxKeepAliveCount: 10, publishingEnabled: true, priority: 1 });
    await new Promise<void>((resolve, reject) => {
      sub.once("started", () => resolve());
      sub.once("internal_error", reject);
    });
    const seen: DataValue[] = [];
    const item = ClientMonitoredItem.create(sub, { nodeId: "ns=1;s=a.ramp", attributeId: AttributeIds.Value }, { samplingInterval: 100, queueSize: 100, discardOldest: true }, TimestampsToReturn.Both);
    item.on("changed", (dv: DataValue) => seen.push(dv));
    let terminated = false;
    sub.on("terminated", () => (terminated = true));
    const waitFor = async (n: number): Promise<void> => {
      const end = Date.now() + 15_000;
      while (seen.length < n && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect(seen.length).toBeGreaterThanOrEqual(n);
    };
    await waitFor(3);
    const pollerA = g.server.deviceRuntime.poller("a")!;
    const slotA = pollerA.tags[0]!.slot;

    const changes = [
      // a setting of B's own, and a tag more
      mapWith(`  - name: b\n    driver: simulator\n    port: ${portB}\n    timeout: 2s\n    tags:\n      - { name: level, address: input:1 }\n      - { name: wave, address: input:4 }\n`),
      // B on another link
      mapWith(`  - name: b\n    driver: simulator\n    port: ${portB2}\n    tags:\n      - { name: level, address: input:1 }\n`),
      // B gone
      mapWith(""),
    ];
    const expected = ["changed b; 1 unchanged", "changed b; 1 unchanged", "removed b; 1 unchanged"];
    for (let i = 0; i < changes.length; i++) {
      const before = seen.length;
      const requests = pollerA.requests;
      const r = await fetchPage(g, "/api/config/devices", { method: "POST", headers: { cookie, "x-fieldgate-csrf": csrf }, body: changes[i] });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body).message).toBe(`device map applied: ${expected[i]}`);
      // The values go on coming, and A was polled all along by the same poller.
      await waitFor(before + 3);
      expect(g.server.deviceRuntime.poller("a")).toBe(pollerA);
      expect(pollerA.stopped).toBe(false);
      expect(pollerA.requests).toBeGreaterThan(requests);
      expect(pollerA.tags[0]!.slot).toBe(slotA);
    }
    expect(g.server.deviceRuntime.poller("b")).toBeUndefined();
    expect(terminated).toBe(false);
    expect(seen.every((dv) => dv.statusCode.value === 0)).toBe(true);
    // One session all along, with its subscription.
    expect([...g.server.sessions.sessions()].filter((s) => s.activated).length).toBe(1);
    expect(g.server.subscriptions.subscriptions.size).toBe(1);
    await sub.terminate();
  }, 60_000);
});
