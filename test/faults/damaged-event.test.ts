// The event of a damaged file (Part 5 §6.4.29 DeviceFailureEventType, src/events/server-events.ts),
// seen by node-opcua-client on the Server object. A file found damaged at the start is reported
// before any client can listen; a northbound section that a reload brings opens its store while
// clients are connected, so a damaged store then is the case a subscribed client sees: the event
// names the file, where it went and what to do, and the gateway goes on with a new store.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { LocalizedText, NodeId } from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadGatewayConfig } from "../../src/config/load.js";
import { ObjectTypeIds } from "../../src/ua/generated/node-ids.js";
import { connect, gatewayWith, monitorEvents, subscribe, waitFor, type Connection, type Gateway } from "../conformance/helpers.js";

const MAP = `devices:
  - name: sim
    driver: simulator
    rate: 100ms
    tags:
      - { name: ramp, address: input:0 }
`;

let gw: Gateway;
let c: Connection;

beforeAll(async () => {
  gw = await gatewayWith(MAP);
  c = await connect(gw.url);
}, 30_000);

afterAll(async () => {
  await c?.close();
  await gw?.stop();
});

describe("a damaged file's event", () => {
  it("is a DeviceFailureEvent on the Server naming the file and where it went; the edge node starts with a new store", async () => {
    const sub = await subscribe(c.session);
    const events = await monitorEvents(sub, "i=2253", ["EventType", "SourceName", "Message", "Severity"]);
    const dataDir = gw.server.config.dataDir;
    mkdirSync(dataDir, { recursive: true });
    const store = join(dataDir, "northbound.db");
    writeFileSync(store, randomBytes(64 * 1024));
    // The section a SIGHUP would bring: a broker nobody listens at (loopback).
    const file = join(dataDir, "..", "with-northbound.yaml");
    writeFileSync(
      file,
      `server:\n  host: 127.0.0.1\n  port: 0\n  testNamespace: true\ndataDir: ${dataDir}\nnorthbound:\n  sparkplug:\n    broker: mqtt://127.0.0.1:1\n    groupId: plant1\n    edgeNodeId: gw1\n`,
    );
    gw.server.reloadConfig(loadGatewayConfig(file));
    const e = await events.next((x) => (x.EventType as NodeId).toString() === `ns=0;i=${ObjectTypeIds.DeviceFailureEventType}`, "the DeviceFailureEvent");
    const d = gw.server.damagedFiles.list.at(-1)!;
    expect(d.kind).toBe("northbound");
    expect(d.file).toBe(store);
    expect(existsSync(d.movedTo)).toBe(true);
    expect(e.SourceName).toBe("Server");
    expect(e.Severity).toBe(700);
    const message = (e.Message as LocalizedText).text!;
    expect(message).toContain(`${store} is damaged (file is not a database)`);
    expect(message).toContain(`moved aside to ${d.movedTo}`);
    expect(message).toContain(".recover");
    await waitFor(() => gw.server.northbound.edgeNode !== undefined, "the edge node");
    expect(gw.server.northbound.failure).toBeUndefined();
  }, 30_000);
});
