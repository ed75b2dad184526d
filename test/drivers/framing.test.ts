// Hostile and broken peers, scripted byte by byte on a raw TCP server: answers split at every
// offset, stale and malformed frames, garbage and bad CRCs on RTU framing, a peer that closes
// mid-frame, half-open connections, flapping peers (no reconnect storm), queue rules.
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { openModbusLink } from "../../drivers/modbus/index.js";
import type { ModbusLink, ModbusLinkOptions } from "../../drivers/modbus/index.js";
import { DriverError } from "../../src/devices/driver.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { answer, mbap, registersPdu, rtu, startRawPeer, type Handler, type Kind, type Peer, type Request } from "./raw-peer.js";
import { rejection } from "../helpers/rejection.js";

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** A raw peer closed after the test. */
async function rawPeer(kind: Kind, handler: Handler, onConnection?: (sock: net.Socket) => boolean): Promise<Peer> {
  const peer = await startRawPeer(kind, handler, onConnection);
  cleanup.push(() => peer.close());
  return peer;
}

function link(peer: Peer, kind: Kind, extra: Partial<ModbusLinkOptions> = {}): ModbusLink {
  const l = openModbusLink({ kind, host: "127.0.0.1", port: peer.port, timeout: 200, reconnectDelay: 20, ...extra });
  cleanup.push(() => l.close());
  return l;
}
const read = (l: ModbusLink, unitId = 1, start = 0, count = 2) => l.readBlock({ station: unitId, area: "holding", start, count });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(["tcp", "rtu-over-tcp"] as const)("%s framing", (kind) => {
  it("assembles an answer split at every offset", async () => {
    const splitAt: number[] = [];
    const peer = await rawPeer(kind, (req, reply, sock) => {
      const frame = answer(kind, req);
      const k = splitAt.shift() ?? 0;
      sock.write(frame.subarray(0, k));
      setTimeout(() => reply(frame.subarray(k)), 2);
    });
    const l = link(peer, kind);
    const length = answer(kind, { tid: 0, unit: 1, fc: 3, address: 0, count: 3 }).length;
    for (let k = 1; k < length; k++) {
      splitAt.push(k);
      expect(Array.from(await read(l, 1, 10, 3))).toEqual([110, 111, 112]);
    }
    expect(l.health()).toMatchObject({ errors: 0, badFrames: 0, connects: 1 });
  });

  it("keeps strictly one request outstanding for all units on the link", async () => {
    const peer = await rawPeer(kind, (req, reply) => setTimeout(() => reply(answer(kind, req)), 3));
    const l = link(peer, kind);
    await l.connect(); // requests now arrive on an open link, each asking to be sent at once
    const reads = [];
    for (let i = 0; i < 12; i++) reads.push(read(l, 1 + (i % 3), i, 1));
    const values = (await Promise.all(reads)).map((r) => r[0]);
    expect(values).toEqual(Array.from({ length: 12 }, (_, i) => 100 * (1 + (i % 3)) + i));
    expect(peer.requests.length).toBe(12);
    expect(peer.maxOutstanding).toBe(1);
  });

  it("fails the request at once when the peer closes mid-frame, then reconnects", async () => {
    let calls = 0;
    const peer = await rawPeer(kind, (req, reply, sock) => {
      if (calls++ === 0) {
        sock.write(answer(kind, req).subarray(0, 5));
        setTimeout(() => sock.destroy(), 5);
      } else {
        reply(answer(kind, req));
      }
    });
    const l = link(peer, kind, { timeout: 5000 });
    const err = await rejection(read(l));
    expect([err.statusCode, err.retryable]).toEqual([StatusCodes.BadCommunicationError, true]);
    // "connection lost", not a time-out: the 5 s timeout did not run out.
    expect(err.message).toMatch(/connection lost: closed by peer \(5 bytes of an answer received\)/);
    let values: number[] | undefined;
    for (let i = 0; i < 100 && values === undefined; i++) {
      values = await read(l).then((r) => Array.from(r), async () => void (await sleep(5)));
    }
    expect(values).toEqual([100, 101]);
    expect(peer.connections).toBe(2);
  });
});

describe("tcp framing", () => {
  it("drops a late answer to a timed-out request by its transaction id", async () => {
    let first: Request | undefined;
    const peer = await rawPeer("tcp", (req, reply) => {
      if (first === undefined) {
        first = req; // no answer now: the request times out
        return;
      }
      // The late answer to the first request (different values), then the real one, in one write.
      const late = mbap(first.tid, 1, registersPdu(3, [0xdead, 0xdead]));
      reply(Buffer.concat([late, answer("tcp", req)]));
    });
    const l = link(peer, "tcp", { timeout: 50 });
    expect((await rejection(read(l))).message).toMatch(/no answer to FC3 within 50 ms/);
    expect(Array.from(await read(l))).toEqual([100, 101]);
    expect(l.health()).toMatchObject({ staleFrames: 1, timeouts: 1, connects: 1 });
    // The late answer came while the second request waited: a reply to another request, its unit's.
    expect(l.unitHealth(1)).toMatchObject({ mismatchedReplies: 1, timeouts: 1 });
  });

  it("names replies with another transaction id, unit id or function code, and counts them for the unit", async () => {
    let mode: "tid" | "unit" | "fc" = "tid";
    const peer = await rawPeer("tcp", (req, reply) => {
      const pdu = registersPdu(mode === "fc" ? 4 : 3, [1, 2]);
      if (mode === "tid") reply(mbap(req.tid + 100, req.unit, pdu), mbap(req.tid + 101, req.unit, pdu));
      else reply(mbap(req.tid, mode === "unit" ? 9 : req.unit, pdu));
    });
    const l = link(peer, "tcp", { timeout: 50 });
    const tid = await rejection(read(l));
    const sent = peer.requests[0]!.tid;
    expect(tid.message).toBe(`unit 1: reply with transaction id ${sent + 101}, expected ${sent} (the last of 2 replies to other requests); no answer of its own to FC3 within 50 ms`);
    mode = "unit";
    expect((await rejection(read(l))).message).toBe("unit 1: reply from unit 9, expected unit 1; no answer of its own to FC3 within 50 ms");
    mode = "fc";
    const fc = await rejection(read(l));
    // Its own transaction: refused at once, not waited for.
    expect([fc.message, fc.kind]).toEqual(["unit 1: reply with function code 4, expected 3", "malformed"]);
    expect(l.unitHealth(1)).toMatchObject({ mismatchedReplies: 4, timeouts: 2 });
    expect(l.countersOf(1)!.mismatchedReplies).toBe(4);
    expect(l.countersOf(2)).toBeUndefined();
  });

  it("drops the connection on a malformed MBAP header", async () => {
    const peer = await rawPeer("tcp", (req, reply) => {
      const f = answer("tcp", req);
      f.writeUInt16BE(7, 2); // protocol id must be 0
      reply(f);
    });
    const l = link(peer, "tcp");
    const err = await rejection(read(l));
    expect(err.message).toMatch(/malformed MBAP header/);
    expect(l.health()).toMatchObject({ connected: false, badFrames: 1 });
  });

  it("refuses an answer whose write echo is wrong", async () => {
    const peer = await rawPeer("tcp", (req, reply) => {
      reply(mbap(req.tid, req.unit, Buffer.from([6, 0, req.address + 1, 0, 0])));
    });
    const l = link(peer, "tcp");
    const err = await rejection(l.write(1, "holding", 4, Uint16Array.of(9)));
    expect([err.statusCode, err.retryable]).toEqual([StatusCodes.BadCommunicationError, true]);
    expect(err.message).toMatch(/echo/);
  });

  it("reconnects after time-outs in a row (a half-open connection)", async () => {
    let silent = true;
    const peer = await rawPeer("tcp", (req, reply) => {
      if (!silent) reply(answer("tcp", req));
    });
    const l = link(peer, "tcp", { timeout: 30, maxConsecutiveTimeouts: 3 });
    for (let i = 0; i < 3; i++) await rejection(read(l));
    expect(l.health().connected).toBe(false);
    silent = false;
    let ok = false;
    for (let i = 0; i < 100 && !ok; i++) ok = await read(l).then(() => true, async () => (await sleep(5), false));
    expect(ok).toBe(true);
    expect(peer.connections).toBe(2);
  });
});

describe("rtu-over-tcp framing", () => {
  it("resynchronises past garbage, another slave's answer and a bad CRC", async () => {
    const peer = await rawPeer("rtu-over-tcp", (req, reply) => {
      const good = answer("rtu-over-tcp", req);
      const bad = Buffer.from(good);
      bad[4]! ^= 0x40; // same header and length, wrong CRC
      const other = answer("rtu-over-tcp", { ...req, unit: 2 });
      // Garbage that starts like our answer: unit id, function code, a byte count.
      const garbage = Buffer.from([0x00, 0xff, req.unit, 3, 4, 0x55, req.unit, 0x83]);
      reply(garbage, other, bad, good);
    });
    const l = link(peer, "rtu-over-tcp");
    expect(Array.from(await read(l, 1, 0, 2))).toEqual([100, 101]);
    const h = l.health();
    expect(h.errors).toBe(0);
    expect(h.badFrames).toBeGreaterThanOrEqual(1);
    expect(h.discardedBytes).toBeGreaterThanOrEqual(8 + 9 + 9);
    // The other slave's whole answer, taken as one reply to another request.
    expect(l.unitHealth(1)!.mismatchedReplies).toBe(1);
  });

  it("names another unit's answer and this unit's answer to another function when no answer of its own comes", async () => {
    let mode: "unit" | "fc" | "exception" = "unit";
    const peer = await rawPeer("rtu-over-tcp", (req, reply, sock) => {
      const frame =
        mode === "unit" ? answer("rtu-over-tcp", { ...req, unit: 5 })
        : mode === "fc" ? rtu(req.unit, registersPdu(4, [7]))
        : rtu(6, Buffer.from([req.fc | 0x80, 4]));
      // In two pieces, as a serial line delivers it.
      sock.write(frame.subarray(0, 3));
      setTimeout(() => reply(frame.subarray(3)), 5);
    });
    const l = link(peer, "rtu-over-tcp", { timeout: 80 });
    expect((await rejection(read(l, 1, 0, 2))).message).toBe("unit 1: reply from unit 5, expected unit 1; no answer of its own to FC3 within 80 ms");
    mode = "fc";
    expect((await rejection(read(l, 1, 0, 2))).message).toBe("unit 1: reply with function code 4, expected 3; no answer of its own to FC3 within 80 ms");
    mode = "exception";
    expect((await rejection(read(l, 1, 0, 2))).message).toBe("unit 1: reply from unit 6, expected unit 1; no answer of its own to FC3 within 80 ms");
    expect(l.unitHealth(1)).toMatchObject({ mismatchedReplies: 3, timeouts: 3 });
  });

  it("times out on a frame with a bad CRC and says so", async () => {
    const peer = await rawPeer("rtu-over-tcp", (req, reply) => {
      const bad = answer("rtu-over-tcp", req);
      bad[bad.length - 1]! ^= 1;
      reply(bad);
    });
    const l = link(peer, "rtu-over-tcp", { timeout: 50 });
    const err = await rejection(read(l));
    expect(err.message).toMatch(/no valid answer .* \(bad frames received\)/);
    expect(err.statusCode).toBe(StatusCodes.BadCommunicationError);
  });

  it("takes an exception answer by its own length and CRC", async () => {
    const peer = await rawPeer("rtu-over-tcp", (req, reply) => reply(rtu(req.unit, Buffer.from([req.fc | 0x80, 2]))));
    const l = link(peer, "rtu-over-tcp");
    const err = await rejection(read(l));
    expect([err.exceptionCode, err.statusCode, err.retryable]).toEqual([2, StatusCodes.BadConfigurationError, false]);
  });

  it("drops input that arrives between requests", async () => {
    let n = 0;
    const peer = await rawPeer("rtu-over-tcp", (req, reply) => {
      // The first answer is followed by a stray copy of itself: stale by the next request.
      const frame = answer("rtu-over-tcp", req);
      reply(n++ === 0 ? Buffer.concat([frame, frame]) : frame);
    });
    const l = link(peer, "rtu-over-tcp");
    expect(Array.from(await read(l, 1, 0, 2))).toEqual([100, 101]);
    await sleep(20);
    expect(Array.from(await read(l, 1, 5, 2))).toEqual([105, 106]);
    expect(l.health().discardedBytes).toBe(9);
  });
});

describe("link rules", () => {
  it("backs off reconnecting to a peer that drops every connection: no reconnect storm", async () => {
    const peer = await rawPeer("tcp", () => {}, (sock) => (sock.destroy(), false));
    const l = link(peer, "tcp", { reconnectDelay: 20, maxReconnectDelay: 10_000 });
    const t0 = performance.now();
    let failures = 0;
    while (failures < 60) {
      await rejection(read(l));
      failures++;
      await sleep(5);
    }
    const elapsed = performance.now() - t0;
    // Attempts at 0, 20, 60, 140, ... ms (each delay doubles): at most 1 + log2(elapsed/20 + 1).
    expect(peer.connections).toBeLessThanOrEqual(1 + Math.ceil(Math.log2(elapsed / 20 + 1)));
    expect(peer.connections).toBeLessThan(failures / 4);
  });

  it("fails fast with the reason while the reconnect backoff runs", async () => {
    const peer = await rawPeer("tcp", () => {});
    const port = peer.port;
    await peer.close();
    const l = openModbusLink({ kind: "tcp", host: "127.0.0.1", port, timeout: 200, reconnectDelay: 60_000 });
    cleanup.push(() => l.close());
    await expect(l.connect()).rejects.toThrow(/ECONNREFUSED/);
    const err = await rejection(read(l));
    expect(err.message).toMatch(/ECONNREFUSED.*; next attempt in \d+ ms/);
    expect(l.health()).toMatchObject({ connected: false, state: "idle", requests: 0 });
  });

  it("close() fails the queue, and a closed link refuses requests until connect()", async () => {
    const peer = await rawPeer("tcp", () => {});
    const l = link(peer, "tcp", { timeout: 5000 });
    const pending = [read(l), read(l, 2)].map((p) => p.then(() => "answered", (e: DriverError) => e.message));
    await sleep(20);
    await l.close();
    expect(await Promise.all(pending)).toEqual(["link closed", "link closed"]);
    expect((await rejection(read(l))).message).toBe("link closed");
    expect(l.health().state).toBe("closed");
  });

  it("refuses requests beyond the queue limit", async () => {
    const peer = await rawPeer("tcp", (req, reply) => setTimeout(() => reply(answer("tcp", req)), 5));
    const l = link(peer, "tcp", { queueLimit: 3 });
    await l.connect();
    const ps = [read(l), read(l), read(l), read(l), read(l)].map((p) => p.then(() => "ok", (e: DriverError) => e.statusCode));
    // One in flight and three waiting; the fifth is refused.
    expect(await Promise.all(ps)).toEqual(["ok", "ok", "ok", "ok", StatusCodes.BadResourceUnavailable]);
  });
});
