// The device map schema: the default map, defaults, addresses, units, and a table of broken
// maps each refused with file:line:column, the key path and the message a person reads.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadDeviceMap, parseUnit, validateDeviceMapFile } from "../../src/config/device-map.js";
import { parseAddress, tagWidth } from "../../drivers/modbus/protocol.js";
import { DRIVERS, mapSchema } from "../helpers/map.js";
import { renderDeviceMapJsonSchema } from "../../src/config/json-schema.js";
import { ConfigError, validateYaml } from "../../src/config/load.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../..");
const FILE = "config/devices.yaml";

function issuesOf(text: string): string[] {
  return validateYaml(mapSchema, text, FILE).issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`);
}

function valueOf(text: string) {
  const r = validateYaml(mapSchema, text, FILE);
  if (!r.ok) throw new ConfigError(r.issues);
  return r.value;
}

/** A valid one-device map with `tags` (YAML lines indented by 6) and extra device keys. */
function map(tags: string, device = "", top = ""): string {
  return `${top}devices:\n  - name: plc\n    driver: modbus-tcp\n    host: 127.0.0.1\n${device}    tags:\n${tags}`;
}

describe("the default devices.yaml", () => {
  it("loads: one simulator device whose tags cover every kind of value", () => {
    const m = loadDeviceMap(join(repo, FILE), DRIVERS);
    expect(m.devices).toHaveLength(1);
    const d = m.devices[0]!;
    expect(d.driver).toBe("simulator");
    const types = new Set(d.tags.map((t) => t.type ?? (t.address.area === "coil" || t.address.area === "discrete" ? "bool" : "uint16")));
    for (const t of ["uint16", "float32", "uint32", "int16", "float64", "string", "bool", "bit"]) expect(types).toContain(t);
    expect(d.tags.some((t) => t.access === "readwrite")).toBe(true);
    expect(d.tags.some((t) => t.history)).toBe(true);
  });

  it("points editors at its JSON Schema", () => {
    expect(readFileSync(join(repo, FILE), "utf8").split("\n")[0]).toBe("# yaml-language-server: $schema=./devices.schema.json");
    expect(validateDeviceMapFile(join(repo, FILE), DRIVERS)).toEqual([]);
  });
});

describe("defaults", () => {
  it("fill a device and a tag", () => {
    const m = valueOf(map("      - { name: t, address: holding:3 }\n"));
    const d = m.devices[0]!;
    expect(m.buses).toEqual({});
    expect(d).toMatchObject({
      unitId: 1,
      timeout: 1000,
      byteOrder: "ABCD",
      rate: 1000,
      maxGap: 10,
      maxRegistersPerRead: 125,
      maxBitsPerRead: 2000,
      forceSingleRegisterWrite: false,
      retryBackoff: 1000,
      maxBackoff: 30_000,
      demoteAfter: 3,
      writeRoles: ["operator", "admin"],
      enabled: true,
    });
    // The tag's rate is resolved here, once: the device's when the tag gives none (issue 13).
    expect(d.tags[0]).toEqual({ name: "t", address: { area: "holding", offset: 3 }, scale: 1, offset: 0, access: "read", history: false, rate: 1000 });
  });

  it("an empty map is valid: no devices", () => {
    expect(valueOf("devices: []\n").devices).toEqual([]);
    expect(valueOf("buses: {}\n").devices).toEqual([]);
  });

  it("a bus takes Modbus RTU's defaults", () => {
    const m = valueOf(`buses:\n  rs485-1: { port: /dev/ttyUSB0 }\ndevices:\n  - name: m\n    driver: modbus-rtu\n    bus: rs485-1\n    unitId: 3\n    tags: [{ name: e, address: "30001" }]\n`);
    expect(m.buses["rs485-1"]).toEqual({ port: "/dev/ttyUSB0", baudRate: 9600, parity: "even", dataBits: 8, stopBits: 1, interRequestDelay: 0 });
    expect(m.devices[0]!.tags[0]!.address).toEqual({ area: "input", offset: 0 });
  });
});

describe("addresses", () => {
  it.each([
    ["holding:100", { area: "holding", offset: 100 }],
    ["coil:0", { area: "coil", offset: 0 }],
    ["discrete:65535", { area: "discrete", offset: 65535 }],
    ["input:7", { area: "input", offset: 7 }],
    ["holding:100.3", { area: "holding", offset: 100, bit: 3 }],
    [40101, { area: "holding", offset: 100 }],
    ["40101", { area: "holding", offset: 100 }],
    ["40101.15", { area: "holding", offset: 100, bit: 15 }],
    [30001, { area: "input", offset: 0 }],
    [10010, { area: "discrete", offset: 9 }],
    [1, { area: "coil", offset: 0 }],
    ["00001", { area: "coil", offset: 0 }],
    ["465536", { area: "holding", offset: 65535 }],
    [400001, { area: "holding", offset: 0 }],
  ])("%s", (raw, expected) => {
    expect(parseAddress(raw)).toEqual({ ok: true, value: expected });
  });

  it.each([
    ["holding:65536", "the offset must be 0 to 65535, got 65536"],
    ["holding:1.16", "a register has bits 0 to 15, got .16"],
    ["coil:3.1", "only registers have bits; a coil is one bit already"],
    ["holdng:3", 'did you mean "holding:"?'],
    [40101.3, 'quote a bit address, e.g. "40101.3", or write holding:100.3'],
    [0, "Modicon addresses count from 1 (40001 is holding:0)"],
    [40000, "Modicon addresses count from 1 (40001); write holding:0 for a 0-based address"],
    [20001, "2xxxx is not a Modbus area (0 coil, 1 discrete, 3 input, 4 holding)"],
  ])("%s is refused", (raw, message) => {
    expect(parseAddress(raw)).toEqual({ ok: false, message });
  });

  it("widths follow the type", () => {
    const t = (type: string, extra = {}) => tagWidth({ type: type as never, address: { area: "holding", offset: 0 }, length: undefined, ...extra });
    expect([t("int16"), t("float32"), t("uint64"), t("string", { length: 7 }), t("bit")]).toEqual([1, 2, 4, 7, 1]);
  });
});

describe("units", () => {
  it("are found by UNECE display name, spelling or code", () => {
    expect(parseUnit("°C")).toMatchObject({ ok: true, value: { code: "CEL", unitId: 4408652, displayName: "°C" } });
    expect(parseUnit("%")).toMatchObject({ ok: true, value: { code: "P1", unitId: 20529, displayName: "%" } });
    expect(parseUnit("CEL")).toMatchObject({ ok: true, value: { unitId: 4408652 } });
    expect(parseUnit("V")).toMatchObject({ ok: true, value: { code: "VLT" } });
    expect(parseUnit("2G")).toMatchObject({ ok: true, value: { code: "2G", displayName: "V" } });
  });

  it("suggest the table's spelling", () => {
    expect(parseUnit("degC")).toEqual({ ok: false, message: 'not in the UNECE unit table; did you mean "°C"?' });
    expect(parseUnit("m3/h")).toEqual({ ok: false, message: 'not in the UNECE unit table; did you mean "m³/h"?' });
  });
});

// Each broken map with every issue it must produce, as `line:column path: message`.
const broken: [name: string, yaml: string, issues: string[]][] = [
  [
    "wrong type name",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: 127.0.0.1\n    tags:\n      - { name: t, address: holding:0, type: float }\n`,
    ["6:46 devices[0].tags[0].type: expected one of \"bool\", \"int16\", \"uint16\", \"int32\", \"uint32\", \"int64\", \"uint64\", \"float32\", \"float64\", \"string\", \"bit\", got \"float\""],
  ],
  [
    "address out of range",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: 127.0.0.1\n    tags:\n      - { name: t, address: holding:70000 }\n`,
    ["6:29 devices[0].tags[0].address: expected a Modbus address like holding:100, input:0, coil:5, holding:100.3 or 40101, got \"holding:70000\"; the offset must be 0 to 65535, got 70000"],
  ],
  [
    "type runs past 65535",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: 127.0.0.1\n    tags:\n      - { name: t, address: holding:65534, type: float64 }\n`,
    ["6:29 devices[0].tags[0].address: float64 at holding:65534 needs 4 registers and runs past the last address, 65535"],
  ],
  [
    "two tags on one NodeId",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: 127.0.0.1\n    tags:\n      - { name: t, address: holding:0 }\n      - { name: t, address: holding:1 }\n`,
    ["7:17 devices[0].tags[1].name: two tags named \"t\" would share NodeId ns=1;s=plc.t (first at tags[0])"],
  ],
  [
    "device and tag NodeIds clash",
    `devices:\n  - name: a\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: b.c, address: holding:0 }\n  - name: a.b\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: c, address: holding:1 }\n`,
    ["11:17 devices[1].tags[0].name: NodeId ns=1;s=a.b.c of tag \"c\" of device \"a.b\" is already the NodeId of tag \"b.c\" of device \"a\""],
  ],
  [
    "two devices with one name",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags: [{ name: t, address: holding:0 }]\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags: [{ name: u, address: holding:0 }]\n`,
    ["6:11 devices[1].name: two devices named \"plc\" (first at devices[0]); device names must be unique"],
  ],
  [
    "a bus that does not exist",
    `buses:\n  rs485-1: { port: /dev/ttyUSB0 }\ndevices:\n  - name: m\n    driver: modbus-rtu\n    bus: rs485-2\n    tags: [{ name: t, address: holding:0 }]\n`,
    ["6:10 devices[0].bus: no bus named \"rs485-2\"; did you mean \"rs485-1\"?"],
  ],
  [
    "no buses at all",
    `devices:\n  - name: m\n    driver: modbus-rtu\n    bus: rs485-1\n    tags: [{ name: t, address: holding:0 }]\n`,
    ["4:10 devices[0].bus: no bus named \"rs485-1\"; no buses are defined under `buses`"],
  ],
  [
    "overlapping writes",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holding:10, type: float32, access: readwrite }\n      - { name: b, address: holding:11, access: readwrite }\n`,
    ["7:29 devices[0].tags[1].address: writable tags overlap: holding:11 (uint16) writes what tags[0] \"a\" at holding:10 writes"],
  ],
  [
    "overlapping bit writes",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holding:10.2, type: bit, access: readwrite }\n      - { name: b, address: holding:10, access: readwrite }\n`,
    ["7:29 devices[0].tags[1].address: writable tags overlap: holding:10 (uint16) writes what tags[0] \"a\" at holding:10.2 writes"],
  ],
  [
    "write to an input register",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: input:0, access: readwrite }\n`,
    ["6:46 devices[0].tags[0].access: input registers are read-only in Modbus: expected read, or a holding address"],
  ],
  [
    "missing host",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    tags:\n      - { name: a, address: input:0 }\n`,
    ["2:5 devices[0].host: missing required key; modbus-tcp needs the host to connect to"],
  ],
  [
    "unknown driver",
    `devices:\n  - name: plc\n    driver: modbus\n    host: h\n    tags:\n      - { name: a, address: input:0 }\n`,
    ["3:13 devices[0].driver: expected one of \"modbus-tcp\", \"modbus-rtu\", \"modbus-rtu-over-tcp\", \"modbus-ascii\", \"simulator\", \"mbus\", got \"modbus\""],
  ],
  [
    "float on a coil",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: coil:0, type: float32 }\n`,
    ["6:43 devices[0].tags[0].type: a coil holds one bit: expected bool, got float32"],
  ],
  [
    "string without length",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holding:0, type: string }\n`,
    ["6:46 devices[0].tags[0].type: a string tag needs `length` (registers, 2 characters each)"],
  ],
  [
    "bit without bit index",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holding:0, type: bit }\n`,
    ["6:29 devices[0].tags[0].address: a bit tag names its bit: expected an address like holding:100.3"],
  ],
  [
    "bit index on a uint16",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holding:0.4 }\n`,
    ["6:29 devices[0].tags[0].address: holding:0.4 is one bit of a register: expected type bit, got uint16"],
  ],
  [
    "range upside down",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holding:0, range: [100, 0] }\n`,
    ["6:47 devices[0].tags[0].range: expected [low, high] with low < high, got [100, 0]"],
  ],
  [
    "limit alarm limits out of order",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holding:0, alarms: { highHigh: 90, high: 95, low: 10, lowLow: 10 } }\n`,
    ["6:70 devices[0].tags[0].alarms.high: expected high below highHigh (90), got 95", "6:91 devices[0].tags[0].alarms.lowLow: expected lowLow below low (10), got 10"],
  ],
  [
    "limit alarm without limits, and on a bool",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holding:0, alarms: {} }\n      - { name: b, address: coil:0, alarms: { high: 1 } }\n`,
    ["6:48 devices[0].tags[0].alarms: expected at least one of highHigh, high, low, lowLow", "7:45 devices[0].tags[1].alarms: alarms applies to numeric tags, this one is bool"],
  ],
  [
    "limit alarm key misspelt",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holding:0, alarms: { hihg: 90 } }\n`,
    ['6:50 devices[0].tags[0].alarms.hihg: unknown key; did you mean "high"?'],
  ],
  [
    "unknown unit",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holding:0, unit: degC }\n`,
    ["6:46 devices[0].tags[0].unit: expected a UNECE unit such as \"°C\", \"bar\", \"kW\", \"m³/h\", \"%\" (or its code, e.g. CEL), got \"degC\"; not in the UNECE unit table; did you mean \"°C\"?"],
  ],
  [
    "scale zero",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holding:0, scale: 0 }\n`,
    ["6:47 devices[0].tags[0].scale: expected a scale other than 0 (every raw value would read 0 + offset)"],
  ],
  [
    "unit on a bool",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: coil:0, unit: "°C" }\n`,
    ["6:43 devices[0].tags[0].unit: unit applies to numeric tags, this one is bool"],
  ],
  [
    "name with a slash",
    `devices:\n  - name: plc/1\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: coil:0 }\n`,
    ["2:11 devices[0].name: expected a name of letters, digits, \"_\", \"-\" and \".\" (no spaces or \"/\"), such as boiler or motor1.speed, got \"plc/1\""],
  ],
  [
    "unit id 0 on a serial bus",
    `buses:\n  b: { port: /dev/ttyS0 }\ndevices:\n  - name: m\n    driver: modbus-rtu\n    bus: b\n    unitId: 0\n    tags: [{ name: t, address: holding:0 }]\n`,
    ["7:13 devices[0].unitId: expected a unit id between 1 and 247 on a serial line (0 is broadcast, which never answers), got 0"],
  ],
  [
    "host on an RTU device",
    `buses:\n  b: { port: /dev/ttyS0 }\ndevices:\n  - name: m\n    driver: modbus-rtu\n    bus: b\n    host: 10.0.0.1\n    tags: [{ name: t, address: holding:0 }]\n`,
    ["7:11 devices[0].host: host applies to modbus-tcp and modbus-rtu-over-tcp, this device is modbus-rtu"],
  ],
  [
    "string longer than a request",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    maxRegistersPerRead: 16\n    tags:\n      - { name: a, address: holding:0, type: string, length: 20 }\n`,
    ["7:62 devices[0].tags[0].length: the tag needs 20 registers but the device reads at most 16 per request (maxRegistersPerRead)"],
  ],
  [
    "maxRegistersPerRead over Modbus's limit",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    maxRegistersPerRead: 200\n    tags:\n      - { name: a, address: holding:0 }\n`,
    ["5:26 devices[0].maxRegistersPerRead: expected an integer between 1 and 125, got 200"],
  ],
  [
    "no tags",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags: []\n`,
    ["5:11 devices[0].tags: expected a list of at least 1 item, each a mapping, got an empty list"],
  ],
  [
    "rate too fast",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, address: holding:0, rate: 1ms }\n`,
    ["6:46 devices[0].tags[0].rate: expected a duration between 10ms and 1d (like 500ms, 10s, 5m, 1h), got \"1ms\""],
  ],
  [
    "misspelt key",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    tags:\n      - { name: a, adress: holding:0 }\n`,
    ["6:9 devices[0].tags[0].address: missing required key; expected a Modbus address like holding:100, input:0, coil:5, holding:100.3 or 40101", "6:20 devices[0].tags[0].adress: unknown key; did you mean \"address\"?"],
  ],
  [
    "byte order typo",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    byteOrder: CBAD\n    tags:\n      - { name: a, address: holding:0 }\n`,
    ["5:16 devices[0].byteOrder: expected one of \"ABCD\", \"CDAB\", \"BADC\", \"DCBA\", got \"CBAD\""],
  ],
  [
    "retryBackoff above maxBackoff",
    `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    retryBackoff: 1m\n    maxBackoff: 10s\n    tags:\n      - { name: a, address: holding:0 }\n`,
    ["5:19 devices[0].retryBackoff: expected at most maxBackoff (10s), got 1m"],
  ],
  [
    "two buses on one port",
    `buses:\n  a: { port: /dev/ttyS0 }\n  b: { port: /dev/ttyS0, baudRate: 19200 }\ndevices: []\n`,
    ["3:14 buses.b.port: /dev/ttyS0 is already the port of bus \"a\"; put the devices of both on one bus"],
  ],
];

describe("broken maps", () => {
  it.each(broken)("%s", (_name, yaml, expected) => {
    expect(issuesOf(yaml)).toEqual(expected);
  });

  it("are at least 20, each refused", () => {
    expect(broken.length).toBeGreaterThanOrEqual(20);
    for (const [, , issues] of broken) expect(issues.length).toBeGreaterThan(0);
  });
});

describe("config/devices.schema.json", () => {
  it("is what the code produces (regenerate: node dist/src/build/write-schema.js)", () => {
    expect(readFileSync(join(repo, "config/devices.schema.json"), "utf8")).toBe(renderDeviceMapJsonSchema(DRIVERS));
  });

  it("describes every device and tag key, and the issue's key names", () => {
    type Props = Record<string, { description?: string; default?: unknown; items?: { properties?: Props; allOf?: Branch[] } }>;
    type Branch = { if: { properties: { driver: { enum: string[] } } }; then: { properties: Props } };
    const schema = JSON.parse(renderDeviceMapJsonSchema(DRIVERS)) as { properties: Props };
    // Each protocol's keys are in its own branch (Modbus's, M-Bus's): Modbus TCP's here.
    const device = schema.properties.devices!.items!.allOf!.find((b) => b.if.properties.driver.enum.includes("modbus-tcp"))!.then.properties;
    const tag = device.tags!.items!.properties!;
    for (const key of ["name", "driver", "host", "port", "bus", "unitId", "timeout", "tags"]) expect(device[key]?.description, key).toBeTruthy();
    for (const key of ["name", "address", "type", "byteOrder", "scale", "offset", "unit", "range", "rate", "access", "history", "alarms"]) {
      expect(tag[key]?.description, key).toBeTruthy();
    }
    expect(tag.access?.default).toBe("read");
  });
});
