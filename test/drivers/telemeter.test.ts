// The driver interface is whole when a driver needs nothing outside its own files: "telemeter"
// (telemeter.ts), defined here and registered from here, whose meters answer with telegrams of
// self-describing records, is validated by its own keys with its own messages, gets its keys in
// the JSON Schema, and is polled by the gateway's real device runtime and poll groups into the
// value cache, read by node-opcua-client through a running server; no file of src/ or drivers/
// names it.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { AttributeIds, DataType, OPCUAClient, StatusCodes, type ClientSession, type DataValue } from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinDrivers } from "../../drivers/builtin.js";
import { deviceMapSchema } from "../../src/config/device-map.js";
import { deviceMapJsonSchema } from "../../src/config/json-schema.js";
import { validateYaml } from "../../src/config/load.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { readUntil } from "../helpers/read-until.js";
import { decodeTelegram, encodeTelegram, MeterBus, TELEMETER, telemeterDriver, type Meter } from "./telemeter.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

const bus = new MeterBus();
const drivers = builtinDrivers().register(TELEMETER, telemeterDriver(bus));

function issues(yaml: string, schema = deviceMapSchema(drivers)): string[] {
  return validateYaml(schema, yaml, "devices.yaml").issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`);
}

/** A map of one telemeter on bus `meters`, with `tags` (lines indented by 6) and extra device keys. */
function meterMap(tags: string, device = ""): string {
  return `buses:\n  meters: { port: /dev/ttyMETERS }\ndevices:\n  - name: heat\n    driver: telemeter\n    bus: meters\n    meter: "00012345"\n${device}    tags:\n${tags}`;
}

describe("a driver registered from a test", () => {
  it("is validated by its own keys: a record selector, a meter number, its bus", () => {
    const r = validateYaml(deviceMapSchema(drivers), meterMap('      - { name: v, record: volume/1 }\n      - { name: s, record: fabrication }\n'), "devices.yaml");
    expect(r.ok, JSON.stringify(r.issues)).toBe(true);
    const d = r.ok ? r.value.devices[0]! : undefined;
    expect(d).toMatchObject({ name: "heat", driver: "telemeter", bus: "meters", meter: "00012345", rate: 1000 });
    expect(d!.tags[0]).toEqual({ name: "v", record: { quantity: "volume", storage: 1 }, scale: 1, offset: 0, access: "read", history: false, rate: 1000 });
    // Modbus's keys are not a telemeter's: no unitId, no byteOrder filled in.
    expect(d).not.toHaveProperty("unitId");
    expect(d).not.toHaveProperty("timeout");
  });

  it.each([
    ["a quantity it does not report, with a suggestion", meterMap("      - { name: v, record: volum/1 }\n"),
      ['9:28 devices[0].tags[0].record: expected a record like volume, volume/1 or energy/0 (a quantity and its storage number), got "volum/1"; a telemeter reports no volum; did you mean "volume"?']],
    ["a storage number out of range", meterMap("      - { name: v, record: energy/16 }\n"),
      ['9:28 devices[0].tags[0].record: expected a record like volume, volume/1 or energy/0 (a quantity and its storage number), got "energy/16"; storage numbers are 0 to 15, got 16']],
    ["a meter number written as a number", meterMap("      - { name: v, record: volume }\n").replace('meter: "00012345"', "meter: 12345678"),
      ["7:12 devices[0].meter: expected an 8-digit meter number like 12345678, got 12345678; quote it: a meter number is text, its leading zeros count"]],
    ["a unit on a text record (the common check, with the driver's type name)", meterMap('      - { name: s, record: fabrication, unit: "m³" }\n'),
      ["9:47 devices[0].tags[0].unit: unit applies to numeric tags, this one is text"]],
    ["two tags of one record (the driver's own check across tags)", meterMap("      - { name: a, record: volume }\n      - { name: b, record: volume/0 }\n"),
      ["10:28 devices[0].tags[1].record: record volume/0 is read by tags[0] already"]],
    ["a write to a record", meterMap("      - { name: a, record: volume, access: readwrite }\n"),
      ["9:44 devices[0].tags[0].access: a telemeter's records are read-only: expected read"]],
    ["a Modbus key on a telemeter", meterMap("      - { name: a, record: volume }\n", "    unitId: 3\n"),
      ["8:5 devices[0].unitId: unknown key; expected one of name, driver, bus, meter, rate, retryBackoff, maxBackoff, demoteAfter, writeRoles, enabled, description, tags"]],
    ["a bus the map does not have (the common check, through the driver's busKey)", meterMap("      - { name: a, record: volume }\n").replace("bus: meters", "bus: meter"),
      ['6:10 devices[0].bus: no bus named "meter"; did you mean "meters"?']],
  ])("refuses %s, at file:line:column, in its own words", (_what, yaml, expected) => {
    expect(issues(yaml)).toEqual(expected);
  });

  it("is not known to a gateway that did not register it, and leaves Modbus's messages as they were", () => {
    expect(issues(meterMap("      - { name: v, record: volume }\n"), deviceMapSchema(builtinDrivers()))).toEqual([
      '5:13 devices[0].driver: expected one of "modbus-tcp", "modbus-rtu", "modbus-rtu-over-tcp", "modbus-ascii", "simulator", "mbus", got "telemeter"',
    ]);
    const modbus = "devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holdng:0 }\n      - { name: b, record: volume }\n";
    expect(issues(modbus)).toEqual([
      '6:29 devices[0].tags[0].address: expected a Modbus address like holding:100, input:0, coil:5, holding:100.3 or 40101, got "holdng:0"; did you mean "holding:"?',
      '7:9 devices[0].tags[1].address: missing required key; expected a Modbus address like holding:100, input:0, coil:5, holding:100.3 or 40101',
      '7:20 devices[0].tags[1].record: unknown key; expected one of name, address, type, length, byteOrder, scale, offset, unit, range, rate, access, history, alarms, description',
    ]);
  });

  it("gives the JSON Schema its keys: each driver's required keys and allowed keys by its name", () => {
    type Props = Record<string, { enum?: string[] }>;
    type Then = { properties: Props & { tags: { items: { required: string[] } } }; required: string[]; propertyNames: { enum: string[] } };
    type Device = { properties: Props; allOf?: { if: { properties: { driver: { enum: string[] } } }; then: Then }[] };
    const device = (d: typeof drivers) => (deviceMapJsonSchema(d) as { properties: { devices: { items: Device } } }).properties.devices.items;
    const both = device(drivers);
    expect(both.properties.driver!.enum).toEqual(["modbus-tcp", "modbus-rtu", "modbus-rtu-over-tcp", "modbus-ascii", "simulator", "mbus", "telemeter"]);
    const byDriver = new Map(both.allOf!.map((a) => [a.if.properties.driver.enum.join(","), a.then]));
    const meter = byDriver.get("telemeter")!;
    expect(meter.required).toEqual(["name", "driver", "bus", "meter", "tags"]);
    expect(meter.propertyNames.enum).toContain("bus");
    expect(meter.propertyNames.enum).not.toContain("unitId");
    expect(meter.properties.tags.items.required).toEqual(["name", "record"]);
    const modbus = byDriver.get("modbus-tcp,modbus-rtu,modbus-rtu-over-tcp,simulator")!;
    expect(modbus.properties.tags.items.required).toEqual(["name", "address"]);
    // Each syntax of the built-in drivers has its part: Modbus, Modbus ASCII (its bus's defaults), M-Bus.
    expect(device(builtinDrivers()).allOf!.map((a) => a.if.properties.driver.enum.join(","))).toEqual(["modbus-tcp,modbus-rtu,modbus-rtu-over-tcp,simulator", "modbus-ascii", "mbus"]);
  });

  it("is named by no file outside test/", () => {
    const named: string[] = [];
    for (const dir of ["src", "drivers", "config", "bench"]) {
      for (const f of readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })) {
        if (!/\.(ts|json|yaml)$/.test(f)) continue;
        if (/telemeter/i.test(readFileSync(join(ROOT, dir, f), "utf8"))) named.push(`${dir}/${f}`);
      }
    }
    expect(named).toEqual([]);
  });
});

describe("its telegrams", () => {
  it("decode to the records sent, and a broken one is a malformed DriverError", () => {
    const sent = [
      { quantity: "volume", storage: 1, value: 12.345 },
      { quantity: "fabrication", storage: 0, value: "AB-17" },
      { quantity: "power", storage: 0, value: -0.5 },
    ] as const;
    expect(decodeTelegram(encodeTelegram([...sent])).records).toEqual(sent);
    const bytes = encodeTelegram([...sent]);
    for (let cut = 0; cut < bytes.length; cut++) {
      expect(() => decodeTelegram(bytes.subarray(0, cut)), `cut at ${cut}`).toThrow(expect.objectContaining({ kind: "malformed" }));
    }
  });
});

describe("polled by the gateway, read by node-opcua-client", () => {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-telemeter-"));
  const mapFile = join(dir, "devices.yaml");
  let gw: TestGateway;
  let client: OPCUAClient;
  let session: ClientSession;
  let heat: Meter;
  let water: Meter;

  const map = `buses:
  meters: { port: /dev/ttyMETERS }
devices:
  - name: heat
    driver: telemeter
    bus: meters
    meter: "00012345"
    rate: 100ms
    retryBackoff: 100ms
    maxBackoff: 200ms
    tags:
      - { name: volume, record: volume/1, unit: "m³" }
      - { name: energy, record: energy, scale: 0.001, unit: "MW·h" }
      - { name: serial, record: fabrication }
      - { name: flow, record: flow }
  - name: water
    driver: telemeter
    bus: meters
    meter: "00067890"
    rate: 100ms
    tags:
      - { name: volume, record: volume }
`;

  const read = (nodeId: string, attributeId = AttributeIds.Value): Promise<DataValue> => session.read({ nodeId, attributeId });

  const until = (nodeId: string, ok: (dv: DataValue) => boolean, what: string): Promise<DataValue> => readUntil(session, nodeId, ok, what);

  beforeAll(async () => {
    heat = bus.add("/dev/ttyMETERS", "00012345", [
      { quantity: "energy", storage: 0, value: 48_250 },
      { quantity: "volume", storage: 0, value: 1.5 },
      { quantity: "volume", storage: 1, value: 12.345 },
      { quantity: "fabrication", storage: 0, value: "AB-17" },
    ]);
    water = bus.add("/dev/ttyMETERS", "00067890", [{ quantity: "volume", storage: 0, value: 321.25 }]);
    writeFileSync(mapFile, map);
    gw = await startGateway(`devices: ${mapFile}\n`, { drivers });
    client = OPCUAClient.create({ endpointMustExist: false, connectionStrategy: { maxRetry: 0 } });
    await client.connect(gw.url);
    session = await client.createSession();
  }, 30_000);

  afterAll(async () => {
    await session?.close();
    await client?.disconnect();
    await gw?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const good = (dv: DataValue) => dv.statusCode.value === 0;

  it("reads each record where the telegram has it, scaled, as a Double or a String", async () => {
    const volume = await until("ns=1;s=heat.volume", good, "heat.volume Good");
    expect(volume.value.dataType).toBe(DataType.Double);
    expect(volume.value.value).toBe(12.345);
    expect((await until("ns=1;s=heat.energy", good, "heat.energy Good")).value.value).toBeCloseTo(48.25, 12);
    const serial = await until("ns=1;s=heat.serial", good, "heat.serial Good");
    expect([serial.value.dataType, serial.value.value]).toEqual([DataType.String, "AB-17"]);
    expect((await until("ns=1;s=water.volume", good, "water.volume Good")).value.value).toBe(321.25);
    // A record the telegram lacks: that tag alone is Bad, polled on (the meter may send it later).
    expect((await until("ns=1;s=heat.flow", (dv) => dv.statusCode.value === StatusCodes.BadConfigurationError.value, "heat.flow Bad")).statusCode).toBe(StatusCodes.BadConfigurationError);
    heat.records = [...heat.records, { quantity: "flow", storage: 0, value: 0.75 }];
    expect((await until("ns=1;s=heat.flow", good, "heat.flow Good")).value.value).toBe(0.75);
  });

  it("describes a tag in its driver's words, with its unit", async () => {
    expect((await read("ns=1;s=heat.volume", AttributeIds.Description)).value.value.text).toBe("number at volume/1");
    expect((await read("ns=1;s=heat.serial", AttributeIds.Description)).value.value.text).toBe("text at fabrication/0");
    const units = await session.translateBrowsePath({ startingNode: "ns=1;s=heat.volume", relativePath: { elements: [{ referenceTypeId: "i=46", isInverse: false, includeSubtypes: true, targetName: { namespaceIndex: 0, name: "EngineeringUnits" } }] } });
    const eu = (await read(units.targets![0]!.targetId.toString())).value.value as { displayName: { text: string } };
    expect(eu.displayName.text).toBe("m³");
  });

  it("reads a whole telegram a cycle, the meters of one bus sharing one link", async () => {
    await until("ns=1;s=water.volume", good, "water.volume Good");
    const p = gw.server.deviceRuntime.poller("heat")!;
    // Four tags, one telegram: one request per cycle.
    expect(p.requestsPerCycle).toBe(1);
    expect(p.station).toBe("00012345");
    expect(bus.opened).toEqual(["/dev/ttyMETERS"]);
    expect(gw.server.deviceRuntime.driverOf("heat")).toBe(gw.server.deviceRuntime.driverOf("water"));
    expect(gw.server.deviceRuntime.describeLink(p.config)).toBe("bus meters meter 00012345");
  });

  it("a meter that stops answering goes Bad with its last value kept, the other polls on, and it comes back", async () => {
    await until("ns=1;s=heat.volume", good, "heat.volume Good");
    heat.silent = true;
    const down = await until("ns=1;s=heat.volume", (dv) => dv.statusCode.value === StatusCodes.BadCommunicationError.value, "heat.volume Bad");
    expect(down.value.value).toBe(12.345);
    const before = water.requests;
    await until("ns=1;s=water.volume", () => water.requests > before + 2, "water polled on");
    expect((await read("ns=1;s=water.volume")).statusCode.value).toBe(0);
    heat.silent = false;
    heat.records = heat.records.map((r) => (r.quantity === "volume" && r.storage === 1 ? { ...r, value: 13 } : r));
    expect((await until("ns=1;s=heat.volume", (dv) => good(dv) && dv.value.value === 13, "heat.volume back")).value.value).toBe(13);
  });
});
