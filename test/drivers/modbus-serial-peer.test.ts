// The Modbus TCP driver against modbus-serial's ServerTCP (a peer we did not write): every
// function code, every exception code mapping, busy retries, a dead unit behind the same
// connection, and reconnecting after the peer restarts.
import { afterEach, describe, expect, it } from "vitest";
import { openModbusLink } from "../../drivers/modbus/index.js";
import type { ModbusLink } from "../../drivers/modbus/index.js";
import { DriverError } from "../../src/devices/driver.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { startModbusSerialServer } from "./peers.js";
import type { ServerVector } from "./peers.js";
import { rejection } from "../helpers/rejection.js";

interface Device {
  coils: boolean[];
  holding: number[];
  /** address → exception code the next reads of that holding register answer. */
  faults: Map<number, number>;
  /** How many more times a busy fault answers 06 before it clears (Infinity: always). */
  busyLeft: number;
  /** Unit ids that never answer (a dead slave behind a gateway). */
  dead: Set<number>;
  holdingReads: number;
}

function device(): Device {
  return {
    coils: Array.from({ length: 2000 }, (_, i) => i % 3 === 0),
    holding: Array.from({ length: 200 }, (_, i) => 100 + i),
    faults: new Map(),
    busyLeft: 0,
    dead: new Set(),
    holdingReads: 0,
  };
}

function vector(d: Device): ServerVector {
  return {
    getCoil: (addr: number) => d.coils[addr]!,
    getDiscreteInput: (addr: number) => addr % 2 === 0,
    getInputRegister: (addr: number, unit: number) => unit * 1000 + addr,
    getHoldingRegister: (addr: number, unit: number) => {
      d.holdingReads++;
      if (d.dead.has(unit)) return new Promise<number>(() => {});
      const code = d.faults.get(addr);
      if (code !== undefined) {
        if (code !== 6 || d.busyLeft-- > 0) throw { modbusErrorCode: code };
      }
      if (addr >= d.holding.length) throw { modbusErrorCode: 2 };
      return d.holding[addr]!;
    },
    setCoil: (addr: number, value: boolean) => {
      d.coils[addr] = value;
    },
    setRegister: (addr: number, value: number) => {
      if (addr === 199) throw { modbusErrorCode: 3 };
      d.holding[addr] = value;
    },
  };
}

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function setup(extra: Partial<Parameters<typeof openModbusLink>[0]> = {}) {
  const d = device();
  const server = await startModbusSerialServer(vector(d));
  open.push(server);
  const link = openModbusLink({ kind: "tcp", host: "127.0.0.1", port: server.port, timeout: 300, ...extra });
  open.push(link);
  return { d, server, link };
}


describe("modbus tcp against modbus-serial ServerTCP", () => {
  it("reads with FC1, FC2, FC3 and FC4, for several unit ids on one connection", async () => {
    const { link } = await setup();
    await link.connect();
    const coils = await link.readBlock({ station: 1, area: "coil", start: 0, count: 10 });
    expect(coils).toBeInstanceOf(Uint8Array);
    expect(Array.from(coils)).toEqual([1, 0, 0, 1, 0, 0, 1, 0, 0, 1]);
    const discrete = await link.readBlock({ station: 1, area: "discrete", start: 5, count: 3 });
    expect(Array.from(discrete)).toEqual([0, 1, 0]);
    const holding = await link.readBlock({ station: 1, area: "holding", start: 10, count: 4 });
    expect(holding).toBeInstanceOf(Uint16Array);
    expect(Array.from(holding)).toEqual([110, 111, 112, 113]);
    const input1 = await link.readBlock({ station: 1, area: "input", start: 0, count: 2 });
    const input7 = await link.readBlock({ station: 7, area: "input", start: 0, count: 2 });
    expect(Array.from(input1)).toEqual([1000, 1001]);
    expect(Array.from(input7)).toEqual([7000, 7001]);
    // The protocol maxima in one request each.
    expect((await link.readBlock({ station: 1, area: "holding", start: 0, count: 125 })).length).toBe(125);
    const bits = await link.readBlock({ station: 1, area: "coil", start: 0, count: 2000 });
    expect(bits.length).toBe(2000);
    expect(bits[1998]).toBe(1);
    const h = link.health();
    expect(h.connected).toBe(true);
    expect(h.requests).toBe(7);
    expect(h.errors).toBe(0);
    expect(h.lastRoundTrip).toBeGreaterThanOrEqual(0);
    expect(link.unitHealth(7)?.requests).toBe(1);
  });

  it("writes with FC5 and FC6 for one item, FC15 and FC16 for more", async () => {
    const { d, link } = await setup();
    await link.write(1, "coil", 1, Uint8Array.of(1)); // FC5
    expect(d.coils[1]).toBe(true);
    await link.write(1, "coil", 0, Uint8Array.of(0)); // FC5 off
    expect(d.coils[0]).toBe(false);
    const pattern = Uint8Array.from({ length: 19 }, (_, i) => (i % 2 === 0 ? 1 : 0));
    await link.write(1, "coil", 100, pattern); // FC15, three data bytes
    expect(d.coils.slice(100, 119).map(Number)).toEqual(Array.from(pattern));
    expect(Array.from(await link.readBlock({ station: 1, area: "coil", start: 100, count: 19 }))).toEqual(Array.from(pattern));
    await link.write(1, "holding", 5, Uint16Array.of(0xbeef)); // FC6
    expect(d.holding[5]).toBe(0xbeef);
    const before = link.health().requests;
    await link.write(1, "holding", 20, Uint16Array.of(1, 2, 65535)); // FC16
    expect(link.health().requests - before).toBe(1);
    expect(d.holding.slice(20, 23)).toEqual([1, 2, 65535]);
  });

  it("forceSingleRegisterWrite writes several registers as consecutive FC6 requests", async () => {
    const { d, link } = await setup({ forceSingleRegisterWrite: true });
    await link.write(1, "holding", 30, Uint16Array.of(7, 8, 9, 10));
    expect(link.health().requests).toBe(4);
    expect(d.holding.slice(30, 34)).toEqual([7, 8, 9, 10]);
  });

  it("forceSingleRegisterWrite can name the unit ids that need it", async () => {
    const { d, link } = await setup({ forceSingleRegisterWrite: [3] });
    await link.write(3, "holding", 40, Uint16Array.of(1, 2, 3)); // three FC6
    await link.write(4, "holding", 50, Uint16Array.of(4, 5, 6)); // one FC16
    expect(link.unitHealth(3)?.requests).toBe(3);
    expect(link.unitHealth(4)?.requests).toBe(1);
    expect(d.holding.slice(40, 43).concat(d.holding.slice(50, 53))).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("maps every exception code to its StatusCode", async () => {
    const { d, link } = await setup({ busyRetries: 0 });
    const cases: [code: number, status: number, retryable: boolean][] = [
      [0x01, StatusCodes.BadNotSupported, false],
      [0x02, StatusCodes.BadConfigurationError, false],
      [0x03, StatusCodes.BadOutOfRange, false],
      [0x04, StatusCodes.BadDeviceFailure, false],
      [0x05, StatusCodes.BadResourceUnavailable, true],
      [0x06, StatusCodes.BadResourceUnavailable, true],
      [0x08, StatusCodes.BadDeviceFailure, false],
      [0x0a, StatusCodes.BadCommunicationError, true],
      [0x0b, StatusCodes.BadCommunicationError, true],
      [0x0c, StatusCodes.BadDeviceFailure, false],
    ];
    d.busyLeft = Infinity;
    for (const [code, status, retryable] of cases) {
      d.faults.set(50 + code, code);
      const err = await rejection(link.readBlock({ station: 1, area: "holding", start: 50 + code, count: 1 }));
      expect([err.exceptionCode, err.statusCode, err.retryable]).toEqual([code, status, retryable]);
    }
    // The peer's own range check, and a write refused with 03.
    const outside = await rejection(link.readBlock({ station: 1, area: "holding", start: 195, count: 10 }));
    expect([outside.exceptionCode, outside.statusCode]).toEqual([2, StatusCodes.BadConfigurationError]);
    const refused = await rejection(link.write(1, "holding", 199, Uint16Array.of(1)));
    expect([refused.exceptionCode, refused.statusCode]).toEqual([3, StatusCodes.BadOutOfRange]);
    const h = link.health();
    expect(h.exceptions).toBe(cases.length + 2);
    expect(h.communicationErrors).toBe(2); // 0A and 0B count as communication errors
    expect(h.connected).toBe(true);
  });

  it("retries 06 busy with backoff, a bounded number of times", async () => {
    const { d, link } = await setup({ busyRetries: 3, busyBackoff: 5 });
    d.faults.set(60, 6);
    d.busyLeft = 2;
    expect(Array.from(await link.readBlock({ station: 1, area: "holding", start: 60, count: 1 }))).toEqual([160]);
    expect(link.health().busyRetries).toBe(2);
    d.busyLeft = Infinity;
    d.holdingReads = 0;
    const err = await rejection(link.readBlock({ station: 1, area: "holding", start: 60, count: 1 }));
    expect([err.exceptionCode, err.statusCode, err.retryable]).toEqual([6, StatusCodes.BadResourceUnavailable, true]);
    expect(d.holdingReads).toBe(4); // the first try and three retries
  });

  it("lets other requests pass while a busy unit backs off", async () => {
    const { d, link } = await setup({ busyRetries: 1, busyBackoff: 150 });
    await link.connect();
    d.faults.set(61, 6);
    d.busyLeft = 1;
    const order: string[] = [];
    const busy = link.readBlock({ station: 1, area: "holding", start: 61, count: 1 }).then(() => order.push("busy"));
    const other = link.readBlock({ station: 2, area: "input", start: 0, count: 1 }).then(() => order.push("other"));
    await Promise.all([busy, other]);
    expect(order).toEqual(["other", "busy"]);
  });

  it("a unit that never answers costs the others only its time-out", async () => {
    const { d, link } = await setup({ timeout: 100 });
    d.dead.add(2);
    for (let round = 0; round < 4; round++) {
      const [alive, dead] = await Promise.allSettled([
        link.readBlock({ station: 1, area: "holding", start: 0, count: 2 }),
        link.readBlock({ station: 2, area: "holding", start: 0, count: 2 }),
      ]);
      expect(alive.status).toBe("fulfilled");
      expect(dead.status).toBe("rejected");
      const err = (dead as PromiseRejectedResult).reason as DriverError;
      expect([err.statusCode, err.retryable]).toEqual([StatusCodes.BadCommunicationError, true]);
    }
    expect(link.unitHealth(1)).toMatchObject({ requests: 4, errors: 0 });
    expect(link.unitHealth(2)).toMatchObject({ requests: 4, errors: 4, timeouts: 4 });
    // Answers from unit 1 between the time-outs keep the connection (no reconnect).
    expect(link.health().connects).toBe(1);
  });

  it("goes Bad when the peer stops and reconnects with backoff when it is back", async () => {
    const d = device();
    let server = await startModbusSerialServer(vector(d));
    const port = server.port;
    const link = openModbusLink({ kind: "tcp", host: "127.0.0.1", port, timeout: 300, reconnectDelay: 20, maxReconnectDelay: 100 });
    open.push(link);
    expect(Array.from(await link.readBlock({ station: 1, area: "holding", start: 0, count: 1 }))).toEqual([100]);
    await server.close();
    const down = await rejection(link.readBlock({ station: 1, area: "holding", start: 0, count: 1 }));
    expect([down.statusCode, down.retryable]).toEqual([StatusCodes.BadCommunicationError, true]);
    expect(link.health().connected).toBe(false);
    server = await startModbusSerialServer(vector(d), port);
    open.push(server);
    let value: number | undefined;
    for (let i = 0; i < 100 && value === undefined; i++) {
      try {
        value = (await link.readBlock({ station: 1, area: "holding", start: 0, count: 1 }))[0];
      } catch (e) {
        expect((e as DriverError).statusCode).toBe(StatusCodes.BadCommunicationError);
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    expect(value).toBe(100);
    expect(link.health().connects).toBe(2);
  });

  it("refuses bad arguments without sending anything", async () => {
    const { link } = await setup();
    const cases: Promise<unknown>[] = [
      link.readBlock({ station: 1, area: "holding", start: 0, count: 126 }),
      link.readBlock({ station: 1, area: "coil", start: 0, count: 2001 }),
      link.readBlock({ station: 1, area: "input", start: 65535, count: 2 }),
      link.readBlock({ station: 256, area: "input", start: 0, count: 1 }),
      link.readBlock({ station: 1, area: "holding", start: 0, count: 0 }),
      link.write(1, "holding", 0, new Uint16Array(124)),
      link.write(1, "coil", 0, new Uint8Array(1969)),
    ];
    for (const p of cases) expect((await rejection(p)).statusCode).toBe(StatusCodes.BadInvalidArgument);
    expect(link.health().requests).toBe(0);
  });
});
