// Store-and-forward and session behaviour against mosquitto and a Tahu-decoding host: the broker
// stopped for 30 s (every change of the gap replayed as historical, none lost, none duplicated),
// the primary host going offline and coming back, and two gateways into one broker.
//
// The device is modbus-serial's ServerTCP whose input register 0 the test counts up every 300 ms;
// the gateway polls it every 100 ms, so it sees every value, and the host must receive each of
// them exactly once across live and historical DDATA.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startNorthboundGateway, sparkplugYaml, type NorthboundGateway } from "./gateway.js";
import { counterDevices, dataValues, startCounter, type Counter } from "./counter.js";
import { HostApp, metricNamed, MOSQUITTO_MISSING, num, SKIP_BROKER, startBroker, type Broker } from "./peers.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(SKIP_BROKER)("store-and-forward (mosquitto, Tahu decoder)", { timeout: 120_000 }, () => {
  let broker: Broker;
  let counter: Counter;
  let gw: NorthboundGateway | undefined;
  const hosts: HostApp[] = [];

  beforeAll(async () => {
    if (SKIP_BROKER) throw new Error(MOSQUITTO_MISSING);
    broker = await startBroker();
    counter = await startCounter();
  });

  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
    for (const h of hosts.splice(0)) await h.close().catch(() => undefined);
  });

  afterAll(async () => {
    await counter?.close();
    await broker?.close();
  });

  it("replays every change of a 30 s broker outage as historical DDATA, none lost, none duplicated", async () => {
    const host = new HostApp(broker.url, "scada");
    hosts.push(host);
    await host.connect();
    counter.value = 100;
    gw = await startNorthboundGateway(counterDevices(counter.port), sparkplugYaml(broker.url, "gw01", ["primaryHostId: scada"]));
    const birth = await host.waitFor("DBIRTH of meter", () => host.of("DBIRTH", "meter").find((r) => num(metricNamed(r.payload, "count")?.value) === 100));
    const first = num(metricNamed(birth.payload, "count")!.value);
    counter.start(300);
    await host.waitFor("live DDATA", () => dataValues(host.received, "meter", "count").length >= 3 || undefined);

    await broker.stop();
    const stoppedAt = Date.now();
    await sleep(30_000);
    await broker.start();
    await host.connect();
    // The gateway reconnects, waits for the host's STATE, births again and replays the gap.
    await host.waitFor("second NBIRTH", () => host.of("NBIRTH").length >= 2 || undefined, 20_000);
    await sleep(1500);
    counter.halt();
    const last = counter.value;
    await host.waitFor(`the last value ${last}`, () => dataValues(host.received, "meter", "count").some((v) => v.value === last) || undefined, 20_000);
    await host.waitFor("replay done", () => gw!.server.northbound.edgeNode!.status().waiting === 0 || undefined, 20_000);

    const values = dataValues(host.received, "meter", "count");
    // Polls before the host's STATE came in were stored too: the first value may come back once
    // as historical beside the DBIRTH that showed it.
    const seen = values.filter((v) => !(v.value === first && v.historical)).map((v) => v.value);
    expect(values.filter((v) => v.value === first).length).toBeLessThanOrEqual(1);
    // Every value from the first DBIRTH's to the last, exactly once.
    const expected = Array.from({ length: last - first }, (_, i) => first + 1 + i);
    expect([...seen].sort((a, b) => a - b)).toEqual(expected);
    const historical = values.filter((v) => v.historical);
    // The gap's changes (about 100 at one per 300 ms) came back flagged historical, with the times they happened.
    expect(historical.length).toBeGreaterThan(80);
    for (const h of historical) expect(h.time).toBeGreaterThanOrEqual(stoppedAt - 1000);
    for (const h of historical) expect(h.time).toBeLessThan(Date.now());
    const status = gw.server.northbound.edgeNode!.status();
    expect(status.buffered).toBeGreaterThanOrEqual(historical.length);
    expect(status.replayed).toBe(status.buffered);
    expect(status.dropped).toBe(0);
    // The fixed register never changed: apart from the poll stored before the first birth it is
    // in the births only (report by exception).
    const fixed = dataValues(host.received, "meter", "fixed");
    expect(fixed.length).toBeLessThanOrEqual(1);
    for (const f of fixed) expect(f).toMatchObject({ value: 5, historical: true });
  });

  it("goes offline when the primary host does (NDEATH), stores, and births with the next bdSeq when it is back", async () => {
    const primary = new HostApp(broker.url, "scada2");
    const observer = new HostApp(broker.url);
    hosts.push(primary, observer);
    await observer.connect();
    await primary.connect();
    counter.value = 500;
    gw = await startNorthboundGateway(counterDevices(counter.port), sparkplugYaml(broker.url, "gw02", ["primaryHostId: scada2"]));
    const nbirth = await observer.waitFor("NBIRTH of gw02", () => observer.received.find((r) => r.type === "NBIRTH" && r.node === "gw02"));
    const bdSeq = num(metricNamed(nbirth.payload, "bdSeq")!.value);
    await observer.waitFor("DBIRTH of gw02", () => observer.received.find((r) => r.type === "DBIRTH" && r.node === "gw02"));
    counter.start(300);
    await sleep(1000);

    const mark = observer.received.length;
    await primary.vanish();
    // The broker publishes the host's will (STATE offline); the edge node dies on purpose.
    const ndeath = await observer.waitFor("NDEATH of gw02", () => observer.received.slice(mark).find((r) => r.type === "NDEATH" && r.node === "gw02"));
    expect(num(metricNamed(ndeath.payload, "bdSeq")!.value)).toBe(bdSeq);
    expect(ndeath.payload.seq).toBeUndefined();
    await sleep(3000);
    // Nothing is born while the primary host is away.
    expect(observer.received.slice(mark).some((r) => r.node === "gw02" && (r.type === "NBIRTH" || r.type === "DDATA"))).toBe(false);
    expect(gw.server.northbound.edgeNode!.status().phase).toBe("waiting for primary host");

    await primary.connect();
    const reborn = await observer.waitFor("NBIRTH of gw02 again", () => observer.received.slice(mark).find((r) => r.type === "NBIRTH" && r.node === "gw02"));
    expect(num(metricNamed(reborn.payload, "bdSeq")!.value)).toBe((bdSeq + 1) & 255);
    await sleep(1000);
    counter.halt();
    const last = counter.value;
    await observer.waitFor(`value ${last}`, () => dataValues(observer.received, "meter", "count").some((v) => v.value === last) || undefined);
    await observer.waitFor("replay done", () => gw!.server.northbound.edgeNode!.status().waiting === 0 || undefined);
    const values = dataValues(observer.received.filter((r) => r.node === "gw02"), "meter", "count");
    const historical = values.filter((v) => v.historical);
    expect(historical.length).toBeGreaterThanOrEqual(8);
    const seen = values.map((v) => v.value).sort((a, b) => a - b);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.at(-1)).toBe(last);
  });

  it("two gateways into one broker are both seen by one host application", async () => {
    const host = new HostApp(broker.url);
    hosts.push(host);
    await host.connect();
    const sim = (name: string) => `devices:
  - name: ${name}
    driver: simulator
    rate: 200ms
    tags:
      - { name: ramp, address: "input:0", type: uint16 }
`;
    const a = await startNorthboundGateway(sim("line1"), sparkplugYaml(broker.url, "gwA"));
    const b = await startNorthboundGateway(sim("line2"), sparkplugYaml(broker.url, "gwB"));
    try {
      for (const [node, device] of [
        ["gwA", "line1"],
        ["gwB", "line2"],
      ] as const) {
        await host.waitFor(`NBIRTH of ${node}`, () => host.received.find((r) => r.type === "NBIRTH" && r.node === node));
        await host.waitFor(`DBIRTH of ${node}/${device}`, () => host.received.find((r) => r.type === "DBIRTH" && r.node === node && r.device === device));
        await host.waitFor(`DDATA of ${node}/${device}`, () => dataValues(host.received.filter((r) => r.node === node), device, "ramp").length >= 2 || undefined);
      }
    } finally {
      await a.stop();
      await b.stop();
    }
    // A stop sends NDEATH before the DISCONNECT.
    await host.waitFor("NDEATH of both", () => (host.received.some((r) => r.type === "NDEATH" && r.node === "gwA") && host.received.some((r) => r.type === "NDEATH" && r.node === "gwB")) || undefined);
  });
});
