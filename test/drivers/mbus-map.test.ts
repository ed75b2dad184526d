// M-Bus and Modbus ASCII in the device map: their keys and checks with file:line:column messages,
// and what the driver interface gives a driver beside its keys: its bus's line settings by
// default (M-Bus 2400 8E1, Modbus ASCII 7 data bits, the others 9600 8E1 as before), its own
// default poll rate, and checks across the meters of one bus (a rate faster than a readout can
// take at the bus's speed, two meters at one address, a bus that cannot carry its meters).
import { describe, expect, it } from "vitest";
import { builtinDrivers } from "../../drivers/builtin.js";
import { worstReadTime } from "../../drivers/mbus/timing.js";
import { deviceMapSchema, type DeviceMap } from "../../src/config/device-map.js";
import { validateYaml } from "../../src/config/load.js";

const schema = deviceMapSchema(builtinDrivers());

function check(yaml: string): { ok: true; map: DeviceMap } | { ok: false; issues: string[] } {
  const r = validateYaml(schema, yaml, "devices.yaml");
  return r.ok ? { ok: true, map: r.value } : { ok: false, issues: r.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`) };
}
function issues(yaml: string): string[] {
  const r = check(yaml);
  return r.ok ? [] : r.issues;
}

/** A map of one meter on bus `m` with `device` keys (indented 4) and `tags` (indented 6). */
const meter = (device: string, tags = "      - { name: energy, quantity: Energy }\n", bus = "  m: { port: /dev/ttyUSB0 }\n") =>
  `buses:\n${bus}devices:\n  - name: heat\n    driver: mbus\n    bus: m\n${device}    tags:\n${tags}`;

describe("an M-Bus device in the map", () => {
  it("takes its keys, its bus 2400 baud 8E1 and a rate of one minute by default", () => {
    const r = check(meter("    address: 17\n", "      - { name: energy, quantity: Energy }\n      - { name: flow_max, quantity: flowTemperature, function: maximum, storage: 1 }\n      - { name: fab, record: 0, type: text }\n"));
    if (!r.ok) throw new Error(r.issues.join("\n"));
    expect(r.map.buses.m).toEqual({ port: "/dev/ttyUSB0", baudRate: 2400, parity: "even", dataBits: 8, stopBits: 1, interRequestDelay: 0 });
    const d = r.map.devices[0]!;
    expect(d).toMatchObject({ driver: "mbus", address: 17, telegrams: 1, retries: 2, rate: 60_000 });
    expect(d.tags[1]).toMatchObject({ quantity: "Flow temperature", function: "maximum", storage: 1, rate: 60_000 });
    expect(d).not.toHaveProperty("unitId");
  });

  it("keeps what the bus gives, and Modbus's buses as they were", () => {
    const r = check(meter("    address: 1\n", undefined, "  m: { port: /dev/ttyUSB0, baudRate: 9600, parity: none }\n"));
    if (!r.ok) throw new Error(r.issues.join("\n"));
    expect(r.map.buses.m).toMatchObject({ baudRate: 9600, parity: "none", dataBits: 8, stopBits: 1 });
    const rtu = check("buses:\n  r: { port: /dev/ttyS0 }\n  a: { port: /dev/ttyS1 }\n  idle: { port: /dev/ttyS2 }\ndevices:\n  - { name: plc, driver: modbus-rtu, bus: r, tags: [{ name: x, address: holding:0 }] }\n  - { name: old, driver: modbus-ascii, bus: a, tags: [{ name: y, address: holding:0 }] }\n");
    if (!rtu.ok) throw new Error(rtu.issues.join("\n"));
    expect(rtu.map.buses.r).toMatchObject({ baudRate: 9600, parity: "even", dataBits: 8, stopBits: 1 });
    expect(rtu.map.buses.a).toMatchObject({ baudRate: 9600, parity: "even", dataBits: 7, stopBits: 1 });
    expect(rtu.map.buses.idle).toMatchObject({ baudRate: 9600, parity: "even", dataBits: 8, stopBits: 1 });
    expect(rtu.map.devices[0]!.rate).toBe(1000);
  });

  it("reaches a meter through a TCP converter by its secondary address", () => {
    const r = check('devices:\n  - name: w\n    driver: mbus\n    host: 10.0.0.9\n    port: 10001\n    secondaryAddress: "06855817 2C2D0804"\n    tags: [{ name: v, quantity: Volume }]\n'.replace("06855817 2C2D0804", "068558172C2D0804"));
    if (!r.ok) throw new Error(r.issues.join("\n"));
    expect(r.map.devices[0]).toMatchObject({ host: "10.0.0.9", port: 10001, secondaryAddress: { id: "06855817", manufacturer: 0x2c2d, version: 8, medium: 4 } });
  });

  const worst = (baud: number, telegrams = 1) => (worstReadTime(baud, telegrams, false) / 1000).toFixed(2);

  it.each([
    ["no address", meter(""), ["4:5 devices[0].address: missing required key; a meter is read at its primary `address` or by its `secondaryAddress`"]],
    ["two addresses", meter('    address: 3\n    secondaryAddress: "12345678"\n'), ['8:23 devices[0].secondaryAddress: a meter is read by one address: its primary `address` or its `secondaryAddress`, not both']],
    ["a primary address past 250", meter("    address: 251\n"), ["7:14 devices[0].address: expected an integer between 0 and 250, got 251"]],
    ["a secondary address written as a number", meter("    secondaryAddress: 12345678\n"), ["7:23 devices[0].secondaryAddress: expected a secondary address: the meter's 8-digit ID (\"12345678\", F for any digit), or the 16 hexadecimal digits the scan prints, got 12345678; quote it: a secondary address is text, its leading zeros and F wildcards count"]],
    ["a quantity mistyped, with a suggestion", meter("    address: 3\n", "      - { name: v, quantity: Volum }\n"), ['9:30 devices[0].tags[0].quantity: expected a quantity of EN 13757-3 such as "Energy", "Volume", "Flow temperature", "Power", got "Volum"; did you mean "Volume"?']],
    ["a tag that names no record", meter("    address: 3\n", "      - { name: v, storage: 1 }\n"), ["9:9 devices[0].tags[0].record: missing required key; a tag names its record: `record: N`, or `quantity:` (with storage, function, tariff, subunit where not 0 / instantaneous)"]],
    ["a record and a quantity", meter("    address: 3\n", "      - { name: v, record: 1, quantity: Volume }\n"), ["9:41 devices[0].tags[0].quantity: a tag names its record once: by `record` or by `quantity`, not both"]],
    ["storage beside a record", meter("    address: 3\n", "      - { name: v, record: 1, storage: 2 }\n"), ["9:40 devices[0].tags[0].storage: storage applies to a tag that names its quantity; `record` names one record already"]],
    ["two tags of one record", meter("    address: 3\n", "      - { name: a, quantity: Volume }\n      - { name: b, quantity: volume, storage: 0 }\n"), ['10:30 devices[0].tags[1].quantity: Volume is read by tags[0] "a" already, alike']],
    ["a write", meter("    address: 3\n", "      - { name: v, quantity: Volume, access: readwrite }\n"), ["9:46 devices[0].tags[0].access: an M-Bus meter's records are read-only: expected read"]],
    ["a scaled value without its unit", meter("    address: 3\n", "      - { name: e, quantity: Energy, scale: 0.001 }\n"), ["9:45 devices[0].tags[0].scale: a scaled value is no longer in the meter's unit: give its `unit` too (e.g. kW·h for an energy scaled by 0.001)"]],
    ["a converter without its port", 'devices:\n  - { name: w, driver: mbus, host: gw, address: 1, tags: [{ name: v, quantity: Volume }] }\n', ["2:5 devices[0].port: missing required key; an M-Bus to TCP converter has no standard port: give its port"]],
    ["a bus and a host", meter("    address: 1\n    host: gw\n    port: 1\n"), ["8:11 devices[0].host: a meter is on a serial bus or behind a TCP converter, not both", "9:11 devices[0].port: a meter on a serial bus has no port; port applies to a TCP converter"]],
    ["a rate faster than a readout can take at the bus's speed", meter("    address: 3\n    rate: 1s\n"), [`8:11 devices[0].rate: a readout of this meter can take up to ${worst(2400)} s at 2400 baud (EN 13757-2: SND_NKE and 1 telegram of up to 261 characters of 11 bits, each answer up to 330 bit times + 50 ms after its request): expected a rate of at least 2s, got 1s`]],
    ["a tag's rate faster than that with more telegrams", meter("    address: 3\n    telegrams: 3\n", "      - { name: v, quantity: Volume, rate: 4s }\n"), [`10:44 devices[0].tags[0].rate: a readout of this meter can take up to ${worst(2400, 3)} s at 2400 baud (EN 13757-2: SND_NKE and 3 telegrams of up to 261 characters of 11 bits, each answer up to 330 bit times + 50 ms after its request): expected a rate of at least 5s, got 4s`]],
    ["two meters at one address of a bus", meter("    address: 3\n").replace("    tags:", "    tags: [{ name: a, quantity: Volume }]\n  - name: cold\n    driver: mbus\n    bus: m\n    address: 3\n    tags:"), ['12:14 devices[1].address: devices[0] is at primary address 3 on bus "m" already: two meters at one address answer at once and garble each other']],
    ["a Modbus device on the meters' bus", meter("    address: 3\n") + "  - { name: plc, driver: modbus-rtu, bus: m, tags: [{ name: x, address: holding:0 }] }\n", ['10:26 devices[1].driver: bus "m" carries mbus devices (devices[0]); a serial bus speaks one protocol: put the modbus-rtu devices on a bus of their own']],
  ])("refuses %s, at file:line:column, in its own words", (_what, yaml, expected) => {
    expect(issues(yaml)).toEqual(expected);
  });

  it("refuses a bus whose meters together need more than its time", () => {
    const devices = Array.from({ length: 3 }, (_, i) => `  - { name: m${i}, driver: mbus, bus: m, address: ${i + 1}, rate: 2s, tags: [{ name: v, quantity: Volume }] }\n`).join("");
    expect(issues(`buses:\n  m: { port: /dev/ttyUSB0 }\ndevices:\n${devices}`)).toEqual([
      `2:6 buses.m: the meters on this bus can need ${((3 * worstReadTime(2400, 1, false)) / 2000 * 100).toFixed(0)} % of its time at 2400 baud (each readout at the longest EN 13757-2 allows, at its rate): slow their rates, or split them over buses`,
    ]);
  });
});
