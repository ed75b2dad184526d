// The built-in simulator: a Modbus TCP slave on loopback (modbus-tcp-slave.ts) with values that change, so that a new gateway shows live data at once and the
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
import { ILLEGAL_DATA_ADDRESS, listenModbusTcp, ModbusException, type SlaveHandlers } from "./modbus-tcp-slave.js";

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

const ILLEGAL_ADDRESS = new ModbusException(ILLEGAL_DATA_ADDRESS);

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

  const handlers: SlaveHandlers = {
    readBits(area, unitId, start, count, out) {
      check(start, count);
      if (area === "coil") {
        out.set(unit(unitId).coils.subarray(start, start + count));
        return;
      }
      const second = Math.floor((now() - t0 + unitId * 1000) / 1000);
      for (let i = 0; i < count; i++) out[i] = (second + start + i) % 2;
    },
    readRegisters(area, unitId, start, count, out) {
      check(start, count);
      if (area === "holding") {
        out.set(unit(unitId).holding.subarray(start, start + count));
        return;
      }
      const t = now() - t0;
      for (let i = 0; i < count; i++) out[i] = input(start + i, unitId, t);
    },
    writeBits(unitId, start, values) {
      check(start, values.length);
      unit(unitId).coils.set(values, start);
    },
    writeRegisters(unitId, start, values) {
      check(start, values.length);
      unit(unitId).holding.set(values, start);
    },
  };

  return listenModbusTcp(handlers, host, options.port ?? 0).then((slave) => ({
    host,
    port: slave.port,
    unit,
    close: () => slave.close(),
  }));
}
