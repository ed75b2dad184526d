// Poll groups (DESIGN: Sampling, Devices). A device's tags are grouped by rate; each group is
// one ScheduledGroup of the process's DeadlineScheduler (absolute deadlines, missed slots
// skipped) whose sample reads the group's coalesced blocks one after the other through the
// device's link and writes every value into the value cache.
//
// Status of a tag's value (Part 8 §5.3 via Part 4 §7.34 StatusCodes):
//   before its first poll        BadWaitingForInitialData (the slot's first state)
//   read                         Good, sourceTimestamp = when the answer arrived
//   device silent, never read    BadNoCommunication
//   device silent, read before   BadCommunicationError with the last value and its timestamp
//   its address does not exist   BadConfigurationError, and it is no longer polled
//   the answer holds none for it BadConfigurationError, last value kept (a record driver's
//                                telegram without the tag's record), polled on
//   refused otherwise            the driver's StatusCode (BadDeviceFailure, ...), last value kept
//   every request of a cycle refused by the device itself (failed, busy): the device is failing
//                                as if silent (backoff, demotion), every tag takes that StatusCode
// Only changes of status are handed on while a device is down, so a dead device costs its
// subscribers and the history nothing per cycle.
import type { TagConfig } from "../config/device-map.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { StatusCode } from "../ua/builtins.js";
import type { ValueCache } from "../values/value-cache.js";
import { blockOf, planBlocks, type Block, type BlockLimits, type Placed } from "./block-plan.js";
import { DriverError, isDeviceFault, isLinkFailure, type BlockData } from "./driver.js";
import type { TagPlan } from "./registry.js";
import type { SampleTask, ScheduledGroup } from "../sampling/scheduler.js";
import type { Slicer } from "../sampling/slices.js";
import { ValuePath, variantOf, type TagCodec } from "./tag-codec.js";

/**
 * One tag as the poller keeps it: where it is on the device, how to decode it, its cache slot.
 * Four fields and a flag (a 10,000-tag map keeps 10,000 of these): the area and width are read
 * from the codec its driver's protocol made (TagPlan). The device namespace's tag variables are
 * PolledTags too (device-namespace.ts), so that a tag is one object for the poller and the
 * address space.
 */
export class PolledTag implements Placed {
  config: TagConfig;
  codec: TagCodec;
  start: number;
  /** Where its values go in the value cache. */
  slot: number;
  /** Its address does not exist on the device: not polled until the map changes. */
  configError = false;

  constructor(config: TagConfig, plan: TagPlan, slot: number) {
    this.config = config;
    this.codec = plan.codec;
    this.start = plan.start;
    this.slot = slot;
  }

  /**
   * The tag as a reloaded map gives it (its node stays: its address or scaling may have
   * moved). Only for a tag whose previous poller has stopped: the new one is made after this.
   */
  retarget(config: TagConfig, plan: TagPlan, slot: number): void {
    this.config = config;
    this.codec = plan.codec;
    this.start = plan.start;
    this.slot = slot;
    this.configError = false;
  }

  get area(): string {
    return this.codec.area;
  }
  get width(): number {
    return this.codec.width;
  }
  get name(): string {
    return this.config.name;
  }
  get writable(): boolean {
    return this.config.access === "readwrite";
  }
}

/** What a poll group needs of its device (the DevicePoller). */
export interface PollTarget {
  readonly name: string;
  readonly values: ValueCache;
  readonly limits: BlockLimits;
  readonly stopped: boolean;
  /** Where a poll's delivery of many values is sliced (its slices go before other jobs'), and timed. */
  readonly slicer: Slicer;
  wallNow(): number;
  mayAttempt(now: number): boolean;
  recordLateness(ms: number): void;
  read(block: Block<PolledTag>): Promise<BlockData>;
  /** The device answered (data or a refusal): it is reachable. */
  answered(): void;
  cycleDone(): void;
  /** The device could not be reached, or refused every request of a cycle as unable to serve. */
  failed(err: unknown): void;
  noteConfigError(tag: PolledTag): void;
}

function isBadAddress(err: unknown): boolean {
  return err instanceof DriverError && err.kind === "badAddress";
}

/** Not a DriverError (a bug in a driver) counts as not answering too: the device backs off. */
function isUnreachable(err: unknown): boolean {
  return !(err instanceof DriverError) || isLinkFailure(err.kind);
}

/**
 * Hands a decoded value to the cache: numbers as numbers, the rest as a DataValue; an answer
 * without a value for the tag makes it BadConfigurationError, its last value kept.
 */
export function deliverTag(values: ValueCache, tag: PolledTag, data: BlockData, at: number, time: number): void {
  const codec = tag.codec;
  const slot = tag.slot;
  if (codec.path !== ValuePath.Object) {
    const n = codec.decodeNumber(data, at);
    if (n === n || codec.path === ValuePath.Number) {
      values.setNumber(slot, codec.builtinType, n, StatusCodes.Good, time, time);
      return;
    }
  }
  const raw = codec.decodeRaw(data, at);
  if (raw === undefined) {
    if (values.statusOf(slot) !== StatusCodes.BadConfigurationError) values.setStatus(slot, StatusCodes.BadConfigurationError, time);
    return;
  }
  // An unchanged string keeps its Variant (immutable once made).
  const last = values.hasValue(slot) ? values.get(slot).value : undefined;
  const value = last !== undefined && last.value === raw && last.dataType === codec.builtinType ? last : variantOf(codec.builtinType, raw);
  values.setDataValue(slot, { value, sourceTimestamp: time }, time);
}

/** Tags delivered between two looks at the clock. */
const TAGS_PER_CHECK = 64;

/** The tags of one device polled at one rate. */
export class PollGroup implements SampleTask {
  readonly interval: number;
  readonly label: string;
  private readonly deliverLabel: string;
  readonly tags: readonly PolledTag[];
  blocks: Block<PolledTag>[];
  scheduled: ScheduledGroup | undefined;
  /** Cycles skipped because the device was backing off. */
  backedOff = 0;
  /** The due time of the last slot run (-1 before the first). */
  private lastDeadline = -1;
  private readonly device: PollTarget;

  constructor(device: PollTarget, interval: number, tags: readonly PolledTag[]) {
    this.device = device;
    this.interval = interval;
    this.tags = tags;
    this.blocks = planBlocks(tags, device.limits);
    this.label = `poll ${device.name} @${interval} ms`;
    this.deliverLabel = `values of ${device.name} @${interval} ms`;
  }

  get requestsPerCycle(): number {
    return this.blocks.length;
  }

  sample(deadline: number, now: number): void | Promise<void> {
    this.device.recordLateness(now - deadline);
    // Slots the scheduler skipped since the last one (late, or the last poll still running):
    // every tag's items missed them, and the value cache counts them per tag.
    const last = this.lastDeadline;
    this.lastDeadline = deadline;
    if (last >= 0) {
      const missed = Math.round((deadline - last) / this.interval) - 1;
      if (missed > 0) this.countSkipped(missed);
    }
    if (!this.device.mayAttempt(now)) {
      this.backedOff++;
      return;
    }
    return this.poll();
  }

  private countSkipped(n: number): void {
    const values = this.device.values;
    const tags = this.tags;
    for (let i = 0; i < tags.length; i++) values.addSkipped(tags[i]!.slot, n);
  }

  private async poll(): Promise<void> {
    const d = this.device;
    const blocks = this.blocks;
    /** The plan with refused blocks replaced by their parts; made only when one is. */
    let next: Block<PolledTag>[] | undefined;
    /** Whether anything of this cycle was read, or refused as the tag's own fault. */
    let served = blocks.length === 0;
    /** The last refusal of this cycle that was the device's (busy, failed). */
    let deviceFault: DriverError | undefined;
    for (let i = 0; i < blocks.length; i++) {
      const block = blocks[i]!;
      let parts: Block<PolledTag>[] | undefined;
      try {
        const data = await d.read(block);
        const time = d.wallNow();
        const at = this.deliver(block, data, 0, time, d.slicer.end());
        if (at < block.tags.length) await this.deliverRest(block, data, at, time);
        served = true;
      } catch (err) {
        if (d.stopped) return;
        try {
          if (!isBadAddress(err)) throw err;
          served = true;
          // Some address in the block does not exist. Halve it until the tags that fail
          // alone are found; the halves that answer become blocks of their own.
          const found: Block<PolledTag>[] = [];
          await this.split(block, found);
          parts = found;
        } catch (failure) {
          if (d.stopped) return;
          if (isUnreachable(failure)) {
            if (next) this.blocks = next.concat(blocks.slice(i));
            d.failed(failure);
            return;
          }
          // The device answered and refused: these tags alone go Bad. A refusal of the device
          // itself (it failed, it is busy) is one of a failed cycle when nothing else answers.
          const refusal = failure as DriverError;
          if (isDeviceFault(refusal.kind)) {
            deviceFault = refusal;
          } else {
            served = true;
            d.answered();
          }
          this.fail(block.tags, refusal.statusCode);
        }
      }
      if (parts) (next ??= blocks.slice(0, i)).push(...parts);
      else next?.push(block);
    }
    if (next) this.blocks = next;
    if (!served && deviceFault !== undefined) {
      d.failed(deviceFault);
      return;
    }
    d.answered();
    d.cycleDone();
  }

  /** Reads the halves of a block refused for a bad address; throws any other failure. */
  private async split(block: Block<PolledTag>, out: Block<PolledTag>[]): Promise<void> {
    const d = this.device;
    d.answered();
    if (block.tags.length === 1) {
      const tag = block.tags[0]!;
      tag.configError = true;
      d.values.setDataValue(tag.slot, { statusCode: StatusCodes.BadConfigurationError }, d.wallNow());
      d.noteConfigError(tag);
      return;
    }
    const mid = block.tags.length >> 1;
    for (const half of [block.tags.slice(0, mid), block.tags.slice(mid)]) {
      const sub = blockOf(half);
      let data: BlockData;
      try {
        data = await d.read(sub);
      } catch (err) {
        if (!isBadAddress(err)) throw err;
        await this.split(sub, out);
        continue;
      }
      const time = d.wallNow();
      const at = this.deliver(sub, data, 0, time, d.slicer.end());
      if (at < sub.tags.length) await this.deliverRest(sub, data, at, time);
      out.push(sub);
    }
  }

  /**
   * The rest of a block's values into the cache, a slice a turn of the event loop: a block of a
   * fieldbus device fits one slice, an in-process driver's can hold 16,384 tags. The slices of a
   * delivery go before every other job's (Slicer.firstTask): a slice of other work between two
   * of them would make the poll last past its group's next slot.
   */
  private async deliverRest(block: Block<PolledTag>, data: BlockData, from: number, time: number): Promise<void> {
    const task = this.device.slicer.firstTask(this.deliverLabel);
    while (from < block.tags.length) {
      await task.next();
      from = this.deliver(block, data, from, time, task.end);
    }
    task.done();
  }

  /**
   * Tags from `from` on until the slicer's clock reaches `end` (looked at every TAGS_PER_CHECK
   * tags); returns where it stopped. Timed for the loop trace.
   */
  private deliver(block: Block<PolledTag>, data: BlockData, from: number, time: number, end: number): number {
    const d = this.device;
    const tags = block.tags;
    if (d.stopped) return tags.length;
    const begun = performance.now();
    const values = d.values;
    const slicer = d.slicer;
    const start = block.start;
    const n = tags.length;
    let i = from;
    while (i < n) {
      const stop = i + TAGS_PER_CHECK < n ? i + TAGS_PER_CHECK : n;
      for (; i < stop; i++) {
        const tag = tags[i]!;
        deliverTag(values, tag, data, tag.start - start, time);
      }
      if (i < n && slicer.now() >= end) break;
    }
    slicer.timed(this.deliverLabel, begun);
    return i;
  }

  /** Hands on a Bad status for tags whose status changes; values and timestamps are kept. */
  fail(tags: readonly PolledTag[], statusCode: StatusCode): void {
    const d = this.device;
    const values = d.values;
    const now = d.wallNow();
    for (let i = 0; i < tags.length; i++) {
      const tag = tags[i]!;
      if (tag.configError) continue;
      const slot = tag.slot;
      const status = !values.hasValue(slot) && statusCode === StatusCodes.BadCommunicationError ? StatusCodes.BadNoCommunication : statusCode;
      if (values.statusOf(slot) === status) continue;
      values.setStatus(slot, status, now);
    }
  }
}
