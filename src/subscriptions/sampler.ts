// Sampling of monitored items (DESIGN: Sampling; STYLE habit 5). An item whose node keeps its
// value in the value cache (a device tag, a fed variable: NodeManager.valueSource) is served
// from its cache slot: fed by the slot's changes when it samples at the slot's rate (the poll
// group's: no second timer), else sampled from the slot by its sampling group. Other items are
// sampled through NodeManager.read. Items that share a sampling interval form one group, run by
// one slot of the process-wide DeadlineScheduler: a pass reads the group's items in batches and
// hands each value to its item. No timer, promise or closure per item or per sample.
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import type { AttributeRead, NodeManager, RequestContext, ValueSource } from "../address-space/node-manager.js";
import type { Clock } from "../sampling/clock.js";
import type { DeadlineScheduler, GroupStats, SampleTask, ScheduledGroup } from "../sampling/scheduler.js";
import type { DataValue, BuiltinType, StatusCode } from "../ua/builtins.js";
import { AttributeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { applyRange, parseNumericRange } from "../ua/numeric-range.js";
import type { ValueCache } from "../values/value-cache.js";
import type { SlotSubscriber } from "../values/value-sink.js";
import type { MonitoredItem } from "./monitored-item.js";
import type { Slicer } from "../sampling/slices.js";

const UNKNOWN_NODE: DataValue = Object.freeze({ statusCode: StatusCodes.BadNodeIdUnknown });
const VALUE = AttributeIds.Value;

/** The value cut to an IndexRange (Part 4 §7.22), or a DataValue with only the failure status. */
export function rangeOf(dv: DataValue, indexRange: string | undefined): DataValue {
  if (indexRange === undefined || indexRange === "" || dv.value === undefined) return dv;
  const parsed = parseNumericRange(indexRange);
  if (!parsed.ok) return { statusCode: parsed.statusCode };
  if (parsed.range.length === 0) return dv;
  const ranged = applyRange(dv.value, parsed.range);
  if (!ranged.ok) return { statusCode: ranged.statusCode };
  return { value: ranged.value, statusCode: dv.statusCode, sourceTimestamp: dv.sourceTimestamp, sourcePicoseconds: dv.sourcePicoseconds };
}

/**
 * Reads `reads` in one call per namespace, as the Read service does. Used for the first value
 * of new items and the attribute look-ups of CreateMonitoredItems.
 */
export function readBatch(registry: NamespaceRegistry, ctx: RequestContext, reads: readonly AttributeRead[]): DataValue[] {
  const results: DataValue[] = new Array(reads.length);
  if (reads.length === 0) return results;
  const groups = new Map<number, number[]>();
  for (let i = 0; i < reads.length; i++) {
    const ns = reads[i].nodeId.namespace;
    let g = groups.get(ns);
    if (g === undefined) groups.set(ns, (g = []));
    g.push(i);
  }
  for (const [ns, indices] of groups) {
    const manager = registry.managerAt(ns);
    if (manager === undefined) for (const i of indices) results[i] = UNKNOWN_NODE;
    else manager.read(ctx, reads, results, groups.size === 1 ? undefined : indices);
  }
  for (let i = 0; i < results.length; i++) results[i] ??= UNKNOWN_NODE;
  return results;
}

/**
 * The items of one batch, kept in place as items come and go (swap-remove), so that adding or
 * removing an item costs the same with 16 or 16,384 items in the group: regrouping from scratch
 * on the next slot is a task that grows with the group.
 */
abstract class Batch {
  readonly items: MonitoredItem[] = [];
  abstract readonly kind: "slots" | "reads";

  add(item: MonitoredItem): void {
    item.batch = this;
    item.batchIndex = this.items.length;
    this.items.push(item);
    this.added(item);
  }

  remove(item: MonitoredItem): void {
    const i = item.batchIndex;
    const last = this.items.length - 1;
    if (i !== last) {
      const moved = this.items[last]!;
      this.items[i] = moved;
      moved.batchIndex = i;
    }
    this.items.pop();
    this.removed(item, i, last);
    item.batch = undefined;
    item.batchIndex = -1;
  }

  protected abstract added(item: MonitoredItem): void;
  /** The item left index `i`; what was at `last` is at `i` now. */
  protected abstract removed(item: MonitoredItem, i: number, last: number): void;
}

/** The items of one group whose values live in one value cache: read from their slots. */
class SlotBatch extends Batch {
  readonly kind = "slots";
  readonly slots: number[] = [];

  constructor(readonly values: ValueCache) {
    super();
  }

  protected added(item: MonitoredItem): void {
    this.slots.push(item.source!.slot);
  }

  protected removed(_item: MonitoredItem, i: number, last: number): void {
    this.slots[i] = this.slots[last]!;
    this.slots.pop();
  }

  run(wall: number): void {
    const items = this.items;
    const slots = this.slots;
    const values = this.values;
    for (let k = 0; k < items.length; k++) values.offerTo(slots[k]!, items[k]!, wall);
  }
}

/** The items of one group that live in one namespace, read with one call. */
class ReadBatch extends Batch {
  readonly kind = "reads";
  readonly reads: AttributeRead[] = [];
  readonly results: DataValue[] = [];
  /** Items with an IndexRange (while there are any, results are cut item by item). */
  private ranged = 0;

  constructor(
    readonly namespace: number,
    readonly manager: NodeManager | undefined,
  ) {
    super();
  }

  protected added(item: MonitoredItem): void {
    this.reads.push(item.read);
    this.results.push(UNKNOWN_NODE);
    if (hasRange(item.read)) this.ranged++;
  }

  protected removed(item: MonitoredItem, i: number, last: number): void {
    this.reads[i] = this.reads[last]!;
    this.reads.pop();
    this.results.pop();
    if (hasRange(item.read)) this.ranged--;
  }

  run(ctx: RequestContext, wall: number): void {
    const items = this.items;
    const n = items.length;
    const results = this.results;
    if (this.manager === undefined) {
      for (let k = 0; k < n; k++) items[k]!.offerDataValue(UNKNOWN_NODE, wall);
      return;
    }
    this.manager.read(ctx, this.reads, results);
    if (this.ranged > 0) {
      for (let k = 0; k < n; k++) items[k]!.offerDataValue(rangeOf(results[k] ?? UNKNOWN_NODE, items[k]!.read.indexRange), wall);
    } else {
      for (let k = 0; k < n; k++) items[k]!.offerDataValue(results[k] ?? UNKNOWN_NODE, wall);
    }
  }
}

function hasRange(read: AttributeRead): boolean {
  return read.indexRange !== undefined && read.indexRange !== "";
}

/** All items sampled at one interval: one slot of the scheduler, one pass per slot. */
export class SamplingGroup implements SampleTask {
  readonly items: MonitoredItem[] = [];
  readonly label: string;
  slot: ScheduledGroup | undefined;
  private readonly slotBatches: SlotBatch[] = [];
  private readonly readBatches: ReadBatch[] = [];
  /** Reused context of the pass: reads for monitored items run as the server (Value is not role-dependent). */
  private readonly ctx: { sessionId: string; role: RequestContext["role"]; now: number } = { sessionId: "", role: "viewer", now: 0 };

  constructor(
    readonly interval: number,
    private readonly sampler: Sampler,
  ) {
    this.label = `sampling @${interval} ms`;
  }

  add(item: MonitoredItem): void {
    item.group = this;
    item.groupIndex = this.items.length;
    this.items.push(item);
    this.batchFor(item).add(item);
  }

  remove(item: MonitoredItem): void {
    const i = item.groupIndex;
    const last = this.items.pop()!;
    if (last !== item) {
      this.items[i] = last;
      last.groupIndex = i;
    }
    const batch = item.batch as SlotBatch | ReadBatch;
    batch.remove(item);
    if (batch.items.length === 0) {
      const list: Batch[] = batch.kind === "slots" ? this.slotBatches : this.readBatches;
      list.splice(list.indexOf(batch), 1);
    }
    item.group = undefined;
    item.groupIndex = -1;
  }

  sample(_deadline: number, _now: number): void {
    const wall = this.sampler.clock.wallNow();
    this.ctx.now = wall;
    const slots = this.slotBatches;
    for (let b = 0; b < slots.length; b++) slots[b]!.run(wall);
    const reads = this.readBatches;
    for (let b = 0; b < reads.length; b++) reads[b]!.run(this.ctx, wall);
    this.sampler.passes++;
  }

  /** Items whose value lives in a value cache are read from its slots, the others by namespace. */
  private batchFor(item: MonitoredItem): Batch {
    const source = item.source;
    if (source !== undefined && isPlainValue(item.read)) {
      // A handful of batches at most (one per value cache): a scan beats a Map here.
      for (const b of this.slotBatches) if (b.values === source.values) return b;
      const batch = new SlotBatch(source.values);
      this.slotBatches.push(batch);
      return batch;
    }
    const ns = item.read.nodeId.namespace;
    for (const b of this.readBatches) if (b.namespace === ns) return b;
    const batch = new ReadBatch(ns, this.sampler.registry.managerAt(ns));
    this.readBatches.push(batch);
    return batch;
  }
}

/** The Value attribute without an IndexRange: what a value cache slot holds. */
function isPlainValue(read: AttributeRead): boolean {
  return read.attributeId === VALUE && (read.indexRange === undefined || read.indexRange === "");
}

/**
 * The items on one value cache slot: those it feeds (their sampling interval is the slot's
 * rate) get every change, the others are counted here so that a change of the slot's source
 * (another rate after a reload, the tag removed) reaches all of them.
 */
class SlotWatch implements SlotSubscriber {
  // Made for their first item (an array literal of one: a pushed-to [] would reserve 17 slots,
  // and 16,384 watches of one item each are the usual case).
  readonly items: MonitoredItem[];
  fed: MonitoredItem[] = NONE;

  constructor(
    private readonly sampler: Sampler,
    readonly source: ValueSource,
    first: MonitoredItem,
  ) {
    this.items = [first];
  }

  feed(item: MonitoredItem): void {
    if (this.fed === NONE) this.fed = [item];
    else this.fed.push(item);
  }

  offerNumber(type: BuiltinType, value: number, status: StatusCode, sourceTimestamp: number, serverTimestamp: number): void {
    const fed = this.fed;
    for (let i = 0; i < fed.length; i++) fed[i]!.offerNumber(type, value, status, sourceTimestamp, serverTimestamp);
  }

  offerDataValue(value: DataValue, serverTimestamp: number): void {
    const fed = this.fed;
    for (let i = 0; i < fed.length; i++) fed[i]!.offerDataValue(value, serverTimestamp);
  }

  sourceChanged(): void {
    this.sampler.resample(this);
  }
}

export class Sampler {
  readonly registry: NamespaceRegistry;
  readonly clock: Clock;
  private readonly scheduler: DeadlineScheduler;
  private readonly groups = new Map<number, SamplingGroup>();
  /** The watch of every slot with items, by cache and slot. */
  private readonly watches = new Map<ValueCache, Map<number, SlotWatch>>();
  /** Sampling passes run (all groups). */
  passes = 0;
  private fedItems = 0;
  private readonly resampleQueue = new Set<SlotWatch>();
  private resampleArmed = false;
  private readonly slicer: Slicer;

  /** `slicer`: where slot watches are re-bound after a reload, in slices. */
  constructor(registry: NamespaceRegistry, scheduler: DeadlineScheduler, clock: Clock, slicer: Slicer) {
    this.registry = registry;
    this.scheduler = scheduler;
    this.clock = clock;
    this.slicer = slicer;
  }

  get groupCount(): number {
    return this.groups.size;
  }

  /** The scheduler's counts (samples, skipped slots, overruns) of the group sampling at `interval`. */
  groupStats(interval: number): GroupStats | undefined {
    return this.groups.get(interval)?.slot;
  }

  /** Items fed by their slot instead of sampled. */
  get fedItemCount(): number {
    return this.fedItems;
  }

  /** Finds, once, whether the item's value lives in the value cache. */
  bind(item: MonitoredItem): void {
    item.source = isPlainValue(item.read) ? this.registry.managerAt(item.read.nodeId.namespace)?.valueSource?.(item.read.nodeId) : undefined;
  }

  /** Starts sampling an item (its mode is Sampling or Reporting). */
  start(item: MonitoredItem): void {
    if (item.group !== undefined || item.watch !== undefined) return;
    const source = item.source;
    if (source === undefined) {
      this.startSampling(item);
      return;
    }
    const watch = this.watchOf(source, item);
    item.watch = watch;
    if (source.values.rateOf(source.slot) === item.samplingInterval) {
      item.fed = true;
      item.skipBase = source.values.skippedOf(source.slot);
      watch.feed(item);
      this.fedItems++;
    } else {
      this.startSampling(item);
    }
  }

  /**
   * Samples the item missed because its source skipped a slot (skip-not-burst: late or busy
   * slots are not made up): its poll group's when it is fed, its sampling group's otherwise.
   */
  skippedSamples(item: MonitoredItem): number {
    return item.skipCarried + this.skippedNow(item) - item.skipBase;
  }

  private skippedNow(item: MonitoredItem): number {
    if (item.fed && item.source !== undefined) return item.source.values.skippedOf(item.source.slot);
    const slot = (item.group as SamplingGroup | undefined)?.slot;
    return slot === undefined ? item.skipBase : slot.skipped + slot.overruns;
  }

  private startSampling(item: MonitoredItem): void {
    let group = this.groups.get(item.samplingInterval);
    if (group === undefined) {
      group = new SamplingGroup(item.samplingInterval, this);
      this.groups.set(item.samplingInterval, group);
      // The item got its first value when it was created: its group starts one interval later.
      group.slot = this.scheduler.every(item.samplingInterval, group, this.clock.now() + item.samplingInterval);
    }
    group.add(item);
    item.skipBase = group.slot!.skipped + group.slot!.overruns;
  }

  stop(item: MonitoredItem): void {
    item.skipCarried = this.skippedSamples(item);
    item.skipBase = 0;
    const watch = item.watch as SlotWatch | undefined;
    if (watch !== undefined) {
      item.watch = undefined;
      remove(watch.items, item);
      if (item.fed) {
        item.fed = false;
        remove(watch.fed, item);
        this.fedItems--;
      }
      if (watch.items.length === 0) this.dropWatch(watch);
    }
    const group = item.group as SamplingGroup | undefined;
    if (group === undefined) return;
    group.remove(item);
    if (group.items.length === 0) {
      if (group.slot !== undefined) this.scheduler.cancel(group.slot);
      this.groups.delete(group.interval);
    }
  }

  /** Samples `items` once now, in batches (initial values, TransferSubscriptions' sendInitialValues). */
  sampleNow(items: readonly MonitoredItem[]): void {
    if (items.length === 0) return;
    const wall = this.clock.wallNow();
    const ctx: RequestContext = { sessionId: "", role: "viewer", now: wall };
    const results = readBatch(this.registry, ctx, items.map((i) => i.read));
    for (let k = 0; k < items.length; k++) items[k]!.offerDataValue(rangeOf(results[k]!, items[k]!.read.indexRange), wall);
  }

  stopAll(): void {
    for (const g of this.groups.values()) if (g.slot !== undefined) this.scheduler.cancel(g.slot);
    this.groups.clear();
    for (const [values, bySlot] of this.watches) for (const w of bySlot.values()) values.unsubscribe(w.source.slot, w);
    this.watches.clear();
    this.resampleQueue.clear();
    this.fedItems = 0;
  }

  /**
   * The slot's source changed (its rate, after a reload) or went away (the tag was removed):
   * its items are bound again (resampleNow), in the slicer's slices (a reload of 16,384 tags
   * changes as many slots at once; meanwhile their items keep getting the slot's values).
   */
  resample(watch: SlotWatch): void {
    this.resampleQueue.add(watch);
    if (!this.resampleArmed) {
      this.resampleArmed = true;
      this.slicer.later(resampleSlice, this, RESAMPLE_LABEL);
    }
  }

  /** @internal One slice of the queued watches re-bound. */
  resampleSome(): void {
    this.resampleArmed = false;
    const queue = this.resampleQueue;
    const end = this.slicer.end();
    let n = 0;
    for (const watch of queue) {
      // Looked at every few: a reload is rare, so this code runs cold (a watch costs many times more
      // the first time than warm).
      if ((++n & 7) === 0 && this.slicer.now() >= end) break;
      queue.delete(watch);
      // A watch whose items all went meanwhile has nothing to do.
      if (this.watches.get(watch.source.values)?.get(watch.source.slot) === watch) this.resampleNow(watch);
    }
    if (queue.size > 0 && !this.resampleArmed) {
      this.resampleArmed = true;
      this.slicer.later(resampleSlice, this, RESAMPLE_LABEL);
    }
  }

  /**
   * Binds the watch's items again, to the slot their node has now (or to read(), which answers
   * BadNodeIdUnknown for a node that is gone), fed or sampled as their intervals say.
   */
  private resampleNow(watch: SlotWatch): void {
    const items = [...watch.items];
    for (const item of items) this.stop(item);
    this.dropWatch(watch);
    for (const item of items) {
      this.bind(item);
      this.start(item);
    }
    // A removed node's items hear of it now, not at their next sampling.
    this.sampleNow(items.filter((i) => i.source === undefined));
  }

  /** The watch of the item's slot, with the item among its items. */
  private watchOf(source: ValueSource, item: MonitoredItem): SlotWatch {
    let bySlot = this.watches.get(source.values);
    if (bySlot === undefined) this.watches.set(source.values, (bySlot = new Map()));
    let watch = bySlot.get(source.slot);
    if (watch === undefined) {
      watch = new SlotWatch(this, source, item);
      bySlot.set(source.slot, watch);
      source.values.subscribe(source.slot, watch);
    } else {
      watch.items.push(item);
    }
    return watch;
  }

  private dropWatch(watch: SlotWatch): void {
    const { values, slot } = watch.source;
    const bySlot = this.watches.get(values);
    if (bySlot?.get(slot) !== watch) return;
    bySlot.delete(slot);
    if (bySlot.size === 0) this.watches.delete(values);
    values.unsubscribe(slot, watch);
  }
}

const NONE: MonitoredItem[] = [];
const RESAMPLE_LABEL = "monitored items re-bound after a reload (a slice)";

function resampleSlice(sampler: Sampler): void {
  sampler.resampleSome();
}

function remove<T>(list: T[], x: T): void {
  const i = list.indexOf(x);
  if (i >= 0) list.splice(i, 1);
}
