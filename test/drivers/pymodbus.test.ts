// The Modbus drivers against Debian's python3-pymodbus (3.0.x): Modbus TCP, RTU over TCP, and
// RTU on a serial line through a socat pseudo-terminal pair with two slave ids on one bus.
// Needs /usr/bin/python3 with python3-pymodbus (and socat for the serial tests); skipped, and
// named as skipped, when they are absent.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openModbusLink } from "../../drivers/modbus/index.js";
import type { ModbusLink, ModbusLinkOptions } from "../../drivers/modbus/index.js";
import { DriverError } from "../../src/devices/driver.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { HAVE_PYMODBUS, HAVE_SOCAT, PYMODBUS_MISSING, SOCAT_MISSING, ptyPair, requirePeers, skipWithout, startPymodbus } from "./peers.js";
import type { PtyPair, PythonPeer } from "./peers.js";
import { rejection } from "../helpers/rejection.js";

const links: ModbusLink[] = [];
afterEach(async () => {
  for (const l of links.splice(0)) await l.close();
});
function open(options: ModbusLinkOptions): ModbusLink {
  const l = openModbusLink(options);
  links.push(l);
  return l;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Retries a read until it succeeds (bounded: about 3 s), for links that reconnect with backoff. */
async function eventually<T>(f: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await f();
    } catch (e) {
      if (i >= 150) throw e;
      await sleep(20);
    }
  }
}

/** Every function code on units 1 and 2 of the peer's data model (see peers/pymodbus_peer.py). */
async function everyFunctionCode(l: ModbusLink): Promise<void> {
  for (const unit of [1, 2]) {
    const flip = unit === 2 ? 1 : 0;
    expect(Array.from(await l.readBlock({ station: unit, area: "coil", start: 0, count: 7 }))).toEqual(
      [1, 0, 0, 1, 0, 0, 1].map((b) => b ^ flip));
    expect(Array.from(await l.readBlock({ station: unit, area: "discrete", start: 1, count: 4 }))).toEqual(
      [0, 1, 0, 1].map((b) => b ^ flip));
    expect(Array.from(await l.readBlock({ station: unit, area: "input", start: 10, count: 3 }))).toEqual(
      [10, 11, 12].map((i) => 3000 + 1000 * unit + i));
    expect(Array.from(await l.readBlock({ station: unit, area: "holding", start: 0, count: 80 }))).toEqual(
      Array.from({ length: 80 }, (_, i) => 1000 * unit + i));

    await l.write(unit, "coil", 50, Uint8Array.of(flip ? 0 : 1)); // FC5 (50 % 3 != 0: flips it)
    await l.write(unit, "coil", 60, Uint8Array.of(1, 1, 0, 1, 0, 0, 0, 0, 1, 1)); // FC15
    expect(Array.from(await l.readBlock({ station: unit, area: "coil", start: 50, count: 1 }))).toEqual([flip ? 0 : 1]);
    expect(Array.from(await l.readBlock({ station: unit, area: "coil", start: 60, count: 10 }))).toEqual([1, 1, 0, 1, 0, 0, 0, 0, 1, 1]);
    await l.write(unit, "holding", 5, Uint16Array.of(40000 + unit)); // FC6
    await l.write(unit, "holding", 20, Uint16Array.of(1, 2, 3, 0xffff)); // FC16
    expect(Array.from(await l.readBlock({ station: unit, area: "holding", start: 5, count: 1 }))).toEqual([40000 + unit]);
    expect(Array.from(await l.readBlock({ station: unit, area: "holding", start: 20, count: 4 }))).toEqual([1, 2, 3, 0xffff]);
  }
}

async function exceptions(l: ModbusLink): Promise<void> {
  const outside = await rejection(l.readBlock({ station: 1, area: "holding", start: 99, count: 2 }));
  expect([outside.exceptionCode, outside.statusCode, outside.retryable]).toEqual([2, StatusCodes.BadConfigurationError, false]);
  const failure = await rejection(l.readBlock({ station: 2, area: "holding", start: 88, count: 5 }));
  expect([failure.exceptionCode, failure.statusCode, failure.retryable]).toEqual([4, StatusCodes.BadDeviceFailure, false]);
  const coils = await rejection(l.write(1, "coil", 99, Uint8Array.of(1, 1)));
  expect(coils.exceptionCode).toBe(2);
}

describe.skipIf(skipWithout(HAVE_PYMODBUS ? "" : PYMODBUS_MISSING))(`pymodbus Modbus TCP${HAVE_PYMODBUS ? "" : ` (skipped: ${PYMODBUS_MISSING})`}`, () => {
  let peer: PythonPeer;
  beforeAll(async () => {
    requirePeers(HAVE_PYMODBUS ? "" : PYMODBUS_MISSING);
    peer = await startPymodbus("tcp");
  });
  afterAll(async () => {
    await peer?.stop();
  });
  const tcp = () => open({ kind: "tcp", host: "127.0.0.1", port: peer.port, timeout: 300 });

  it("serves every function code for two unit ids", async () => {
    await everyFunctionCode(tcp());
  });

  it("maps the peer's exceptions, and times out on a unit id it does not serve", async () => {
    const l = tcp();
    await exceptions(l);
    // pymodbus 3.0's framer drops requests for unit ids it does not serve (no 0B): a time-out.
    const missing = await rejection(l.readBlock({ station: 3, area: "holding", start: 0, count: 1 }));
    expect([missing.exceptionCode, missing.statusCode, missing.retryable]).toEqual([undefined, StatusCodes.BadCommunicationError, true]);
    expect(l.health()).toMatchObject({ communicationErrors: 1, timeouts: 1, connected: true });
  });

  it("goes Bad when the peer is killed and recovers when it restarts on the same port", async () => {
    const own = await startPymodbus("tcp");
    try {
      const l = open({ kind: "tcp", host: "127.0.0.1", port: own.port, timeout: 500, reconnectDelay: 20, maxReconnectDelay: 200 });
      expect(Array.from(await l.readBlock({ station: 1, area: "input", start: 0, count: 1 }))).toEqual([4000]);
      await own.stop();
      const down = await rejection(l.readBlock({ station: 1, area: "input", start: 0, count: 1 }));
      expect([down.statusCode, down.retryable]).toEqual([StatusCodes.BadCommunicationError, true]);
      const again = await startPymodbus("tcp", String(own.port));
      try {
        expect(Array.from(await eventually(() => l.readBlock({ station: 1, area: "input", start: 0, count: 1 })))).toEqual([4000]);
        expect(l.health().connects).toBe(2);
      } finally {
        await again.stop();
      }
    } finally {
      await own.stop();
    }
  });
});

describe.skipIf(skipWithout(HAVE_PYMODBUS ? "" : PYMODBUS_MISSING))(`pymodbus RTU over TCP${HAVE_PYMODBUS ? "" : ` (skipped: ${PYMODBUS_MISSING})`}`, () => {
  it("serves every function code and exception through RTU framing on TCP", async () => {
    requirePeers(HAVE_PYMODBUS ? "" : PYMODBUS_MISSING);
    const peer = await startPymodbus("rtu-over-tcp");
    try {
      const l = open({ kind: "rtu-over-tcp", host: "127.0.0.1", port: peer.port, timeout: 1000 });
      await everyFunctionCode(l);
      await exceptions(l);
    } finally {
      await peer.stop();
    }
  });
});

const serialSkip = !HAVE_PYMODBUS || !HAVE_SOCAT;
const serialWhy = !HAVE_SOCAT ? SOCAT_MISSING : PYMODBUS_MISSING;
describe.skipIf(skipWithout(serialSkip ? serialWhy : ""))(`pymodbus RTU on a socat pty pair, two slaves on one bus${serialSkip ? ` (skipped: ${serialWhy})` : ""}`, () => {
  let pty: PtyPair;
  let peer: PythonPeer;
  beforeAll(async () => {
    requirePeers(serialSkip ? serialWhy : "");
    pty = await ptyPair();
    peer = await startPymodbus("rtu", pty.b);
  });
  afterAll(async () => {
    await peer?.stop();
    await pty?.stop();
  });
  const bus = (extra: Partial<ModbusLinkOptions> = {}) =>
    // 8N1: a pty has no parity (the peer's pyserial cannot even set it there).
    open({ kind: "rtu", path: pty.a, baudRate: 19200, parity: "none", timeout: 500, ...extra });

  it("serves every function code and exception for both slave ids", async () => {
    const l = bus();
    await everyFunctionCode(l);
    await exceptions(l);
    expect(l.health()).toMatchObject({ connects: 1, timeouts: 0, badFrames: 0 });
  });

  it("a slave that stops answering costs the other slave only its time-outs", async () => {
    // A time-out that a loaded machine's pymodbus still answers within: slave 1 must never time out.
    const l = bus({ timeout: 1500 });
    const round = () =>
      Promise.allSettled([
        l.readBlock({ station: 1, area: "holding", start: 30, count: 10 }),
        l.readBlock({ station: 2, area: "holding", start: 30, count: 10 }),
      ]);
    const first = await round();
    expect(first.map((r) => (r.status === "rejected" ? String(r.reason) : r.status))).toEqual(["fulfilled", "fulfilled"]);
    await peer.command("mute 2");
    try {
      for (let i = 0; i < 3; i++) {
        const [one, two] = await round();
        expect(one.status).toBe("fulfilled");
        expect(Array.from((one as PromiseFulfilledResult<Uint16Array>).value)).toEqual(Array.from({ length: 10 }, (_, k) => 1030 + k));
        const err = (two as PromiseRejectedResult).reason as DriverError;
        expect([err.statusCode, err.retryable]).toEqual([StatusCodes.BadCommunicationError, true]);
      }
    } finally {
      await peer.command("unmute 2");
    }
    expect(link1Health(l)).toEqual({ requests: 4, errors: 0 });
    expect(l.unitHealth(2)).toMatchObject({ requests: 4, errors: 3, timeouts: 3 });
    // The serial port stays open through the time-outs, and slave 2 answers again at once.
    expect((await round()).map((r) => r.status)).toEqual(["fulfilled", "fulfilled"]);
    expect(l.health().connects).toBe(1);
  }, 20_000);

  it("goes Bad when the bus disappears and reopens the port when it is back", async () => {
    // A bus of its own, whose socat and pymodbus stop and start again on the same paths.
    const dir = mkdtempSync(join(tmpdir(), "fieldgate-bus-"));
    const first = await ptyPair(dir);
    let slave = await startPymodbus("rtu", first.b);
    let pair: PtyPair = first;
    try {
      const l = open({ kind: "rtu", path: first.a, parity: "none", timeout: 300, reconnectDelay: 20, maxReconnectDelay: 200 });
      expect(Array.from(await l.readBlock({ station: 2, area: "input", start: 0, count: 1 }))).toEqual([5000]);
      await slave.stop();
      await first.stop();
      const down = await rejection(l.readBlock({ station: 2, area: "input", start: 0, count: 1 }));
      expect([down.statusCode, down.retryable]).toEqual([StatusCodes.BadCommunicationError, true]);
      pair = await ptyPair(dir);
      slave = await startPymodbus("rtu", pair.b);
      expect(Array.from(await eventually(() => l.readBlock({ station: 2, area: "input", start: 0, count: 1 })))).toEqual([5000]);
      expect(l.health().connects).toBe(2);
    } finally {
      await slave.stop();
      await pair.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

function link1Health(l: ModbusLink): { requests: number; errors: number } {
  const u = l.unitHealth(1)!;
  return { requests: u.requests, errors: u.errors };
}
