// The Publish side of one session (Part 4 §5.13.5): its queue of Publish requests waiting for
// something to report, bounded (BadTooManyPublishRequests goes to the oldest), the
// subscriptions that are late (they had something to send and no request to send it with), and
// the status changes to deliver (expired or transferred subscriptions).
//
// A waiting request holds one promise and no closure per notification. A subscription that
// takes a request sends its response at once, encoded straight into the request's channel (the
// connection's ChunkWriter: no PublishResponse exists whole in memory); the handler's result is
// only the header that was sent, or the error that ended the request (a ServiceFault).
import type { BinaryWriter } from "../ua/binary-writer.js";
import type { NodeId } from "../ua/builtins.js";
import { UaStatusError } from "../ua/errors.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { ResponseHeader } from "../ua/generated/types.js";
import { encodePublishResponseOut, type PublishResponseOut } from "./notification-encoder.js";

/** What the engine knows of a session (the server's Session satisfies it). */
export interface SubscriptionSession {
  readonly sessionId: NodeId;
  /**
   * Who the user is ("" anonymous), for TransferSubscriptions (Part 4 §5.13.7: the same user
   * only); sessions without one count as anonymous.
   */
  readonly userId?: string;
}

/** The channel a request came on (the server's SecureChannel); a closed one cannot carry its response. */
export interface PublishChannel {
  readonly isOpen: boolean;
  /**
   * Encodes a response with `encode` straight into the channel's output. True when it went out
   * whole; false when it could not (the channel is closed, or an abort chunk ended it after some
   * of its chunks had gone: Part 6 §6.7.3); throws UaStatusError when nothing of it went out.
   */
  sendResponse<T>(requestId: number, encodingId: number, encode: (w: BinaryWriter, v: T) => void, value: T): boolean;
  /**
   * A large response is leaving the channel in slices: a response sent now would first force the
   * rest of it out in one task. A request on a busy channel waits (SessionPublisher.hasRequest).
   */
  readonly sendBusy: boolean;
  /** Calls fn once, on a later turn, when the channel is no longer busy (or closed). */
  whenSendFree(fn: () => void): void;
}

/** The Publish handler's result once the response went out: the header it carried. */
export interface PublishAnswer {
  readonly responseHeader: ResponseHeader;
}

/** How sending a Publish response went (PendingPublish.send). */
export const enum SendResult {
  /** It went out whole. */
  Whole = 0,
  /** The request is over without it (the channel closed, or an abort chunk cut it off). */
  Lost = 1,
  /** Nothing of it went out; the request was answered with a ServiceFault of the error. */
  Refused = 2,
}

export class PendingPublish {
  /** Set when answered before the handler returned. */
  private answer: PublishAnswer | undefined = undefined;
  private error: unknown = undefined;
  private resolveFn: ((r: PublishAnswer) => void) | undefined = undefined;
  private rejectFn: ((e: unknown) => void) | undefined = undefined;

  constructor(
    readonly requestHandle: number,
    /** The secure channel's id of the request: the response goes with it. */
    readonly requestId: number,
    readonly channel: PublishChannel,
    /** Results of the acknowledgements the request carried. */
    readonly results: readonly number[],
    /** Clock time after which the request is answered BadTimeout (Infinity: no timeout hint). */
    readonly deadline: number,
    /** Largest NotificationMessage the client takes on this channel. */
    readonly maxBytes: number,
  ) {}

  /** Sends the PublishResponse that `encode` writes from `value` (with `header`), now, and settles the handler's result. */
  send<T>(header: ResponseHeader, encode: (w: BinaryWriter, v: T) => void, value: T): SendResult {
    let whole: boolean;
    try {
      whole = this.channel.sendResponse(this.requestId, ObjectIds.PublishResponse_Encoding_DefaultBinary, encode, value);
    } catch (err) {
      this.reject(err);
      return SendResult.Refused;
    }
    const answer: PublishAnswer = { responseHeader: header };
    if (this.resolveFn) this.resolveFn(answer);
    else this.answer = answer;
    return whole ? SendResult.Whole : SendResult.Lost;
  }

  fail(status: number): void {
    this.reject(new UaStatusError(status));
  }

  private reject(e: unknown): void {
    if (this.rejectFn) this.rejectFn(e);
    else this.error = e;
  }

  /** The handler's result: at once when already answered, or a promise of it. */
  result(): PublishAnswer | Promise<PublishAnswer> {
    if (this.answer !== undefined) return this.answer;
    if (this.error !== undefined) throw this.error;
    return new Promise<PublishAnswer>((resolve, reject) => {
      this.resolveFn = resolve;
      this.rejectFn = reject;
    });
  }
}

interface StatusMessage {
  readonly subscriptionId: number;
  readonly message: Buffer;
}

/**
 * Where a session's publisher adds up how long its subscriptions waited to send (the engine's
 * stats), ms of its clock. A subscription with something to send and no request to send it with
 * is Late (Part 4 §5.13.1.2); the publisher tells apart why.
 */
export interface PublishWaitStats {
  /** A subscription of the session was late and the client had no Publish request queued. */
  latePublishMs: number;
  /** A subscription was late while requests were queued: their channel was busy with a large response. */
  channelWaitMs: number;
}

/** What the publisher is waiting for (see SessionPublisher.markWait). */
const enum Waiting {
  Nothing = 0,
  Request = 1,
  Channel = 2,
}

/** What the publisher asks of its session's subscriptions (subscription.ts's Subscription, S below). */
export interface PublishingSubscription {
  readonly priority: number;
  /** Answers `req` with what it has to send. */
  publish(req: PendingPublish): void;
}

export class SessionPublisher<S extends PublishingSubscription> {
  readonly subscriptions = new Set<S>();
  private readonly queue: PendingPublish[] = [];
  private readonly late: S[] = [];
  private readonly statusMessages: StatusMessage[] = [];
  closed = false;
  /** Waiting for the busy channel of the first request to be free (whenSendFree). */
  private waitingForChannel = false;
  private readonly resume = (): void => {
    this.waitingForChannel = false;
    if (!this.closed) this.serve();
  };
  /** What its late subscriptions wait for since `waitSince` (clock ms). */
  private waiting = Waiting.Nothing;
  private waitSince = 0;

  constructor(
    readonly session: SubscriptionSession,
    private readonly maxRequests: number,
    private readonly wallNow: () => number,
    /** The monotonic clock the waits are timed on, and where they are added up. */
    private readonly now: () => number = () => 0,
    private readonly waits: PublishWaitStats = { latePublishMs: 0, channelWaitMs: 0 },
  ) {}

  /**
   * Notes what the late subscriptions wait for after a change of the late list or the request
   * queue: a period that ends is added to the stats. Any subscription late counts once for the
   * session (its requests serve all of them).
   */
  private markWait(): void {
    const waiting = this.late.length === 0 ? Waiting.Nothing : this.queue.length === 0 ? Waiting.Request : Waiting.Channel;
    if (waiting === this.waiting) return;
    const now = this.now();
    this.addWait(now);
    this.waiting = waiting;
    this.waitSince = now;
  }

  private addWait(now: number): void {
    const ms = now - this.waitSince;
    if (this.waiting === Waiting.Request) this.waits.latePublishMs += ms;
    else if (this.waiting === Waiting.Channel) this.waits.channelWaitMs += ms;
  }

  /** The wait under way, not yet in the stats: [waiting for a request, waiting for the channel], ms. */
  waitUnderWay(now: number): readonly [number, number] {
    const ms = now - this.waitSince;
    return this.waiting === Waiting.Request ? [ms, 0] : this.waiting === Waiting.Channel ? [0, ms] : [0, 0];
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Whether a request of an open channel is queued, answerable now or not (the lifetime counter's test). */
  hasLiveRequest(): boolean {
    const q = this.queue;
    if (q.length > 0 && !q[0].channel.isOpen) {
      while (q.length > 0 && !q[0].channel.isOpen) q.shift()!.fail(StatusCodes.BadSecureChannelClosed);
      this.markWait();
    }
    return q.length > 0;
  }

  /**
   * Whether a live request waits that can be answered now (requests of closed channels are
   * dropped on the way). While a large response leaves the first request's channel in slices,
   * none can: the subscriptions that have something to send become late, and are served when
   * the channel is free, so a Publish never forces the rest of that response out in one task
   * and its notifications are committed or rolled back on a send that happens whole, at once.
   */
  hasRequest(): boolean {
    if (!this.hasLiveRequest()) return false;
    const channel = this.queue[0].channel;
    if (!channel.sendBusy) return true;
    if (!this.waitingForChannel) {
      this.waitingForChannel = true;
      channel.whenSendFree(this.resume);
    }
    return false;
  }

  take(): PendingPublish {
    const req = this.queue.shift()!;
    this.markWait();
    return req;
  }

  /** Queues a request; a full queue answers its oldest request BadTooManyPublishRequests. */
  enqueue(req: PendingPublish): void {
    this.queue.push(req);
    while (this.queue.length > this.maxRequests) this.queue.shift()!.fail(StatusCodes.BadTooManyPublishRequests);
    this.markWait();
  }

  /** Part 4 §5.6.5 Cancel: the queued requests with this handle, answered BadRequestCancelledByClient. */
  cancel(requestHandle: number): number {
    let n = 0;
    for (let i = this.queue.length - 1; i >= 0; i--) {
      if (this.queue[i].requestHandle !== requestHandle) continue;
      this.queue.splice(i, 1)[0].fail(StatusCodes.BadRequestCancelledByClient);
      n++;
    }
    if (n > 0) this.markWait();
    return n;
  }

  /** Answers queued requests that passed their timeoutHint (Part 4 §7.32) with BadTimeout. */
  expireRequests(now: number): number {
    let n = 0;
    for (let i = 0; i < this.queue.length; ) {
      if (this.queue[i].deadline <= now) {
        this.queue.splice(i, 1)[0].fail(StatusCodes.BadTimeout);
        n++;
      } else {
        i++;
      }
    }
    if (n > 0) this.markWait();
    return n;
  }

  /** A subscription with something to send and no request: first served by the next request. */
  addLate(sub: S): void {
    // Part 4 §5.13.1.1: higher priority first, then in the order they became late.
    let i = this.late.length;
    while (i > 0 && this.late[i - 1].priority < sub.priority) i--;
    this.late.splice(i, 0, sub);
    this.markWait();
  }

  removeLate(sub: S): void {
    const i = this.late.indexOf(sub);
    if (i < 0) return;
    this.late.splice(i, 1);
    this.markWait();
  }

  addStatusMessage(subscriptionId: number, message: Buffer): void {
    this.statusMessages.push({ subscriptionId, message });
  }

  /** Answers waiting requests while something waits for them; then BadNoSubscription if nothing is left. */
  serve(): void {
    while ((this.statusMessages.length > 0 || this.late.length > 0) && this.hasRequest()) {
      const status = this.statusMessages[0];
      if (status !== undefined) {
        // A status change that did not go out waits for the next request.
        if (this.respond(this.take(), status.subscriptionId, [], false, status.message) === SendResult.Whole) this.statusMessages.shift();
        continue;
      }
      const sub = this.late.shift()!;
      sub.publish(this.take());
    }
    this.markWait();
    // Part 4 §5.13.5: with no subscription left, queued requests have nothing to wait for.
    if (this.subscriptions.size === 0 && this.statusMessages.length === 0) {
      while (this.queue.length > 0) this.queue.shift()!.fail(StatusCodes.BadNoSubscription);
    }
  }

  get hasStatusMessages(): boolean {
    return this.statusMessages.length > 0;
  }

  /** Answers `req` with an encoded message (a keep-alive or a status change). */
  respond(req: PendingPublish, subscriptionId: number, available: readonly number[], more: boolean, message: Buffer): SendResult {
    const r: PublishResponseOut = {
      responseHeader: { timestamp: this.wallNow(), requestHandle: req.requestHandle, serviceResult: StatusCodes.Good, serviceDiagnostics: {} },
      subscriptionId,
      availableSequenceNumbers: available,
      moreNotifications: more,
      message,
      results: req.results,
    };
    return req.send(r.responseHeader, encodePublishResponseOut, r);
  }

  /** The session closed: every waiting request is answered `status`. */
  close(status: number): void {
    this.closed = true;
    while (this.queue.length > 0) this.queue.shift()!.fail(status);
    this.late.length = 0;
    this.statusMessages.length = 0;
    this.markWait();
  }
}
