// One RS-485 bus with a dead slave among live ones (issue 9): three RTU devices on one serial
// link to Debian's python3-pymodbus on a socat pseudo-terminal pair (needs socat and
// python3-pymodbus; skipped with a note when absent). Unit 3 does not exist on the bus, so it
// never answers: it goes BadNoCommunication and is demoted, while units 1 and 2 keep their
// rate, counted as the poll slots their groups ran against the slots that came due. A live
// slave that falls silent goes BadCommunicationError and comes back.
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
import { HAVE_PYMODBUS, HAVE_SOCAT, PYMODBUS_MISSING, SOCAT_MISSING, ptyPair, requirePeers, skipWithout, startPymodbus, type PtyPair, type PythonPeer } from "../drivers/peers.js";
import { testSlicer } from "../helpers/slicer.js";

const missing = [HAVE_SOCAT ? "" : SOCAT_MISSING, HAVE_PYMODBUS ? "" : PYMODBUS_MISSING].filter((s) => s !== "").join("; ");

let pty: PtyPair | undefined;
let peer: PythonPeer | undefined;
let runtime: DeviceRuntime | undefined;
let devices: DeviceNamespace;
const scheduler = new DeadlineScheduler(systemClock);

beforeAll(async () => {
  if (skipWithout(missing)) return;
  requirePeers(missing);
  pty = await ptyPair();
  peer = await startPymodbus("rtu", pty.b);
  const registry = new NamespaceRegistry();
  new Ns0Manager(registry, { applicationUri: "urn:x", buildInfo: { buildDate: 0 } });
  const values = new ValueCache();
  devices = new DeviceNamespace(registry, { values });
  runtime = new DeviceRuntime({ scheduler, clock: systemClock, nodes: devices, values, drivers: driversWith((o) => openModbusLink(o)), slicer: testSlicer(systemClock, scheduler) });
  const device = (name: string, unit: number) => `  - name: ${name}
    driver: modbus-rtu
    bus: line
    unitId: ${unit}
    timeout: 100ms
    rate: 250ms
    retryBackoff: 250ms
    maxBackoff: 2s
    demoteAfter: 2
    tags:
      - { name: h3, address: holding:3 }
`;
  const r = validateYaml(
    mapSchema,
    `buses:\n  line: { port: ${pty.a}, baudRate: 38400, parity: none }\ndevices:\n${device("live1", 1)}${device("live2", 2)}${device("dead3", 3)}`,
    "devices.yaml",
  );
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
    await new Promise((r) => setTimeout(r, 20));
  }
}

const value = (device: string) => devices.variable(device, "h3")!.value;

function slots(device: string): { ran: number; due: number } {
  let ran = 0;
  let skipped = 0;
  for (const g of runtime!.poller(device)!.groups) {
    ran += g.scheduled!.samples;
    skipped += g.scheduled!.skipped;
  }
  return { ran, due: ran + skipped };
}

describe.skipIf(skipWithout(missing))(`a dead slave on a shared RTU bus (${missing || "socat and python3-pymodbus present"})`, () => {
  it("the dead slave goes BadNoCommunication and is demoted; the live ones keep their rate", async () => {
    await until("dead3 demoted", () => runtime!.poller("dead3")!.state === "demoted");
    expect(value("dead3").statusCode).toBe(StatusCodes.BadNoCommunication);
    await until("live Good", () => value("live1").statusCode === undefined && value("live2").statusCode === undefined && value("live2").value !== undefined);
    const before = { live1: slots("live1"), live2: slots("live2") };
    const probes = runtime!.poller("dead3")!.requests;
    // A window of 24 slots of the live devices, during which the dead one is still probed.
    await until("24 slots", () => slots("live1").due - before.live1.due >= 24, 20_000);
    for (const d of ["live1", "live2"] as const) {
      const now = slots(d);
      const ran = now.ran - before[d].ran;
      const due = now.due - before[d].due;
      // A probe of the dead slave holds the bus for its time-out: at most a slot per probe is lost.
      const probesInWindow = runtime!.poller("dead3")!.requests - probes;
      if (process.env.FIELDGATE_FAULTS_VERBOSE) console.log(`${d}: ran ${ran} of ${due} slots, ${probesInWindow} probes of the dead slave`);
      expect(ran, `${d}: ran ${ran} of ${due}, ${probesInWindow} probes`).toBeGreaterThanOrEqual(due - probesInWindow - 1);
      expect(value(d).statusCode).toBeUndefined();
    }
  }, 30_000);

  it("a live slave that falls silent goes Bad with its last value, and comes back", async () => {
    const kept = value("live2").value!.value;
    await peer!.command("mute 2");
    await until("live2 Bad", () => value("live2").statusCode === StatusCodes.BadCommunicationError);
    expect(value("live2").value!.value).toBe(kept);
    expect(value("live1").statusCode).toBeUndefined();
    await peer!.command("unmute 2");
    await until("live2 Good again", () => value("live2").statusCode === undefined, 15_000);
  }, 30_000);
});
