// What an edge node still hears after a host's Rebirth (Sparkplug 3.0 §5.17 NCMD `Node
// Control/Rebirth`, which a primary host sends whenever it connects or sees a gap in seq): the
// host's DCMD writes, the host's STATE going offline (§5.5 tck-id-operational-behavior-edge-node-
// termination-host-offline), and the loss of the broker (a kill -9 of mosquitto), after which the
// node reconnects with the next bdSeq, waits for a STATE of the host in its new session, births
// again and replays every change of the outage in order, flagged historical (§6.4.6 is_historical).
//
// Peers: Debian's mosquitto on an ephemeral loopback port, modbus-serial's ServerTCP as the
// device (a counter on input register 0, a holding register that lists what is written to it),
// and two host applications on mqtt.js with Eclipse Tahu's codec: the primary host `scada` that
// commands, and an observer that sees what the node publishes while the primary is away.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { counterDevices, dataValues, startCounter, type Counter } from "./counter.js";
import { startNorthboundGateway, sparkplugYaml, type NorthboundGateway } from "./gateway.js";
import { HostApp, metricNamed, MOSQUITTO_MISSING, num, SKIP_BROKER, startBroker, tahuEncode, type Broker, type Received } from "./peers.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const NODE = "gwR";
const REBIRTH = tahuEncode({ timestamp: Date.now(), metrics: [{ name: "Node Control/Rebirth", type: "Boolean", value: true }] });

describe.skipIf(SKIP_BROKER)("the edge node after a host's Rebirth (mosquitto, modbus-serial, Tahu)", { timeout: 60_000 }, () => {
  let broker: Broker;
  let counter: Counter;
  let gw: NorthboundGateway;
  let primary: HostApp;
  let observer: HostApp;
  let bdSeq = -1;

  const ours = (): Received[] => observer.received.filter((r) => r.node === NODE);
  const status = () => gw.server.northbound.edgeNode!.status();
  /** Sends NCMD Rebirth from the primary host and waits for the NBIRTH and DBIRTH it brings. */
  const rebirth = async (): Promise<Received> => {
    const mark = ours().length;
    await primary.publish(`spBv1.0/plant1/NCMD/${NODE}`, REBIRTH);
    const nbirth = await observer.waitFor("NBIRTH after Rebirth", () => ours().slice(mark).find((r) => r.type === "NBIRTH"));
    // §5.17: the NBIRTH of a Rebirth keeps the session's bdSeq.
    expect(num(metricNamed(nbirth.payload, "bdSeq")!.value)).toBe(bdSeq);
    return observer.waitFor("DBIRTH after Rebirth", () => ours().slice(mark).find((r) => r.type === "DBIRTH"));
  };

  beforeAll(async () => {
    if (SKIP_BROKER) throw new Error(MOSQUITTO_MISSING);
    broker = await startBroker();
    counter = await startCounter();
    counter.value = 1000;
    observer = new HostApp(broker.url);
    primary = new HostApp(broker.url, "scada");
    await observer.connect();
    await primary.connect();
    gw = await startNorthboundGateway(counterDevices(counter.port, "meter", true), sparkplugYaml(broker.url, NODE, ["primaryHostId: scada", "writeRole: operator"]));
    const nbirth = await observer.waitFor("first NBIRTH", () => ours().find((r) => r.type === "NBIRTH"));
    bdSeq = num(metricNamed(nbirth.payload, "bdSeq")!.value);
    await observer.waitFor("first DBIRTH", () => ours().find((r) => r.type === "DBIRTH"));
  });

  afterAll(async () => {
    await gw?.stop();
    for (const h of [primary, observer]) await h?.close().catch(() => undefined);
    await counter?.close();
    await broker?.close();
  });

  it("applies every DCMD write that comes after a Rebirth", async () => {
    const dbirth = await rebirth();
    const alias = num(metricNamed(dbirth.payload, "setpoint")!.alias);
    const values = [11, 222, 3333, 44, 5];
    for (const v of values) {
      const mark = ours().length;
      await primary.publish(`spBv1.0/plant1/DCMD/${NODE}/meter`, tahuEncode({ timestamp: Date.now(), metrics: [{ alias, type: "UInt16", value: v }] }));
      // The device got it, and the node answered with the value read back (DDATA).
      await observer.waitFor(`write of ${v} at the device`, () => counter.writes.at(-1) === v || undefined);
      await observer.waitFor(`DDATA with setpoint ${v}`, () => ours().slice(mark).find((r) => r.type === "DDATA" && r.payload.metrics?.some((m) => num(m.alias) === alias && num(m.value) === v)));
    }
    expect(counter.writes).toEqual(values);
    expect(status().commandsRefused).toBe(0);
  });

  it("hears the primary host go offline after a Rebirth: NDEATH with the session's bdSeq, nothing born until it is back", async () => {
    await rebirth();
    const mark = ours().length;
    // Without a DISCONNECT: the broker publishes the host's will, STATE online=false.
    await primary.vanish();
    const ndeath = await observer.waitFor("NDEATH", () => ours().slice(mark).find((r) => r.type === "NDEATH"));
    expect(num(metricNamed(ndeath.payload, "bdSeq")!.value)).toBe(bdSeq);
    await observer.waitFor("phase waiting for primary host", () => status().phase === "waiting for primary host" || undefined);
    expect(gw.logs.some((l) => l.includes("primary host scada went offline"))).toBe(true);
    expect(ours().slice(mark).some((r) => r.type === "NBIRTH" || r.type === "DDATA")).toBe(false);

    await primary.connect();
    const nbirth = await observer.waitFor("NBIRTH when the host is back", () => ours().slice(mark).find((r) => r.type === "NBIRTH"));
    // A new MQTT session: the next bdSeq (§4.2.1.1 tck-id-topics-nbirth-bdseq-increment).
    expect(num(metricNamed(nbirth.payload, "bdSeq")!.value)).toBe((bdSeq + 1) & 255);
    bdSeq = (bdSeq + 1) & 255;
    await observer.waitFor("DBIRTH when the host is back", () => ours().slice(mark).find((r) => r.type === "DBIRTH"));
  });

  it("notices a broker killed after a Rebirth, reconnects, births again and replays the outage in order as historical", async () => {
    const dbirth = await rebirth();
    const first = num(metricNamed(dbirth.payload, "count")!.value);
    counter.start(200);
    await observer.waitFor("live DDATA", () => dataValues(ours(), "meter", "count").length >= 3 || undefined);
    // The counter holds still while the broker dies: a QoS 0 DDATA written just before a kill
    // may be lost in the broker, which no edge node can know.
    counter.halt();
    const beforeKill = counter.value;
    await observer.waitFor(`live value ${beforeKill}`, () => dataValues(ours(), "meter", "count").some((v) => v.value === beforeKill) || undefined);
    const liveBefore = dataValues(ours(), "meter", "count").length;

    const logMark = gw.logs.length;
    await broker.stop("SIGKILL");
    await observer.waitFor("the node's notice of the broker's loss (phase backing off)", () => status().phase === "backing off" || undefined);
    expect(gw.logs.slice(logMark).some((l) => l.includes(broker.url) && l.includes("storing data"))).toBe(true);
    counter.start(200);
    await sleep(3000);

    await broker.start();
    for (const h of [observer, primary]) h.client.end(true);
    const mark = observer.received.length;
    await observer.connect();
    // The restarted broker lost the host's retained STATE: the new session waits for one of its own.
    await observer.waitFor("phase waiting for primary host after the reconnect", () => status().phase === "waiting for primary host" || undefined);
    expect(observer.received.slice(mark).some((r) => r.node === NODE && r.type === "NBIRTH")).toBe(false);
    await primary.connect();
    const nbirth = await observer.waitFor("NBIRTH after the broker came back", () => observer.received.slice(mark).find((r) => r.node === NODE && r.type === "NBIRTH"), 20_000);
    expect(num(metricNamed(nbirth.payload, "bdSeq")!.value)).toBe((bdSeq + 1) & 255);
    await observer.waitFor("DBIRTH after the broker came back", () => observer.received.slice(mark).find((r) => r.node === NODE && r.type === "DBIRTH"));
    await sleep(1000);
    counter.halt();
    const last = counter.value;
    await observer.waitFor(`the last value ${last}`, () => dataValues(ours(), "meter", "count").some((v) => v.value === last) || undefined);
    await observer.waitFor("the replay done", () => status().waiting === 0 || undefined, 20_000);

    const after = dataValues(ours(), "meter", "count").slice(liveBefore);
    const historical = after.filter((v) => v.historical).map((v) => v.value);
    // In the order they happened, each once.
    for (let i = 1; i < historical.length; i++) expect(historical[i]).toBeGreaterThan(historical[i - 1]!);
    // The outage was ~3 s of a change every 200 ms.
    expect(historical.length).toBeGreaterThanOrEqual(10);
    // Every value from the Rebirth's DBIRTH to the last reached the host once as DDATA, or in a
    // DBIRTH of the new session (a birth carries the value it was born with).
    const data = dataValues(ours(), "meter", "count").map((v) => v.value).filter((v) => v > first);
    expect(new Set(data).size).toBe(data.length);
    const births = observer.received.slice(mark).filter((r) => r.node === NODE && r.type === "DBIRTH").map((r) => num(metricNamed(r.payload, "count")!.value));
    const seen = new Set([...data, ...births]);
    for (let v = first + 1; v <= last; v++) expect(seen.has(v), `value ${v}`).toBe(true);
    expect(status().dropped).toBe(0);

    // And the new session is not deaf either: a DCMD is applied.
    const alias = num(metricNamed(observer.received.slice(mark).filter((r) => r.node === NODE && r.type === "DBIRTH").at(-1)!.payload, "setpoint")!.alias);
    await primary.publish(`spBv1.0/plant1/DCMD/${NODE}/meter`, tahuEncode({ timestamp: Date.now(), metrics: [{ alias, type: "UInt16", value: 77 }] }));
    await observer.waitFor("write of 77 at the device", () => counter.writes.at(-1) === 77 || undefined);
  });
});
