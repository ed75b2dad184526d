// One device of the map: its poll groups, health, counters and write path (DESIGN: Devices).
//
// Backoff and demotion: a cycle that meets a communication failure stops at once (reading the
// other blocks would only wait for more time-outs on a shared bus) and the device waits
// retryBackoff * 2^(failures-1), at most maxBackoff, before its next attempt; after demoteAfter
// failed cycles it is "demoted" in its diagnostics. Every attempt is a probe: the first block
// answered brings the device back.
//
// A device that answers every request of a cycle with a refusal of its own (a device failure,
// busy after the driver's retries: DriverError isDeviceFault) fails that cycle the same way,
// its reason in lastError; a refusal of one block while others answer is those tags' alone.
import type { DeviceConfig } from "../config/device-map.js";
import type { StatusCode, Variant } from "../ua/builtins.js";
import type { UneceUnit } from "../ua/generated/units.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { ValueCache } from "../values/value-cache.js";
import type { Clock } from "../sampling/clock.js";
import type { LatenessHistogram } from "../sampling/lateness.js";
import type { DeadlineScheduler } from "../sampling/scheduler.js";
import type { Block, BlockLimits } from "./block-plan.js";
import { DriverError, isDeviceFault, type BlockData, type Driver } from "./driver.js";
import { deliverTag, PollGroup, PolledTag, type PollTarget } from "./poll-group.js";
import type { DriverProtocol } from "./registry.js";
import type { Slicer } from "../sampling/slices.js";

export type DeviceState = "waiting" | "ok" | "failing" | "demoted";

export type StateChangeListener = (device: DevicePoller, previous: DeviceState, downSince: number, failedCycles: number) => void;

/** A tag's engineering unit as the device's answer gave it (TagCodec.unitOf), when it differs from the one seen before. */
export type UnitListener = (tag: PolledTag, unit: UneceUnit | undefined) => void;

/** What the address space calls to write a tag: by its place in the device's tag list. */
export interface TagWriter {
  /**
   * Writes `tag` (a PolledTag of this device: the device namespace's tag variables are the
   * poller's own tags), the value checked and encoded by its codec.
   */
  write(tag: PolledTag, value: Variant): Promise<StatusCode>;
}

export interface DevicePollerOptions {
  readonly config: DeviceConfig;
  /** What the device's driver says of its tags, its address and its reads. */
  readonly protocol: DriverProtocol;
  /** The link the device is on. */
  readonly driver: Driver;
  readonly clock: Clock;
  readonly values: ValueCache;
  /** The value cache slot of each tag, in the order of config.tags. */
  readonly slots: readonly number[];
  /**
   * The tags already made (a runtime that made them in slices, or the device namespace's tag
   * variables), in the order of config.tags; kept as given, not copied.
   */
  readonly tags?: readonly PolledTag[];
  /** Where the lateness of every poll slot goes (poll jitter). */
  readonly lateness?: LatenessHistogram;
  /** Where a poll's delivery of many values is sliced, and timed for the loop trace. */
  readonly slicer: Slicer;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class DevicePoller implements PollTarget, TagWriter {
  readonly name: string;
  readonly config: DeviceConfig;
  readonly protocol: DriverProtocol;
  /** The device's address on its link (DriverProtocol.station). */
  readonly station: unknown;
  readonly driver: Driver;
  readonly clock: Clock;
  readonly values: ValueCache;
  readonly limits: BlockLimits;
  readonly tags: readonly PolledTag[];
  readonly groups: readonly PollGroup[];
  readonly lateness: LatenessHistogram | undefined;
  readonly slicer: Slicer;
  /**
   * Called after every poll cycle (`stateChanged` false) and after every change of state, error
   * or failure count (true): diagnostics.
   */
  onChange: ((device: DevicePoller, stateChanged: boolean) => void) | undefined;
  /**
   * Called when `state` changes, after the change: `previous` is the state it left; `downSince`
   * (wall ms) is when the outage began and `failedCycles` how many cycles failed in it (for a
   * device back to ok, the outage that just ended). The server logs outages with it.
   */
  onStateChange: StateChangeListener | undefined;
  /** Called when a tag's unit as the device's answers give it changes (first answer included): its EngineeringUnits follow. */
  onUnit: UnitListener | undefined;
  /** The units the answers gave the tags whose codecs read one (TagCodec.unitOf); undefined when no tag does. */
  private units: Map<PolledTag, UneceUnit | undefined> | undefined;

  state: DeviceState = "waiting";
  consecutiveFailures = 0;
  requests = 0;
  errors = 0;
  lastError = "";
  /** Round-trip time of the last answered request, ms (queueing on a shared link included). */
  lastRoundTrip = 0;
  stopped = false;
  /** Wall time (ms) the current outage began; 0 while the device answers. */
  downSince = 0;
  private nextAttemptAt = 0;
  private writeTail: Promise<unknown> = Promise.resolve();

  constructor(options: DevicePollerOptions) {
    const c = options.config;
    this.name = c.name;
    this.config = c;
    this.protocol = options.protocol;
    this.station = options.protocol.station(c);
    this.driver = options.driver;
    this.clock = options.clock;
    this.values = options.values;
    this.lateness = options.lateness;
    this.slicer = options.slicer;
    this.limits = options.protocol.readLimits(c);
    const slots = options.slots;
    this.tags = options.tags ?? c.tags.map((t, i) => new PolledTag(t, options.protocol.tag(t, c), slots[i]!));
    for (const t of this.tags) if (t.codec.unitOf !== undefined) this.units ??= new Map();
    const byRate = new Map<number, PolledTag[]>();
    for (let i = 0; i < c.tags.length; i++) {
      const rate = c.tags[i]!.rate;
      let list = byRate.get(rate);
      if (!list) byRate.set(rate, (list = []));
      list.push(this.tags[i]!);
    }
    // A device of one rate (most are) has one group of all its tags: it takes the tag list
    // itself rather than a copy of it.
    const sorted = [...byRate].sort(([a], [b]) => a - b);
    this.groups = sorted.length === 1 ? [new PollGroup(this, sorted[0]![0], this.tags)] : sorted.map(([rate, tags]) => new PollGroup(this, rate, tags));
  }

  /** Replies on the device's link that were not the answer to its request (Driver.countersOf). */
  get mismatchedReplies(): number {
    return this.driver.countersOf?.(this.station)?.mismatchedReplies ?? 0;
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

  /** Poll slots not run: late, still busy, or backing off. */
  get skippedCycles(): number {
    let n = 0;
    for (const g of this.groups) n += g.backedOff + (g.scheduled ? g.scheduled.skipped + g.scheduled.overruns : 0);
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

  wallNow(): number {
    return this.clock.wallNow();
  }

  recordLateness(ms: number): void {
    this.lateness?.record(ms);
  }

  /** False while backing off after a failure. */
  mayAttempt(now: number): boolean {
    return !this.stopped && now >= this.nextAttemptAt;
  }

  /** One block read, counted and timed. */
  async read(block: Block<PolledTag>): Promise<BlockData> {
    await this.ensureConnected();
    const start = this.clock.now();
    this.requests++;
    let data: BlockData;
    try {
      data = await this.driver.readBlock({ station: this.station, area: block.area, start: block.start, count: block.count });
    } catch (err) {
      this.countError(err);
      throw err;
    }
    this.lastRoundTrip = this.clock.now() - start;
    if (this.units !== undefined) this.noteUnits(block, data);
    return data;
  }

  /** The units an answer gives its block's tags, handed on where they changed. */
  private noteUnits(block: Block<PolledTag>, data: BlockData): void {
    const units = this.units!;
    for (const tag of block.tags) {
      const unitOf = tag.codec.unitOf;
      if (unitOf === undefined) continue;
      const unit = unitOf.call(tag.codec, data, tag.start - block.start);
      if (units.has(tag) && units.get(tag) === unit) continue;
      units.set(tag, unit);
      this.onUnit?.(tag, unit);
    }
  }

  answered(): void {
    if (this.consecutiveFailures === 0 && this.state === "ok") return;
    const previous = this.state;
    const failedCycles = this.consecutiveFailures;
    const downSince = this.downSince;
    this.consecutiveFailures = 0;
    this.nextAttemptAt = 0;
    this.downSince = 0;
    this.state = "ok";
    if (previous !== "ok") this.onStateChange?.(this, previous, downSince, failedCycles);
    this.onChange?.(this, true);
  }

  cycleDone(): void {
    this.values.endBatch(this.name);
    this.onChange?.(this, false);
  }

  /**
   * A communication failure, or a cycle the device refused whole (DriverError isDeviceFault):
   * every tag of the device goes Bad (BadCommunicationError, or the refusal's StatusCode), and
   * the device backs off.
   */
  failed(err: unknown): void {
    if (this.stopped) return;
    this.consecutiveFailures++;
    const c = this.config;
    const wait = Math.min(c.maxBackoff, c.retryBackoff * 2 ** Math.min(this.consecutiveFailures - 1, 30));
    this.nextAttemptAt = this.clock.now() + wait;
    const previous = this.state;
    if (this.downSince === 0) this.downSince = this.clock.wallNow();
    this.state = this.consecutiveFailures >= c.demoteAfter ? "demoted" : "failing";
    this.lastError = messageOf(err);
    const status = err instanceof DriverError && isDeviceFault(err.kind) ? err.statusCode : StatusCodes.BadCommunicationError;
    for (const g of this.groups) g.fail(g.tags, status);
    this.values.endBatch(this.name);
    if (previous !== this.state) this.onStateChange?.(this, previous, this.downSince, this.consecutiveFailures);
    this.onChange?.(this, true);
  }

  noteConfigError(tag: PolledTag): void {
    this.lastError = `address ${this.protocol.formatAddress(tag.config)} of tag "${tag.name}" does not exist on the device: not polled until the map changes`;
    this.onChange?.(this, true);
  }

  /**
   * Writes an engineering value to the tag at `index` of the device's tags (Part 4 §5.10.4:
   * the Write completes when the device has taken it). Writes of one device go out in order,
   * each after the previous one finished, so that the read-modify-write of a bit tag cannot
   * interleave with another write.
   */
  write(tag: PolledTag, value: Variant): Promise<StatusCode> {
    if (!tag.writable) return Promise.resolve(StatusCodes.BadNotWritable);
    const encoded = tag.codec.encode(value);
    if (!encoded.ok) return Promise.resolve(encoded.statusCode);
    const run = () => this.writeNow(tag, encoded.data);
    const result = this.writeTail.then(run, run);
    this.writeTail = result;
    return result;
  }

  private async writeNow(tag: PolledTag, data: Uint16Array | Uint8Array): Promise<StatusCode> {
    if (this.stopped) return StatusCodes.BadNodeIdUnknown;
    const codec = tag.codec;
    try {
      await this.ensureConnected();
      if (codec.partial) {
        // Part of a unit (a bit of a word): the unit as it is now, with the write merged into it.
        const current = await this.counted(() => this.driver.readBlock({ station: this.station, area: tag.area, start: tag.start, count: tag.width }));
        data = codec.merge(current, data);
      }
      await this.counted(() => this.driver.write(this.station, tag.area, tag.start, data));
    } catch (err) {
      return err instanceof DriverError ? err.statusCode : StatusCodes.BadCommunicationError;
    }
    await this.readBack(tag);
    return StatusCodes.Good;
  }

  /** Reads a written tag at once, so clients see the device's value without waiting a cycle. */
  private async readBack(tag: PolledTag): Promise<void> {
    try {
      const data = await this.counted(() => this.driver.readBlock({ station: this.station, area: tag.area, start: tag.start, count: tag.width }));
      if (this.stopped) return;
      deliverTag(this.values, tag, data, 0, this.clock.wallNow());
      this.values.endBatch(this.name);
    } catch {
      // The next poll tells.
    }
  }

  private async counted<T>(op: () => Promise<T>): Promise<T> {
    this.requests++;
    try {
      return await op();
    } catch (err) {
      this.countError(err);
      throw err;
    }
  }

  private countError(err: unknown): void {
    this.errors++;
    this.lastError = messageOf(err);
  }

  /** A failed connect is an error of the device, though no request went out. */
  private async ensureConnected(): Promise<void> {
    if (this.driver.connected) return;
    try {
      await this.driver.connect();
    } catch (err) {
      this.countError(err);
      throw err;
    }
  }
}
