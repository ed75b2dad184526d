// Poll groups and the device they poll (DESIGN: Sampling, Devices). A device's tags are grouped
// by rate; each group is one ScheduledGroup of the process's DeadlineScheduler (absolute
// deadlines, missed slots skipped) whose sample reads the group's coalesced blocks one after
// the other through the device's link.
//
// Status of a tag's value (Part 8 §5.3 via Part 4 §7.34 StatusCodes):
//   before its first poll        BadWaitingForInitialData (set by the namespace)
//   read                         Good, sourceTimestamp = when the answer arrived
//   device silent, never read    BadNoCommunication
//   device silent, read before   BadCommunicationError with the last value and its timestamp
//   exception 02 on its address  BadConfigurationError, and it is no longer polled
//   other exception (04, ...)    the driver's StatusCode (BadDeviceFailure, ...), last value kept
// Only changes of status are handed on while a device is down, so a dead device costs its
// subscribers and the history nothing per cycle.
//
// Backoff and demotion: a cycle that meets a communication failure stops at once (reading the
// other blocks would only wait for more time-outs on a shared bus) and the device waits
// retryBackoff * 2^(failures-1), at most maxBackoff, before its next attempt; after demoteAfter
// failed cycles it is "demoted" in its diagnostics. Every attempt is a probe: the first block
// answered brings the device back.
import type { DataValue, StatusCode, Variant } from "../ua/builtins.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { DeviceConfig, TagConfig } from "../config/device-map.js";
import { blockOf, planBlocks, type Block, type Placed } from "./block-plan.js";
import type { Clock } from "../sampling/clock.js";
import { DriverError, type DataArea, type Driver } from "./driver.js";
import type { LatenessHistogram } from "../sampling/lateness.js";
import type { DeadlineScheduler, SampleTask, ScheduledGroup } from "../sampling/scheduler.js";
import { compileTag, decodeRaw, decodeValue, encodeValue, Kind, variantOf, type CodecTag } from "./tag-codec.js";

/** Where polled values go (the device namespace). Called for every new value or status. */
export interface TagSink {
  update(tag: PolledTag, value: DataValue): void;
}

export type DeviceState = "waiting" | "ok" | "failing" | "demoted";

const WAITING: DataValue = Object.freeze({ statusCode: StatusCodes.BadWaitingForInitialData });

/**
 * One tag as the poller keeps it: eight fields, one of 10,000 on a big map. What the tag last
 * showed is the DataValue last handed to the sink (`current`), which the sink keeps anyway;
 * its value, time and status are read from there.
 */
export class PolledTag implements Placed {
  readonly config: TagConfig;
  readonly area: DataArea;
  readonly start: number;
  readonly width: number;
  readonly codec: CodecTag;
  /** The sink's handle for this tag (the namespace's variable). */
  handle: unknown;
  /** The last DataValue handed to the sink (or carried over a reload); never changed once set. */
  current: DataValue = WAITING;
  /** Exception 02 on this tag's own address: not polled until the map changes. */
  configError = false;

  constructor(config: TagConfig, device: DeviceConfig, handle: unknown) {
    this.config = config;
    this.area = config.address.area;
    this.start = config.address.offset;
    this.codec = compileTag(config, device.byteOrder);
    this.width = this.codec.width;
    this.handle = handle;
  }

  get name(): string {
    return this.config.name;
  }
  get writable(): boolean {
    return this.config.access === "readwrite";
  }
  get history(): boolean {
    return this.config.history;
  }
  /** Last value read: what a Bad status keeps showing. */
  get last(): Variant | undefined {
    return this.current.value;
  }
  /** Source timestamp of the last value read. */
  get lastTime(): number {
    return this.current.sourceTimestamp ?? 0;
  }
  get status(): StatusCode {
    return this.current.statusCode ?? StatusCodes.Good;
  }
}

function isIllegalAddress(err: unknown): boolean {
  return err instanceof DriverError && err.exceptionCode === 0x02;
}

/** No answer at all, or a gateway that could not reach the slave (0A, 0B): the device is down. */
function isCommunicationFailure(err: unknown): boolean {
  if (!(err instanceof DriverError)) return true;
  const x = err.exceptionCode;
  return x === undefined || x === 0x0a || x === 0x0b;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The tags of one device polled at one rate. */
export class PollGroup implements SampleTask {
  readonly interval: number;
  readonly tags: readonly PolledTag[];
  blocks: Block<PolledTag>[];
  scheduled: ScheduledGroup | undefined;
  /** Cycles skipped because the device was backing off. */
  backedOff = 0;
  private readonly device: DevicePoller;

  constructor(device: DevicePoller, interval: number, tags: readonly PolledTag[]) {
    this.device = device;
    this.interval = interval;
    this.tags = tags;
    this.blocks = planBlocks(tags, device.limits);
  }

  get requestsPerCycle(): number {
    return this.blocks.length;
  }

  sample(deadline: number, now: number): void | Promise<void> {
    this.device.lateness?.record(now - deadline);
    if (!this.device.mayAttempt(now)) {
      this.backedOff++;
      return;
    }
    return this.poll();
  }

  private async poll(): Promise<void> {
    const d = this.device;
    const blocks = this.blocks;
    /** The plan with refused blocks replaced by their parts; made only when one is. */
    let next: Block<PolledTag>[] | undefined;
    for (let i = 0; i < blocks.length; i++) {
      const block = blocks[i]!;
      let parts: Block<PolledTag>[] | undefined;
      try {
        this.deliver(block, await d.read(block));
      } catch (err) {
        if (d.stopped) return;
        try {
          if (!isIllegalAddress(err)) throw err;
          // Exception 02: some address in the block does not exist. Halve it until the tags
          // that fail alone are found; the halves that answer become blocks of their own.
          const found: Block<PolledTag>[] = [];
          await this.split(block, found);
          parts = found;
        } catch (failure) {
          if (d.stopped) return;
          if (isCommunicationFailure(failure)) {
            if (next) this.blocks = next.concat(blocks.slice(i));
            d.failed(failure);
            return;
          }
          // The device answered with another exception: these tags alone go Bad.
          d.answered();
          this.fail(block.tags, (failure as DriverError).statusCode);
        }
      }
      if (parts) (next ??= blocks.slice(0, i)).push(...parts);
      else next?.push(block);
    }
    if (next) this.blocks = next;
    d.answered();
    d.cycleDone();
  }

  /** Reads the halves of a block refused with exception 02; throws any other failure. */
  private async split(block: Block<PolledTag>, out: Block<PolledTag>[]): Promise<void> {
    const d = this.device;
    d.answered();
    if (block.tags.length === 1) {
      const tag = block.tags[0]!;
      tag.configError = true;
      tag.current = { statusCode: StatusCodes.BadConfigurationError };
      d.sink.update(tag, tag.current);
      d.noteConfigError(tag);
      return;
    }
    const mid = block.tags.length >> 1;
    for (const half of [block.tags.slice(0, mid), block.tags.slice(mid)]) {
      const sub = blockOf(half);
      let data: Uint16Array | Uint8Array;
      try {
        data = await d.read(sub);
      } catch (err) {
        if (!isIllegalAddress(err)) throw err;
        await this.split(sub, out);
        continue;
      }
      this.deliver(sub, data);
      out.push(sub);
    }
  }

  private deliver(block: Block<PolledTag>, data: Uint16Array | Uint8Array): void {
    const d = this.device;
    if (d.stopped) return;
    const time = d.clock.wallNow();
    const tags = block.tags;
    for (let i = 0; i < tags.length; i++) {
      const tag = tags[i]!;
      const raw = decodeRaw(tag.codec, data, tag.start - block.start);
      // An unchanged value keeps its Variant (immutable once made): a poll of 10,000 quiet
      // registers makes 10,000 DataValues, not twice as many objects.
      const last = tag.last;
      const value = last !== undefined && last.value === raw && last.dataType === tag.codec.builtinType ? last : variantOf(tag.codec, raw);
      const dv: DataValue = { value, sourceTimestamp: time };
      tag.current = dv;
      d.sink.update(tag, dv);
    }
  }

  /** Hands on a Bad status for tags whose status changes; values and timestamps are kept. */
  fail(tags: readonly PolledTag[], statusCode: StatusCode): void {
    const sink = this.device.sink;
    for (let i = 0; i < tags.length; i++) {
      const tag = tags[i]!;
      if (tag.configError) continue;
      const last = tag.last;
      const status = last === undefined && statusCode === StatusCodes.BadCommunicationError ? StatusCodes.BadNoCommunication : statusCode;
      if (tag.status === status) continue;
      const dv: DataValue = last === undefined ? { statusCode: status } : { value: last, statusCode: status, sourceTimestamp: tag.lastTime };
      tag.current = dv;
      sink.update(tag, dv);
    }
  }
}

export interface DevicePollerOptions {
  readonly config: DeviceConfig;
  readonly driver: Driver;
  readonly clock: Clock;
  readonly sink: TagSink;
  /** The sink's handle of each tag, in the order of config.tags. */
  readonly handles?: readonly unknown[];
  /** Where the lateness of every poll slot goes (poll jitter). */
  readonly lateness?: LatenessHistogram;
}

/** One device: its groups, health, counters and write path. */
export class DevicePoller {
  readonly name: string;
  readonly config: DeviceConfig;
  readonly unitId: number;
  readonly driver: Driver;
  readonly clock: Clock;
  readonly sink: TagSink;
  readonly limits: { readonly maxRegisters: number; readonly maxBits: number; readonly maxGap: number };
  readonly tags: readonly PolledTag[];
  readonly groups: readonly PollGroup[];
  readonly lateness: LatenessHistogram | undefined;
  /** Called after every poll cycle and state change (diagnostics). */
  onChange: ((device: DevicePoller) => void) | undefined;

  state: DeviceState = "waiting";
  consecutiveFailures = 0;
  requests = 0;
  errors = 0;
  lastError = "";
  /** Round-trip time of the last answered request, ms (queueing on a shared link included). */
  lastRoundTrip = 0;
  stopped = false;
  private nextAttemptAt = 0;
  private writeTail: Promise<unknown> = Promise.resolve();

  constructor(options: DevicePollerOptions) {
    const c = options.config;
    this.name = c.name;
    this.config = c;
    this.unitId = c.unitId;
    this.driver = options.driver;
    this.clock = options.clock;
    this.sink = options.sink;
    this.lateness = options.lateness;
    this.limits = { maxRegisters: c.maxRegistersPerRead, maxBits: c.maxBitsPerRead, maxGap: c.maxGap };
    const handles = options.handles;
    this.tags = c.tags.map((t, i) => new PolledTag(t, c, handles?.[i]));
    const byRate = new Map<number, PolledTag[]>();
    c.tags.forEach((t, i) => {
      const rate = t.rate ?? c.rate;
      let list = byRate.get(rate);
      if (!list) byRate.set(rate, (list = []));
      list.push(this.tags[i]!);
    });
    this.groups = [...byRate].sort(([a], [b]) => a - b).map(([rate, tags]) => new PollGroup(this, rate, tags));
  }

  tag(name: string): PolledTag | undefined {
    return this.tags.find((t) => t.name === name);
  }

  /** Read requests one cycle of every group makes. */
  get requestsPerCycle(): number {
    let n = 0;
    for (const g of this.groups) n += g.requestsPerCycle;
    return n;
  }

  start(scheduler: DeadlineScheduler, t0 = scheduler.now): void {
    this.stopped = false;
    for (const g of this.groups) g.scheduled = scheduler.every(g.interval, g, t0);
  }

  stop(scheduler: DeadlineScheduler): void {
    this.stopped = true;
    for (const g of this.groups) {
      if (g.scheduled) scheduler.cancel(g.scheduled);
      g.scheduled = undefined;
    }
  }

  /** False while backing off after a failure. */
  mayAttempt(now: number): boolean {
    return !this.stopped && now >= this.nextAttemptAt;
  }

  /** One block read, counted and timed. */
  async read(block: Block<PolledTag>): Promise<Uint16Array | Uint8Array> {
    await this.ensureConnected();
    const start = this.clock.now();
    const data = await this.counted(() => this.driver.readBlock({ unitId: this.unitId, area: block.area, start: block.start, count: block.count }));
    this.lastRoundTrip = this.clock.now() - start;
    return data;
  }

  /** The device answered (data or an exception): it is reachable. */
  answered(): void {
    if (this.consecutiveFailures === 0 && this.state === "ok") return;
    this.consecutiveFailures = 0;
    this.nextAttemptAt = 0;
    this.state = "ok";
    this.onChange?.(this);
  }

  cycleDone(): void {
    this.onChange?.(this);
  }

  /** A communication failure: every tag of the device goes Bad, and the device backs off. */
  failed(err: unknown): void {
    if (this.stopped) return;
    this.consecutiveFailures++;
    const c = this.config;
    const wait = Math.min(c.maxBackoff, c.retryBackoff * 2 ** Math.min(this.consecutiveFailures - 1, 30));
    this.nextAttemptAt = this.clock.now() + wait;
    this.state = this.consecutiveFailures >= c.demoteAfter ? "demoted" : "failing";
    this.lastError = messageOf(err);
    for (const g of this.groups) g.fail(g.tags, StatusCodes.BadCommunicationError);
    this.onChange?.(this);
  }

  noteConfigError(tag: PolledTag): void {
    this.lastError = `exception 02 (illegal data address) for tag "${tag.name}" at ${tag.area}:${tag.start}: not polled until the map changes`;
    this.onChange?.(this);
  }

  /**
   * Writes an engineering value (Part 4 §5.10.4: the Write completes when the device has
   * taken it). Writes of one device go out in order, each after the previous one finished, so
   * that the read-modify-write of a bit tag cannot interleave with another write.
   */
  write(tag: PolledTag, value: Variant): Promise<StatusCode> {
    if (!tag.writable) return Promise.resolve(StatusCodes.BadNotWritable);
    const encoded = encodeValue(tag.codec, value);
    if (!encoded.ok) return Promise.resolve(encoded.statusCode);
    const run = () => this.writeNow(tag, encoded.data);
    const result = this.writeTail.then(run, run);
    this.writeTail = result;
    return result;
  }

  private async writeNow(tag: PolledTag, data: Uint16Array | Uint8Array): Promise<StatusCode> {
    if (this.stopped) return StatusCodes.BadNodeIdUnknown;
    const area = tag.area === "coil" ? "coil" : "holding";
    try {
      await this.ensureConnected();
      if (tag.codec.kind === Kind.Bit) {
        const current = (await this.counted(() => this.driver.readBlock({ unitId: this.unitId, area: "holding", start: tag.start, count: 1 })))[0]!;
        const mask = 1 << tag.codec.bit;
        data = Uint16Array.of((current & ~mask) | (data[0]! & mask));
      }
      if (area === "holding" && this.config.forceSingleRegisterWrite && data.length > 1) {
        for (let i = 0; i < data.length; i++) await this.counted(() => this.driver.write(this.unitId, area, tag.start + i, data.subarray(i, i + 1)));
      } else {
        await this.counted(() => this.driver.write(this.unitId, area, tag.start, data));
      }
    } catch (err) {
      return err instanceof DriverError ? err.statusCode : StatusCodes.BadCommunicationError;
    }
    await this.readBack(tag);
    return StatusCodes.Good;
  }

  /** Reads a written tag at once, so clients see the device's value without waiting a cycle. */
  private async readBack(tag: PolledTag): Promise<void> {
    try {
      const data = await this.counted(() => this.driver.readBlock({ unitId: this.unitId, area: tag.area, start: tag.start, count: tag.width }));
      if (this.stopped) return;
      const dv: DataValue = { value: decodeValue(tag.codec, data, 0), sourceTimestamp: this.clock.wallNow() };
      tag.current = dv;
      this.sink.update(tag, dv);
    } catch {
      // The next poll tells.
    }
  }

  private async counted<T>(op: () => Promise<T>): Promise<T> {
    this.requests++;
    try {
      return await op();
    } catch (err) {
      this.errors++;
      this.lastError = messageOf(err);
      throw err;
    }
  }

  /** A failed connect is an error of the device, though no request went out. */
  private async ensureConnected(): Promise<void> {
    if (this.driver.health().connected) return;
    try {
      await this.driver.connect();
    } catch (err) {
      this.errors++;
      this.lastError = messageOf(err);
      throw err;
    }
  }
}
