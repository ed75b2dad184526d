// SIGHUP: a northbound section added to gateway.yaml starts the edge node, a changed one
// replaces it (NDEATH of the old, NBIRTH of the new), a removed one stops it; a device map
// reload births added and changed devices and kills removed ones, the others go on.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadGatewayConfig } from "../../src/config/load.js";
import { startNorthboundGateway, sparkplugYaml, writeGatewayFiles, type NorthboundGateway } from "./gateway.js";
import { HostApp, MOSQUITTO_MISSING, SKIP_BROKER, startBroker, type Broker } from "./peers.js";

const sim = (names: string[], rampType = "uint16") =>
  `devices:\n${names
    .map((n) => `  - name: ${n}\n    driver: simulator\n    rate: 200ms\n    tags:\n      - { name: ramp, address: "input:0", type: ${n === "line1" ? rampType : "uint16"} }\n      - { name: fixed, address: "holding:0" }\n`)
    .join("")}`;

describe.skipIf(SKIP_BROKER)("SIGHUP reload of the northbound section and the device map", { timeout: 60_000 }, () => {
  let broker: Broker;
  let host: HostApp;
  let gw: NorthboundGateway;

  beforeAll(async () => {
    if (SKIP_BROKER) throw new Error(MOSQUITTO_MISSING);
    broker = await startBroker();
    host = new HostApp(broker.url);
    await host.connect();
    gw = await startNorthboundGateway(sim(["line1", "line2"]), "");
  });

  afterAll(async () => {
    await gw?.stop();
    await host?.close();
    await broker?.close();
  });

  const reloadConfig = (northbound: string) => {
    const file = writeGatewayFiles(gw.dir, sim(["line1", "line2"]), northbound);
    return gw.server.reloadConfig(loadGatewayConfig(file));
  };

  it("starts, replaces and stops the edge node without a restart", async () => {
    await new Promise((r) => setTimeout(r, 500));
    expect(host.received).toEqual([]);
    expect(gw.server.northbound.edgeNode).toBeUndefined();
    expect(reloadConfig(sparkplugYaml(broker.url, "gwR")).restartNeeded).toEqual([]);
    await host.waitFor("NBIRTH of gwR", () => host.received.find((r) => r.type === "NBIRTH" && r.node === "gwR"));
    await host.waitFor("DBIRTHs of gwR", () => (host.received.filter((r) => r.type === "DBIRTH" && r.node === "gwR").length === 2 ? true : undefined));

    reloadConfig(sparkplugYaml(broker.url, "gwS"));
    await host.waitFor("NDEATH of gwR", () => host.received.find((r) => r.type === "NDEATH" && r.node === "gwR"));
    await host.waitFor("NBIRTH of gwS", () => host.received.find((r) => r.type === "NBIRTH" && r.node === "gwS"));
  });

  it("births added and changed devices and kills removed ones on a map reload", async () => {
    await host.waitFor("DBIRTHs of gwS", () => (host.received.filter((r) => r.type === "DBIRTH" && r.node === "gwS").length === 2 ? true : undefined));
    const mark = host.received.length;
    // line1's ramp changes type, line2 goes, line3 comes; the gateway.yaml stays.
    writeFileSync(join(gw.dir, "devices.yaml"), sim(["line1", "line3"], "int16"));
    const r = await gw.server.reloadDevices();
    expect(r.ok).toBe(true);
    const after = () => host.received.slice(mark).filter((x) => x.node === "gwS");
    await host.waitFor("DDEATH of line2", () => after().find((x) => x.type === "DDEATH" && x.device === "line2"));
    const births = await host.waitFor("DBIRTH of line1 and line3", () => {
      const b = after().filter((x) => x.type === "DBIRTH");
      return b.some((x) => x.device === "line1") && b.some((x) => x.device === "line3") ? b : undefined;
    });
    const line1 = births.find((x) => x.device === "line1")!;
    expect(line1.payload.metrics!.find((m) => m.name === "ramp")!.type).toBe("Int16");
    // Aliases stay unique across the node after the rebirths.
    const latest = new Map<string, number[]>();
    for (const b of host.received.filter((x) => x.node === "gwS" && x.type === "DBIRTH")) latest.set(b.device!, b.payload.metrics!.map((m) => Number(m.alias)));
    latest.delete("line2");
    const all = [...latest.values()].flat();
    expect(new Set(all).size).toBe(all.length);
  });

  it("stops on a reload without the section: NDEATH", async () => {
    const mark = host.received.length;
    reloadConfig("");
    await host.waitFor("NDEATH of gwS", () => host.received.slice(mark).find((r) => r.type === "NDEATH" && r.node === "gwS"));
    await new Promise((r) => setTimeout(r, 200));
    expect(gw.server.northbound.edgeNode).toBeUndefined();
  });
});
