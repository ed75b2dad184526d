// A Subscription (Part 4 §5.13.1): its publishing timer (one slot of the process-wide
// DeadlineScheduler per subscription, so each keeps its own phase and interval), the keep-alive
// and lifetime counters, the list of items with notifications to report, sequence numbers and
// the retransmission queue (Republish, acknowledgements).
//
// The state machine of Part 4 §5.13.1.2 (Table 85-ish: Normal, Late, KeepAlive) reduces to:
// - each publishing cycle with no Publish request queued for the session counts the lifetime
//   down; at zero the subscription expires (StatusChangeNotification BadTimeout);
// - a cycle with notifications (publishing enabled), or the first cycle, or the cycle where the
//   keep-alive count runs out, sends a message with a queued request, or becomes Late: the next
//   Publish request that arrives is answered at once;
// - a Publish request received resets the lifetime counters of all the session's subscriptions.
import type { ScheduledGroup, SampleTask } from "../sampling/scheduler.js";
import type { MonitoredItem, ItemOwner, ItemStats } from "./monitored-item.js";
import { keepAliveMessage, writeSlot, type NotificationWriter } from "./notification-encoder.js";
import type { PendingPublish, SessionPublisher } from "./publisher.js";

export interface SubscriptionParameters {
  publishingInterval: number;
  lifetimeCount: number;
  maxKeepAliveCount: number;
  /** 0: the server's cap. */
  maxNotificationsPerPublish: number;
  priority: number;
}

/** What a subscription needs from the engine that owns it. */
export interface SubscriptionHost {
  readonly writer: NotificationWriter;
  readonly stats: SubscriptionStats;
  /** Server cap on notifications per message. */
  readonly maxNotificationsPerPublish: number;
  /** Messages kept for Republish per subscription. */
  readonly retransmissionLimit: number;
  wallNow(): number;
  /**
   * When the message being built must be closed (performance.now() ms): a message of many
   * notifications goes out in parts, one per turn of the event loop (the rest follows with
   * moreNotifications), so that no Publish holds the loop past the slice. Infinity: no limit.
   */
  sliceDeadline(): number;
  /** The lifetime ran out (Part 4 §5.13.1.1). */
  expire(sub: Subscription): void;
}

/** Notifications encoded between two looks at the slice deadline. */
const SLICE_CHECK = 512;

function continuePublish(sub: Subscription): void {
  sub.continuePublishing();
}

export interface SubscriptionStats extends ItemStats {
  notificationMessages: number;
  notifications: number;
  keepAlives: number;
  /** Publishing cycles that found no Publish request queued when they had something to send. */
  latePublishes: number;
}

interface Retained {
  readonly sequenceNumber: number;
  readonly message: Buffer;
}

export class Subscription implements ItemOwner, SampleTask {
  readonly id: number;
  readonly host: SubscriptionHost;
  readonly stats: SubscriptionStats;
  /** The session's publisher; undefined while the session is gone (until transfer or expiry). */
  owner: SessionPublisher | undefined;
  /** The user that created it (TransferSubscriptions: same user only). */
  readonly user: string;
  publishingInterval: number;
  lifetimeCount: number;
  maxKeepAliveCount: number;
  maxNotificationsPerPublish: number;
  priority: number;
  publishingEnabled: boolean;
  readonly items = new Map<number, MonitoredItem>();
  timer: ScheduledGroup | undefined;
  readonly label: string;

  keepAliveCounter: number;
  lifetimeCounter: number;
  /** Part 4 §5.13.1.2 "MessageSent": the first cycle always answers (notifications or a keep-alive). */
  messageSent = false;
  late = false;
  /** The rest of its notifications follows in the next turn of the event loop (see publish). */
  continuing = false;
  /** Requests making its items in slices (see hold). */
  private holds = 0;
  closed = false;
  /** Next sequence number (Part 4 §7.21: starts at 1, 0 is skipped on wrap-around). */
  sequenceNumber = 1;

  /**
   * Items with notifications to report: pending[pendingHead..pendingCount). The array keeps its
   * capacity between messages (16,384 items refilling it ten times a second would otherwise
   * regrow it every time: garbage the sampling path must not make).
   */
  private pending: (MonitoredItem | undefined)[] = [];
  private pendingHead = 0;
  private pendingCount = 0;
  private readonly retained: Retained[] = [];

  constructor(id: number, host: SubscriptionHost, owner: SessionPublisher, p: SubscriptionParameters, publishingEnabled: boolean) {
    this.id = id;
    this.label = `publishing cycle of subscription ${id}`;
    this.host = host;
    this.stats = host.stats;
    this.owner = owner;
    this.user = owner.session.userId ?? "";
    this.publishingInterval = p.publishingInterval;
    this.lifetimeCount = p.lifetimeCount;
    this.maxKeepAliveCount = p.maxKeepAliveCount;
    this.maxNotificationsPerPublish = p.maxNotificationsPerPublish;
    this.priority = p.priority;
    this.publishingEnabled = publishingEnabled;
    this.keepAliveCounter = p.maxKeepAliveCount;
    this.lifetimeCounter = p.lifetimeCount;
  }

  // ---- ItemOwner ----------------------------------------------------------------------------

  notify(item: MonitoredItem): void {
    item.inNotifyList = true;
    const n = this.pendingCount;
    if (n < this.pending.length) this.pending[n] = item;
    else this.pending.push(item);
    this.pendingCount = n + 1;
  }

  get hasNotifications(): boolean {
    return this.pendingHead < this.pendingCount;
  }

  /** Notifications it may send now: none while a request that makes its items is under way. */
  private get reportable(): boolean {
    return this.holds === 0 && this.pendingHead < this.pendingCount;
  }

  /** A CreateMonitoredItems in slices begins: nothing is reported until it ends (release). */
  hold(): void {
    this.holds++;
  }

  release(): void {
    if (this.holds > 0) this.holds--;
  }

  // ---- publishing cycle ---------------------------------------------------------------------

  sample(): void {
    if (this.closed) return;
    const owner = this.owner;
    const hasRequest = owner !== undefined && owner.hasRequest();
    if (!hasRequest && --this.lifetimeCounter <= 0) {
      this.host.expire(this);
      return;
    }
    if (this.late || this.continuing) return;
    let due = !this.messageSent || (this.publishingEnabled && this.reportable);
    if (!due) due = --this.keepAliveCounter <= 0;
    if (!due) return;
    if (hasRequest) this.publish(owner!.take());
    else this.becomeLate();
  }

  resetLifetime(): void {
    this.lifetimeCounter = this.lifetimeCount;
  }

  private becomeLate(): void {
    this.late = true;
    this.stats.latePublishes++;
    this.owner?.addLate(this);
  }

  /**
   * Answers `req` with the next NotificationMessage, or a keep-alive when there is nothing to
   * send. While notifications remain (moreNotifications), the next message is built in the next
   * turn of the event loop with the next waiting request, or the subscription becomes late.
   */
  publish(req: PendingPublish): void {
    const owner = this.owner!;
    this.late = false;
    this.messageSent = true;
    this.keepAliveCounter = this.maxKeepAliveCount;
    this.lifetimeCounter = this.lifetimeCount;
    const message = this.publishingEnabled && this.reportable ? this.buildMessage(req.maxBytes) : undefined;
    if (message === undefined) {
      this.stats.keepAlives++;
      owner.respond(req, this.id, this.availableSequenceNumbers(), false, keepAliveMessage(this.sequenceNumber, this.host.wallNow()));
      return;
    }
    const more = this.reportable;
    owner.respond(req, this.id, this.availableSequenceNumbers(), more, message);
    if (!more) return;
    if (!owner.hasRequest()) {
      this.becomeLate();
      return;
    }
    // The sampling deadlines come first: they may run before the rest is built.
    this.continuing = true;
    setImmediate(continuePublish, this);
  }

  /** @internal the next part of a message that did not fit one slice. */
  continuePublishing(): void {
    this.continuing = false;
    if (this.closed || this.owner === undefined) return;
    if (!this.reportable) return;
    if (this.owner.hasRequest()) this.publish(this.owner.take());
    else this.becomeLate();
  }

  private nextSequenceNumber(): number {
    const n = this.sequenceNumber;
    this.sequenceNumber = n >= 0xffffffff ? 1 : n + 1;
    return n;
  }

  /** Encodes what the items have queued, up to the notification and byte limits; undefined if nothing. */
  private buildMessage(maxBytes: number): Buffer | undefined {
    const nw = this.host.writer;
    const cap = this.host.maxNotificationsPerPublish;
    let budget = this.maxNotificationsPerPublish > 0 && this.maxNotificationsPerPublish < cap ? this.maxNotificationsPerPublish : cap;
    nw.begin(this.sequenceNumber, this.host.wallNow());
    nw.beginDataChanges();
    const w = nw.w;
    const pending = this.pending;
    const count = this.pendingCount;
    let head = this.pendingHead;
    const deadline = this.host.sliceDeadline();
    let check = SLICE_CHECK;
    while (head < count && budget > 0 && w.pos < maxBytes) {
      const item = pending[head]!;
      if (!item.reportable) {
        item.inNotifyList = false;
        head++;
        continue;
      }
      const clientHandle = item.clientHandle;
      const timestamps = item.timestamps;
      const isValue = item.isValue;
      while (item.count > 0 && budget > 0 && w.pos < maxBytes) {
        writeSlot(w, clientHandle, item.peek(), timestamps, isValue);
        item.shift();
        nw.items++;
        budget--;
        if (--check === 0) {
          check = SLICE_CHECK;
          if (performance.now() > deadline) budget = 0;
        }
      }
      if (item.count > 0) break;
      item.inNotifyList = false;
      head++;
    }
    const written = nw.items;
    nw.endDataChanges();
    // Taken entries are cleared so that deleted items are not kept alive by the list.
    pending.fill(undefined, this.pendingHead, head);
    if (head >= count) {
      this.pendingCount = 0;
      this.pendingHead = 0;
    } else if (head > 1024 && head * 2 > count) {
      // Compact now and then; in between the head index walks forward.
      pending.copyWithin(0, head, count);
      pending.fill(undefined, count - head, count);
      this.pendingCount = count - head;
      this.pendingHead = 0;
    } else {
      this.pendingHead = head;
    }
    if (written === 0) return undefined;
    const message = nw.finish();
    this.retain(this.nextSequenceNumber(), message);
    this.stats.notificationMessages++;
    this.stats.notifications += written;
    return message;
  }

  /** A message with only a StatusChangeNotification; consumes a sequence number. */
  statusChangeMessage(status: number): Buffer {
    const nw = this.host.writer;
    nw.begin(this.nextSequenceNumber(), this.host.wallNow());
    nw.statusChange(status);
    return nw.finish();
  }

  // ---- retransmission queue (Part 4 §5.13.1.1, §5.13.6) -------------------------------------

  private retain(sequenceNumber: number, message: Buffer): void {
    this.retained.push({ sequenceNumber, message });
    // Bounded: the oldest unacknowledged message goes first.
    while (this.retained.length > this.host.retransmissionLimit) this.retained.shift();
  }

  availableSequenceNumbers(): number[] {
    const r = this.retained;
    const out = new Array<number>(r.length);
    for (let i = 0; i < r.length; i++) out[i] = r[i].sequenceNumber;
    return out;
  }

  /** Removes an acknowledged message: true when it was there. */
  acknowledge(sequenceNumber: number): boolean {
    const r = this.retained;
    for (let i = 0; i < r.length; i++) {
      if (r[i].sequenceNumber === sequenceNumber) {
        r.splice(i, 1);
        return true;
      }
    }
    return false;
  }

  retransmit(sequenceNumber: number): Buffer | undefined {
    for (const m of this.retained) if (m.sequenceNumber === sequenceNumber) return m.message;
    return undefined;
  }

  /** Items that were triggered or changed mode keep their place; this re-lists an item with queued values. */
  relist(item: MonitoredItem): void {
    if (!item.inNotifyList && item.reportable) this.notify(item);
  }

  close(): void {
    this.closed = true;
    this.pending.length = 0;
    this.pendingHead = 0;
    this.pendingCount = 0;
    this.retained.length = 0;
  }
}
