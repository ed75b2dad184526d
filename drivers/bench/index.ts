// The bench driver: an in-process device for the bench namespace (src/testing/bench-namespace.ts)
// and load clients of other stacks, addressed as a Modbus device is (modbus/protocol.ts) without
// Modbus's request limits. Its input registers hold UInt64 counters, four registers
// each (counter k at input:4(k-1), big-endian words), and every read of a counter's registers
// adds one to it first: a counter counts its own polls, so a client subscribed to it at the
// poll rate sees in its values how many samples the gateway really took. Holding registers are
// plain memory (the BenchmarkValues), written as a device would take them.
//
// It stands behind the Driver interface like any device, so the counters reach monitored items
// by the path of device tags: poll group -> value cache -> monitored item (DESIGN: a benchmark
// path that real tags do not take proves nothing). A read returns a view of the device's
// registers, not a copy: the poll group decodes it before anything else can run.
import type { BlockRequest, Driver, DriverHealth } from "../../src/devices/driver.js";
import { DriverError } from "../../src/devices/driver.js";
import type { DriverDefinition } from "../../src/devices/registry.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { modbusProtocol } from "../modbus/definition.js";
import type { ModbusDevice } from "../modbus/protocol.js";

/** The driver's name in a device map (the bench namespace's; devices.yaml cannot name it). */
export const BENCH_DRIVER = "bench";

/** Registers of one counter. */
export const COUNTER_REGISTERS = 4;
const TWO_16 = 65536;
const TWO_32 = 4294967296;

export interface BenchDriverOptions {
  /** Counters in the input registers. */
  readonly counters: number;
  /** Holding registers of memory. */
  readonly holding: number;
}

export class BenchDriver implements Driver {
  /** counts[k-1] is counter k's value. */
  private readonly counts: Float64Array;
  private readonly input: Uint16Array;
  private readonly holding: Uint16Array;
  private readonly bits: Uint8Array = new Uint8Array(0);
  private requests = 0;
  private errors = 0;

  constructor(options: BenchDriverOptions) {
    this.counts = new Float64Array(options.counters);
    this.input = new Uint16Array(options.counters * COUNTER_REGISTERS);
    this.holding = new Uint16Array(options.holding);
  }

  /** Counter k's value (1-based), for tests. */
  count(k: number): number {
    return this.counts[k - 1]!;
  }

  readonly connected = true;

  async connect(): Promise<void> {}

  async readBlock(r: BlockRequest): Promise<Uint16Array | Uint8Array> {
    this.requests++;
    if (r.area === "holding") return this.view(this.holding, r);
    if (r.area !== "input") return this.view(this.bits, r);
    const regs = this.view(this.input, r) as Uint16Array;
    // Every counter wholly inside the block counts this read.
    const first = Math.ceil(r.start / COUNTER_REGISTERS);
    const end = Math.floor((r.start + r.count) / COUNTER_REGISTERS);
    const counts = this.counts;
    const input = this.input;
    for (let c = first; c < end; c++) {
      const v = counts[c]! + 1;
      counts[c] = v;
      const hi = Math.floor(v / TWO_32);
      const lo = v - hi * TWO_32;
      const at = c * COUNTER_REGISTERS;
      input[at] = Math.floor(hi / TWO_16);
      input[at + 1] = hi % TWO_16;
      input[at + 2] = Math.floor(lo / TWO_16);
      input[at + 3] = lo % TWO_16;
    }
    return regs;
  }

  async write(_station: unknown, area: string, start: number, values: Uint16Array | Uint8Array): Promise<void> {
    this.requests++;
    if (area !== "holding" || start + values.length > this.holding.length) {
      this.errors++;
      throw new DriverError("badAddress", StatusCodes.BadConfigurationError, `bench: no ${area} at ${start}+${values.length}`, false);
    }
    this.holding.set(values, start);
  }

  async close(): Promise<void> {}

  health(): DriverHealth {
    return { connected: true, requests: this.requests, errors: this.errors, lastError: undefined, lastRoundTrip: 0 };
  }

  private view(regs: Uint16Array | Uint8Array, r: BlockRequest): Uint16Array | Uint8Array {
    if (r.start + r.count > regs.length) {
      this.errors++;
      throw new DriverError("badAddress", StatusCodes.BadConfigurationError, `bench: no ${r.area} at ${r.start}+${r.count}`, false);
    }
    return regs.subarray(r.start, r.start + r.count);
  }
}

/** One in-process device for all bench devices of a map; options from the map's bench devices. */
export function benchDriver(): DriverDefinition<BenchDriverOptions> {
  return {
    linkKey: () => "bench",
    linkOptions: (devices) => {
      let counters = 0;
      let holding = 0;
      for (const d of devices as readonly ModbusDevice[]) {
        for (const t of d.tags) {
          const a = t.address;
          if (a.area === "input") counters = Math.max(counters, Math.ceil((a.offset + COUNTER_REGISTERS) / COUNTER_REGISTERS));
          else if (a.area === "holding") holding = Math.max(holding, a.offset + 2);
        }
      }
      return { counters, holding };
    },
    open: (options) => new BenchDriver(options),
    // An array in memory: a poll group reads all its tags in one block.
    protocol: modbusProtocol({ maxRegisters: Number.MAX_SAFE_INTEGER, maxBits: Number.MAX_SAFE_INTEGER }),
    describeLink: () => "in-process",
    internal: true,
  };
}
