// The cache of validated device maps (src/config/validated-cache.ts): used only for the same
// text of the same file and code, rewritten when the file changes, never for a file with issues
// (whose messages stay the validator's), ignored when unreadable or unwritable, moved aside when
// damaged, and giving back exactly the value validation gives.
import { ValueCache } from "../../src/values/value-cache.js";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadDeviceMap, validateDeviceMap } from "../../src/config/device-map.js";
import { DRIVERS, mapSchema } from "../helpers/map.js";
import { gatewaySchema } from "../../src/config/gateway-config.js";
import { ConfigError, validateFile } from "../../src/config/load.js";
import { DeviceNamespace } from "../../src/address-space/device-namespace.js";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { FakeClock } from "../../src/sampling/clock.js";
import { DeviceRuntime } from "../../src/devices/device-runtime.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { driversWith, FakeDriver } from "../devices/fake-driver.js";
import { cacheText, validateFileCached } from "../../src/config/validated-cache.js";
import type { DamagedFile } from "../../src/storage/damaged.js";
import { randomBytes } from "node:crypto";
import { testSlicer } from "../helpers/slicer.js";

const MAP = `buses:
  line1: { port: /dev/ttyUSB0, baudRate: 19200, parity: none }
devices:
  - name: boiler
    driver: modbus-tcp
    host: 10.0.0.5
    byteOrder: CDAB
    rate: 500ms
    writeRoles: [viewer, operator]
    description: Boiler room
    tags:
      - { name: temperature, address: holding:100, type: float32, scale: 0.1, offset: -5, unit: "°C", range: [0, 150], history: true }
      - { name: setpoint, address: 40201, unit: CEL, access: readwrite, rate: 2s }
      - { name: running, address: coil:0 }
      - { name: alarm, address: "holding:7.3", type: bit, description: "High \\"alarm\\"" }
      - { name: label, address: holding:10, type: string, length: 4 }
      - { name: energy, address: input:0, type: uint64, byteOrder: DCBA }
  - name: drive
    driver: modbus-rtu
    bus: line1
    unitId: 7
    enabled: false
    tags:
      - name: speed
        address: holding:1
        type: int16
`;

let dir: string | undefined;

function setup(): { file: string; cache: string } {
  dir = mkdtempSync(join(tmpdir(), "fieldgate-cache-"));
  const file = join(dir, "devices.yaml");
  writeFileSync(file, MAP);
  return { file, cache: join(dir, "data", "cache") };
}

afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function cacheFiles(cache: string): string[] {
  try {
    return readdirSync(cache);
  } catch {
    return [];
  }
}

describe("the validated-map cache", () => {
  it("keeps a valid map and gives it back, equal to what validation gives, while file and code are unchanged", () => {
    const { file, cache } = setup();
    const fresh = validateFile(mapSchema, file);
    expect(fresh.ok).toBe(true);
    const first = loadDeviceMap(file, DRIVERS, cache);
    expect(first).toStrictEqual(fresh.ok && fresh.value);
    const [name] = cacheFiles(cache);
    expect(name).toBe("device-map.json");
    // The second load is the cache's: a marker put in its value comes back.
    const stored = JSON.parse(readFileSync(join(cache, name!), "utf8")) as { key: string; value: { devices: { name: string }[] } };
    expect(loadDeviceMap(file, DRIVERS, cache)).toStrictEqual(first);
    stored.value.devices[0]!.name = "from-the-cache";
    writeFileSync(join(cache, name!), cacheText(stored.key, stored.value));
    expect(loadDeviceMap(file, DRIVERS, cache).devices[0]!.name).toBe("from-the-cache");
    // A changed file is validated again and cached anew.
    writeFileSync(file, MAP.replace("rate: 500ms", "rate: 750ms"));
    const changed = loadDeviceMap(file, DRIVERS, cache);
    expect(changed.devices[0]!.name).toBe("boiler");
    expect(changed.devices[0]!.rate).toBe(750);
    expect(cacheFiles(cache)).toEqual([name]);
    expect(loadDeviceMap(file, DRIVERS, cache)).toStrictEqual(changed);
  });

  it("puts off the write when asked: nothing is kept until it runs, then the next load is the cache's", () => {
    const { file, cache } = setup();
    const writes: (() => void)[] = [];
    const defer = { defer: (write: () => void) => void writes.push(write) };
    const first = loadDeviceMap(file, DRIVERS, cache, defer);
    expect(writes).toHaveLength(1);
    expect(cacheFiles(cache)).toEqual([]);
    writes[0]!();
    expect(cacheFiles(cache)).toEqual(["device-map.json"]);
    const stored = JSON.parse(readFileSync(join(cache, "device-map.json"), "utf8")) as { key: string; value: { devices: { name: string }[] } };
    expect(stored.value).toStrictEqual(JSON.parse(JSON.stringify(first)));
    stored.value.devices[0]!.name = "from-the-cache";
    writeFileSync(join(cache, "device-map.json"), cacheText(stored.key, stored.value));
    // Read back, nothing to write; a changed file is validated again, its write put off again.
    expect(loadDeviceMap(file, DRIVERS, cache, defer).devices[0]!.name).toBe("from-the-cache");
    expect(writes).toHaveLength(1);
    writeFileSync(file, MAP.replace("rate: 500ms", "rate: 750ms"));
    expect(loadDeviceMap(file, DRIVERS, cache, defer).devices[0]!.rate).toBe(750);
    expect(writes).toHaveLength(2);
    expect(JSON.parse(readFileSync(join(cache, "device-map.json"), "utf8"))).toMatchObject({ key: stored.key, value: stored.value });
    writes[1]!();
    const rewritten = JSON.parse(readFileSync(join(cache, "device-map.json"), "utf8")) as typeof stored;
    expect(rewritten.key).not.toBe(stored.key);
    expect(rewritten.value.devices[0]!.name).toBe("boiler");
    // A map with issues has no write to put off.
    writeFileSync(file, MAP.replace("type: float32", "type: float33"));
    expect(validateDeviceMap(file, DRIVERS, cache, defer).ok).toBe(false);
    expect(writes).toHaveLength(2);
  });

  it("never serves a map with issues: the messages are the validator's, and nothing is cached", () => {
    const { file, cache } = setup();
    loadDeviceMap(file, DRIVERS, cache);
    const before = readFileSync(join(cache, cacheFiles(cache)[0]!), "utf8");
    writeFileSync(file, MAP.replace("type: float32", "type: float33"));
    const cached = validateDeviceMap(file, DRIVERS, cache);
    expect(cached.ok).toBe(false);
    expect(cached.issues).toEqual(validateFile(mapSchema, file).issues);
    expect(() => loadDeviceMap(file, DRIVERS, cache)).toThrow(ConfigError);
    expect(readFileSync(join(cache, cacheFiles(cache)[0]!), "utf8")).toBe(before);
  });

  it("validates as usual when the cache is unreadable, unwritable, or the file is missing", () => {
    const { file, cache } = setup();
    const fresh = validateFile(mapSchema, file);
    loadDeviceMap(file, DRIVERS, cache);
    writeFileSync(join(cache, cacheFiles(cache)[0]!), "{ not json");
    expect(loadDeviceMap(file, DRIVERS, cache)).toStrictEqual(fresh.ok && fresh.value);
    // A cache folder that cannot be made (a file is in its place).
    const blocked = join(dir!, "blocked");
    writeFileSync(blocked, "");
    expect(validateFileCached(mapSchema, file, join(blocked, "cache", "device-map.json"))).toStrictEqual(fresh);
    const missing = join(dir!, "nope.yaml");
    expect(validateDeviceMap(missing, DRIVERS, cache)).toEqual(validateFile(mapSchema, missing));
  });

  it("moves a damaged cache aside and validates the YAML: a flipped character that is still JSON, a file cut short, random bytes", () => {
    const { file, cache } = setup();
    const fresh = validateFile(mapSchema, file);
    const cacheFile = join(cache, "device-map.json");
    const reports: DamagedFile[] = [];
    const onDamaged = (d: DamagedFile) => void reports.push(d);
    const damages: [string, (b: Buffer) => Buffer][] = [
      // 10.0.0.5 read back as 10.0.0.6: JSON still, the checksum tells.
      ["flip", (b) => Buffer.from(b.toString("utf8").replace('"10.0.0.5"', '"10.0.0.6"'))],
      ["cut", (b) => b.subarray(0, b.length >> 1)],
      ["random", (b) => randomBytes(b.length)],
    ];
    for (const [what, damage] of damages) {
      loadDeviceMap(file, DRIVERS, cache);
      const damaged = damage(readFileSync(cacheFile));
      writeFileSync(cacheFile, damaged);
      const n = reports.length;
      const result = validateDeviceMap(file, DRIVERS, cache, { onDamaged });
      expect(result, what).toStrictEqual(fresh);
      expect(reports.length, what).toBe(n + 1);
      const d = reports.at(-1)!;
      expect(d.kind).toBe("device-map-cache");
      expect(d.file).toBe(cacheFile);
      expect(readFileSync(d.movedTo).equals(damaged), what).toBe(true);
      // Kept again, whole: the next load is the cache's, and nothing more is reported.
      expect(validateDeviceMap(file, DRIVERS, cache, { onDamaged })).toStrictEqual(fresh);
      expect(reports.length, what).toBe(n + 1);
    }
    expect(new Set(reports.map((d) => d.movedTo)).size).toBe(3);
    expect(reports[0]!.reason).toContain("checksum");
  });

  it("ignores, without reporting it, a cache it does not read: the layout of an older build, or no onDamaged to report to", () => {
    const { file, cache } = setup();
    const fresh = validateFile(mapSchema, file);
    const cacheFile = join(cache, "device-map.json");
    loadDeviceMap(file, DRIVERS, cache);
    const whole = JSON.parse(readFileSync(cacheFile, "utf8")) as { key: string; value: unknown };
    const reports: DamagedFile[] = [];
    writeFileSync(cacheFile, JSON.stringify({ key: whole.key, value: whole.value }));
    expect(validateDeviceMap(file, DRIVERS, cache, { onDamaged: (d) => void reports.push(d) })).toStrictEqual(fresh);
    expect(reports).toEqual([]);
    writeFileSync(cacheFile, "garbage");
    expect(validateDeviceMap(file, DRIVERS, cache)).toStrictEqual(fresh);
    expect(cacheFiles(cache)).toEqual(["device-map.json"]);
  });

  it("serves the same map text at another path (a device map has no paths), but not a file whose paths resolve elsewhere", () => {
    const { file, cache } = setup();
    const first = loadDeviceMap(file, DRIVERS, cache);
    mkdirSync(join(dir!, "elsewhere"));
    const moved = join(dir!, "elsewhere", "map.yaml");
    writeFileSync(moved, MAP);
    const stored = JSON.parse(readFileSync(join(cache, "device-map.json"), "utf8")) as { key: string; value: { devices: { name: string }[] } };
    stored.value.devices[0]!.name = "from-the-cache";
    writeFileSync(join(cache, "device-map.json"), cacheText(stored.key, stored.value));
    expect(loadDeviceMap(moved, DRIVERS, cache).devices[0]!.name).toBe("from-the-cache");
    expect(first.devices[0]!.name).toBe("boiler");
    // gateway.yaml has paths (dataDir, devices): the same text in another folder means other paths.
    const gw = "dataDir: ./data\ndevices: ./devices.yaml\n";
    const a = join(dir!, "gateway.yaml");
    const b = join(dir!, "elsewhere", "gateway.yaml");
    writeFileSync(a, gw);
    writeFileSync(b, gw);
    const gwCache = join(cache, "gateway.json");
    const ra = validateFileCached(gatewaySchema, a, gwCache);
    const rb = validateFileCached(gatewaySchema, b, gwCache);
    expect(ra.ok && ra.value.dataDir).toBe(join(dir!, "data"));
    expect(rb.ok && rb.value.dataDir).toBe(join(dir!, "elsewhere", "data"));
  });

  it("a map read back from the cache is the same to a reload: every device unchanged, every node kept", async () => {
    const { file, cache } = setup();
    const validated = loadDeviceMap(file, DRIVERS, cache);
    const cached = loadDeviceMap(file, DRIVERS, cache);
    expect(cached).not.toBe(validated);
    const clock = new FakeClock(0);
    const scheduler = new DeadlineScheduler(clock);
    const registry = new NamespaceRegistry();
    new Ns0Manager(registry, { applicationUri: "urn:x", buildInfo: { buildDate: 0 } });
    const values = new ValueCache();
    const devices = new DeviceNamespace(registry, { values });
    const runtime = new DeviceRuntime({ scheduler, clock, nodes: devices, values, drivers: driversWith(() => new FakeDriver()), slicer: testSlicer(clock) });
    try {
      await runtime.apply(validated);
      const before = devices.variable("boiler", "temperature");
      const report = await runtime.apply(cached);
      expect(report).toEqual({ added: [], removed: [], changed: [], unchanged: ["boiler"], details: [] });
      expect(devices.variable("boiler", "temperature")).toBe(before);
    } finally {
      await runtime.stop();
      scheduler.stop();
    }
  });
});
