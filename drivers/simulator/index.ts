// The built-in simulator: a Modbus TCP slave on loopback (modbus-serial's ServerTCP, a peer we
// did not write) with values that change, so that a new gateway shows live data at once and the
// bench has 100 devices to poll. It answers every unit id; each unit has its own writable
// memory and its signals run with a phase of its own.
//
// Values are computed from the clock when they are read: no timer runs per register or unit.
// Layout (0-based, the same for every unit; README and config/devices.yaml document it):
//   input:0          ramp, uint16 0..999, +1 every 100 ms
//   input:1          sawtooth percent, uint16 0..100, one period a minute
//   input:2-3        sine float32 ABCD, 20 ± 5 (a temperature, period 60 s)
//   input:4-5        counter uint32, +1 every 100 ms since the simulator started
//   input:6          sine int16, ±1000 (period 30 s)
//   input:8-9        sine float32 CDAB, 1.5 ± 0.2 (a pressure, period 20 s)
//   input:10-13      float64 ABCD, seconds since the simulator started
//   input:14-17      counter uint64, milliseconds since the simulator started
//   input:n (n>=20)  (n + seconds since start) mod 65536: changing values for any tag count
//   holding:*        memory, writable; holding:0 = 50, holding:1-2 = float32 21.5,
//                    holding:10-17 = string "fieldgate sim"
//   coil:*           memory, writable; coil:0 = true
//   discrete:n       square waves: on during odd seconds (shifted by n)
// Addresses at or above `size` (default 10000) answer exception 02 (illegal data address).
import { ServerTCP } from "modbus-serial";

export interface SimulatorOptions {
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port?: number;
  /** Registers and bits per area and unit. */
  readonly size?: number;
  /** Time source, ms (tests pin it). */
  readonly now?: () => number;
}

export interface Simulator {
  readonly host: string;
  readonly port: number;
  /** The writable memory of one unit (created on first use). */
  unit(unitId: number): SimulatedUnit;
  close(): Promise<void>;
}

export interface SimulatedUnit {
  readonly holding: Uint16Array;
  readonly coils: Uint8Array;
}

const ILLEGAL_ADDRESS = Object.freeze({ modbusErrorCode: 0x02, msg: "Illegal data address" });

interface NetServerLike {
  address(): { port: number } | string | null;
}

export function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const host = options.host ?? "127.0.0.1";
  const size = options.size ?? 10_000;
  const now = options.now ?? Date.now;
  const t0 = now();
  const units = new Map<number, SimulatedUnit>();

  const unit = (id: number): SimulatedUnit => {
    let u = units.get(id);
    if (!u) {
      u = { holding: new Uint16Array(size), coils: new Uint8Array(size) };
      u.holding[0] = 50;
      const f = Buffer.alloc(4);
      f.writeFloatBE(21.5);
      u.holding[1] = f.readUInt16BE(0);
      u.holding[2] = f.readUInt16BE(2);
      const text = Buffer.from("fieldgate sim\0\0\0", "latin1");
      for (let i = 0; i < 8; i++) u.holding[10 + i] = text.readUInt16BE(2 * i);
      u.coils[0] = 1;
      units.set(id, u);
    }
    return u;
  };

  const check = (addr: number, length: number): void => {
    if (addr + length > size) throw ILLEGAL_ADDRESS;
  };

  const scratch = Buffer.alloc(8);
  /** One input register of `unitId` at time `t` (ms since start). */
  const input = (addr: number, unitId: number, t: number): number => {
    const phase = unitId * 1000;
    const s = (t + phase) / 1000;
    switch (addr) {
      case 0:
        return Math.floor((t + phase) / 100) % 1000;
      case 1:
        return Math.floor(((s % 60) / 60) * 100);
      case 2:
      case 3:
        scratch.writeFloatBE(20 + 5 * Math.sin((2 * Math.PI * s) / 60));
        return scratch.readUInt16BE(addr === 2 ? 0 : 2);
      case 4:
      case 5: {
        const n = Math.floor(t / 100) >>> 0;
        return addr === 4 ? n >>> 16 : n & 0xffff;
      }
      case 6:
        return Math.round(1000 * Math.sin((2 * Math.PI * s) / 30)) & 0xffff;
      case 8:
      case 9:
        // CDAB: the low word first.
        scratch.writeFloatBE(1.5 + 0.2 * Math.sin((2 * Math.PI * s) / 20));
        return scratch.readUInt16BE(addr === 8 ? 2 : 0);
      case 10:
      case 11:
      case 12:
      case 13:
        scratch.writeDoubleBE(t / 1000);
        return scratch.readUInt16BE(2 * (addr - 10));
      case 14:
      case 15:
      case 16:
      case 17:
        scratch.writeBigUInt64BE(BigInt(Math.floor(t)));
        return scratch.readUInt16BE(2 * (addr - 14));
      default:
        return addr < 20 ? 0 : (addr + Math.floor(s)) % 65536;
    }
  };

  const vector = {
    getInputRegister: (addr: number, unitId: number): number => {
      check(addr, 1);
      return input(addr, unitId, now() - t0);
    },
    getMultipleInputRegisters: (addr: number, length: number, unitId: number): number[] => {
      check(addr, length);
      const t = now() - t0;
      const out = new Array<number>(length);
      for (let i = 0; i < length; i++) out[i] = input(addr + i, unitId, t);
      return out;
    },
    getHoldingRegister: (addr: number, unitId: number): number => {
      check(addr, 1);
      return unit(unitId).holding[addr]!;
    },
    getMultipleHoldingRegisters: (addr: number, length: number, unitId: number): number[] => {
      check(addr, length);
      return Array.from(unit(unitId).holding.subarray(addr, addr + length));
    },
    getCoil: (addr: number, unitId: number): boolean => {
      check(addr, 1);
      return unit(unitId).coils[addr] === 1;
    },
    getDiscreteInput: (addr: number, unitId: number): boolean => {
      check(addr, 1);
      return (Math.floor((now() - t0 + unitId * 1000) / 1000) + addr) % 2 === 1;
    },
    setRegister: (addr: number, value: number, unitId: number): void => {
      check(addr, 1);
      unit(unitId).holding[addr] = value;
    },
    setCoil: (addr: number, value: boolean, unitId: number): void => {
      check(addr, 1);
      unit(unitId).coils[addr] = value ? 1 : 0;
    },
  };

  return new Promise((resolve, reject) => {
    // ServerTCP treats port 0 as "default 502"; the string "0" reaches listen() as "any port".
    const port = options.port ?? 0;
    const server = new ServerTCP(vector, { host, port: (port === 0 ? "0" : port) as number, unitID: 255 });
    const internal = server as unknown as { _server: NetServerLike };
    const fail = (err: Error) => reject(err);
    server.once("serverError", fail);
    // A client that resets its connection must not take the process down.
    server.on("socketError", () => undefined);
    server.on("error", () => undefined);
    server.once("initialized", () => {
      server.off("serverError", fail);
      const address = internal._server.address();
      const bound = typeof address === "object" && address !== null ? address.port : port;
      let closed: Promise<void> | undefined;
      resolve({
        host,
        port: bound,
        unit,
        close: () => (closed ??= new Promise<void>((done) => server.close(() => done()))),
      });
    });
  });
}
