// The built-in simulator, read through the real modbus-tcp driver: its documented layout, values
// that change with time, writable memory per unit, exception 02 past its size.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openModbusLink } from "../../drivers/modbus/index.js";
import { startSimulator, type Simulator } from "../../drivers/simulator/index.js";
import { DriverError, type Driver } from "../../src/devices/driver.js";

let now = Date.UTC(2026, 0, 1);
let sim: Simulator;
let link: Driver;

beforeAll(async () => {
  sim = await startSimulator({ size: 1000, now: () => now });
  link = openModbusLink({ kind: "tcp", host: "127.0.0.1", port: sim.port, timeout: 1000 });
});

afterAll(async () => {
  await link?.close();
  await sim?.close();
});

/** The registers' bytes, high byte first (Modbus order). */
const bytes = (words: ArrayLike<number>) => {
  const b = Buffer.alloc(words.length * 2);
  for (let i = 0; i < words.length; i++) b.writeUInt16BE(words[i]!, 2 * i);
  return b;
};
const f32 = (hi: number, lo: number) => bytes([hi, lo]).readFloatBE(0);

describe("the simulator", () => {
  it("listens on a free loopback port", () => {
    expect(sim.host).toBe("127.0.0.1");
    expect(sim.port).toBeGreaterThan(0);
  });

  it("computes its input registers from the clock: ramp, sine, counters", async () => {
    const a = (await link.readBlock({ station: 1, area: "input", start: 0, count: 18 })) as Uint16Array;
    now += 1500;
    const b = (await link.readBlock({ station: 1, area: "input", start: 0, count: 18 })) as Uint16Array;
    expect((b[0]! - a[0]! + 1000) % 1000).toBe(15);
    const t = f32(b[2]!, b[3]!);
    expect(t).toBeGreaterThanOrEqual(15);
    expect(t).toBeLessThanOrEqual(25);
    const count = (r: Uint16Array) => r[4]! * 65536 + r[5]!;
    expect(count(b) - count(a)).toBe(15);
    const pressure = f32(b[9]!, b[8]!);
    expect(pressure).toBeGreaterThanOrEqual(1.3);
    expect(pressure).toBeLessThanOrEqual(1.7);
    expect(bytes(b.subarray(10, 14)).readDoubleBE(0)).toBeCloseTo(1.5, 6);
    expect(bytes(b.subarray(14, 18)).readBigUInt64BE(0)).toBe(1500n);
  });

  it("keeps writable holding registers and coils per unit, with documented initial values", async () => {
    const h = (await link.readBlock({ station: 7, area: "holding", start: 0, count: 18 })) as Uint16Array;
    expect(h[0]).toBe(50);
    expect(f32(h[1]!, h[2]!)).toBe(21.5);
    expect(bytes(h.subarray(10, 18)).toString("latin1")).toMatch(/^fieldgate sim\0/);
    await link.write(7, "holding", 100, Uint16Array.of(11, 12));
    await link.write(7, "coil", 5, Uint8Array.of(1));
    expect(Array.from(await link.readBlock({ station: 7, area: "holding", start: 100, count: 2 }))).toEqual([11, 12]);
    expect(Array.from(await link.readBlock({ station: 7, area: "coil", start: 4, count: 3 }))).toEqual([0, 1, 0]);
    expect(Array.from(await link.readBlock({ station: 8, area: "holding", start: 100, count: 2 }))).toEqual([0, 0]);
    expect(sim.unit(7).holding[101]).toBe(12);
  });

  it("answers exception 02 past its size", async () => {
    const err = await link.readBlock({ station: 1, area: "holding", start: 999, count: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DriverError);
    expect((err as DriverError).exceptionCode).toBe(2);
  });
});
