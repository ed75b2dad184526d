// The MonitoredItem service set (Part 4 §5.12) over the engine: create, modify, set the
// monitoring mode, set triggering links, delete. Node look-ups (existence, MinimumSamplingInterval,
// DataType and EURange for deadbands) are read in batches through the node managers.
import type { AttributeRead, RequestContext } from "../address-space/node-manager.js";
import { BuiltinType, numericNodeId, type DataValue, type NodeId } from "../ua/builtins.js";
import { UaStatusError } from "../ua/errors.js";
import { MonitoringMode, TimestampsToReturn } from "../ua/generated/enums.js";
import { AttributeIds, DataTypeIds, ReferenceTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type {
  MonitoredItemCreateRequest,
  MonitoredItemCreateResult,
  MonitoredItemModifyRequest,
  MonitoredItemModifyResult,
  MonitoringParameters,
  Range,
} from "../ua/generated/types.js";
import { parseNumericRange } from "../ua/numeric-range.js";
import { parseChangeFilter, type ChangeFilter } from "./data-change.js";
import type { SubscriptionEngine } from "./engine.js";
import { clamp, MAX_SAMPLING_INTERVAL } from "./limits.js";
import { MonitoredItem } from "./monitored-item.js";
import type { SubscriptionSession } from "./publisher.js";
import { rangeOf, readBatch } from "./sampler.js";
import type { SlicedTask } from "../sampling/slices.js";
import type { Subscription } from "./subscription.js";

const NUMBER_TYPE: NodeId = Object.freeze(numericNodeId(DataTypeIds.Number));
const HAS_PROPERTY = ReferenceTypeIds.HasProperty;

export interface SetTriggeringResult {
  addResults: number[];
  removeResults: number[];
}

function internalContext(now: number): RequestContext {
  return { sessionId: "", role: "viewer", now };
}

/** Part 4 §7.2: only the "Default Binary" encoding, and only for Value. */
function dataEncodingStatus(item: AttributeRead): number {
  const enc = item.dataEncoding;
  if (!enc || ((enc.name === undefined || enc.name === "") && enc.namespaceIndex === 0)) return StatusCodes.Good;
  if (item.attributeId !== AttributeIds.Value) return StatusCodes.BadDataEncodingInvalid;
  return enc.namespaceIndex === 0 && enc.name === "Default Binary" ? StatusCodes.Good : StatusCodes.BadDataEncodingUnsupported;
}

function validMode(mode: number): boolean {
  return mode === MonitoringMode.Disabled || mode === MonitoringMode.Sampling || mode === MonitoringMode.Reporting;
}

export function checkTimestamps(t: number): void {
  if (!(t >= TimestampsToReturn.Source && t <= TimestampsToReturn.Neither)) throw new UaStatusError(StatusCodes.BadTimestampsToReturnInvalid);
}

function checkCount(n: number, max: number): void {
  if (n === 0) throw new UaStatusError(StatusCodes.BadNothingToDo);
  if (n > max) throw new UaStatusError(StatusCodes.BadTooManyOperations);
}

/** Node facts that filters and sampling intervals depend on, read lazily and once. */
class NodeFacts {
  constructor(
    private readonly engine: SubscriptionEngine,
    private readonly nodeId: NodeId,
    private readonly now: number,
  ) {}

  isNumeric(): boolean {
    const [dv] = readBatch(this.engine.registry, internalContext(this.now), [{ nodeId: this.nodeId, attributeId: AttributeIds.DataType }]);
    const dataType = dv.value?.value as NodeId | undefined;
    return dataType !== undefined && dataType !== null && this.engine.registry.isSubtypeOf(dataType, NUMBER_TYPE);
  }

  /** The value of the node's EURange property (Part 8 §5.3.2), if it has one. */
  euRange(): { low: number; high: number } | undefined {
    const registry = this.engine.registry;
    const refs = registry.managerFor(this.nodeId)?.references(this.nodeId) ?? [];
    for (const r of refs) {
      if (!r.isForward || r.referenceTypeId.namespace !== 0 || r.referenceTypeId.value !== HAS_PROPERTY) continue;
      const summary = registry.managerFor(r.targetId)?.summary(r.targetId);
      if (summary?.browseName.name !== "EURange") continue;
      const [dv] = readBatch(registry, internalContext(this.now), [{ nodeId: r.targetId, attributeId: AttributeIds.Value }]);
      const v = dv.value;
      if (v?.dataType !== BuiltinType.ExtensionObject) return undefined;
      const body = (v.value as { body?: unknown } | null)?.body as Partial<Range> | undefined;
      if (typeof body?.low !== "number" || typeof body.high !== "number") return undefined;
      return { low: body.low, high: body.high };
    }
    return undefined;
  }
}

/**
 * Part 4 §5.12.1.2: a negative interval is the publishing interval, 0 the fastest the server
 * supports; never faster than the server's minimum or the node's MinimumSamplingInterval.
 */
function reviseSamplingInterval(engine: SubscriptionEngine, sub: Subscription, requested: number, nodeMinimum: number): { interval: number; follows: boolean } {
  const min = Math.max(engine.limits.minSamplingInterval, nodeMinimum > 0 ? nodeMinimum : 0);
  if (!(requested >= 0)) {
    const interval = clamp(sub.publishingInterval, min, MAX_SAMPLING_INTERVAL);
    return { interval, follows: interval === sub.publishingInterval };
  }
  return { interval: clamp(requested, min, MAX_SAMPLING_INTERVAL), follows: false };
}

function reviseQueueSize(engine: SubscriptionEngine, requested: number): number {
  return clamp(Math.trunc(requested) || 1, 1, engine.limits.maxMonitoredItemsQueueSize);
}

function filterOf(engine: SubscriptionEngine, read: AttributeRead, params: MonitoringParameters, now: number): ChangeFilter | number {
  const facts = new NodeFacts(engine, read.nodeId, now);
  return parseChangeFilter(params.filter, { attributeId: read.attributeId, isNumeric: () => facts.isNumeric(), euRange: () => facts.euRange() });
}

/** The MinimumSamplingInterval of each Value item's node (0 when unknown or not a Variable). */
function nodeMinimums(engine: SubscriptionEngine, reads: readonly AttributeRead[], now: number): number[] {
  const lookups = reads.map((r) => ({ nodeId: r.nodeId, attributeId: AttributeIds.MinimumSamplingInterval }));
  return readBatch(engine.registry, internalContext(now), lookups).map((dv) => (typeof dv.value?.value === "number" ? dv.value.value : 0));
}

export function createMonitoredItems(
  engine: SubscriptionEngine,
  session: SubscriptionSession,
  subscriptionId: number,
  timestamps: TimestampsToReturn,
  requests: readonly MonitoredItemCreateRequest[],
): MonitoredItemCreateResult[] {
  const sub = engine.subscriptionOf(session, subscriptionId);
  checkTimestamps(timestamps);
  checkCount(requests.length, engine.limits.maxMonitoredItemsPerCall);
  sub.resetLifetime();
  const now = engine.wallNow();
  const results: MonitoredItemCreateResult[] = new Array(requests.length);
  const fail = (i: number, statusCode: number): void => {
    results[i] = { statusCode, monitoredItemId: 0, revisedSamplingInterval: 0, revisedQueueSize: 0 };
  };
  // Checks that need no node, then one batch read of the nodes that passed them.
  const candidates: number[] = [];
  for (let i = 0; i < requests.length; i++) {
    const r = requests[i];
    const read = r.itemToMonitor;
    if (!validMode(r.monitoringMode)) fail(i, StatusCodes.BadMonitoringModeInvalid);
    else if (read.attributeId === AttributeIds.EventNotifier) fail(i, StatusCodes.BadMonitoredItemFilterUnsupported); // no events
    else if (dataEncodingStatus(read) !== StatusCodes.Good) fail(i, dataEncodingStatus(read));
    else if (read.indexRange !== undefined && read.indexRange !== "" && !parseNumericRange(read.indexRange).ok) fail(i, StatusCodes.BadIndexRangeInvalid);
    else candidates.push(i);
  }
  const reads = candidates.map((i) => requests[i].itemToMonitor);
  const values = readBatch(engine.registry, internalContext(now), reads);
  const minimums = nodeMinimums(engine, reads, now);
  const initial: { item: MonitoredItem; value: DataValue }[] = [];
  const limits = engine.limits;
  for (let k = 0; k < candidates.length; k++) {
    const i = candidates[k];
    const r = requests[i];
    const status = values[k].statusCode ?? StatusCodes.Good;
    // Part 4 §5.12.2: an unknown node or attribute fails the item; other Bad values are reported.
    if (status === StatusCodes.BadNodeIdUnknown || status === StatusCodes.BadAttributeIdInvalid) {
      fail(i, status);
      continue;
    }
    if (engine.monitoredItemCount >= limits.maxMonitoredItems || sub.items.size >= limits.maxMonitoredItemsPerSubscription) {
      fail(i, StatusCodes.BadTooManyMonitoredItems);
      continue;
    }
    const filter = filterOf(engine, r.itemToMonitor, r.requestedParameters, now);
    if (typeof filter === "number") {
      fail(i, filter);
      continue;
    }
    const p = r.requestedParameters;
    const sampling = reviseSamplingInterval(engine, sub, p.samplingInterval, r.itemToMonitor.attributeId === AttributeIds.Value ? minimums[k] : 0);
    const item = new MonitoredItem({
      id: engine.newItemId(),
      owner: sub,
      read: r.itemToMonitor,
      clientHandle: p.clientHandle,
      mode: r.monitoringMode,
      timestamps,
      samplingInterval: sampling.interval,
      followsPublishing: sampling.follows,
      queueSize: reviseQueueSize(engine, p.queueSize),
      discardOldest: p.discardOldest,
      filter,
    });
    sub.items.set(item.id, item);
    engine.monitoredItemCount++;
    engine.sampler.bind(item);
    if (item.mode !== MonitoringMode.Disabled) {
      engine.sampler.start(item);
      initial.push({ item, value: values[k] });
    }
    results[i] = { statusCode: StatusCodes.Good, monitoredItemId: item.id, revisedSamplingInterval: item.samplingInterval, revisedQueueSize: item.queueSize };
  }
  // Part 4 §5.12.1.2: the first sample is reported whatever it is.
  for (const { item, value } of initial) item.offerDataValue(rangeOf(value, item.read.indexRange), now);
  return results;
}

/** Items made or deleted between two looks at the clock. */
const ITEMS_PER_CHECK = 32;

/**
 * CreateMonitoredItems in the engine's slices. The subscription reports nothing of them until
 * all are made, so no notification reaches the client before the response that names its items.
 */
export async function createMonitoredItemsInSlices(
  engine: SubscriptionEngine,
  session: SubscriptionSession,
  subscriptionId: number,
  timestamps: TimestampsToReturn,
  requests: readonly MonitoredItemCreateRequest[],
): Promise<MonitoredItemCreateResult[]> {
  // What can refuse the whole request is checked before anything is made.
  const sub = engine.subscriptionOf(session, subscriptionId);
  checkTimestamps(timestamps);
  checkCount(requests.length, engine.limits.maxMonitoredItemsPerCall);
  const results: MonitoredItemCreateResult[] = [];
  const task = engine.slicer.task("CreateMonitoredItems (a slice)");
  sub.hold();
  try {
    await task.loop(requests.length, (from) => inParts(requests, from, task, (part) => createMonitoredItems(engine, session, subscriptionId, timestamps, part), results));
  } finally {
    sub.release();
    task.done();
  }
  return results;
}

/** DeleteMonitoredItems in the engine's slices. */
export async function deleteMonitoredItemsInSlices(engine: SubscriptionEngine, session: SubscriptionSession, subscriptionId: number, ids: readonly number[]): Promise<number[]> {
  engine.subscriptionOf(session, subscriptionId);
  checkCount(ids.length, engine.limits.maxMonitoredItemsPerCall);
  const results: number[] = [];
  const task = engine.slicer.task("DeleteMonitoredItems (a slice)");
  try {
    await task.loop(ids.length, (from) => inParts(ids, from, task, (part) => deleteMonitoredItems(engine, session, subscriptionId, part), results));
  } finally {
    task.done();
  }
  return results;
}

/** `op` over items from `from` on, ITEMS_PER_CHECK a call, until the slice is spent: the results into `out`; returns where it stopped. */
function inParts<I, R>(items: readonly I[], from: number, task: SlicedTask, op: (part: readonly I[]) => R[], out: R[]): number {
  let i = from;
  while (i < items.length) {
    const to = Math.min(items.length, i + ITEMS_PER_CHECK);
    for (const r of op(items.slice(i, to))) out.push(r);
    i = to;
    if (task.over()) break;
  }
  return i;
}

function itemOf(sub: Subscription, id: number): MonitoredItem | undefined {
  return sub.items.get(id);
}

export function modifyMonitoredItems(
  engine: SubscriptionEngine,
  session: SubscriptionSession,
  subscriptionId: number,
  timestamps: TimestampsToReturn,
  requests: readonly MonitoredItemModifyRequest[],
): MonitoredItemModifyResult[] {
  const sub = engine.subscriptionOf(session, subscriptionId);
  checkTimestamps(timestamps);
  checkCount(requests.length, engine.limits.maxMonitoredItemsPerCall);
  sub.resetLifetime();
  const now = engine.wallNow();
  const items = requests.map((r) => itemOf(sub, r.monitoredItemId));
  const known = items.filter((i): i is MonitoredItem => i !== undefined && i.isValue);
  const minimums = nodeMinimums(engine, known.map((i) => i.read), now);
  const minimumOf = new Map(known.map((item, k) => [item, minimums[k]]));
  return requests.map((r, idx): MonitoredItemModifyResult => {
    const item = items[idx];
    if (item === undefined) return { statusCode: StatusCodes.BadMonitoredItemIdInvalid, revisedSamplingInterval: 0, revisedQueueSize: 0 };
    const nodeMinimum = minimumOf.get(item) ?? 0;
    const p = r.requestedParameters;
    const filter = filterOf(engine, item.read, p, now);
    if (typeof filter === "number") return { statusCode: filter, revisedSamplingInterval: item.samplingInterval, revisedQueueSize: item.queueSize };
    const sampling = reviseSamplingInterval(engine, sub, p.samplingInterval, nodeMinimum);
    item.clientHandle = p.clientHandle;
    item.timestamps = timestamps;
    item.filter = filter;
    item.followsPublishing = sampling.follows;
    if (sampling.interval !== item.samplingInterval) {
      const active = item.watch !== undefined || item.group !== undefined;
      if (active) engine.sampler.stop(item);
      item.samplingInterval = sampling.interval;
      if (active) engine.sampler.start(item);
    }
    item.resize(reviseQueueSize(engine, p.queueSize), p.discardOldest);
    return { statusCode: StatusCodes.Good, revisedSamplingInterval: item.samplingInterval, revisedQueueSize: item.queueSize };
  });
}

/** Part 4 §5.12.4. Disabled stops sampling and empties the queue; leaving it samples at once. */
export function setMonitoringMode(
  engine: SubscriptionEngine,
  session: SubscriptionSession,
  subscriptionId: number,
  mode: MonitoringMode,
  ids: readonly number[],
): number[] {
  const sub = engine.subscriptionOf(session, subscriptionId);
  if (!validMode(mode)) throw new UaStatusError(StatusCodes.BadMonitoringModeInvalid);
  checkCount(ids.length, engine.limits.maxMonitoredItemsPerCall);
  sub.resetLifetime();
  const restarted: MonitoredItem[] = [];
  const results = ids.map((id) => {
    const item = itemOf(sub, id);
    if (item === undefined) return StatusCodes.BadMonitoredItemIdInvalid;
    const previous = item.mode;
    if (previous === mode) return StatusCodes.Good;
    item.mode = mode;
    if (mode === MonitoringMode.Disabled) {
      engine.sampler.stop(item);
      item.clearQueue();
      item.resetLast();
    } else if (previous === MonitoringMode.Disabled) {
      engine.sampler.start(item);
      restarted.push(item);
    } else if (mode === MonitoringMode.Reporting) {
      // Values queued while Sampling are reported now.
      sub.relist(item);
    }
    return StatusCodes.Good;
  });
  engine.sampler.sampleNow(restarted);
  return results;
}

/** Part 4 §5.12.5: removals first, then additions; links stay within one subscription. */
export function setTriggering(
  engine: SubscriptionEngine,
  session: SubscriptionSession,
  subscriptionId: number,
  triggeringItemId: number,
  linksToAdd: readonly number[],
  linksToRemove: readonly number[],
): SetTriggeringResult {
  const sub = engine.subscriptionOf(session, subscriptionId);
  if (linksToAdd.length === 0 && linksToRemove.length === 0) throw new UaStatusError(StatusCodes.BadNothingToDo);
  checkCount(linksToAdd.length + linksToRemove.length, engine.limits.maxMonitoredItemsPerCall);
  sub.resetLifetime();
  const trigger = itemOf(sub, triggeringItemId);
  if (trigger === undefined) throw new UaStatusError(StatusCodes.BadMonitoredItemIdInvalid);
  const removeResults = linksToRemove.map((id) => {
    const links = trigger.links;
    const target = itemOf(sub, id);
    const at = target === undefined || links === undefined ? -1 : links.indexOf(target);
    if (at < 0) return StatusCodes.BadMonitoredItemIdInvalid;
    links!.splice(at, 1);
    if (links!.length === 0) trigger.links = undefined;
    return StatusCodes.Good;
  });
  const addResults = linksToAdd.map((id) => {
    const target = itemOf(sub, id);
    if (target === undefined) return StatusCodes.BadMonitoredItemIdInvalid;
    const links = (trigger.links ??= []);
    if (!links.includes(target)) links.push(target);
    return StatusCodes.Good;
  });
  return { addResults, removeResults };
}

export function deleteMonitoredItems(engine: SubscriptionEngine, session: SubscriptionSession, subscriptionId: number, ids: readonly number[]): number[] {
  const sub = engine.subscriptionOf(session, subscriptionId);
  checkCount(ids.length, engine.limits.maxMonitoredItemsPerCall);
  sub.resetLifetime();
  const removed = new Set<MonitoredItem>();
  const results = ids.map((id) => {
    const item = itemOf(sub, id);
    if (item === undefined) return StatusCodes.BadMonitoredItemIdInvalid;
    engine.sampler.stop(item);
    item.deleted = true;
    item.clearQueue();
    item.links = undefined;
    sub.items.delete(id);
    engine.monitoredItemCount--;
    removed.add(item);
    return StatusCodes.Good;
  });
  // Links to deleted items go too (Part 4 §5.12.6: they are deleted with the item).
  if (removed.size > 0) {
    for (const item of sub.items.values()) {
      if (item.links === undefined) continue;
      item.links = item.links.filter((l) => !removed.has(l));
      if (item.links.length === 0) item.links = undefined;
    }
  }
  return results;
}
