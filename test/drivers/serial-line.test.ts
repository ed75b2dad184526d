// A noisy RS-485 line: the RTU driver on one socat pty pair, pymodbus on another, and between
// them a line "repeater" of ours that passes requests through and mangles the slave's answers
// (garbage before and after, bad CRCs, bytes dribbled with gaps longer than 3.5 characters).
// Needs socat and Debian's python3-pymodbus; skipped, and named as skipped, when absent.
import { SerialPort } from "serialport";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openModbusLink } from "../../drivers/modbus/index.js";
import { crc16 } from "../../drivers/modbus/pdu.js";
import type { ModbusLink } from "../../drivers/modbus/index.js";
import { DriverError } from "../../src/devices/driver.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { HAVE_PYMODBUS, HAVE_SOCAT, PYMODBUS_MISSING, SOCAT_MISSING, ptyPair, requirePeers, skipWithout, startPymodbus } from "./peers.js";
import type { PtyPair, PythonPeer } from "./peers.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function openPort(path: string): Promise<SerialPort> {
  return new Promise((resolve, reject) => {
    const p = new SerialPort({ path, baudRate: 19200, parity: "none", autoOpen: false });
    p.open((err) => (err ? reject(err) : resolve(p)));
  });
}
function closePort(p: SerialPort): Promise<void> {
  return new Promise((resolve) => (p.isOpen ? p.close(() => resolve()) : resolve()));
}

/** What the repeater sends instead of the slave's answer: chunks, each after `gap` ms. */
type Mangle = (answer: Buffer) => { chunks: Buffer[]; gap?: number };

const skip = !HAVE_SOCAT || !HAVE_PYMODBUS;
const why = !HAVE_SOCAT ? SOCAT_MISSING : PYMODBUS_MISSING;
describe.skipIf(skipWithout(skip ? why : ""))(`RTU on a noisy serial line${skip ? ` (skipped: ${why})` : ""}`, () => {
  let bus: PtyPair;
  let line: PtyPair;
  let slave: PythonPeer;
  let master: SerialPort;
  let remote: SerialPort;
  let link: ModbusLink;
  /** Answer length to wait for before mangling (0: pass bytes through). */
  let expectLength = 0;
  let mangle: Mangle | undefined;
  let answer = Buffer.alloc(0);

  beforeAll(async () => {
    requirePeers(skip ? why : "");
    bus = await ptyPair(); // driver (a) ↔ repeater (b)
    line = await ptyPair(); // repeater (a) ↔ pymodbus (b)
    slave = await startPymodbus("rtu", line.b);
    master = await openPort(bus.b);
    remote = await openPort(line.a);
    master.on("data", (d: Buffer) => {
      answer = Buffer.alloc(0);
      remote.write(d);
    });
    remote.on("data", (d: Buffer) => {
      if (expectLength === 0 || mangle === undefined) {
        master.write(d);
        return;
      }
      answer = Buffer.concat([answer, d]);
      if (answer.length < expectLength) return;
      const { chunks, gap = 0 } = mangle(answer);
      answer = Buffer.alloc(0);
      void (async () => {
        for (const c of chunks) {
          master.write(c);
          if (gap > 0) await sleep(gap);
        }
      })();
    });
    link = openModbusLink({ kind: "rtu", path: bus.a, parity: "none", timeout: 300 });
  });

  afterAll(async () => {
    await link?.close();
    if (master) await closePort(master);
    if (remote) await closePort(remote);
    await slave?.stop();
    await bus?.stop();
    await line?.stop();
  });

  /** Reads 4 holding registers of `unit` at 40 with the answer mangled by `m`. */
  async function readMangled(unit: number, m: Mangle | undefined): Promise<number[]> {
    expectLength = 5 + 2 * 4;
    mangle = m;
    try {
      return Array.from(await link.readBlock({ station: unit, area: "holding", start: 40, count: 4 }));
    } finally {
      mangle = undefined;
    }
  }
  const values = (unit: number) => [40, 41, 42, 43].map((i) => 1000 * unit + i);

  it("passes clean answers of both slaves through the repeater", async () => {
    expect(await readMangled(1, (a) => ({ chunks: [a] }))).toEqual(values(1));
    expect(await readMangled(2, (a) => ({ chunks: [a] }))).toEqual(values(2));
  });

  it("finds the answer behind garbage that imitates a frame header", async () => {
    const before = link.health().discardedBytes;
    const garbage = (unit: number) => Buffer.from([0xff, 0x00, unit, 0x03, 0x08, 0x12, unit, 0x83, 0x02, 0x77]);
    expect(await readMangled(2, (a) => ({ chunks: [garbage(2), a] }))).toEqual(values(2));
    expect(link.health().discardedBytes - before).toBeGreaterThanOrEqual(10);
  });

  it("skips a copy with a bad CRC when the good frame follows", async () => {
    const before = link.health().badFrames;
    const corrupt = (a: Buffer) => {
      const c = Buffer.from(a);
      c[5]! ^= 0x10;
      return c;
    };
    expect(await readMangled(1, (a) => ({ chunks: [corrupt(a), a] }))).toEqual(values(1));
    expect(link.health().badFrames - before).toBeGreaterThanOrEqual(1);
  });

  it("refuses an answer with a bad CRC (a time-out that says why), then reads on", async () => {
    let err: DriverError | undefined;
    await readMangled(1, (a) => {
      const c = Buffer.from(a);
      c[c.length - 2]! ^= 0xff;
      return { chunks: [c] };
    }).catch((e: DriverError) => (err = e));
    expect(err?.statusCode).toBe(StatusCodes.BadCommunicationError);
    expect(err?.message).toMatch(/no valid answer .*bad frames received/);
    expect(await readMangled(1, (a) => ({ chunks: [a] }))).toEqual(values(1));
  });

  it("drops input that trails an answer instead of taking it for the next one", async () => {
    // A complete, valid answer of slave 2 with other values: what a late answer looks like.
    const stale = Buffer.from([0x02, 0x03, 0x08, 0, 1, 0, 2, 0, 3, 0, 4, 0, 0]);
    stale.writeUInt16LE(crc16(stale, 0, 11), 11);
    expect(await readMangled(1, (a) => ({ chunks: [a, stale] }))).toEqual(values(1));
    await sleep(20);
    expect(await readMangled(2, (a) => ({ chunks: [a] }))).toEqual(values(2));
  });

  it("ends frames by length and CRC, not by silence: gaps inside an answer are waited out", async () => {
    // 10 ms between bytes: far beyond the 3.5-character (2 ms) gap that ends a frame on a
    // silence-timed master.
    expect(await readMangled(2, (a) => ({ chunks: Array.from(a, (b) => Buffer.of(b)), gap: 10 }))).toEqual(values(2));
  });
});
