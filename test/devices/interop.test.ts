// Devices end to end with peers nobody here wrote: node-opcua-client reads, subscribes to and
// writes device tags that the gateway polls, through the real modbus-tcp driver, from
// modbus-serial's ServerTCP and from Debian's python3-pymodbus (skipped with a note when absent),
// plus the built-in simulator. A device stopped mid-test goes Bad and comes back Good; a reload
// adds and removes nodes while the other devices keep polling; a bad reload is refused.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AttributeIds,
  ClientMonitoredItem,
  ClientSubscription,
  DataType,
  OPCUAClient,
  StatusCodes,
  TimestampsToReturn,
  makeBrowsePath,
  type ClientSession,
  type DataValue,
} from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { readUntil } from "../helpers/read-until.js";
import { HAVE_PYMODBUS, PYMODBUS_MISSING, requirePeers, skipWithout, startModbusSerialServer, startPymodbus, type PythonPeer } from "../drivers/peers.js";

/** The modbus-serial peer's memory: a float32 21.5 at input:0-1, writable holding and coils. */
const holding = new Uint16Array(100);
const coils = new Uint8Array(100);
let reads = 0;
const vector = {
  getInputRegister: (addr: number) => {
    if (addr === 0) return 0x41ac; // 21.5 as float32, high word
    if (addr === 1) return 0x0000;
    if (addr === 5) return ++reads & 0xffff; // changes on every poll: feeds the subscription
    if (addr >= 100) throw { modbusErrorCode: 2 };
    return 0;
  },
  getHoldingRegister: (addr: number) => {
    if (addr >= 100) throw { modbusErrorCode: 2 };
    return holding[addr]!;
  },
  getCoil: (addr: number) => coils[addr] === 1,
  setRegister: (addr: number, value: number) => void (holding[addr] = value),
  setCoil: (addr: number, value: boolean) => void (coils[addr] = value ? 1 : 0),
};

let msr: { port: number; close(): Promise<void> };
let pym: PythonPeer | undefined;
let gw: TestGateway;
let client: OPCUAClient;
let session: ClientSession;
let ns: number;
const dir = mkdtempSync(join(tmpdir(), "fieldgate-devices-"));
const mapFile = join(dir, "devices.yaml");

const RETRY = "    retryBackoff: 100ms\n    maxBackoff: 300ms\n    timeout: 300ms\n    rate: 200ms\n    writeRoles: [viewer, operator, admin]\n";

function mapText(opts: { pymodbusExtra?: boolean; withSimulator?: boolean } = {}): string {
  let text = `devices:
  - name: msr
    driver: modbus-tcp
    host: 127.0.0.1
    port: ${msr.port}
${RETRY}    tags:
      - { name: temperature, address: input:0, type: float32, unit: "°C", range: [0, 150], history: true }
      - { name: setpoint, address: holding:10, scale: 0.1, range: [0, 100], access: readwrite }
      - { name: pump, address: coil:0, access: readwrite }
      - { name: ticks, address: input:5 }
`;
  if (pym) {
    text += `  - name: pym
    driver: modbus-tcp
    host: 127.0.0.1
    port: ${pym.port}
    unitId: 2
${RETRY}    tags:
      - { name: h5, address: holding:5 }
      - { name: i7, address: input:7 }
      - { name: c3, address: coil:3 }
      - { name: w, address: holding:50, access: readwrite }
${opts.pymodbusExtra ? "      - { name: h6, address: holding:6 }\n" : ""}`;
  }
  if (opts.withSimulator !== false) {
    text += `  - name: sim
    driver: simulator
${RETRY}    tags:
      - { name: ramp, address: input:0 }
`;
  }
  return text;
}

const id = (s: string) => `ns=${ns};s=${s}`;

async function read(nodeId: string, attributeId = AttributeIds.Value): Promise<DataValue> {
  return session.read({ nodeId, attributeId });
}

/** Reads until `ok` holds (bounded); returns the last value read. */
const until = (nodeId: string, ok: (dv: DataValue) => boolean, what: string, ms?: number): Promise<DataValue> => readUntil(session, nodeId, ok, what, ms);

const good = (dv: DataValue) => dv.statusCode.value === 0;

beforeAll(async () => {
  msr = await startModbusSerialServer(vector);
  if (HAVE_PYMODBUS) pym = await startPymodbus("tcp");
  writeFileSync(mapFile, mapText());
  gw = await startGateway(`devices: ${mapFile}\n`);
  client = OPCUAClient.create({ endpointMustExist: false, connectionStrategy: { maxRetry: 0 } });
  await client.connect(gw.url);
  session = await client.createSession();
  const nsArray = await read("i=2255");
  ns = (nsArray.value.value as string[]).indexOf("urn:fieldgate:devices");
}, 30_000);

afterAll(async () => {
  await session?.close();
  await client?.disconnect();
  await gw?.stop();
  await msr?.close();
  await pym?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("device namespace over node-opcua-client", () => {
  it("is namespace 1, with Objects/Devices/<device> and Objects/System", async () => {
    expect(ns).toBe(1);
    const objects = await session.browse("i=85");
    const names = objects.references!.map((r) => r.browseName.toString());
    expect(names).toEqual(expect.arrayContaining(["1:Devices", "1:System"]));
    const devices = objects.references!.find((r) => r.browseName.name === "Devices")!;
    const list = await session.browse(devices.nodeId);
    expect(list.references!.map((r) => r.browseName.name).sort()).toEqual(pym ? ["msr", "pym", "sim"] : ["msr", "sim"]);
    const tags = await session.browse(id("msr"));
    expect(tags.references!.map((r) => r.browseName.name)).toEqual(expect.arrayContaining(["temperature", "setpoint", "pump", "ticks", "Diagnostics"]));
  });

  it("reads a float32 from modbus-serial's server as a Float, with AnalogItemType properties", async () => {
    const dv = await until(id("msr.temperature"), good, "temperature Good");
    expect(dv.value.dataType).toBe(DataType.Float);
    expect(dv.value.value).toBe(21.5);
    expect(dv.sourceTimestamp).toBeInstanceOf(Date);
    const type = await session.browse({ nodeId: id("msr.temperature"), referenceTypeId: "i=40", browseDirection: 0 });
    expect(type.references![0]!.nodeId.toString()).toBe("ns=0;i=2368");
    const [range, units] = await session.translateBrowsePath([
      makeBrowsePath(id("msr.temperature"), "/0:EURange"),
      makeBrowsePath(id("msr.temperature"), "/0:EngineeringUnits"),
    ]);
    const r = (await read(range!.targets![0]!.targetId.toString())).value.value as { low: number; high: number };
    expect([r.low, r.high]).toEqual([0, 150]);
    const eu = (await read(units!.targets![0]!.targetId.toString())).value.value as { unitId: number; displayName: { text: string } };
    expect(eu.unitId).toBe(4408652);
    expect(eu.displayName.text).toBe("°C");
    const historizing = await read(id("msr.temperature"), AttributeIds.Historizing);
    expect(historizing.value.value).toBe(true);
    const access = await read(id("msr.temperature"), AttributeIds.AccessLevel);
    expect(access.value.value & 0x04).toBe(0x04);
  });

  it("keeps the samples of a history: true tag, served by HistoryRead", async () => {
    await until(id("msr.temperature"), good, "temperature Good");
    const start = new Date(Date.now() - 60_000);
    // The writer stores batches every second; bounds (BadBoundNotFound) are not samples.
    let samples: DataValue[] = [];
    const end = Date.now() + 8000;
    while (samples.length === 0 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 300));
      const h = await session.readHistoryValue(id("msr.temperature"), start, new Date(Date.now() + 1000));
      expect(h.statusCode.isGood()).toBe(true);
      samples = ((h.historyData as { dataValues?: DataValue[] } | undefined)?.dataValues ?? []).filter(good);
    }
    expect(samples.length).toBeGreaterThan(0);
    expect(samples.every((v) => v.value.value === 21.5)).toBe(true);
  });

  it("writes scaled values back through the driver, refusing what is out of range or read-only", async () => {
    const w = await session.write({ nodeId: id("msr.setpoint"), attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, value: 12.3 } } });
    expect(w.value).toBe(StatusCodes.Good.value);
    expect(holding[10]).toBe(123);
    const dv = await until(id("msr.setpoint"), (d) => good(d) && Math.abs((d.value.value as number) - 12.3) < 1e-9, "setpoint read back");
    expect(dv.value.dataType).toBe(DataType.Double);
    const out = await session.write({ nodeId: id("msr.setpoint"), attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, value: 100.5 } } });
    expect(out.value).toBe(StatusCodes.BadOutOfRange.value);
    expect(holding[10]).toBe(123);
    const ro = await session.write({ nodeId: id("msr.temperature"), attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Float, value: 1 } } });
    expect(ro.value).toBe(StatusCodes.BadNotWritable.value);
    const coil = await session.write({ nodeId: id("msr.pump"), attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Boolean, value: true } } });
    expect(coil.value).toBe(StatusCodes.Good.value);
    expect(coils[0]).toBe(1);
  });

  it("delivers every poll of a changing tag to a subscription at the poll rate", async () => {
    const sub = ClientSubscription.create(session, { requestedPublishingInterval: 100, requestedLifetimeCount: 100, requestedMaxKeepAliveCount: 10, publishingEnabled: true });
    await new Promise<void>((resolve) => sub.once("started", () => resolve()));
    const item = ClientMonitoredItem.create(sub, { nodeId: id("msr.ticks"), attributeId: AttributeIds.Value }, { samplingInterval: 200, queueSize: 10, discardOldest: true }, TimestampsToReturn.Both);
    const seen: number[] = [];
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`only ${seen.length} notifications`)), 8000);
      item.on("changed", (dv: DataValue) => {
        if (good(dv)) seen.push(dv.value.value as number);
        if (seen.length >= 3) {
          clearTimeout(t);
          resolve();
        }
      });
    });
    await sub.terminate();
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("polls the built-in simulator", async () => {
    const a = await until(id("sim.ramp"), good, "sim.ramp Good");
    await until(id("sim.ramp"), (d) => good(d) && d.value.value !== a.value.value, "sim.ramp changes");
  });

  it.skipIf(skipWithout(HAVE_PYMODBUS ? "" : PYMODBUS_MISSING))(`reads and writes Debian's python3-pymodbus server (${PYMODBUS_MISSING} otherwise)`, async () => {
    requirePeers(HAVE_PYMODBUS ? "" : PYMODBUS_MISSING);
    expect((await until(id("pym.h5"), good, "pym.h5")).value.value).toBe(2005);
    expect((await until(id("pym.i7"), good, "pym.i7")).value.value).toBe(5007);
    expect((await until(id("pym.c3"), good, "pym.c3")).value.value).toBe(false);
    const w = await session.write({ nodeId: id("pym.w"), attributeId: AttributeIds.Value, value: { value: { dataType: DataType.UInt16, value: 777 } } });
    expect(w.value).toBe(StatusCodes.Good.value);
    await until(id("pym.w"), (d) => good(d) && d.value.value === 777, "pym.w read back");
  });

  it("a device stopped mid-test goes BadCommunicationError keeping its last value, and comes back Good", async () => {
    const before = await until(id("msr.temperature"), good, "temperature Good");
    await msr.close();
    const bad = await until(id("msr.temperature"), (d) => d.statusCode.value === StatusCodes.BadCommunicationError.value, "temperature Bad");
    expect(bad.value.value).toBe(21.5);
    expect(bad.sourceTimestamp!.getTime()).toBeGreaterThanOrEqual(before.sourceTimestamp!.getTime());
    expect((await read(id("msr/Diagnostics/Connected"))).value.value).toBe(false);
    expect((await read(id("msr/Diagnostics/LastError"))).value.value).not.toBe("");
    // The other devices keep polling meanwhile.
    await until(id("sim.ramp"), good, "sim.ramp still Good");
    msr = await startModbusSerialServer(vector, msr.port);
    await until(id("msr.temperature"), good, "temperature Good again");
    await until(id("msr/Diagnostics/Connected"), (d) => d.value.value === true, "Connected again");
  }, 20_000);

  it("reloads the map: nodes come and go, the others keep polling; a bad map is refused", async () => {
    const kept = gw.server.devices.variable("msr", "temperature");
    writeFileSync(mapFile, mapText({ pymodbusExtra: true, withSimulator: false }));
    const r = await gw.server.reloadDevices();
    expect(r.ok).toBe(true);
    expect(r.report!.removed).toEqual(["sim"]);
    expect(r.report!.unchanged).toContain("msr");
    expect(gw.server.devices.variable("msr", "temperature")).toBe(kept);
    expect((await read(id("sim.ramp"))).statusCode.value).toBe(StatusCodes.BadNodeIdUnknown.value);
    if (pym) {
      expect(r.report!.changed).toEqual(["pym"]);
      expect((await until(id("pym.h6"), good, "new tag pym.h6")).value.value).toBe(2006);
    }
    const devices = await session.browse(`ns=${ns};i=1`);
    expect(devices.references!.map((x) => x.browseName.name)).not.toContain("sim");

    writeFileSync(mapFile, "devices:\n  - name: broken\n    driver: modbus-tcp\n    tags: []\n");
    const refused = await gw.server.reloadDevices();
    expect(refused.ok).toBe(false);
    expect(refused.issues.map((i) => `${i.line}:${i.column} ${i.path}`)).toEqual(["4:11 devices[0].tags"]);
    const t0 = (await until(id("msr.ticks"), good, "ticks")).value.value as number;
    await until(id("msr.ticks"), (d) => good(d) && d.value.value !== t0, "msr still polling after a refused reload");
  }, 20_000);
});
