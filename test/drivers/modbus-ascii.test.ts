// Modbus ASCII (drivers/modbus/ascii.ts): its frames as the serial spec writes them (§2.5.2: ':',
// hexadecimal characters, LRC §6.2.1, CR LF), checked here byte by byte; and the link, the same
// PDU code as RTU's, against Debian's python3-pymodbus ASCII framer on one end of a socat pty
// pair: every function code, exceptions, a slave that falls silent, and from a device map
// (`driver: modbus-ascii`) through the device runtime. Needs socat and python3-pymodbus
// (skipped, and named, without them).
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AsciiFraming, lrc } from "../../drivers/modbus/ascii.js";
import { NEED_MORE } from "../../drivers/modbus/framing.js";
import { openModbusLink, type ModbusLink } from "../../drivers/modbus/index.js";
import { Job, UnitStats } from "../../drivers/modbus/queue.js";
import { rejection } from "../helpers/rejection.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { HAVE_PYMODBUS, HAVE_SOCAT, PYMODBUS_MISSING, SOCAT_MISSING, ptyPair, requirePeers, skipWithout, startPymodbus, type PtyPair, type PythonPeer } from "./peers.js";

function job(unit: number, fc: number, address: number, count: number): Job {
  const j = new Job();
  Object.assign(j, { unitId: unit, fc, address, count, unit: new UnitStats() });
  return j;
}

/** What the spec says an ASCII frame is, written independently of the driver: ':', hex pairs of the bytes and their LRC, CR LF. */
function asciiFrame(bytes: number[]): Buffer {
  const sum = bytes.reduce((s, b) => (s + b) & 0xff, 0);
  const all = [...bytes, (0x100 - sum) & 0xff];
  return Buffer.from(`:${all.map((b) => b.toString(16).toUpperCase().padStart(2, "0")).join("")}\r\n`, "latin1");
}

describe("the Modbus ASCII framing", () => {
  it("writes a request as ':', the unit id and PDU in hexadecimal, the LRC and CR LF", () => {
    const f = new AsciiFraming();
    const tx = Buffer.alloc(f.maxAdu);
    const n = f.encode(tx, job(17, 3, 0x006b, 3));
    expect(tx.subarray(0, n).toString("latin1")).toBe(asciiFrame([17, 3, 0x00, 0x6b, 0x00, 0x03]).toString("latin1"));
    // §6.2.1: the bytes 11 03 00 6B 00 03 add up to 82h, their LRC is its two's complement, 7Eh.
    expect(lrc(Uint8Array.from([0x11, 0x03, 0x00, 0x6b, 0x00, 0x03]), 0, 6)).toBe(0x7e);
  });

  it("takes the answer however it is cut, skips noise, other units and bad LRCs, and names them", () => {
    const answer = asciiFrame([17, 3, 6, 0x02, 0x2b, 0x00, 0x00, 0x00, 0x64]);
    for (let cut = 1; cut < answer.length; cut++) {
      const f = new AsciiFraming();
      const j = job(17, 3, 0x6b, 3);
      f.fill(answer.subarray(0, cut), 0);
      expect(f.next(j)).toBe(NEED_MORE);
      f.fill(answer.subarray(cut), 0);
      const at = f.next(j);
      expect(at).toBe(1);
      expect([...f.buf.subarray(at, at + f.pduLength)]).toEqual([3, 6, 0x02, 0x2b, 0x00, 0x00, 0x00, 0x64]);
    }
    const f = new AsciiFraming();
    const j = job(17, 3, 0x6b, 3);
    const badLrc = Buffer.from(answer);
    badLrc[badLrc.length - 4] = 0x30; // a wrong LRC digit
    const other = asciiFrame([18, 3, 2, 0, 1]);
    f.fill(Buffer.concat([Buffer.from("noise"), badLrc, other, Buffer.from(":0G\r\n"), answer]), 0);
    const at = f.next(j);
    expect(f.buf[at]).toBe(3);
    expect([f.badFrames, j.sawBadFrame, j.mismatches, j.mismatch]).toEqual([2, true, 1, "reply from unit 18, expected unit 17"]);
    expect(f.discardedBytes).toBeGreaterThan(5);
  });
});

const missing = [HAVE_SOCAT ? "" : SOCAT_MISSING, HAVE_PYMODBUS ? "" : PYMODBUS_MISSING].filter((s) => s !== "").join("; ");

describe.skipIf(skipWithout(missing))(`Modbus ASCII against pymodbus's ASCII framer${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let pty: PtyPair;
  let peer: PythonPeer;
  let link: ModbusLink;

  beforeAll(async () => {
    if (missing !== "") return;
    requirePeers(missing);
    pty = await ptyPair();
    peer = await startPymodbus("ascii", pty.b);
  }, 20_000);
  afterEach(async () => {
    await link?.close();
  });
  afterAll(async () => {
    await peer?.stop();
    await pty?.stop();
  });


  const open = () => (link = openModbusLink({ kind: "ascii", path: pty.a, baudRate: 19200, parity: "none", timeout: 500 }));

  it("speaks every function code to two slaves of one bus, 7 data bits", async () => {
    open();
    expect(link.options).toMatchObject({ dataBits: 7, serial: true });
    for (const unit of [1, 2]) {
      const flip = unit === 2 ? 1 : 0;
      expect(Array.from(await link.readBlock({ station: unit, area: "coil", start: 0, count: 7 }))).toEqual([1, 0, 0, 1, 0, 0, 1].map((b) => b ^ flip));
      expect(Array.from(await link.readBlock({ station: unit, area: "discrete", start: 1, count: 4 }))).toEqual([0, 1, 0, 1].map((b) => b ^ flip));
      expect(Array.from(await link.readBlock({ station: unit, area: "input", start: 10, count: 3 }))).toEqual([10, 11, 12].map((i) => 3000 + 1000 * unit + i));
      expect(Array.from(await link.readBlock({ station: unit, area: "holding", start: 0, count: 80 }))).toEqual(Array.from({ length: 80 }, (_, i) => 1000 * unit + i));
      await link.write(unit, "coil", 50, Uint8Array.of(flip ? 0 : 1));
      await link.write(unit, "coil", 60, Uint8Array.of(1, 1, 0, 1, 0, 0, 0, 0, 1, 1));
      expect(Array.from(await link.readBlock({ station: unit, area: "coil", start: 60, count: 10 }))).toEqual([1, 1, 0, 1, 0, 0, 0, 0, 1, 1]);
      await link.write(unit, "holding", 5, Uint16Array.of(40000 + unit));
      await link.write(unit, "holding", 20, Uint16Array.of(1, 2, 3, 0xffff));
      expect(Array.from(await link.readBlock({ station: unit, area: "holding", start: 20, count: 4 }))).toEqual([1, 2, 3, 0xffff]);
      expect(Array.from(await link.readBlock({ station: unit, area: "holding", start: 5, count: 1 }))).toEqual([40000 + unit]);
    }
  });

  it("maps exceptions as RTU does, and a silent slave times out while the other answers", async () => {
    open();
    const outside = await rejection(link.readBlock({ station: 1, area: "holding", start: 99, count: 2 }));
    expect([outside.kind, outside.statusCode]).toEqual(["badAddress", StatusCodes.BadConfigurationError]);
    const failure = await rejection(link.readBlock({ station: 2, area: "holding", start: 88, count: 5 }));
    expect(failure.statusCode).toBe(StatusCodes.BadDeviceFailure);
    await peer.command("mute 2");
    try {
      const silent = await rejection(link.readBlock({ station: 2, area: "holding", start: 0, count: 1 }));
      expect([silent.kind, silent.message]).toEqual(["timeout", "unit 2: no answer to FC3 within 500 ms"]);
      expect(Array.from(await link.readBlock({ station: 1, area: "holding", start: 3, count: 1 }))).toEqual([1003]);
    } finally {
      await peer.command("unmute 2");
    }
    expect(link.health().badFrames).toBe(0);
  });
});
