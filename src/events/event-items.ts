// The MonitoredItem service set for event items (Part 4 §5.12 with the EventNotifier attribute):
// create, modify, set the monitoring mode, delete. services/monitored-item.ts hands requests and
// ids on the EventNotifier attribute here and the rest to src/subscriptions/items.ts, and puts
// the results back in request order; a request without event items takes the data path alone.
//
// Event items take no part in SetTriggering (they are not triggering items nor linked ones:
// BadMonitoredItemIdInvalid), as the subscription facets define triggering for data items.
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import type { RequestContext } from "../address-space/node-manager.js";
import type { DataValue } from "../ua/builtins.js";
import { UaStatusError } from "../ua/errors.js";
import { MonitoringMode } from "../ua/generated/enums.js";
import { AttributeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type {
  MonitoredItemCreateRequest,
  MonitoredItemCreateResult,
  MonitoredItemModifyRequest,
  MonitoredItemModifyResult,
} from "../ua/generated/types.js";
import { nodeIdKey } from "../ua/node-id.js";
import type { SubscriptionEngine } from "../subscriptions/engine.js";
import type { SubscriptionSession } from "../subscriptions/publisher.js";
import type { Subscription } from "../subscriptions/subscription.js";
import type { EventBus } from "./event-bus.js";
import { parseEventFilter } from "./event-filter.js";
import { EventItem, reviseEventQueueSize, SubscriptionEvents, type EventItemsHost } from "./event-item.js";

/** EventNotifier bit SubscribeToEvents (Part 3 §8.59). */
const SUBSCRIBE_TO_EVENTS = 1;

export function isEventRequest(r: MonitoredItemCreateRequest): boolean {
  return r.itemToMonitor.attributeId === AttributeIds.EventNotifier;
}

function validMode(mode: number): boolean {
  return mode === MonitoringMode.Disabled || mode === MonitoringMode.Sampling || mode === MonitoringMode.Reporting;
}

function createFailed(statusCode: number): MonitoredItemCreateResult {
  return { statusCode, monitoredItemId: 0, revisedSamplingInterval: 0, revisedQueueSize: 0 };
}

export class EventItems implements EventItemsHost {
  private readonly bySubscription = new WeakMap<Subscription, SubscriptionEvents>();

  constructor(
    private readonly engine: SubscriptionEngine,
    private readonly registry: NamespaceRegistry,
    readonly bus: EventBus,
  ) {}

  // ---- EventItemsHost -----------------------------------------------------------------------

  detach(item: EventItem): void {
    this.bus.detach(item);
  }

  itemCountChanged(delta: number): void {
    this.engine.monitoredItemCount += delta;
  }

  // ---- lookups ------------------------------------------------------------------------------

  /** The event side of a subscription, if it has event items. */
  of(sub: Subscription): SubscriptionEvents | undefined {
    return this.bySubscription.get(sub);
  }

  item(sub: Subscription, id: number): EventItem | undefined {
    return this.bySubscription.get(sub)?.items.get(id);
  }

  private ensure(sub: Subscription): SubscriptionEvents {
    let events = this.bySubscription.get(sub);
    if (events === undefined) {
      events = new SubscriptionEvents(sub, this);
      this.bySubscription.set(sub, events);
      sub.events = events;
    }
    return events;
  }

  // ---- services -----------------------------------------------------------------------------

  /** CreateMonitoredItems for the requests at `indices` (all on EventNotifier); results in the same order. */
  create(session: SubscriptionSession, subscriptionId: number, requests: readonly MonitoredItemCreateRequest[]): MonitoredItemCreateResult[] {
    const sub = this.engine.subscriptionOf(session, subscriptionId);
    const limits = this.engine.limits;
    const ctx: RequestContext = { sessionId: "", role: "viewer", now: Date.now() };
    return requests.map((r) => {
      if (!validMode(r.monitoringMode)) return createFailed(StatusCodes.BadMonitoringModeInvalid);
      const read = r.itemToMonitor;
      const enc = read.dataEncoding;
      if (enc && (enc.name ?? "") !== "") return createFailed(StatusCodes.BadDataEncodingInvalid);
      const manager = this.registry.managerFor(read.nodeId);
      const results: DataValue[] = [];
      if (manager === undefined) return createFailed(StatusCodes.BadNodeIdUnknown);
      manager.read(ctx, [{ nodeId: read.nodeId, attributeId: AttributeIds.EventNotifier }], results);
      const status = results[0]?.statusCode ?? StatusCodes.Good;
      if (status !== StatusCodes.Good) return createFailed(status);
      // Part 4 §5.12.2: an Object that reports no events cannot be monitored for them.
      if (((results[0]?.value?.value as number) & SUBSCRIBE_TO_EVENTS) === 0) return createFailed(StatusCodes.BadNotSupported);
      const events = this.bySubscription.get(sub);
      if (this.engine.monitoredItemCount >= limits.maxMonitoredItems || sub.items.size + (events?.items.size ?? 0) >= limits.maxMonitoredItemsPerSubscription) {
        return createFailed(StatusCodes.BadTooManyMonitoredItems);
      }
      const p = r.requestedParameters;
      const parsed = parseEventFilter(this.registry, p.filter);
      if (parsed.filter === undefined) return { ...createFailed(parsed.status), filterResult: parsed.result };
      const owner = this.ensure(sub);
      const item = new EventItem(owner, {
        id: this.engine.newItemId(),
        notifier: read.nodeId,
        notifierKey: nodeIdKey(read.nodeId),
        clientHandle: p.clientHandle,
        mode: r.monitoringMode,
        queueSize: reviseEventQueueSize(p.queueSize, limits.maxMonitoredItemsQueueSize),
        discardOldest: p.discardOldest,
        filter: parsed.filter,
      });
      owner.items.set(item.id, item);
      this.bus.attach(item);
      this.itemCountChanged(1);
      // Part 4 §5.12.1.2: events are reported as they occur; no sampling interval applies.
      return { statusCode: StatusCodes.Good, monitoredItemId: item.id, revisedSamplingInterval: 0, revisedQueueSize: item.queueSize, filterResult: parsed.result };
    });
  }

  /** ModifyMonitoredItems of event items; a filter that does not check leaves the item as it was. */
  modify(sub: Subscription, requests: readonly MonitoredItemModifyRequest[]): MonitoredItemModifyResult[] {
    return requests.map((r) => {
      const item = this.item(sub, r.monitoredItemId);
      if (item === undefined) return { statusCode: StatusCodes.BadMonitoredItemIdInvalid, revisedSamplingInterval: 0, revisedQueueSize: 0 };
      const p = r.requestedParameters;
      const parsed = parseEventFilter(this.registry, p.filter);
      if (parsed.filter === undefined) return { statusCode: parsed.status, revisedSamplingInterval: 0, revisedQueueSize: item.queueSize, filterResult: parsed.result };
      item.clientHandle = p.clientHandle;
      item.filter = parsed.filter;
      item.discardOldest = p.discardOldest;
      item.queueSize = reviseEventQueueSize(p.queueSize, this.engine.limits.maxMonitoredItemsQueueSize);
      return { statusCode: StatusCodes.Good, revisedSamplingInterval: 0, revisedQueueSize: item.queueSize, filterResult: parsed.result };
    });
  }

  /** Part 4 §5.12.4 for event items: Disabled drops the queue; Reporting reports what Sampling kept. */
  setMode(sub: Subscription, mode: MonitoringMode, item: EventItem): number {
    if (!validMode(mode)) throw new UaStatusError(StatusCodes.BadMonitoringModeInvalid);
    const previous = item.mode;
    item.mode = mode;
    if (mode === MonitoringMode.Disabled) item.clear();
    else if (mode === MonitoringMode.Reporting && previous !== MonitoringMode.Reporting) this.of(sub)?.relist(item);
    return StatusCodes.Good;
  }

  delete(sub: Subscription, item: EventItem): number {
    const events = this.of(sub);
    if (events === undefined || !events.items.has(item.id)) return StatusCodes.BadMonitoredItemIdInvalid;
    events.remove(item);
    return StatusCodes.Good;
  }

  /** Ids of every event item of the subscription (Server.GetMonitoredItems). */
  handles(sub: Subscription): { serverHandles: number[]; clientHandles: number[] } {
    const serverHandles: number[] = [];
    const clientHandles: number[] = [];
    for (const item of this.of(sub)?.items.values() ?? []) {
      serverHandles.push(item.id);
      clientHandles.push(item.clientHandle);
    }
    return { serverHandles, clientHandles };
  }
}
