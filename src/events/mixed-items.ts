// A MonitoredItem service request may mix data items and event items (Part 4 §5.12): the event
// ones are done by EventItems, the others by src/subscriptions/items.ts (`data`), and the results
// go back in request order. Without event items the request goes to `data` unchanged: the data
// path pays one scan of the ids for a subscription that has event items, nothing otherwise.
// The request-wide checks that items.ts makes on its share (operation count, TimestampsToReturn,
// the subscription) are made here on the whole request when it is split.
import { UaStatusError } from "../ua/errors.js";
import type { MonitoringMode, TimestampsToReturn } from "../ua/generated/enums.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type {
  MonitoredItemCreateRequest,
  MonitoredItemCreateResult,
  MonitoredItemModifyRequest,
  MonitoredItemModifyResult,
} from "../ua/generated/types.js";
import type { SubscriptionEngine } from "../subscriptions/engine.js";
import { checkTimestamps } from "../subscriptions/items.js";
import type { SubscriptionSession } from "../subscriptions/publisher.js";
import type { Subscription } from "../subscriptions/subscription.js";
import type { EventItem } from "./event-item.js";
import { isEventRequest, type EventItems } from "./event-items.js";

function checkCount(n: number, max: number): void {
  if (n === 0) throw new UaStatusError(StatusCodes.BadNothingToDo);
  if (n > max) throw new UaStatusError(StatusCodes.BadTooManyOperations);
}

/** Puts the results of the two shares back in request order. */
function merge<T>(n: number, isEvent: readonly boolean[], events: readonly T[], data: readonly T[] | Promise<readonly T[]>): T[] | Promise<T[]> {
  if (data instanceof Promise) return data.then((d) => merge(n, isEvent, events, d) as T[]);
  const out = new Array<T>(n);
  let e = 0;
  let d = 0;
  for (let i = 0; i < n; i++) out[i] = isEvent[i] ? events[e++] : data[d++];
  return out;
}

export async function createMixed(
  events: EventItems,
  engine: SubscriptionEngine,
  session: SubscriptionSession,
  subscriptionId: number,
  timestamps: TimestampsToReturn,
  requests: readonly MonitoredItemCreateRequest[],
  data: (subset: readonly MonitoredItemCreateRequest[]) => Promise<MonitoredItemCreateResult[]>,
): Promise<MonitoredItemCreateResult[]> {
  let any = false;
  for (const r of requests) if (isEventRequest(r)) any = true;
  if (!any) return data(requests);
  engine.subscriptionOf(session, subscriptionId);
  checkTimestamps(timestamps);
  checkCount(requests.length, engine.limits.maxMonitoredItemsPerCall);
  const isEvent = requests.map(isEventRequest);
  const eventResults = events.create(session, subscriptionId, requests.filter((_, i) => isEvent[i]));
  const dataRequests = requests.filter((_, i) => !isEvent[i]);
  const dataResults = dataRequests.length > 0 ? await data(dataRequests) : [];
  return merge(requests.length, isEvent, eventResults, dataResults) as MonitoredItemCreateResult[];
}

/** Splits ids (or requests by id) into event items of `sub` and the rest; undefined when none is an event item. */
function split<T>(events: EventItems, sub: Subscription, list: readonly T[], idOf: (t: T) => number): { isEvent: boolean[]; items: (EventItem | undefined)[] } | undefined {
  if (events.of(sub) === undefined) return undefined;
  const items = list.map((t) => events.item(sub, idOf(t)));
  if (!items.some((i) => i !== undefined)) return undefined;
  return { isEvent: items.map((i) => i !== undefined), items };
}

export function modifyMixed(
  events: EventItems,
  engine: SubscriptionEngine,
  session: SubscriptionSession,
  subscriptionId: number,
  timestamps: TimestampsToReturn,
  requests: readonly MonitoredItemModifyRequest[],
  data: (subset: readonly MonitoredItemModifyRequest[]) => MonitoredItemModifyResult[],
): MonitoredItemModifyResult[] {
  const sub = engine.subscriptionOf(session, subscriptionId);
  const s = split(events, sub, requests, (r) => r.monitoredItemId);
  if (s === undefined) return data(requests);
  checkTimestamps(timestamps);
  checkCount(requests.length, engine.limits.maxMonitoredItemsPerCall);
  sub.resetLifetime();
  const eventResults = events.modify(sub, requests.filter((_, i) => s.isEvent[i]));
  const dataRequests = requests.filter((_, i) => !s.isEvent[i]);
  return merge(requests.length, s.isEvent, eventResults, dataRequests.length > 0 ? data(dataRequests) : []) as MonitoredItemModifyResult[];
}

/** An operation on ids (SetMonitoringMode, DeleteMonitoredItems): event items one by one, the rest by `data`. */
function byIds(
  events: EventItems,
  engine: SubscriptionEngine,
  session: SubscriptionSession,
  subscriptionId: number,
  ids: readonly number[],
  onEvent: (sub: Subscription, item: EventItem) => number,
  data: (subset: readonly number[]) => number[] | Promise<number[]>,
): number[] | Promise<number[]> {
  const sub = engine.subscriptionOf(session, subscriptionId);
  const s = split(events, sub, ids, (id) => id);
  if (s === undefined) return data(ids);
  checkCount(ids.length, engine.limits.maxMonitoredItemsPerCall);
  sub.resetLifetime();
  const eventResults = s.items.filter((i): i is EventItem => i !== undefined).map((item) => onEvent(sub, item));
  const dataIds = ids.filter((_, i) => !s.isEvent[i]);
  return merge(ids.length, s.isEvent, eventResults, dataIds.length > 0 ? data(dataIds) : []);
}

export function setModeMixed(
  events: EventItems,
  engine: SubscriptionEngine,
  session: SubscriptionSession,
  subscriptionId: number,
  mode: MonitoringMode,
  ids: readonly number[],
  data: (subset: readonly number[]) => number[],
): number[] {
  return byIds(events, engine, session, subscriptionId, ids, (sub, item) => events.setMode(sub, mode, item), data) as number[];
}

export async function deleteMixed(
  events: EventItems,
  engine: SubscriptionEngine,
  session: SubscriptionSession,
  subscriptionId: number,
  ids: readonly number[],
  data: (subset: readonly number[]) => Promise<number[]>,
): Promise<number[]> {
  return byIds(events, engine, session, subscriptionId, ids, (sub, item) => events.delete(sub, item), data);
}
