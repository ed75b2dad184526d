// Sampling of monitored items (DESIGN: Sampling; STYLE habit 5). Items that share a sampling
// interval form one group, run by one slot of the process-wide DeadlineScheduler: a pass reads
// the group's items namespace by namespace through NodeManager.read (or straight into the items
// for DirectSampler managers) and hands each value to its item. No timer, promise or closure per
// item or per sample.
//
// An item on a MemoryNamespace variable that its owner feeds at a fixed rate (a device poll
// group: VariableOptions.feedInterval) is not sampled at all when its sampling interval is that
// rate: it receives every setValue through the namespace's onValueChange hook.
import { MemoryNamespace, type MemoryVariable } from "../address-space/memory-namespace.js";
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import type { AttributeRead, NodeManager, RequestContext } from "../address-space/node-manager.js";
import type { Clock } from "../sampling/clock.js";
import type { DeadlineScheduler, SampleTask, ScheduledGroup } from "../sampling/scheduler.js";
import type { DataValue } from "../ua/builtins.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { nodeIdKey } from "../ua/node-id.js";
import { applyRange, parseNumericRange } from "../ua/numeric-range.js";
import type { MonitoredItem } from "./monitored-item.js";
import { isDirectSampler, type DirectSampler } from "./sample-sink.js";

const UNKNOWN_NODE: DataValue = Object.freeze({ statusCode: StatusCodes.BadNodeIdUnknown });

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

/** The items of one group that live in one namespace, sampled with one call. */
class Batch {
  readonly items: MonitoredItem[] = [];
  readonly reads: AttributeRead[] = [];
  readonly handles: number[] = [];
  results: DataValue[] = [];
  /** Whether any item has an IndexRange (then results are cut item by item). */
  ranged = false;

  constructor(
    readonly manager: NodeManager | undefined,
    readonly direct: DirectSampler | undefined,
  ) {}

  run(ctx: RequestContext, wall: number): void {
    const items = this.items;
    const n = items.length;
    if (this.direct !== undefined) {
      this.direct.sampleInto(this.handles, items, n, wall);
      return;
    }
    const results = this.results;
    if (this.manager === undefined) {
      for (let k = 0; k < n; k++) items[k].offerDataValue(UNKNOWN_NODE, wall);
      return;
    }
    this.manager.read(ctx, this.reads, results);
    if (this.ranged) {
      for (let k = 0; k < n; k++) items[k].offerDataValue(rangeOf(results[k] ?? UNKNOWN_NODE, items[k].read.indexRange), wall);
    } else {
      for (let k = 0; k < n; k++) items[k].offerDataValue(results[k] ?? UNKNOWN_NODE, wall);
    }
  }
}

/** All items sampled at one interval: one slot of the scheduler, one pass per slot. */
export class SamplingGroup implements SampleTask {
  readonly items: MonitoredItem[] = [];
  slot: ScheduledGroup | undefined;
  private batches: Batch[] = [];
  private dirty = true;
  /** Reused context of the pass: reads for monitored items run as the server (Value is not role-dependent). */
  private readonly ctx: { sessionId: string; role: RequestContext["role"]; now: number } = { sessionId: "", role: "viewer", now: 0 };

  constructor(
    readonly interval: number,
    private readonly sampler: Sampler,
  ) {}

  add(item: MonitoredItem): void {
    item.group = this;
    item.groupIndex = this.items.length;
    this.items.push(item);
    this.dirty = true;
  }

  remove(item: MonitoredItem): void {
    const i = item.groupIndex;
    const last = this.items.pop()!;
    if (last !== item) {
      this.items[i] = last;
      last.groupIndex = i;
    }
    item.group = undefined;
    item.groupIndex = -1;
    this.dirty = true;
  }

  sample(_deadline: number, _now: number): void {
    if (this.dirty) this.rebuild();
    const wall = this.sampler.clock.wallNow();
    this.ctx.now = wall;
    const batches = this.batches;
    for (let b = 0; b < batches.length; b++) batches[b].run(this.ctx, wall);
    this.sampler.passes++;
  }

  /** Regroups the items by namespace (and direct handle) after additions or removals. */
  private rebuild(): void {
    const byNs = new Map<number, Batch>();
    const registry = this.sampler.registry;
    for (const item of this.items) {
      const ns = item.read.nodeId.namespace;
      let batch = byNs.get(ns * 2 + (item.direct !== undefined ? 1 : 0));
      if (batch === undefined) {
        batch = new Batch(registry.managerAt(ns), item.direct);
        byNs.set(ns * 2 + (item.direct !== undefined ? 1 : 0), batch);
      }
      batch.items.push(item);
      if (item.direct !== undefined) {
        batch.handles.push(item.directHandle);
      } else {
        batch.reads.push(item.read);
        if (item.read.indexRange !== undefined && item.read.indexRange !== "") batch.ranged = true;
      }
    }
    this.batches = [...byNs.values()];
    for (const b of this.batches) b.results = new Array<DataValue>(b.reads.length);
    this.dirty = false;
  }
}

export class Sampler {
  readonly registry: NamespaceRegistry;
  readonly clock: Clock;
  private readonly scheduler: DeadlineScheduler;
  private readonly groups = new Map<number, SamplingGroup>();
  /** Items fed by setValue, by variable. */
  private readonly fed = new Map<MemoryVariable, MonitoredItem[]>();
  /**
   * The variable that holds each fed NodeId's items: a device map reload may replace a tag's
   * variable by a new one with the same NodeId, and the items move over to it.
   */
  private readonly fedByKey = new Map<string | number, MemoryVariable>();
  /** Fed variables seen without items, so that their setValue costs one look-up. */
  private unwatched = new WeakSet<MemoryVariable>();
  private readonly hooked = new Set<MemoryNamespace>();
  /** Sampling passes run (all groups). */
  passes = 0;
  fedValues = 0;

  constructor(registry: NamespaceRegistry, scheduler: DeadlineScheduler, clock: Clock) {
    this.registry = registry;
    this.scheduler = scheduler;
    this.clock = clock;
  }

  get groupCount(): number {
    return this.groups.size;
  }

  get fedItemCount(): number {
    let n = 0;
    for (const items of this.fed.values()) n += items.length;
    return n;
  }

  /** Decides once how the item is sampled: directly by its manager, or through read. */
  bind(item: MonitoredItem): void {
    const manager = this.registry.managerAt(item.read.nodeId.namespace);
    if (manager === undefined || !isDirectSampler(manager)) return;
    if (item.read.indexRange !== undefined && item.read.indexRange !== "") return;
    const handle = manager.bindSample(item.read.nodeId, item.read.attributeId);
    if (handle === undefined) return;
    item.direct = manager;
    item.directHandle = handle;
  }

  /** Starts sampling an item (its mode is Sampling or Reporting). */
  start(item: MonitoredItem): void {
    if (item.group !== undefined || item.fedBy !== undefined) return;
    const variable = this.feedOf(item);
    if (variable !== undefined) {
      let list = this.fed.get(variable);
      if (list === undefined) {
        this.fed.set(variable, (list = []));
        this.fedByKey.set(nodeIdKey(variable.nodeId), variable);
        this.unwatched.delete(variable);
      }
      list.push(item);
      item.fedBy = variable;
      return;
    }
    this.startSampling(item);
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
  }

  stop(item: MonitoredItem): void {
    const variable = item.fedBy;
    if (variable !== undefined) {
      const list = this.fed.get(variable);
      if (list !== undefined) {
        const i = list.indexOf(item);
        if (i >= 0) list.splice(i, 1);
        if (list.length === 0) {
          this.fed.delete(variable);
          this.fedByKey.delete(nodeIdKey(variable.nodeId));
        }
      }
      item.fedBy = undefined;
      return;
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
    for (let k = 0; k < items.length; k++) items[k].offerDataValue(rangeOf(results[k], items[k].read.indexRange), wall);
  }

  stopAll(): void {
    for (const g of this.groups.values()) if (g.slot !== undefined) this.scheduler.cancel(g.slot);
    this.groups.clear();
    this.fed.clear();
    this.fedByKey.clear();
    this.unwatched = new WeakSet();
  }

  /**
   * A fed variable without items of its own: when it replaced the variable that had items for
   * the same NodeId (a reload), the items move to it, or to a sampling group when its feed rate
   * is no longer theirs. Returns the items that now listen to it.
   */
  private rebind(variable: MemoryVariable): MonitoredItem[] | undefined {
    if (this.unwatched.has(variable)) return undefined;
    const key = nodeIdKey(variable.nodeId);
    const old = this.fedByKey.get(key);
    const list = old === undefined || old === variable ? undefined : this.fed.get(old);
    if (list === undefined) {
      this.unwatched.add(variable);
      return undefined;
    }
    this.fed.delete(old!);
    const kept: MonitoredItem[] = [];
    for (const item of list) {
      if (variable.feedInterval === item.samplingInterval) {
        item.fedBy = variable;
        kept.push(item);
      } else {
        item.fedBy = undefined;
        this.startSampling(item);
      }
    }
    if (kept.length === 0) {
      this.fedByKey.delete(key);
      this.unwatched.add(variable);
      return undefined;
    }
    this.fed.set(variable, kept);
    this.fedByKey.set(key, variable);
    return kept;
  }

  /** The fed variable an item can listen to instead of being sampled, if any. */
  private feedOf(item: MonitoredItem): MemoryVariable | undefined {
    if (!item.isValue || (item.read.indexRange !== undefined && item.read.indexRange !== "")) return undefined;
    const manager = this.registry.managerAt(item.read.nodeId.namespace);
    if (!(manager instanceof MemoryNamespace)) return undefined;
    const variable = manager.variable(item.read.nodeId);
    if (variable === undefined || variable.feedInterval <= 0 || variable.feedInterval !== item.samplingInterval) return undefined;
    this.hook(manager);
    return variable;
  }

  private hook(ns: MemoryNamespace): void {
    if (this.hooked.has(ns)) return;
    this.hooked.add(ns);
    const previous = ns.onValueChange;
    const fed = this.fed;
    const clock = this.clock;
    // One listener per namespace, not per item; an owner's own listener keeps being called.
    ns.onValueChange = (variable, value) => {
      previous?.(variable, value);
      const items = fed.get(variable) ?? (variable.feedInterval > 0 ? this.rebind(variable) : undefined);
      if (items === undefined) return;
      const wall = clock.wallNow();
      this.fedValues++;
      for (let i = 0; i < items.length; i++) items[i].offerDataValue(value, wall);
    };
  }
}
