// The subscription engine of the server: every Subscription by id, every session's Publish
// side, the Sampler and the NotificationWriter they share, and the operations the Subscription
// service set (Part 4 §5.13) performs. The MonitoredItem service set is in items.ts. Services
// call these with the session; failures that end a request are thrown as UaStatusError,
// per-operation failures are StatusCodes in the results.
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import type { Clock } from "../sampling/clock.js";
import type { DeadlineScheduler, ScheduledGroup } from "../sampling/scheduler.js";
import { MIN_SLICE_MS, type Slicer } from "../sampling/slices.js";
import { UaStatusError } from "../ua/errors.js";
import { MonitoringMode } from "../ua/generated/enums.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { SubscriptionAcknowledgement, TransferResult } from "../ua/generated/types.js";
import { clamp, DEFAULT_SUBSCRIPTION_LIMITS, type SubscriptionLimits } from "./limits.js";
import { NotificationWriter } from "./notification-encoder.js";
import { PendingPublish, SessionPublisher, type PublishAnswer, type PublishChannel, type SubscriptionSession } from "./publisher.js";
import { Sampler } from "./sampler.js";
import { Subscription, type SubscriptionHost, type SubscriptionParameters, type SubscriptionStats } from "./subscription.js";

export interface SubscriptionEngineOptions {
  registry: NamespaceRegistry;
  scheduler: DeadlineScheduler;
  clock: Clock;
  limits?: Partial<SubscriptionLimits>;
  /** How often queued Publish requests are checked against their timeoutHint; default 1 s. */
  housekeepingInterval?: number;
  /**
   * Where a Publish's message is cut and its rest follows, and CreateMonitoredItems /
   * DeleteMonitoredItems of many items run: the server's slicer, shared by every sliced job.
   */
  slicer: Slicer;
}

export interface EngineStats extends SubscriptionStats {
  subscriptionsCreated: number;
  subscriptionsExpired: number;
  publishRequests: number;
  publishTimeouts: number;
}

/** The revised values of CreateSubscription / ModifySubscription. */
export interface RevisedSubscription {
  readonly subscriptionId: number;
  readonly revisedPublishingInterval: number;
  readonly revisedLifetimeCount: number;
  readonly revisedMaxKeepAliveCount: number;
}

export interface PublishInput {
  readonly requestHandle: number;
  /** The channel's id of the request (its response goes with it). */
  readonly requestId: number;
  /** RequestHeader.timeoutHint, ms; 0 for none. */
  readonly timeoutHint: number;
  readonly acknowledgements: readonly SubscriptionAcknowledgement[] | undefined;
  readonly channel: PublishChannel;
  /** Largest NotificationMessage the channel can carry to this client. */
  readonly maxBytes: number;
}

export class SubscriptionEngine implements SubscriptionHost {
  readonly limits: Readonly<SubscriptionLimits>;
  readonly registry: NamespaceRegistry;
  readonly scheduler: DeadlineScheduler;
  readonly clock: Clock;
  readonly sampler: Sampler;
  readonly writer = new NotificationWriter();
  readonly subscriptions = new Map<number, Subscription>();
  readonly stats: EngineStats = {
    queueOverflows: 0,
    lateQueueOverflows: 0,
    latePublishMs: 0,
    channelWaitMs: 0,
    notificationMessages: 0,
    notifications: 0,
    keepAlives: 0,
    latePublishes: 0,
    subscriptionsCreated: 0,
    subscriptionsExpired: 0,
    publishRequests: 0,
    publishTimeouts: 0,
  };
  /** Monitored items in all subscriptions. */
  monitoredItemCount = 0;
  readonly maxNotificationsPerPublish: number;
  readonly retransmissionLimit: number;
  private readonly publishers = new Map<SubscriptionSession, SessionPublisher<Subscription>>();
  /** Subscriptions whose session is gone, oldest first: they wait for a transfer or their lifetime. */
  private readonly orphans = new Set<Subscription>();
  private nextSubscriptionId = 1;
  private nextItemId = 1;
  private housekeeping: ScheduledGroup | undefined;
  /** Where this engine's sliced jobs run (a Publish's message, CreateMonitoredItems and DeleteMonitoredItems of many items). */
  readonly slicer: Slicer;

  constructor(options: SubscriptionEngineOptions) {
    const limits = { ...DEFAULT_SUBSCRIPTION_LIMITS };
    // Only the subscription keys: the server hands in its whole limits object.
    for (const key of Object.keys(limits) as (keyof SubscriptionLimits)[]) {
      const v = options.limits?.[key];
      if (v !== undefined) limits[key] = v;
    }
    this.limits = limits;
    this.registry = options.registry;
    this.scheduler = options.scheduler;
    this.clock = options.clock;
    this.sampler = new Sampler(options.registry, options.scheduler, options.clock, options.slicer);
    this.maxNotificationsPerPublish = this.limits.maxNotificationsPerPublish;
    this.slicer = options.slicer;
    // Part 4 §5.13.1.1: keep at least as many messages as the client may have Publish requests out.
    this.retransmissionLimit = Math.max(4, 2 * this.limits.maxPublishRequestsPerSession);
    this.housekeeping = this.scheduler.every(options.housekeepingInterval ?? 1000, { sample: () => this.expireRequests(), label: "Publish request time-outs" });
  }

  wallNow(): number {
    return this.clock.wallNow();
  }

  sliceEnd(tail: number): number {
    return this.slicer.end(tail);
  }

  sliceNow(): number {
    return this.slicer.now();
  }

  sliceOpen(tail: number): boolean {
    return this.slicer.open(MIN_SLICE_MS + tail);
  }

  nextSlice(fn: (sub: Subscription) => void, sub: Subscription, tail: number): void {
    this.slicer.soon(fn, sub, sub.continueLabel, MIN_SLICE_MS + tail);
  }

  /**
   * How long late subscriptions waited since start, ms (the stats and the waits under way):
   * for a Publish request the client had not sent, and for a channel busy with a large response.
   */
  publishWaits(): { latePublishMs: number; channelWaitMs: number } {
    const now = this.clock.now();
    let latePublishMs = this.stats.latePublishMs;
    let channelWaitMs = this.stats.channelWaitMs;
    for (const p of this.publishers.values()) {
      const [request, channel] = p.waitUnderWay(now);
      latePublishMs += request;
      channelWaitMs += channel;
    }
    return { latePublishMs, channelWaitMs };
  }

  get subscriptionCount(): number {
    return this.subscriptions.size;
  }

  /** A fresh id for a monitored item (unique in the server, so ids survive transfers). */
  newItemId(): number {
    const id = this.nextItemId;
    this.nextItemId = id >= 0xffffffff ? 1 : id + 1;
    return id;
  }

  // ---- sessions -----------------------------------------------------------------------------

  publisherOf(session: SubscriptionSession): SessionPublisher<Subscription> {
    let p = this.publishers.get(session);
    if (p === undefined) {
      p = new SessionPublisher<Subscription>(
        session,
        this.limits.maxPublishRequestsPerSession,
        () => this.clock.wallNow(),
        () => this.clock.now(),
        this.stats,
      );
      this.publishers.set(session, p);
    }
    return p;
  }

  /** The subscription, if it belongs to `session`; else BadSubscriptionIdInvalid (Part 4 §5.13). */
  subscriptionOf(session: SubscriptionSession, subscriptionId: number): Subscription {
    const sub = this.subscriptions.get(subscriptionId);
    if (sub === undefined || sub.owner === undefined || sub.owner.session !== session) {
      throw new UaStatusError(StatusCodes.BadSubscriptionIdInvalid);
    }
    return sub;
  }

  /** The subscription if the caller's session owns it, else the StatusCode of the Server object's Methods (Part 5 §9.1). */
  ownedBy(session: object | undefined, id: unknown): Subscription | number {
    const sub = typeof id === "number" ? this.subscriptions.get(id) : undefined;
    if (sub === undefined || sub.closed) return StatusCodes.BadSubscriptionIdInvalid;
    if (sub.owner === undefined || sub.owner.session !== session) return StatusCodes.BadUserAccessDenied;
    return sub;
  }

  /**
   * The session is gone (CloseSession, timeout, shutdown). Waiting Publish requests are answered
   * BadSessionClosed. Its subscriptions live on without a session until their lifetime runs out
   * or another session of the same user takes them over (Part 4 §5.13.7); CloseSession with
   * deleteSubscriptions deletes them first (deleteSessionSubscriptions).
   */
  sessionClosed(session: SubscriptionSession): void {
    const p = this.publishers.get(session);
    if (p === undefined) return;
    this.publishers.delete(session);
    p.close(StatusCodes.BadSessionClosed);
    for (const sub of p.subscriptions) {
      sub.owner = undefined;
      sub.late = false;
      this.orphans.add(sub);
    }
    p.subscriptions.clear();
  }

  /** CloseSession with deleteSubscriptions = TRUE (Part 4 §5.6.4). */
  deleteSessionSubscriptions(session: SubscriptionSession): void {
    const p = this.publishers.get(session);
    if (p === undefined) return;
    for (const sub of [...p.subscriptions]) this.deleteSubscription(sub);
  }

  /** Part 4 §5.6.5 Cancel: queued Publish requests with this handle. */
  cancel(session: SubscriptionSession, requestHandle: number): number {
    return this.publishers.get(session)?.cancel(requestHandle) ?? 0;
  }

  // ---- Subscription service set -------------------------------------------------------------

  /** Part 4 §5.13.2: the server revises every requested value into its bounds. */
  revise(requested: SubscriptionParameters): SubscriptionParameters {
    const l = this.limits;
    const publishingInterval = requested.publishingInterval > 0 ? clamp(requested.publishingInterval, l.minPublishingInterval, l.maxPublishingInterval) : l.minPublishingInterval;
    // 0 asks for the smallest keep-alive count.
    let maxKeepAliveCount = clamp(Math.trunc(requested.maxKeepAliveCount) || 1, 1, l.maxKeepAliveCount);
    // The lifetime is at least three keep-alive periods (Part 4 §5.13.2).
    let lifetimeCount = clamp(Math.max(Math.trunc(requested.lifetimeCount) || 0, 3 * maxKeepAliveCount), 3, l.maxLifetimeCount);
    if (lifetimeCount < 3 * maxKeepAliveCount) maxKeepAliveCount = Math.max(1, Math.floor(lifetimeCount / 3));
    if (lifetimeCount < 3 * maxKeepAliveCount) lifetimeCount = 3 * maxKeepAliveCount;
    const n = requested.maxNotificationsPerPublish;
    const maxNotificationsPerPublish = n > 0 && n < l.maxNotificationsPerPublish ? n : l.maxNotificationsPerPublish;
    return { publishingInterval, lifetimeCount, maxKeepAliveCount, maxNotificationsPerPublish, priority: requested.priority & 0xff };
  }

  createSubscription(session: SubscriptionSession, requested: SubscriptionParameters, publishingEnabled: boolean): RevisedSubscription {
    const owner = this.publisherOf(session);
    if (owner.subscriptions.size >= this.limits.maxSubscriptionsPerSession) throw new UaStatusError(StatusCodes.BadTooManySubscriptions);
    if (this.subscriptions.size >= this.limits.maxSubscriptions) {
      // Abandoned subscriptions (their session closed without deleting them) must not keep a
      // live client out for their whole lifetime: the oldest of them makes room.
      const oldest = this.orphans.values().next();
      if (oldest.done) throw new UaStatusError(StatusCodes.BadTooManySubscriptions);
      this.deleteSubscription(oldest.value);
    }
    const p = this.revise(requested);
    const id = this.allocateSubscriptionId();
    const sub = new Subscription(id, this, owner, p, publishingEnabled);
    this.subscriptions.set(id, sub);
    owner.subscriptions.add(sub);
    this.stats.subscriptionsCreated++;
    this.startTimer(sub);
    return this.revised(sub);
  }

  modifySubscription(session: SubscriptionSession, subscriptionId: number, requested: SubscriptionParameters): RevisedSubscription {
    const sub = this.subscriptionOf(session, subscriptionId);
    const p = this.revise(requested);
    const intervalChanged = p.publishingInterval !== sub.publishingInterval;
    sub.publishingInterval = p.publishingInterval;
    sub.lifetimeCount = p.lifetimeCount;
    sub.maxKeepAliveCount = p.maxKeepAliveCount;
    sub.maxNotificationsPerPublish = p.maxNotificationsPerPublish;
    sub.priority = p.priority;
    sub.resetLifetime();
    if (sub.keepAliveCounter > sub.maxKeepAliveCount) sub.keepAliveCounter = sub.maxKeepAliveCount;
    if (intervalChanged) {
      this.startTimer(sub);
      // Items sampling at "the publishing interval" follow it (Part 4 §5.12.1.2).
      for (const item of sub.items.values()) {
        if (!item.followsPublishing) continue;
        const sampling = item.watch !== undefined || item.group !== undefined;
        if (sampling) this.sampler.stop(item);
        item.samplingInterval = Math.max(p.publishingInterval, this.limits.minSamplingInterval);
        if (sampling) this.sampler.start(item);
      }
    }
    return this.revised(sub);
  }

  setPublishingMode(session: SubscriptionSession, publishingEnabled: boolean, ids: readonly number[]): number[] {
    const owner = this.publishers.get(session);
    return ids.map((id) => {
      const sub = this.subscriptions.get(id);
      if (sub === undefined || owner === undefined || sub.owner !== owner) return StatusCodes.BadSubscriptionIdInvalid;
      sub.publishingEnabled = publishingEnabled;
      sub.resetLifetime();
      return StatusCodes.Good;
    });
  }

  deleteSubscriptions(session: SubscriptionSession, ids: readonly number[]): number[] {
    const owner = this.publishers.get(session);
    const results = ids.map((id) => {
      const sub = this.subscriptions.get(id);
      if (sub === undefined || owner === undefined || sub.owner !== owner) return StatusCodes.BadSubscriptionIdInvalid;
      this.deleteSubscription(sub);
      return StatusCodes.Good;
    });
    owner?.serve();
    return results;
  }

  /**
   * Part 4 §5.13.7: moves subscriptions of the same user to `session`. The previous session (if
   * it still exists) gets a StatusChangeNotification GoodSubscriptionTransferred; with
   * sendInitialValues the current value of every Reporting item is queued again.
   */
  transferSubscriptions(session: SubscriptionSession, ids: readonly number[], sendInitialValues: boolean): TransferResult[] {
    const target = this.publisherOf(session);
    return ids.map((id): TransferResult => {
      const sub = this.subscriptions.get(id);
      if (sub === undefined || sub.closed) return { statusCode: StatusCodes.BadSubscriptionIdInvalid, availableSequenceNumbers: [] };
      if (sub.user !== (session.userId ?? "")) return { statusCode: StatusCodes.BadUserAccessDenied, availableSequenceNumbers: [] };
      const previous = sub.owner;
      if (previous !== target) {
        if (target.subscriptions.size >= this.limits.maxSubscriptionsPerSession) {
          return { statusCode: StatusCodes.BadTooManySubscriptions, availableSequenceNumbers: [] };
        }
        if (previous !== undefined) {
          previous.subscriptions.delete(sub);
          previous.removeLate(sub);
          previous.addStatusMessage(sub.id, sub.statusChangeMessage(StatusCodes.GoodSubscriptionTransferred));
          previous.serve();
        }
        sub.owner = target;
        sub.late = false;
        target.subscriptions.add(sub);
        this.orphans.delete(sub);
      }
      sub.resetLifetime();
      if (sendInitialValues) {
        // An item with notifications still queued already carries its current value.
        const items = [...sub.items.values()].filter((i) => i.mode === MonitoringMode.Reporting && i.count === 0);
        for (const item of items) item.resetLast();
        this.sampler.sampleNow(items);
      }
      return { statusCode: StatusCodes.Good, availableSequenceNumbers: sub.availableSequenceNumbers() };
    });
  }

  /**
   * Part 4 §5.13.5: processes the acknowledgements, then answers from a late subscription or a
   * pending status change, or queues the request until a publishing cycle takes it. The response
   * is sent on `input.channel` by whoever answers; the result is its header (or the error that
   * ended the request).
   */
  publish(session: SubscriptionSession, input: PublishInput): PublishAnswer | Promise<PublishAnswer> {
    this.stats.publishRequests++;
    const owner = this.publisherOf(session);
    const acks = input.acknowledgements ?? [];
    const results = new Array<number>(acks.length);
    for (let i = 0; i < acks.length; i++) {
      const sub = this.subscriptions.get(acks[i].subscriptionId);
      if (sub === undefined || sub.owner !== owner) results[i] = StatusCodes.BadSubscriptionIdInvalid;
      else results[i] = sub.acknowledge(acks[i].sequenceNumber) ? StatusCodes.Good : StatusCodes.BadSequenceNumberUnknown;
    }
    if (owner.subscriptions.size === 0 && !owner.hasStatusMessages) throw new UaStatusError(StatusCodes.BadNoSubscription);
    for (const sub of owner.subscriptions) sub.resetLifetime();
    const deadline = input.timeoutHint > 0 ? this.clock.now() + input.timeoutHint : Infinity;
    const req = new PendingPublish(input.requestHandle, input.requestId, input.channel, results, deadline, input.maxBytes);
    owner.enqueue(req);
    owner.serve();
    return req.result();
  }

  /** Part 4 §5.13.6: a message still in the retransmission queue. */
  republish(session: SubscriptionSession, subscriptionId: number, sequenceNumber: number): Buffer {
    const sub = this.subscriptionOf(session, subscriptionId);
    sub.resetLifetime();
    const message = sub.retransmit(sequenceNumber);
    if (message === undefined) throw new UaStatusError(StatusCodes.BadMessageNotAvailable);
    return message;
  }

  // ---- internals ----------------------------------------------------------------------------

  expire(sub: Subscription): void {
    this.stats.subscriptionsExpired++;
    const owner = sub.owner;
    // Part 4 §5.13.1.1: the client learns of it with the next Publish.
    if (owner !== undefined) owner.addStatusMessage(sub.id, sub.statusChangeMessage(StatusCodes.BadTimeout));
    this.deleteSubscription(sub);
    owner?.serve();
  }

  deleteSubscription(sub: Subscription): void {
    if (sub.closed) return;
    if (sub.timer !== undefined) this.scheduler.cancel(sub.timer);
    sub.timer = undefined;
    for (const item of sub.items.values()) {
      this.sampler.stop(item);
      item.deleted = true;
      item.clearQueue();
    }
    this.monitoredItemCount -= sub.items.size;
    sub.items.clear();
    sub.close();
    this.subscriptions.delete(sub.id);
    this.orphans.delete(sub);
    const owner = sub.owner;
    if (owner !== undefined) {
      owner.subscriptions.delete(sub);
      owner.removeLate(sub);
    }
  }

  /** Shutdown: every request answered BadShutdown, every timer cancelled. */
  stop(): void {
    for (const p of this.publishers.values()) p.close(StatusCodes.BadShutdown);
    this.publishers.clear();
    for (const sub of [...this.subscriptions.values()]) this.deleteSubscription(sub);
    this.sampler.stopAll();
    if (this.housekeeping !== undefined) this.scheduler.cancel(this.housekeeping);
    this.housekeeping = undefined;
  }

  private expireRequests(): void {
    const now = this.clock.now();
    for (const p of this.publishers.values()) this.stats.publishTimeouts += p.expireRequests(now);
  }

  private startTimer(sub: Subscription): void {
    if (sub.timer !== undefined) this.scheduler.cancel(sub.timer);
    sub.timer = this.scheduler.every(sub.publishingInterval, sub, this.clock.now() + sub.publishingInterval);
  }

  private revised(sub: Subscription): RevisedSubscription {
    return {
      subscriptionId: sub.id,
      revisedPublishingInterval: sub.publishingInterval,
      revisedLifetimeCount: sub.lifetimeCount,
      revisedMaxKeepAliveCount: sub.maxKeepAliveCount,
    };
  }

  private allocateSubscriptionId(): number {
    for (;;) {
      const id = this.nextSubscriptionId;
      this.nextSubscriptionId = id >= 0xffffffff ? 1 : id + 1;
      if (!this.subscriptions.has(id)) return id;
    }
  }
}
