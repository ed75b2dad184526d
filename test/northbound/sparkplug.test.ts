// The edge node against real peers: Debian's mosquitto, a pymodbus slave with known registers,
// and a primary host application made of the mqtt package and Eclipse Tahu's decoder. Births
// (names, aliases, datatypes, properties, values, bdSeq, seq), DCMD writes allowed and refused
// through the OPC UA write checks, NCMD rebirth, and a device outage (quality, DDEATH, DBIRTH).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAVE_PYMODBUS, PYMODBUS_MISSING, startPymodbus, type PythonPeer } from "../drivers/peers.js";
import { startNorthboundGateway, sparkplugYaml, type NorthboundGateway } from "./gateway.js";
import { HostApp, metricNamed, MOSQUITTO_MISSING, num, SKIP_BROKER, startBroker, tahuEncode, type Broker, type Received, type TahuMetric } from "./peers.js";

const SKIP = SKIP_BROKER || (!HAVE_PYMODBUS && process.env.CI !== "true");

function devicesYaml(port: number): string {
  return `devices:
  - name: plc
    driver: modbus-tcp
    host: 127.0.0.1
    port: ${port}
    unitId: 1
    rate: 100ms
    timeout: 200ms
    retryBackoff: 100ms
    maxBackoff: 200ms
    demoteAfter: 3
    writeRoles: [operator, admin]
    tags:
      - { name: setpoint, address: "holding:0", type: uint16, access: readwrite, unit: bar, range: [0, 5000] }
      - { name: level, address: "holding:1", type: int16, access: readwrite }
      - { name: flow, address: "input:0", type: uint16 }
      - { name: pump, address: "coil:0", access: readwrite }
      - { name: scaled, address: "input:2", type: uint16, scale: 0.5, offset: -10 }
`;
}

/** Every message's seq follows the previous one's (§6.4.5), NBIRTH at 0; NDEATH has none. */
function checkSeq(received: readonly Received[], node: string): void {
  let prev = -1;
  for (const r of received) {
    if (r.node !== node || r.type === "NDEATH" || r.type === "NCMD" || r.type === "DCMD") continue;
    const seq = num(r.payload.seq);
    if (r.type === "NBIRTH") expect(seq).toBe(0);
    else expect(seq, `${r.type} ${r.device ?? ""} after seq ${prev}`).toBe((prev + 1) & 255);
    prev = seq;
  }
}

function byAlias(birth: Received): Map<number, TahuMetric> {
  const m = new Map<number, TahuMetric>();
  for (const metric of birth.payload.metrics ?? []) if (metric.alias !== undefined) m.set(num(metric.alias), metric);
  return m;
}

describe.skipIf(SKIP)("Sparkplug B edge node (mosquitto, pymodbus, Tahu decoder)", { timeout: 30_000 }, () => {
  let broker: Broker;
  let peer: PythonPeer;
  let host: HostApp;
  let gw: NorthboundGateway;

  beforeAll(async () => {
    if (!HAVE_PYMODBUS) throw new Error(PYMODBUS_MISSING);
    if (SKIP_BROKER) throw new Error(MOSQUITTO_MISSING);
    broker = await startBroker();
    peer = await startPymodbus("tcp");
    host = new HostApp(broker.url, "scada");
    await host.connect();
    gw = await startNorthboundGateway(devicesYaml(peer.port), sparkplugYaml(broker.url, "gw01", ["primaryHostId: scada", "writeRole: operator"]));
  }, 30_000);

  afterAll(async () => {
    await gw?.stop();
    await host?.close();
    await peer?.stop();
    await broker?.close();
  });

  it("publishes NBIRTH (bdSeq, Node Control/Rebirth, System metrics) and a DBIRTH with every tag", async () => {
    const nbirth = await host.waitFor("NBIRTH", () => host.of("NBIRTH")[0]);
    expect(nbirth.group).toBe("plant1");
    expect(nbirth.node).toBe("gw01");
    expect(num(nbirth.payload.seq)).toBe(0);
    const bdSeq = metricNamed(nbirth.payload, "bdSeq")!;
    expect(bdSeq.type).toBe("Int64");
    expect(num(bdSeq.value)).toBe(0);
    const rebirth = metricNamed(nbirth.payload, "Node Control/Rebirth")!;
    expect(rebirth).toMatchObject({ type: "Boolean", value: false });
    expect(rebirth.alias).toBeUndefined();
    expect(metricNamed(nbirth.payload, "System/ProcessUptime")?.type).toBe("Double");
    expect(metricNamed(nbirth.payload, "Northbound/Buffered")?.type).toBe("UInt64");

    // The DBIRTH waits for the first poll: values are the pymodbus slave's known registers.
    const dbirth = await host.waitFor("DBIRTH of plc with values", () =>
      host.of("DBIRTH", "plc").find((r) => num(metricNamed(r.payload, "setpoint")?.value) === 1000),
    );
    const m = (n: string) => metricNamed(dbirth.payload, n)!;
    expect(m("setpoint")).toMatchObject({ type: "UInt16", value: 1000 });
    expect(m("setpoint").properties).toMatchObject({ engUnit: { type: "String", value: "bar" }, engLow: { value: 0 }, engHigh: { value: 5000 }, readOnly: { value: false } });
    expect(m("level")).toMatchObject({ type: "Int16", value: 1001 });
    expect(m("flow")).toMatchObject({ type: "UInt16", value: 4000 });
    expect(m("flow").properties).toMatchObject({ readOnly: { value: true } });
    expect(m("pump")).toMatchObject({ type: "Boolean", value: true });
    expect(m("scaled")).toMatchObject({ type: "Double", value: 4002 * 0.5 - 10 });
    for (const metric of dbirth.payload.metrics!) {
      expect(metric.properties?.Quality, metric.name).toBeUndefined();
      expect(num(metric.timestamp)).toBeGreaterThan(Date.now() - 60_000);
    }
    // Aliases unique across the node (§6.4.6 tck-id-payloads-alias-uniqueness).
    const aliases = [...nbirth.payload.metrics!, ...dbirth.payload.metrics!].filter((x) => x.alias !== undefined).map((x) => num(x.alias));
    expect(new Set(aliases).size).toBe(aliases.length);
    checkSeq(host.received, "gw01");
  });

  it("writes a DCMD through the OPC UA write checks and answers with DDATA of the new value", async () => {
    const dbirth = host.of("DBIRTH", "plc").at(-1)!;
    const setpoint = num(metricNamed(dbirth.payload, "setpoint")!.alias);
    const before = host.received.length;
    await host.publish("spBv1.0/plant1/DCMD/gw01/plc", tahuEncode({ timestamp: Date.now(), metrics: [{ alias: setpoint, type: "UInt16", value: 1234 }] }));
    const answer = await host.waitFor("DDATA with setpoint 1234", () =>
      host.received.slice(before).find((r) => r.type === "DDATA" && r.payload.metrics?.some((x) => num(x.alias) === setpoint && x.value === 1234)),
    );
    const metric = answer.payload.metrics!.find((x) => num(x.alias) === setpoint)!;
    expect(metric.name).toBeUndefined();
    // By name too (hosts that do not use aliases), a bool coil.
    const pumpAlias = num(metricNamed(dbirth.payload, "pump")!.alias);
    const mark = host.received.length;
    await host.publish("spBv1.0/plant1/DCMD/gw01/plc", tahuEncode({ timestamp: Date.now(), metrics: [{ name: "pump", type: "Boolean", value: false }] }));
    await host.waitFor("DDATA with pump false", () =>
      host.received.slice(mark).find((r) => r.type === "DDATA" && r.payload.metrics?.some((x) => num(x.alias) === pumpAlias && x.value === false)),
    );
    checkSeq(host.received, "gw01");
  });

  it("refuses DCMD writes outside the range, of the wrong type and to read-only tags, and says so", async () => {
    const dbirth = host.of("DBIRTH", "plc").at(-1)!;
    const alias = (n: string) => num(metricNamed(dbirth.payload, n)!.alias);
    const refusedBefore = gw.server.northbound.edgeNode!.status().commandsRefused;
    const mark = host.received.length;
    await host.publish(
      "spBv1.0/plant1/DCMD/gw01/plc",
      tahuEncode({
        timestamp: Date.now(),
        metrics: [
          { alias: alias("setpoint"), type: "UInt16", value: 9999 }, // EURange [0, 5000]: BadOutOfRange
          { alias: alias("level"), type: "String", value: "high" }, // BadTypeMismatch
          { alias: alias("flow"), type: "UInt16", value: 1 }, // read-only: BadNotWritable
          { name: "nosuchtag", type: "UInt16", value: 1 }, // BadNodeIdUnknown
        ],
      }),
    );
    await host.waitFor("4 refusals counted", () => gw.server.northbound.edgeNode!.status().commandsRefused >= refusedBefore + 4 || undefined);
    // The answer: DDATA of the values as they are, 1234 still there.
    await host.waitFor("DDATA answering with setpoint 1234", () =>
      host.received.slice(mark).find((r) => r.type === "DDATA" && r.payload.metrics?.some((x) => num(x.alias) === alias("setpoint") && x.value === 1234)),
    );
    for (const text of ["setpoint: BadOutOfRange", "level: BadTypeMismatch", "flow: BadNotWritable", "nosuchtag: BadNodeIdUnknown"]) {
      expect(gw.logs.some((l) => l.includes("DCMD plc refused") && l.includes(text)), text).toBe(true);
    }
  });

  it("answers NCMD Node Control/Rebirth with NBIRTH (same bdSeq, seq 0) and every DBIRTH", async () => {
    const firstBdSeq = num(metricNamed(host.of("NBIRTH")[0]!.payload, "bdSeq")!.value);
    const mark = host.received.length;
    await host.publish("spBv1.0/plant1/NCMD/gw01", tahuEncode({ timestamp: Date.now(), metrics: [{ name: "Node Control/Rebirth", type: "Boolean", value: true }] }));
    const nbirth = await host.waitFor("NBIRTH after rebirth", () => host.received.slice(mark).find((r) => r.type === "NBIRTH"));
    expect(num(metricNamed(nbirth.payload, "bdSeq")!.value)).toBe(firstBdSeq);
    const dbirth = await host.waitFor("DBIRTH after rebirth", () => host.received.slice(mark).find((r) => r.type === "DBIRTH"));
    expect(num(metricNamed(dbirth.payload, "setpoint")!.value)).toBe(1234);
    checkSeq(host.received, "gw01");
  });

  it("a device that stops answering publishes STALE quality, then DDEATH, and a DBIRTH when it is back", async () => {
    const dbirth = host.of("DBIRTH", "plc").at(-1)!;
    const flowAlias = num(metricNamed(dbirth.payload, "flow")!.alias);
    const mark = host.received.length;
    await peer.command("mute 1");
    const stale = await host.waitFor("DDATA with Quality 500", () =>
      host.received.slice(mark).find((r) => r.type === "DDATA" && r.payload.metrics?.some((x) => num(x.alias) === flowAlias && x.properties?.Quality?.value === 500)),
    );
    // The last value stays, its quality says it is stale.
    expect(stale.payload.metrics!.find((x) => num(x.alias) === flowAlias)!.value).toBe(4000);
    await host.waitFor("DDEATH of plc", () => host.received.slice(mark).find((r) => r.type === "DDEATH" && r.device === "plc"));
    const afterDeath = host.received.length;
    await peer.command("unmute 1");
    const reborn = await host.waitFor("DBIRTH of plc again", () => host.received.slice(afterDeath).find((r) => r.type === "DBIRTH" && r.device === "plc"));
    const flow = metricNamed(reborn.payload, "flow")!;
    expect(flow.value).toBe(4000);
    expect(flow.properties?.Quality).toBeUndefined();
    checkSeq(host.received, "gw01");
  }, 30_000);
});
