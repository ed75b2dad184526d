// Failing devices (issue 9): a Modbus peer that answers slowly, answers garbage (bad CRC, wrong
// unit id, wrong function code, short frames), closes mid-frame, or vanishes. The peer is
// modbus-serial's ServerTCP behind a fault-injecting proxy (fault-proxy.ts), once as Modbus
// TCP and once as RTU framing over TCP. For each fault the victim's values go
// BadCommunicationError keeping their last value, and come back Good when the fault ends; two
// healthy devices on their own links keep polling through every fault, Good and without an
// error (slots run, never wall-clock figures: how late their slots ran is the bench's).
import { ValueCache } from "../../src/values/value-cache.js";
import { driversWith } from "../devices/fake-driver.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openModbusLink } from "../../drivers/modbus/index.js";
import { DeviceNamespace } from "../../src/address-space/device-namespace.js";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { mapSchema } from "../helpers/map.js";
import { validateYaml } from "../../src/config/load.js";
import { systemClock } from "../../src/sampling/clock.js";
import { DeviceRuntime } from "../../src/devices/device-runtime.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { startModbusSerialServer } from "../drivers/peers.js";
import { FaultProxy, type FaultMode } from "./fault-proxy.js";
import { testSlicer } from "../helpers/slicer.js";

const scheduler = new DeadlineScheduler(systemClock);
let runtime: DeviceRuntime;
let devices: DeviceNamespace;
let slave: { port: number; close(): Promise<void> };
let tcpProxy: FaultProxy;
let rtuProxy: FaultProxy;

beforeAll(async () => {
  // Holding register i of unit u reads 100*u + i (+1 per read of register 0, so values change).
  let reads = 0;
  slave = await startModbusSerialServer({
    getHoldingRegister: (addr: number, unit: number) => (addr === 0 ? reads++ & 0xffff : 100 * unit + addr),
    getInputRegister: (addr: number, unit: number) => 100 * unit + addr,
  });
  tcpProxy = new FaultProxy(slave.port, "tcp");
  await tcpProxy.listen();
  rtuProxy = new FaultProxy(slave.port, "rtu");
  await rtuProxy.listen();
  const registry = new NamespaceRegistry();
  new Ns0Manager(registry, { applicationUri: "urn:x", buildInfo: { buildDate: 0 } });
  const values = new ValueCache();
  devices = new DeviceNamespace(registry, { values });
  runtime = new DeviceRuntime({ scheduler, clock: systemClock, nodes: devices, values, drivers: driversWith((o) => openModbusLink(o)), slicer: testSlicer(systemClock, scheduler) });
  const device = (name: string, driver: string, port: number, unit: number) => `  - name: ${name}
    driver: ${driver}
    host: 127.0.0.1
    port: ${port}
    unitId: ${unit}
    rate: 100ms
    timeout: 150ms
    retryBackoff: 50ms
    maxBackoff: 200ms
    demoteAfter: 1000
    tags:
      - { name: counter, address: holding:0 }
      - { name: h5, address: holding:5 }
`;
  const map = [
    "devices:",
    device("tcpVictim", "modbus-tcp", tcpProxy.port, 1),
    device("rtuVictim", "modbus-rtu-over-tcp", rtuProxy.port, 2),
    device("steady1", "modbus-tcp", slave.port, 3),
    device("steady2", "modbus-tcp", slave.port, 4),
  ].join("\n");
  const r = validateYaml(mapSchema, map, "devices.yaml");
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  await runtime.apply(r.value);
  await until("every device Good", () => ["tcpVictim", "rtuVictim", "steady1", "steady2"].every((d) => good(d)));
}, 30_000);

afterAll(async () => {
  await runtime?.stop();
  scheduler.stop();
  await tcpProxy?.close();
  await rtuProxy?.close();
  await slave?.close();
});

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const value = (device: string, tag = "h5") => devices.variable(device, tag)!.value;
const good = (device: string): boolean => value(device).statusCode === undefined && value(device).value !== undefined;

const STEADY = ["steady1", "steady2"];

/** Poll slots run, over all groups of a device. */
function slotsRun(device: string): number {
  let ran = 0;
  for (const g of runtime.poller(device)!.groups) ran += g.scheduled!.samples;
  return ran;
}

/** One fault from start to end; meanwhile the healthy devices polled, stayed Good, failed no read. */
async function faultCycle(proxy: FaultProxy, victim: string, mode: FaultMode): Promise<void> {
  const steadyBefore = STEADY.map(slotsRun);
  const kept = value(victim).value!.value;
  const brokenBefore = proxy.broken;
  await proxy.set(mode);
  await until(`${victim} Bad under ${mode}`, () => value(victim).statusCode === StatusCodes.BadCommunicationError);
  // Part 8 §6.3.2 / DESIGN Devices: a Bad communication status keeps the last value and its timestamp.
  expect(value(victim).value!.value).toBe(kept);
  if (mode !== "silent" && mode !== "vanish") expect(proxy.broken).toBeGreaterThan(brokenBefore);
  expect(runtime.poller(victim)!.lastError).not.toBe("");
  await until(`the healthy devices polled while ${victim} failed (${mode})`, () => STEADY.every((d, k) => slotsRun(d) > steadyBefore[k]!));
  expect(value(victim).statusCode).toBe(StatusCodes.BadCommunicationError);
  for (const d of STEADY) {
    expect(good(d), `${d} Good while ${victim} failed (${mode})`).toBe(true);
    expect(runtime.poller(d)!.errors, `${d}'s errors`).toBe(0);
  }
  await proxy.set("ok");
  await until(`${victim} Good after ${mode}`, () => good(victim));
}

describe("a Modbus peer that misbehaves", () => {
  it("Modbus TCP: slow, silent, wrong unit id, wrong function code, short frame, closed mid-frame, vanished", async () => {
    for (const mode of ["slow", "silent", "wrongUnit", "wrongFc", "short", "closeMidFrame", "vanish"] as const) {
      await faultCycle(tcpProxy, "tcpVictim", mode);
    }
  }, 60_000);

  it("RTU over TCP: bad CRC, wrong unit id, wrong function code, short frame, slow, closed mid-frame", async () => {
    for (const mode of ["badCrc", "wrongUnit", "wrongFc", "short", "slow", "closeMidFrame"] as const) {
      await faultCycle(rtuProxy, "rtuVictim", mode);
    }
  }, 60_000);
});
