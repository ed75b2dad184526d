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
import { SliceTail } from "../sampling/slices.js";
import type { ScheduledGroup, SampleTask } from "../sampling/scheduler.js";
import type { BinaryWriter } from "../ua/binary-writer.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { encodeResponseHeader, type ResponseHeader } from "../ua/generated/types.js";
import type { MonitoredItem, ItemOwner, ItemStats } from "./monitored-item.js";
import { keepAliveMessage, writeSlot, writeUInt32Array, type NotificationWriter } from "./notification-encoder.js";
import { SendResult, type PendingPublish, type PublishWaitStats, type SessionPublisher } from "./publisher.js";

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
   * When the message being built must be closed (sliceNow()'s ms): a message of many
   * notifications goes out in parts, one per slice (the rest follows with moreNotifications),
   * so that no Publish holds the loop past the slice or into the next sampling deadline.
   * Infinity: no limit.
   */
  sliceEnd(tail: number): number;
  sliceNow(): number;
  /** Whether a slice may start now (the next sampling deadline leaves room for it and its `tail`). */
  sliceOpen(tail: number): boolean;
  /**
   * Calls fn(sub) when the next slice may start, timed under sub.continueLabel: after the next
   * client socket read or a turn, whichever comes first (the sampling slots due first): the rest
   * of a message goes before client requests (Slicer.soon).
   */
  nextSlice(fn: (sub: Subscription) => void, sub: Subscription, tail: number): void;
  /** The lifetime ran out (Part 4 §5.13.1.1). */
  expire(sub: Subscription): void;
}

/** Notifications encoded between two looks at the slice deadline. */
const SLICE_CHECK = 512;

function continuePublish(sub: Subscription): void {
  sub.continuePublishing();
}

/** The encoder of a PublishResponse with a message of the subscription's notifications (see Subscription.writeResponse). */
function encodeMessageResponse(w: BinaryWriter, sub: Subscription): void {
  sub.writeResponse(w);
}

export interface SubscriptionStats extends ItemStats, PublishWaitStats {
  notificationMessages: number;
  notifications: number;
  keepAlives: number;
  /** Publishing cycles that found no Publish request queued when they had something to send. */
  latePublishes: number;
}

/**
 * The event monitored items of a subscription (src/events/event-item.ts), set once it has one:
 * a publishing cycle asks whether they queued anything, and a message writes their
 * EventNotificationList after the data changes.
 */
export interface SubscriptionEventsHook {
  readonly hasNotifications: boolean;
  /**
   * Writes up to `budget` queued events into the message being built (only while
   * hasNotifications); returns how many. They leave their queues with `commit`, once the
   * message went out whole, and stay with `rollback`.
   */
  write(nw: NotificationWriter, budget: number, maxBytes: number): number;
  /** Whether events are left once the last write is committed. */
  readonly moreAfterWrite: boolean;
  commit(): void;
  rollback(): void;
  close(): void;
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
  owner: SessionPublisher<Subscription> | undefined;
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
  /** The loop trace's name for the rest of a message, sent in a later task (continuePublishing). */
  readonly continueLabel: string;
  /** Its event items (src/events), once it has any. */
  events: SubscriptionEventsHook | undefined = undefined;

  keepAliveCounter: number;
  lifetimeCounter: number;
  /** Part 4 §5.13.1.2 "MessageSent": the first cycle always answers (notifications or a keep-alive). */
  messageSent = false;
  late = false;
  /** The rest of its notifications follows in a later task: after a client socket read or a turn (see publish). */
  continuing = false;
  /**
   * Its publishing cycles that took notifications, counted, and whether the latest is still
   * sending them (a message in parts): the items' queues do not count what it took (ItemOwner).
   */
  cycle = 0;
  cycleOpen = false;
  /** How far its messages' slices ran past their end: the next ones end that much earlier before a sampling deadline. */
  readonly tail = new SliceTail();
  /** When the slice of the message being built was to end (Infinity: no limit). */
  private sliceEndAt = Infinity;
  /** Requests making its items in slices (see hold). */
  private holds = 0;
  closed = false;
  /** Next sequence number (Part 4 §7.21: starts at 1, 0 is skipped on wrap-around). */
  sequenceNumber = 1;
  // Its own counts, for SubscriptionDiagnostics (Part 5 §12.15; src/diagnostics).
  dataChangeNotifications = 0;
  publishRequests = 0;
  lateCount = 0;
  discardedMessages = 0;
  queueOverflows = 0;

  /**
   * Items with notifications to report: pending[pendingHead..pendingCount). The array keeps its
   * capacity between messages (16,384 items refilling it ten times a second would otherwise
   * regrow it every time: garbage the sampling path must not make).
   */
  private pending: (MonitoredItem | undefined)[] = [];
  private pendingHead = 0;
  private pendingCount = 0;
  private readonly retained: Retained[] = [];

  // The response being written (writeResponse) and what its message took: nothing leaves the
  // items' queues until the response went out whole (commit), so a response that could not be
  // sent (no memory for it, the channel gone) loses no notification.
  private answering: PendingPublish | undefined = undefined;
  private answerHeader: ResponseHeader | undefined = undefined;
  /** pending[pendingHead, takeHead) taken in full, and takePartial values of pending[takeHead]. */
  private takeHead = 0;
  private takePartial = 0;
  private takeWritten = 0;
  private takeEvents = 0;
  /** The message as sent, for the retransmission queue. */
  private takeMessage: Buffer | undefined = undefined;

  constructor(id: number, host: SubscriptionHost, owner: SessionPublisher<Subscription>, p: SubscriptionParameters, publishingEnabled: boolean) {
    this.id = id;
    this.label = `publishing cycle of subscription ${id}`;
    this.continueLabel = `publishing cycle of subscription ${id} (a later slice)`;
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

  overflowed(n: number): void {
    this.stats.queueOverflows += n;
    this.queueOverflows += n;
    // Lost for want of a Publish request: its notifications were ready and the client had none
    // queued (a busy channel with requests waiting is the server's own delay, not counted here).
    if (this.late && (this.owner === undefined || this.owner.queued === 0)) this.stats.lateQueueOverflows += n;
  }

  notify(item: MonitoredItem): void {
    item.inNotifyList = true;
    item.listedIn = this.cycle;
    const n = this.pendingCount;
    if (n < this.pending.length) this.pending[n] = item;
    else this.pending.push(item);
    this.pendingCount = n + 1;
  }

  get hasNotifications(): boolean {
    return this.pendingHead < this.pendingCount || (this.events !== undefined && this.events.hasNotifications);
  }

  /** Notifications it may send now: none while a request that makes its items is under way. */
  private get reportable(): boolean {
    return this.holds === 0 && this.hasNotifications;
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
    // A request that waits for its busy channel (a large response leaving in slices, however
    // slowly the client reads it) keeps the subscription alive: it is there, only not yet usable.
    const queued = owner !== undefined && owner.hasLiveRequest();
    const hasRequest = queued && owner.hasRequest();
    if (!queued && --this.lifetimeCounter <= 0) {
      this.host.expire(this);
      return;
    }
    if (this.late || this.continuing) return;
    let due = !this.messageSent || (this.publishingEnabled && this.reportable);
    if (!due) due = --this.keepAliveCounter <= 0;
    if (!due) return;
    if (!hasRequest) this.becomeLate();
    else if (this.publishingEnabled && this.reportable && !this.host.sliceOpen(this.tail.ms)) this.goOnLater();
    else this.publish(owner!.take());
  }

  resetLifetime(): void {
    this.lifetimeCounter = this.lifetimeCount;
  }

  private becomeLate(): void {
    this.late = true;
    this.stats.latePublishes++;
    this.lateCount++;
    this.owner?.addLate(this);
  }

  /**
   * Answers `req` with the next NotificationMessage, or a keep-alive when there is nothing to
   * send. While notifications remain (moreNotifications), the next message is built in the next
   * slice (after a client socket read or a turn of the event loop) with the next waiting request,
   * or the subscription becomes late.
   */
  publish(req: PendingPublish): void {
    const owner = this.owner!;
    this.publishRequests++;
    this.late = false;
    this.messageSent = true;
    this.keepAliveCounter = this.maxKeepAliveCount;
    this.lifetimeCounter = this.lifetimeCount;
    if (this.publishingEnabled && this.reportable && this.hasReportable()) {
      // A message that did not go out leaves its notifications queued: the next cycle tries again.
      this.sliceEndAt = Infinity;
      if (!this.cycleOpen) {
        this.cycle++;
        this.cycleOpen = true;
      }
      const sent = this.sendMessage(req);
      // Open until what it took is sent; a message that did not go out leaves it all queued.
      this.cycleOpen = sent === SendResult.Whole && this.pendingHead < this.pendingCount;
      if (this.sliceEndAt !== Infinity) this.tail.note(this.sliceEndAt, this.host.sliceNow());
      if (sent === SendResult.Whole) this.goOn(owner);
      return;
    }
    this.stats.keepAlives++;
    owner.respond(req, this.id, this.availableSequenceNumbers(), false, keepAliveMessage(this.sequenceNumber, this.host.wallNow()));
  }

  /** After a message: the rest follows in the next slice (the sampling deadlines may run first), or waits for a request. */
  private goOn(owner: SessionPublisher<Subscription>): void {
    if (!this.reportable) return;
    if (!owner.hasRequest()) {
      this.becomeLate();
      return;
    }
    this.goOnLater();
  }

  /** The message (or its next part) is built in the next slice: after the sampling slots that are due or about to be. */
  private goOnLater(): void {
    this.continuing = true;
    this.host.nextSlice(continuePublish, this, this.tail.ms);
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

  /**
   * Whether a message would carry anything: items at the head of the list that have nothing to
   * report any more are taken off it (a message is never started that would stay empty).
   */
  private hasReportable(): boolean {
    const pending = this.pending;
    let head = this.pendingHead;
    while (head < this.pendingCount && !pending[head]!.reportable) {
      pending[head]!.inNotifyList = false;
      pending[head] = undefined;
      head++;
    }
    this.pendingHead = head;
    if (head >= this.pendingCount) this.pendingHead = this.pendingCount = 0;
    return this.pendingHead < this.pendingCount || (this.events !== undefined && this.events.hasNotifications);
  }

  /** Sends a message of what the items queued as the response to `req`: encoded straight into the channel's output. */
  private sendMessage(req: PendingPublish): SendResult {
    const header: ResponseHeader = { timestamp: this.host.wallNow(), requestHandle: req.requestHandle, serviceResult: StatusCodes.Good, serviceDiagnostics: {} };
    this.answering = req;
    this.answerHeader = header;
    let result: SendResult;
    try {
      result = req.send(header, encodeMessageResponse, this);
    } finally {
      this.answering = this.answerHeader = undefined;
    }
    if (result === SendResult.Whole) this.commit();
    else this.rollback();
    return result;
  }

  /**
   * @internal The PublishResponse (Part 4 §5.13.5) with a NotificationMessage of what the items
   * queued, written into `w` (the channel's ChunkWriter): its bytes are written once, into the
   * pool chunks they leave from, and copied once more only for the retransmission queue.
   * moreNotifications is filled in once the message is written.
   */
  writeResponse(w: BinaryWriter): void {
    const req = this.answering!;
    encodeResponseHeader(w, this.answerHeader!);
    w.writeUInt32(this.id);
    // availableSequenceNumbers as they will be once this message is kept (retain).
    const r = this.retained;
    const drop = Math.max(0, r.length + 1 - this.host.retransmissionLimit);
    w.writeInt32(r.length - drop + 1);
    for (let i = drop; i < r.length; i++) w.writeUInt32(r[i].sequenceNumber);
    w.writeUInt32(this.sequenceNumber);
    const moreAt = w.mark();
    w.writeByte(0);
    const messageAt = w.mark();
    const more = this.writeMessage(w, req.maxBytes);
    this.takeMessage = w.copyFrom(messageAt);
    w.unmark();
    w.patchByte(moreAt, more ? 1 : 0);
    writeUInt32Array(w, req.results);
    w.writeInt32(0); // diagnosticInfos
  }

  /**
   * Writes what the items have queued, up to the notification and byte limits and the slice of
   * the event loop, without taking it off their queues; true when more remains.
   */
  private writeMessage(w: BinaryWriter, maxBytes: number): boolean {
    const nw = this.host.writer;
    const cap = this.host.maxNotificationsPerPublish;
    let budget = this.maxNotificationsPerPublish > 0 && this.maxNotificationsPerPublish < cap ? this.maxNotificationsPerPublish : cap;
    nw.begin(w, this.sequenceNumber, this.host.wallNow());
    const pending = this.pending;
    const count = this.pendingCount;
    let head = this.pendingHead;
    let partial = 0;
    let written = 0;
    if (head < count) {
      // hasReportable made sure pending[head] has something: the DataChangeNotification is not empty.
      nw.beginDataChanges();
      const host = this.host;
      const deadline = host.sliceEnd(this.tail.ms);
      this.sliceEndAt = deadline;
      let check = SLICE_CHECK;
      while (head < count && budget > 0 && nw.size < maxBytes) {
        const item = pending[head]!;
        if (!item.reportable) {
          head++;
          continue;
        }
        const clientHandle = item.clientHandle;
        const timestamps = item.timestamps;
        const isValue = item.isValue;
        const n = item.count;
        let k = 0;
        while (k < n && budget > 0 && nw.size < maxBytes) {
          writeSlot(w, clientHandle, item.peekAt(k), timestamps, isValue);
          k++;
          budget--;
          if (--check === 0) {
            check = SLICE_CHECK;
            if (host.sliceNow() >= deadline) budget = 0;
          }
        }
        written += k;
        if (k < n) {
          partial = k;
          break;
        }
        head++;
      }
      nw.items = written;
      nw.endDataChanges();
    }
    const events = this.events;
    let eventsWritten = 0;
    if (events !== undefined && budget > 0 && nw.size < maxBytes && events.hasNotifications) eventsWritten = events.write(nw, budget, maxBytes);
    nw.end();
    this.takeHead = head;
    this.takePartial = partial;
    this.takeWritten = written;
    this.takeEvents = eventsWritten;
    const moreEvents = events !== undefined && (eventsWritten > 0 ? events.moreAfterWrite : events.hasNotifications);
    return head < count || moreEvents;
  }

  /** The message went out whole: what it carries leaves the queues and it is kept for Republish. */
  private commit(): void {
    const pending = this.pending;
    const count = this.pendingCount;
    const head = this.takeHead;
    for (let i = this.pendingHead; i < head; i++) {
      const item = pending[i]!;
      if (item.reportable) for (let n = item.count; n > 0; n--) item.shift();
      item.inNotifyList = false;
    }
    if (this.takePartial > 0) {
      const item = pending[head]!;
      for (let n = this.takePartial; n > 0; n--) item.shift();
    }
    if (this.takeEvents > 0) this.events!.commit();
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
    this.retain(this.nextSequenceNumber(), this.takeMessage!);
    this.takeMessage = undefined;
    const written = this.takeWritten;
    this.stats.notificationMessages++;
    this.stats.notifications += written;
    this.dataChangeNotifications += written;
  }

  /** The message did not go out: everything stays queued, the sequence number unused. */
  private rollback(): void {
    if (this.takeEvents > 0) this.events!.rollback();
    this.takeEvents = 0;
    this.takeMessage = undefined;
  }

  /** A message with only a StatusChangeNotification; consumes a sequence number. */
  statusChangeMessage(status: number): Buffer {
    const nw = this.host.writer;
    nw.beginOwn(this.nextSequenceNumber(), this.host.wallNow());
    nw.statusChange(status);
    return nw.finish();
  }

  // ---- retransmission queue (Part 4 §5.13.1.1, §5.13.6) -------------------------------------

  private retain(sequenceNumber: number, message: Buffer): void {
    this.retained.push({ sequenceNumber, message });
    // Bounded: the oldest unacknowledged message goes first.
    while (this.retained.length > this.host.retransmissionLimit) {
      this.retained.shift();
      this.discardedMessages++;
    }
  }

  /** Messages kept for Republish, not yet acknowledged. */
  get unacknowledgedCount(): number {
    return this.retained.length;
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
    this.events?.close();
    this.pending.length = 0;
    this.pendingHead = 0;
    this.pendingCount = 0;
    this.retained.length = 0;
  }
}
