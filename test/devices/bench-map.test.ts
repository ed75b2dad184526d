// The `devices` bench scenario's map: valid, and coalesced into the minimum Modbus allows
// (4 requests per device of 100 tags: two holding blocks 60 registers apart, inputs, coils).
import { ValueCache } from "../../src/values/value-cache.js";
import { describe, expect, it } from "vitest";
import { benchDeviceMap, parseDevicesOptions } from "../../bench/scenarios/devices.js";
import { mapSchema } from "../helpers/map.js";
import { validateYaml } from "../../src/config/load.js";
import { DevicePoller } from "../../src/devices/device-poller.js";
import { MODBUS_PROTOCOL } from "../../drivers/modbus/definition.js";
import { FakeClock } from "../../src/sampling/clock.js";
import { FakeDriver } from "./fake-driver.js";
import { testSlicer } from "../helpers/slicer.js";

describe("the devices bench map", () => {
  it("is a valid map whose 100 tags per device take 4 requests per poll", () => {
    const r = validateYaml(mapSchema, benchDeviceMap([5020, 5021], 100), "devices.yaml");
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    expect(r.value.devices.map((d) => [d.name, d.port, d.tags.length])).toEqual([["plc0", 5020, 100], ["plc1", 5021, 100]]);
    const config = r.value.devices[0]!;
    const poller = new DevicePoller({ config, protocol: MODBUS_PROTOCOL, driver: new FakeDriver(), clock: new FakeClock(), values: new ValueCache(), slots: config.tags.map((_, i) => i), slicer: testSlicer() });
    expect(poller.groups.map((g) => g.blocks.map((b) => `${b.area}:${b.start}+${b.count}`))).toEqual([
      ["coil:0+20", "input:20+39", "holding:0+40", "holding:100+40"],
    ]);
  });

  it("takes its options", () => {
    expect(parseDevicesOptions(["--devices", "3", "--tags", "10", "--windows", "1"])).toMatchObject({ devices: 3, tags: 10, windows: 1, warmupSeconds: 5 });
  });
});
