// Objects/System: one sample fills every variable from the machine (values are the machine's own,
// so only their kinds and plausibility are checked), a scripted thermal zone gives an exact
// temperature, a machine without one gives BadNotSupported.
import { ValueCache } from "../../src/values/value-cache.js";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DeviceNamespace } from "../../src/address-space/device-namespace.js";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { SystemObject } from "../../src/address-space/system-object.js";
import { FakeClock } from "../../src/sampling/clock.js";
import { LatenessHistogram } from "../../src/sampling/lateness.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { BuiltinType, numericNodeId } from "../../src/ua/builtins.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { nodeIdEquals } from "../../src/ua/node-id.js";

const dir = mkdtempSync(join(tmpdir(), "fieldgate-system-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function setup(thermalDir: string, pollLateness?: LatenessHistogram) {
  const registry = new NamespaceRegistry();
  const ns0 = new Ns0Manager(registry, { applicationUri: "urn:x", buildInfo: { buildDate: 0 } });
  const devices = new DeviceNamespace(registry, { values: new ValueCache() });
  const system = new SystemObject(devices.ns, { dataDir: join(dir, "data", "not-yet-created"), thermalDir, pollLateness });
  return { ns0, system };
}

describe("the System object", () => {
  it("hangs under Objects as ns=1;i=2 and starts BadWaitingForInitialData", () => {
    const { ns0, system } = setup(dir);
    expect(nodeIdEquals(system.nodeId, numericNodeId(2, 1))).toBe(true);
    expect(ns0.references(numericNodeId(ObjectIds.ObjectsFolder))!.some((r) => nodeIdEquals(r.targetId, system.nodeId))).toBe(true);
    expect(system.variable("CpuLoad").value.statusCode).toBe(StatusCodes.BadWaitingForInitialData);
  });

  it("samples memory, disk of the data folder's partition, uptimes, CPU load and a thermal zone", async () => {
    const thermal = join(dir, "thermal");
    for (const [zone, type, milli] of [["thermal_zone0", "acpitz", "30000"], ["thermal_zone1", "x86_pkg_temp", "47500"]] as const) {
      mkdirSync(join(thermal, zone), { recursive: true });
      writeFileSync(join(thermal, zone, "type"), `${type}\n`);
      writeFileSync(join(thermal, zone, "temp"), `${milli}\n`);
    }
    const { system } = setup(thermal);
    const clock = new FakeClock(0);
    const scheduler = new DeadlineScheduler(clock);
    system.start(scheduler);
    // CPU ticks advance in 10 ms steps: let some pass before the first sample.
    await new Promise((r) => setTimeout(r, 50));
    await system.sample();
    const v = (name: Parameters<SystemObject["variable"]>[0]) => system.variable(name).value;
    expect(v("CpuTemperature").value).toEqual({ dataType: BuiltinType.Double, arrayType: 0, value: 47.5 });
    const total = v("MemoryTotal").value!.value as bigint;
    const available = v("MemoryAvailable").value!.value as bigint;
    expect(total).toBeGreaterThan(0n);
    expect(available).toBeLessThanOrEqual(total);
    expect(v("MemoryUsedPercent").value!.value).toBeGreaterThan(0);
    expect(v("DiskTotal").value!.value).toBeGreaterThan(0n);
    const used = v("DiskUsedPercent").value!.value as number;
    expect(used).toBeGreaterThanOrEqual(0);
    expect(used).toBeLessThanOrEqual(100);
    expect(v("Uptime").value!.value).toBeGreaterThan(0);
    expect(v("ProcessUptime").value!.value).toBeGreaterThan(0);
    expect(v("ProcessMemory").value!.dataType).toBe(BuiltinType.UInt64);
    const load = v("CpuLoad").value!.value as number;
    expect(load).toBeGreaterThanOrEqual(0);
    expect(load).toBeLessThanOrEqual(100);
    system.stop();
    expect(scheduler.size).toBe(0);
  });

  it("shows the lateness of device polls over the last interval, then starts over", async () => {
    const lateness = new LatenessHistogram();
    const { system } = setup(join(dir, "none"), lateness);
    for (let i = 1; i <= 100; i++) lateness.record(i / 10);
    lateness.record(250);
    await system.sample();
    const v = (name: Parameters<SystemObject["variable"]>[0]) => system.variable(name).value;
    expect(v("PollLatenessP50").value!.value).toBe(5.1);
    expect(v("PollLatenessP99").value!.value).toBe(10);
    expect(v("PollLatenessMax").value!.value).toBe(250);
    expect(v("Polls").value!.value).toBe(101);
    await system.sample();
    expect(v("PollLatenessP99").statusCode).toBe(StatusCodes.BadNoData);
    expect(v("Polls").value!.value).toBe(0);
  });

  it("says BadNotSupported for the temperature of a machine without a thermal zone", async () => {
    const { system } = setup(join(dir, "none"));
    await system.sample();
    expect(system.variable("CpuTemperature").value.statusCode).toBe(StatusCodes.BadNotSupported);
    expect(system.variable("MemoryTotal").value.statusCode).toBeUndefined();
  });
});
