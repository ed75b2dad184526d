// A Driver over plain arrays, for poll-group tests: exact control of failures, no sockets.
import { DriverError, type BlockRequest, type DataArea, type Driver, type DriverHealth } from "../../src/devices/driver.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";

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
  connected = false;
  connects = 0;
  closed = false;
  private requests = 0;
  private errors = 0;

  async connect(): Promise<void> {
    if (this.down) throw new DriverError(StatusCodes.BadCommunicationError, "connect ECONNREFUSED", true);
    this.connects++;
    this.connected = true;
  }

  async readBlock(r: BlockRequest): Promise<Uint16Array | Uint8Array> {
    this.requests++;
    this.log.push(`${r.area}:${r.start}+${r.count}`);
    this.check(r.area, r.start, r.count);
    const src = this.memory[r.area].subarray(r.start, r.start + r.count);
    return r.area === "coil" || r.area === "discrete" ? Uint8Array.from(src) : Uint16Array.from(src);
  }

  async write(unitId: number, area: "coil" | "holding", start: number, values: Uint16Array | Uint8Array): Promise<void> {
    this.requests++;
    this.log.push(`write ${area}:${start}=[${Array.from(values).join(",")}]`);
    this.check(area, start, values.length);
    this.memory[area].set(values, start);
    void unitId;
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
      throw new DriverError(StatusCodes.BadCommunicationError, "time-out after 1000 ms", true);
    }
    for (let a = start; a < start + count; a++) {
      if (this.illegal[area].has(a)) {
        this.errors++;
        throw new DriverError(StatusCodes.BadConfigurationError, "exception 02: illegal data address", false, 0x02);
      }
      if (this.failing.has(a)) {
        this.errors++;
        throw new DriverError(StatusCodes.BadDeviceFailure, "exception 04: slave device failure", false, 0x04);
      }
    }
  }
}

/** Lets every pending promise chain run (the fake driver answers at once). */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
