// The Publish side of one session (Part 4 §5.13.5): its queue of Publish requests waiting for
// something to report, bounded (BadTooManyPublishRequests goes to the oldest), the
// subscriptions that are late (they had something to send and no request to send it with), and
// the status changes to deliver (expired or transferred subscriptions).
//
// A waiting request holds one promise and no closure per notification: the response is built
// when a subscription takes the request.
import type { NodeId } from "../ua/builtins.js";
import { UaStatusError } from "../ua/errors.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { PublishResponseOut } from "./notification-encoder.js";
import type { Subscription } from "./subscription.js";

/** What the engine knows of a session (the server's Session satisfies it). */
export interface SubscriptionSession {
  readonly sessionId: NodeId;
  /**
   * Who the user is ("" anonymous), for TransferSubscriptions (Part 4 §5.13.7: the same user
   * only); sessions without one count as anonymous.
   */
  readonly userId?: string;
}

/** The channel a request came on; a closed one cannot carry its response. */
export interface PublishChannel {
  readonly isOpen: boolean;
}

export class PendingPublish {
  /** Set when answered before the handler returned. */
  response: PublishResponseOut | undefined = undefined;
  error: UaStatusError | undefined = undefined;
  private resolveFn: ((r: PublishResponseOut) => void) | undefined = undefined;
  private rejectFn: ((e: UaStatusError) => void) | undefined = undefined;

  constructor(
    readonly requestHandle: number,
    readonly channel: PublishChannel,
    /** Results of the acknowledgements the request carried. */
    readonly results: readonly number[],
    /** Clock time after which the request is answered BadTimeout (Infinity: no timeout hint). */
    readonly deadline: number,
    /** Largest NotificationMessage the client takes on this channel. */
    readonly maxBytes: number,
  ) {}

  answer(r: PublishResponseOut): void {
    if (this.resolveFn) this.resolveFn(r);
    else this.response = r;
  }

  fail(status: number): void {
    const e = new UaStatusError(status);
    if (this.rejectFn) this.rejectFn(e);
    else this.error = e;
  }

  /** The handler's result: the response at once, or a promise of it. */
  result(): PublishResponseOut | Promise<PublishResponseOut> {
    if (this.response !== undefined) return this.response;
    if (this.error !== undefined) throw this.error;
    return new Promise<PublishResponseOut>((resolve, reject) => {
      this.resolveFn = resolve;
      this.rejectFn = reject;
    });
  }
}

interface StatusMessage {
  readonly subscriptionId: number;
  readonly message: Buffer;
}

export class SessionPublisher {
  readonly subscriptions = new Set<Subscription>();
  private readonly queue: PendingPublish[] = [];
  private readonly late: Subscription[] = [];
  private readonly statusMessages: StatusMessage[] = [];
  closed = false;

  constructor(
    readonly session: SubscriptionSession,
    private readonly maxRequests: number,
    private readonly wallNow: () => number,
  ) {}

  get queued(): number {
    return this.queue.length;
  }

  /** Whether a live request waits (requests of closed channels are dropped on the way). */
  hasRequest(): boolean {
    const q = this.queue;
    while (q.length > 0 && !q[0].channel.isOpen) q.shift()!.fail(StatusCodes.BadSecureChannelClosed);
    return q.length > 0;
  }

  take(): PendingPublish {
    return this.queue.shift()!;
  }

  /** Queues a request; a full queue answers its oldest request BadTooManyPublishRequests. */
  enqueue(req: PendingPublish): void {
    this.queue.push(req);
    while (this.queue.length > this.maxRequests) this.queue.shift()!.fail(StatusCodes.BadTooManyPublishRequests);
  }

  /** Part 4 §5.6.5 Cancel: the queued requests with this handle, answered BadRequestCancelledByClient. */
  cancel(requestHandle: number): number {
    let n = 0;
    for (let i = this.queue.length - 1; i >= 0; i--) {
      if (this.queue[i].requestHandle !== requestHandle) continue;
      this.queue.splice(i, 1)[0].fail(StatusCodes.BadRequestCancelledByClient);
      n++;
    }
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
    return n;
  }

  /** A subscription with something to send and no request: first served by the next request. */
  addLate(sub: Subscription): void {
    // Part 4 §5.13.1.1: higher priority first, then in the order they became late.
    let i = this.late.length;
    while (i > 0 && this.late[i - 1].priority < sub.priority) i--;
    this.late.splice(i, 0, sub);
  }

  removeLate(sub: Subscription): void {
    const i = this.late.indexOf(sub);
    if (i >= 0) this.late.splice(i, 1);
  }

  addStatusMessage(subscriptionId: number, message: Buffer): void {
    this.statusMessages.push({ subscriptionId, message });
  }

  /** Answers waiting requests while something waits for them; then BadNoSubscription if nothing is left. */
  serve(): void {
    while ((this.statusMessages.length > 0 || this.late.length > 0) && this.hasRequest()) {
      const status = this.statusMessages.shift();
      if (status !== undefined) {
        this.respond(this.take(), status.subscriptionId, [], false, status.message);
        continue;
      }
      const sub = this.late.shift()!;
      sub.publish(this.take());
    }
    // Part 4 §5.13.5: with no subscription left, queued requests have nothing to wait for.
    if (this.subscriptions.size === 0 && this.statusMessages.length === 0) {
      while (this.queue.length > 0) this.queue.shift()!.fail(StatusCodes.BadNoSubscription);
    }
  }

  get hasStatusMessages(): boolean {
    return this.statusMessages.length > 0;
  }

  respond(req: PendingPublish, subscriptionId: number, available: readonly number[], more: boolean, message: Buffer): void {
    req.answer({
      responseHeader: { timestamp: this.wallNow(), requestHandle: req.requestHandle, serviceResult: StatusCodes.Good, serviceDiagnostics: {} },
      subscriptionId,
      availableSequenceNumbers: available,
      moreNotifications: more,
      message,
      results: req.results,
    });
  }

  /** The session closed: every waiting request is answered `status`. */
  close(status: number): void {
    this.closed = true;
    while (this.queue.length > 0) this.queue.shift()!.fail(status);
    this.late.length = 0;
    this.statusMessages.length = 0;
  }
}
