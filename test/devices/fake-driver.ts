// A Driver over plain arrays, for poll-group tests: exact control of failures, no sockets.
import { DriverError, type BlockRequest, type Driver, type DriverHealth } from "../../src/devices/driver.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import type { DataValue } from "../../src/ua/builtins.js";
import type { ValueCache } from "../../src/values/value-cache.js";
import { DriverRegistry } from "../../src/devices/registry.js";
import { modbusDrivers } from "../../drivers/modbus/definition.js";
import type { ModbusLinkOptions } from "../../drivers/modbus/options.js";
import { simulatorDriver, type SimulatorStarter } from "../../drivers/simulator/definition.js";

/** The data areas of the Modbus devices the tests' maps name. */
type DataArea = "coil" | "discrete" | "input" | "holding";

export class FakeDriver implements Driver {
  readonly memory: Record<DataArea, Uint16Array> = {
    coil: new Uint16Array(1000),
    discrete: new Uint16Array(1000),
    input: new Uint16Array(1000),
    holding: new Uint16Array(1000),
  };
  /** Every request, as "area:start+count" or "write area:start=[...]". */
  readonly log: string[] = [];
  /** No answer: every request fails as a time-out would. */
  down = false;
  /** Addresses (per area) that answer exception 02. */
  readonly illegal: Record<DataArea, Set<number>> = { coil: new Set(), discrete: new Set(), input: new Set(), holding: new Set() };
  /** Addresses whose reads answer exception 04 (slave device failure). */
  readonly failing = new Set<number>();
  /** Addresses whose requests are refused with the given error (busy, unsupported, ...). */
  readonly refusals = new Map<number, DriverError>();
  connected = false;
  connects = 0;
  closed = false;
  private requests = 0;
  private errors = 0;

  async connect(): Promise<void> {
    if (this.down) throw new DriverError("refused", StatusCodes.BadCommunicationError, "connect ECONNREFUSED", true);
    this.connects++;
    this.connected = true;
  }

  async readBlock(r: BlockRequest): Promise<Uint16Array | Uint8Array> {
    this.requests++;
    const area = r.area as DataArea;
    this.log.push(`${area}:${r.start}+${r.count}`);
    this.check(area, r.start, r.count);
    const src = this.memory[area].subarray(r.start, r.start + r.count);
    return r.area === "coil" || r.area === "discrete" ? Uint8Array.from(src) : Uint16Array.from(src);
  }

  async write(station: unknown, area: string, start: number, values: Uint16Array | Uint8Array): Promise<void> {
    this.requests++;
    this.log.push(`write ${area}:${start}=[${Array.from(values).join(",")}]`);
    this.check(area as DataArea, start, values.length);
    this.memory[area as DataArea].set(values, start);
    void station;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.connected = false;
  }

  health(): DriverHealth {
    return { connected: this.connected, requests: this.requests, errors: this.errors, lastError: undefined, lastRoundTrip: undefined };
  }

  private check(area: DataArea, start: number, count: number): void {
    if (this.down) {
      this.errors++;
      this.connected = false;
      throw new DriverError("timeout", StatusCodes.BadCommunicationError, "time-out after 1000 ms", true);
    }
    for (let a = start; a < start + count; a++) {
      if (this.illegal[area].has(a)) {
        this.errors++;
        throw new DriverError("badAddress", StatusCodes.BadConfigurationError, "exception 02: illegal data address", false);
      }
      if (this.failing.has(a)) {
        this.errors++;
        throw new DriverError("deviceFailure", StatusCodes.BadDeviceFailure, "exception 04: slave device failure", false);
      }
      const refusal = this.refusals.get(a);
      if (refusal !== undefined) {
        this.errors++;
        throw refusal;
      }
    }
  }
}

/** Lets every pending promise chain run (the fake driver answers at once). */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Every value and status change of some value cache slots, by tag name: what a poller handed
 * on, as the DataValues a Read would get.
 */
export class ValueLog {
  readonly updates: { tag: string; value: DataValue }[] = [];
  constructor(readonly values: ValueCache) {}

  watch(slot: number, tag: string): void {
    const values = this.values;
    const log = this.updates;
    values.subscribe(slot, {
      offerNumber: () => log.push({ tag, value: values.get(slot) }),
      offerDataValue: (value) => log.push({ tag, value }),
      sourceChanged: () => undefined,
    });
  }

  last(tag: string): DataValue | undefined {
    for (let i = this.updates.length - 1; i >= 0; i--) if (this.updates[i]!.tag === tag) return this.updates[i]!.value;
    return undefined;
  }

  take(): { tag: string; value: DataValue }[] {
    return this.updates.splice(0);
  }
}

/** A link a test's registry opened: the options it got and its fake driver. */
export interface FakeLink {
  readonly options: ModbusLinkOptions;
  readonly driver: FakeDriver;
}

/**
 * The gateway's drivers with fakes for links: the Modbus and simulator definitions as they are
 * (link keys, merged options), each link a FakeDriver recorded in `links`; simulators started
 * by `start` (default: one that pretends to listen on port 1).
 */
export function fakeDrivers(links: FakeLink[], start: SimulatorStarter = async () => ({ port: 1, close: async () => undefined })): DriverRegistry {
  return driversWith((options) => {
    const driver = new FakeDriver();
    links.push({ options, driver });
    return driver;
  }, start);
}

/** The Modbus and simulator drivers with links opened by `open` (the real link, or a fake). */
export function driversWith(open: (options: ModbusLinkOptions) => Driver, start: SimulatorStarter = async () => ({ port: 1, close: async () => undefined })): DriverRegistry {
  const registry = new DriverRegistry();
  for (const [name, definition] of Object.entries(modbusDrivers(open))) registry.register(name, definition);
  registry.register("simulator", simulatorDriver(start, open));
  return registry;
}
