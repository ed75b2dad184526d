// An event monitored item (Part 4 §5.12.1: a MonitoredItem on an Object's EventNotifier
// attribute) and the event side of a subscription. Items live apart from the data items of
// src/subscriptions: they have no sampling, no last value and no DataValue queue, only their
// compiled EventFilter and a queue of selected field lists. A subscription reaches them through
// its `events` hook (subscription.ts): whether any are queued, and writing them into the
// NotificationMessage after the data changes (Part 4 §7.21: an EventNotificationList, §7.25.3).
//
// Queue sizes (Part 4 §7.21 MonitoringParameters): for events 0 asks for the server's default,
// 1 for its minimum, and anything between the minimum and the maximum is granted as asked.
// Overflow (Part 4 §5.13.1.5): the first event lost puts one EventQueueOverflowEventType event
// into the queue beside its entries, never itself discarded: at the head with discardOldest,
// else at the tail; it bypasses the where clause (§7.22.3) but not the select clauses.
import type { Role } from "../address-space/methods.js";
import type { NodeId, Variant } from "../ua/builtins.js";
import { encodeNodeId, encodeVariant } from "../ua/builtin-codec.js";
import { numericNodeId } from "../ua/builtins.js";
import { MonitoringMode } from "../ua/generated/enums.js";
import { ObjectIds, ObjectTypeIds } from "../ua/generated/node-ids.js";
import type { NotificationWriter } from "../subscriptions/notification-encoder.js";
import type { Subscription, SubscriptionEventsHook } from "../subscriptions/subscription.js";
import { UaEvent } from "./event.js";
import type { CompiledEventFilter } from "./event-filter.js";

/** Queue sizes for event items (Part 4 §7.21): the smallest granted, the default, and the cap's floor. */
export const EVENT_QUEUE_MIN = 10;
export const EVENT_QUEUE_DEFAULT = 100;

const EVENT_LIST_ID: NodeId = Object.freeze(numericNodeId(ObjectIds.EventNotificationList_Encoding_DefaultBinary));
const SERVER: NodeId = Object.freeze(numericNodeId(ObjectIds.Server));

/** Part 4 §7.21: 0 the default, 1 the minimum, MaxUInt32 (or anything above) the maximum. */
export function reviseEventQueueSize(requested: number, max: number): number {
  const cap = Math.max(EVENT_QUEUE_MIN, max);
  if (!(requested > 0)) return Math.min(EVENT_QUEUE_DEFAULT, cap);
  if (requested === 1) return EVENT_QUEUE_MIN;
  return Math.max(EVENT_QUEUE_MIN, Math.min(Math.trunc(requested), cap));
}

const enum Overflow {
  None = 0,
  Head = 1,
  Tail = 2,
}

/** Counts the engine keeps per subscription (SubscriptionDiagnostics.EventNotificationsCount, EventQueueOverFlowCount). */
export interface EventCounts {
  eventNotifications: number;
  eventQueueOverflows: number;
}

export class EventItem {
  readonly id: number;
  /** Key of the notifier node (an Object with EventNotifier SubscribeToEvents). */
  readonly notifierKey: string | number;
  readonly notifier: NodeId;
  clientHandle: number;
  mode: MonitoringMode;
  queueSize: number;
  discardOldest: boolean;
  filter: CompiledEventFilter;
  /** Selected fields of the queued events, oldest first. */
  private readonly queue: Variant[][] = [];
  private overflow = Overflow.None;
  private overflowFields: Variant[] | undefined = undefined;
  /** In the subscription's list of items to report. */
  listed = false;
  deleted = false;

  constructor(
    readonly owner: SubscriptionEvents,
    init: { id: number; notifier: NodeId; notifierKey: string | number; clientHandle: number; mode: MonitoringMode; queueSize: number; discardOldest: boolean; filter: CompiledEventFilter },
  ) {
    this.id = init.id;
    this.notifier = init.notifier;
    this.notifierKey = init.notifierKey;
    this.clientHandle = init.clientHandle;
    this.mode = init.mode;
    this.queueSize = init.queueSize;
    this.discardOldest = init.discardOldest;
    this.filter = init.filter;
  }

  get count(): number {
    return this.queue.length + (this.overflow !== Overflow.None ? 1 : 0);
  }

  /** An event raised through this item's notifier: filtered, selected and queued. */
  offer(event: UaEvent): void {
    if (this.mode === MonitoringMode.Disabled || this.deleted) return;
    // Part 5 §6.4.3 / Part 2 §4.9: audit events carry security-relevant detail; only
    // administrators see them.
    if (event.audit && this.owner.role() !== "admin") return;
    if (!this.filter.passes(event)) return;
    this.push(this.filter.fieldsOf(event));
  }

  /** Queues fields without the where clause (ConditionRefresh's own events, Part 9 §5.5.7). */
  push(fields: Variant[]): void {
    if (this.queue.length >= this.queueSize) {
      if (this.discardOldest) this.queue.shift();
      else this.queue.pop();
      if (this.overflow === Overflow.None) {
        this.overflow = this.discardOldest ? Overflow.Head : Overflow.Tail;
        this.overflowFields = this.filter.fieldsOf(overflowEvent());
        this.owner.counts.eventQueueOverflows++;
      }
    }
    this.queue.push(fields);
    if (this.mode === MonitoringMode.Reporting) this.owner.list(this);
  }

  clear(): void {
    this.queue.length = 0;
    this.overflow = Overflow.None;
    this.overflowFields = undefined;
  }

  // What the last writeTo wrote: taken off the queue by commitWrite once the message went out
  // whole, left queued by forgetWrite when it did not (nothing is lost to a failed response).
  private wroteHead = false;
  private wroteQueue = 0;
  private wroteTail = false;

  /** Writes up to `budget` EventFieldLists into the message being built (nothing leaves the queue yet); returns how many. */
  writeTo(nw: NotificationWriter, budget: number, maxBytes: number): number {
    const w = nw.w;
    let n = 0;
    const handle = this.clientHandle >>> 0;
    this.forgetWrite();
    if (this.overflow === Overflow.Head && budget > 0) {
      writeFields(w, handle, this.overflowFields!);
      this.wroteHead = true;
      n++;
    }
    let taken = 0;
    while (taken < this.queue.length && n < budget && nw.size < maxBytes) {
      writeFields(w, handle, this.queue[taken++]);
      n++;
    }
    this.wroteQueue = taken;
    if (taken === this.queue.length && this.overflow === Overflow.Tail && n < budget && nw.size < maxBytes) {
      writeFields(w, handle, this.overflowFields!);
      this.wroteTail = true;
      n++;
    }
    return n;
  }

  /** Entries still queued once what writeTo wrote is taken. */
  get unwritten(): number {
    return this.count - this.wroteQueue - (this.wroteHead || this.wroteTail ? 1 : 0);
  }

  /** What writeTo wrote was sent: it leaves the queue. */
  commitWrite(): void {
    if (this.wroteQueue > 0) this.queue.splice(0, this.wroteQueue);
    if (this.wroteHead || this.wroteTail) {
      this.overflow = Overflow.None;
      this.overflowFields = undefined;
    }
    this.forgetWrite();
  }

  /** What writeTo wrote was not sent: it stays queued. */
  forgetWrite(): void {
    this.wroteHead = this.wroteTail = false;
    this.wroteQueue = 0;
  }
}

function writeFields(w: NotificationWriter["w"], clientHandle: number, fields: readonly Variant[]): void {
  w.writeUInt32(clientHandle);
  w.writeInt32(fields.length);
  for (let i = 0; i < fields.length; i++) encodeVariant(w, fields[i]);
}

/** Part 5 §6.4.34: SourceNode the Server, SourceName "Internal/EventQueueOverflow". */
function overflowEvent(): UaEvent {
  return new UaEvent(ObjectTypeIds.EventQueueOverflowEventType, {
    sourceNode: SERVER,
    sourceName: "Internal/EventQueueOverflow",
    message: "Events were lost: the queue of a monitored item overflowed.",
    severity: 1,
  });
}

/** What the events side needs of the server around a subscription. */
export interface EventItemsHost {
  /** Takes the item off its notifier (deleted with its subscription). */
  detach(item: EventItem): void;
  /** Monitored items of all subscriptions (SubscriptionEngine.monitoredItemCount). */
  itemCountChanged(delta: number): void;
}

/**
 * The event monitored items of one subscription, and its hook (Subscription.events): whether
 * any have events to report and writing them into the subscription's next message.
 */
export class SubscriptionEvents implements SubscriptionEventsHook {
  readonly items = new Map<number, EventItem>();
  readonly counts: EventCounts = { eventNotifications: 0, eventQueueOverflows: 0 };
  private pending: EventItem[] = [];

  constructor(
    readonly subscription: Subscription,
    private readonly host: EventItemsHost,
  ) {}

  /** The role of the session that owns the subscription now (it may have been transferred). */
  role(): Role {
    const session = this.subscription.owner?.session as { role?: Role } | undefined;
    return session?.role ?? "viewer";
  }

  list(item: EventItem): void {
    if (item.listed) return;
    item.listed = true;
    this.pending.push(item);
  }

  get hasNotifications(): boolean {
    const p = this.pending;
    for (let i = 0; i < p.length; i++) if (p[i].count > 0 && p[i].mode === MonitoringMode.Reporting && !p[i].deleted) return true;
    return false;
  }

  // The items the last write touched (pending[0, touched)), those it wrote out in full
  // (pending[0, done)), and how many events it wrote: applied by commit, dropped by rollback.
  private touched = 0;
  private done = 0;
  private wrote = 0;
  /** Whether events are left to report once the last write is committed. */
  moreAfterWrite = false;

  /**
   * One EventNotificationList (Part 4 §7.25.3) with what the items queued, within the budget;
   * returns how many. Call it only while `hasNotifications` (a list is never taken back out).
   * Nothing leaves the queues until `commit`.
   */
  write(nw: NotificationWriter, budget: number, maxBytes: number): number {
    const w = nw.w;
    encodeNodeId(w, EVENT_LIST_ID);
    w.writeByte(0x01);
    const bodyAt = w.mark();
    w.writeInt32(0);
    const bodyStart = w.offset();
    const countAt = w.mark();
    w.writeInt32(0);
    let written = 0;
    let head = 0;
    let touched = 0;
    const p = this.pending;
    while (head < p.length && written < budget && nw.size < maxBytes) {
      const item = p[head];
      const live = item.mode === MonitoringMode.Reporting && !item.deleted;
      if (live) {
        written += item.writeTo(nw, budget - written, maxBytes);
        touched = head + 1;
        if (item.unwritten > 0) break;
      }
      head++;
    }
    w.patchInt32(countAt, written);
    w.patchInt32(bodyAt, w.offset() - bodyStart);
    nw.addPart();
    this.touched = touched;
    this.done = head;
    this.wrote = written;
    let more = false;
    for (let i = head; i < p.length && !more; i++) {
      const item = p[i];
      more = item.mode === MonitoringMode.Reporting && !item.deleted && (i < touched ? item.unwritten : item.count) > 0;
    }
    this.moreAfterWrite = more;
    return written;
  }

  /** The message with the last write went out whole: its events leave their queues. */
  commit(): void {
    const p = this.pending;
    for (let i = 0; i < this.touched; i++) p[i].commitWrite();
    for (let i = 0; i < this.done; i++) p[i].listed = false;
    if (this.done > 0) this.pending = p.slice(this.done);
    this.counts.eventNotifications += this.wrote;
    this.touched = this.done = this.wrote = 0;
  }

  /** The message with the last write did not go out: its events stay queued. */
  rollback(): void {
    const p = this.pending;
    for (let i = 0; i < this.touched; i++) p[i].forgetWrite();
    this.touched = this.done = this.wrote = 0;
  }

  /** SetMonitoringMode to Reporting: what the item queued while Sampling is reported now. */
  relist(item: EventItem): void {
    if (item.count > 0) this.list(item);
  }

  remove(item: EventItem): void {
    if (!this.items.delete(item.id)) return;
    item.deleted = true;
    item.clear();
    this.host.detach(item);
    this.host.itemCountChanged(-1);
  }

  /** The subscription is deleted: every item leaves its notifier. */
  close(): void {
    for (const item of [...this.items.values()]) this.remove(item);
    this.pending.length = 0;
  }
}
