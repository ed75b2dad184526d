// What the driver interface gives any driver beside its keys, shown with the test-only telemeter
// driver (test/drivers/telemeter.ts) rather than a built-in one: its bus's line settings and its
// devices' rate by default, checks across the devices of one bus, a CLI command of its own, and
// the search for devices, which a driver without one refuses by name. src/ names none of them.
import { describe, expect, it } from "vitest";
import { builtinDrivers } from "../../drivers/builtin.js";
import { deviceMapSchema, type DeviceSyntax } from "../../src/config/device-map.js";
import { validateYaml } from "../../src/config/load.js";
import { discoverDevices, discoveringDrivers } from "../../src/devices/discovery.js";
import type { DriverProtocol } from "../../src/devices/registry.js";
import { MeterBus, TELEMETER, TELEMETER_PROTOCOL, telemeterDriver } from "../drivers/telemeter.js";

/** The telemeter with a slow line of its own, a default rate, and no two meters on one number per bus. */
const syntax: DeviceSyntax = {
  ...TELEMETER_PROTOCOL.syntax,
  lineDefaults: { baudRate: 1200, parity: "none" },
  defaultRate: "15m",
  checkBus: (bus, name, members, c) => {
    const seen = new Map<string, number>();
    for (const { device, index } of members) {
      const meter = (device as unknown as { meter: string }).meter;
      if (seen.has(meter)) c.report(["devices", index, "meter"], `meter ${meter} is on bus "${name}" at ${bus.baudRate} baud already (devices[${seen.get(meter)}])`);
      else seen.set(meter, index);
    }
  },
};
const protocol: DriverProtocol = { ...TELEMETER_PROTOCOL, syntax };
const bus = new MeterBus();
const drivers = builtinDrivers().register(TELEMETER, { ...telemeterDriver(bus), protocol });
drivers.command({ name: "telemeter", usage: "  fieldgate telemeter ping", run: async (args, ctx) => (ctx.out(`pong ${args.join(" ")}`), 0) });

const map = (more = "") => `buses:\n  m: { port: /dev/ttyM }\n  s: { port: /dev/ttyS, baudRate: 4800 }\ndevices:\n  - { name: a, driver: telemeter, bus: m, meter: "00000001", tags: [{ name: v, record: volume }] }\n${more}`;

describe("the driver interface's extensions, for a driver defined in a test", () => {
  it("gives a bus its devices' driver's line settings where the map gives none, and their devices its rate", () => {
    const r = validateYaml(deviceMapSchema(drivers), map('  - { name: b, driver: telemeter, bus: s, meter: "00000002", tags: [{ name: v, record: volume }] }\n'), "devices.yaml");
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    expect(r.value.buses.m).toMatchObject({ baudRate: 1200, parity: "none", dataBits: 8, stopBits: 1 });
    expect(r.value.buses.s).toMatchObject({ baudRate: 4800, parity: "none" });
    expect(r.value.devices[0]!.rate).toBe(15 * 60_000);
    expect(r.value.devices[0]!.tags[0]!.rate).toBe(15 * 60_000);
  });

  it("runs the driver's checks across the devices of one bus, with the bus resolved", () => {
    const r = validateYaml(deviceMapSchema(drivers), map('  - { name: b, driver: telemeter, bus: m, meter: "00000001", tags: [{ name: v, record: volume }] }\n'), "devices.yaml");
    expect(r.ok ? [] : r.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`)).toEqual(['6:50 devices[1].meter: meter 00000001 is on bus "m" at 1200 baud already (devices[0])']);
  });

  it("adds the driver's command, and tells what cannot search for devices", async () => {
    const out: string[] = [];
    expect(drivers.commandList().map((c) => c.name)).toEqual(["mbus", "telemeter"]);
    expect(await drivers.commandNamed("telemeter")!.run(["x"], { drivers, out: (s) => out.push(s), err: () => undefined })).toBe(0);
    expect(out).toEqual(["pong x"]);
    expect(() => drivers.command({ name: "telemeter", usage: "", run: async () => 0 })).toThrow('a command named "telemeter" is registered already');
    expect(discoveringDrivers(drivers)).toEqual(["mbus"]);
    await expect(discoverDevices(drivers, TELEMETER, { kind: "bus", name: "m", bus: { port: "/dev/null", baudRate: 1200, parity: "none", dataBits: 8, stopBits: 1, interRequestDelay: 0 } })).rejects.toThrow("the telemeter driver cannot search for devices (mbus can)");
    await expect(discoverDevices(drivers, "nothing", { kind: "tcp", host: "127.0.0.1", port: 1 })).rejects.toThrow('no driver "nothing" in this gateway');
  });
});
