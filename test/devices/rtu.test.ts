// Two Modbus RTU devices on one serial bus, from a device map, through the real RTU driver to
// Debian's python3-pymodbus on one end of a socat pseudo-terminal pair (needs socat and
// python3-pymodbus; skipped with a note when absent). The two devices share one link; a slave
// that falls silent, or answers every request with exception 04, goes Bad and is demoted while
// the other keeps its Good values.
import { ValueCache } from "../../src/values/value-cache.js";
import { driversWith } from "./fake-driver.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openModbusLink } from "../../drivers/modbus/index.js";
import { DeviceNamespace } from "../../src/address-space/device-namespace.js";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { mapSchema } from "../helpers/map.js";
import { validateYaml } from "../../src/config/load.js";
import { systemClock } from "../../src/sampling/clock.js";
import { DeviceRuntime } from "../../src/devices/device-runtime.js";
import type { ModbusLinkOptions } from "../../drivers/modbus/options.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { HAVE_PYMODBUS, HAVE_SOCAT, PYMODBUS_MISSING, SOCAT_MISSING, ptyPair, requirePeers, skipWithout, startPymodbus, type PtyPair, type PythonPeer } from "../drivers/peers.js";
import { testSlicer } from "../helpers/slicer.js";

const missing = [HAVE_SOCAT ? "" : SOCAT_MISSING, HAVE_PYMODBUS ? "" : PYMODBUS_MISSING].filter((s) => s !== "").join("; ");

let pty: PtyPair | undefined;
let peer: PythonPeer | undefined;
let runtime: DeviceRuntime | undefined;
let devices: DeviceNamespace;
const scheduler = new DeadlineScheduler(systemClock);
const links: ModbusLinkOptions[] = [];

beforeAll(async () => {
  if (skipWithout(missing)) return;
  requirePeers(missing);
  pty = await ptyPair();
  peer = await startPymodbus("rtu", pty.b);
  const registry = new NamespaceRegistry();
  new Ns0Manager(registry, { applicationUri: "urn:x", buildInfo: { buildDate: 0 } });
  const values = new ValueCache();
  devices = new DeviceNamespace(registry, { values });
  runtime = new DeviceRuntime({
    scheduler,
    clock: systemClock,
    nodes: devices,
    values,
    slicer: testSlicer(systemClock, scheduler),
    drivers: driversWith((options) => {
      links.push(options);
      return openModbusLink(options);
    }),
  });
  const device = (name: string, unit: number) => `  - name: ${name}
    driver: modbus-rtu
    bus: line
    unitId: ${unit}
    timeout: 200ms
    rate: 200ms
    retryBackoff: 200ms
    maxBackoff: 1s
    demoteAfter: 2
    tags:
      - { name: h3, address: holding:3 }
      - { name: i4, address: input:4 }
      - { name: c0, address: coil:0 }
`;
  // A pty refuses PARENB (termios EINVAL), so the test bus runs 8N1 like the peer.
  const r = validateYaml(mapSchema, `buses:\n  line: { port: ${pty.a}, baudRate: 19200, parity: none }\ndevices:\n${device("m1", 1)}${device("m2", 2)}`, "devices.yaml");
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  await runtime.apply(r.value);
}, 30_000);

afterAll(async () => {
  await runtime?.stop();
  scheduler.stop();
  await peer?.stop();
  await pty?.stop();
});

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const value = (device: string, tag: string) => devices.variable(device, tag)!.value;

describe.skipIf(skipWithout(missing))(`two RTU slaves on one bus (${missing || "socat and python3-pymodbus present"})`, () => {
  it("share one serial link and read each its own registers", async () => {
    expect(links).toHaveLength(1);
    expect(links[0]).toMatchObject({ kind: "rtu", path: pty!.a, baudRate: 19200, parity: "none", dataBits: 8, stopBits: 1, timeout: 200 });
    await until("both Good", () => value("m1", "h3").statusCode === undefined && value("m2", "h3").statusCode === undefined && value("m2", "c0").value !== undefined);
    expect(value("m1", "h3").value!.value).toBe(1003);
    expect(value("m2", "h3").value!.value).toBe(2003);
    expect(value("m1", "i4").value!.value).toBe(4004);
    expect(value("m2", "i4").value!.value).toBe(5004);
    expect(value("m1", "c0").value!.value).toBe(true);
    expect(value("m2", "c0").value!.value).toBe(false);
  });

  it("a silent slave goes Bad and is demoted; the other keeps polling", async () => {
    await peer!.command("mute 2");
    await until("m2 Bad", () => value("m2", "h3").statusCode === StatusCodes.BadCommunicationError);
    expect(value("m2", "h3").value!.value).toBe(2003);
    await until("m2 demoted", () => runtime!.poller("m2")!.state === "demoted");
    const m1 = runtime!.poller("m1")!;
    const before = m1.requests;
    const t = value("m1", "h3").sourceTimestamp!;
    await until("m1 still polled", () => m1.requests >= before + 6 && value("m1", "h3").sourceTimestamp! > t);
    expect(value("m1", "h3").statusCode).toBeUndefined();
    await peer!.command("unmute 2");
    await until("m2 Good again", () => value("m2", "h3").statusCode === undefined, 15_000);
    expect(runtime!.poller("m2")!.state).toBe("ok");
  }, 30_000);

  it("a slave that answers exception 04 to every request is failing, then demoted, with ServerDeviceFailure in LastError; the other keeps polling", async () => {
    const m2 = runtime!.poller("m2")!;
    await until("m2 answering", () => m2.state === "ok");
    await peer!.command("fail 2");
    try {
      await until("m2 failing", () => m2.state === "failing");
      expect(m2.lastError).toMatch(/^unit 2: ServerDeviceFailure \(exception 04\) to FC\d reading 1 at (0|3|4)$/);
      await until("m2 demoted", () => m2.state === "demoted");
      // The exception's StatusCode, with the last value kept.
      expect(value("m2", "h3").statusCode).toBe(StatusCodes.BadDeviceFailure);
      expect(value("m2", "h3").value!.value).toBe(2003);
      const m1 = runtime!.poller("m1")!;
      const before = m1.requests;
      await until("m1 still polled", () => m1.requests >= before + 6);
      expect([m1.state, value("m1", "h3").statusCode]).toEqual(["ok", undefined]);
    } finally {
      await peer!.command("heal 2");
    }
    await until("m2 back", () => m2.state === "ok" && value("m2", "h3").statusCode === undefined, 15_000);
  }, 30_000);
});
