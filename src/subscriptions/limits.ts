// Bounds the subscription services revise requests into (Part 4 §5.13.2: the Server revises
// publishing interval, keep-alive and lifetime counts; §5.12.2: sampling interval and queue size)
// and the counts they refuse past. The config (limits in gateway.yaml) supplies them.

export interface SubscriptionLimits {
  /** Server-wide (ServerCapabilities.MaxSubscriptions). */
  maxSubscriptions: number;
  maxSubscriptionsPerSession: number;
  /** Server-wide (ServerCapabilities.MaxMonitoredItems). */
  maxMonitoredItems: number;
  maxMonitoredItemsPerSubscription: number;
  /** OperationLimits.MaxMonitoredItemsPerCall. */
  maxMonitoredItemsPerCall: number;
  maxMonitoredItemsQueueSize: number;
  /** ms */
  minPublishingInterval: number;
  /** ms */
  maxPublishingInterval: number;
  /** ms; also what samplingInterval 0 ("fastest practical") becomes. */
  minSamplingInterval: number;
  maxKeepAliveCount: number;
  maxLifetimeCount: number;
  /** Cap on maxNotificationsPerPublish; a request for 0 (no limit) gets this. */
  maxNotificationsPerPublish: number;
  /** Publish requests a session may have queued; more answer the oldest BadTooManyPublishRequests. */
  maxPublishRequestsPerSession: number;
}

export const DEFAULT_SUBSCRIPTION_LIMITS: Readonly<SubscriptionLimits> = Object.freeze({
  maxSubscriptions: 500,
  maxSubscriptionsPerSession: 50,
  maxMonitoredItems: 100_000,
  maxMonitoredItemsPerSubscription: 50_000,
  maxMonitoredItemsPerCall: 50_000,
  maxMonitoredItemsQueueSize: 1000,
  minPublishingInterval: 10,
  maxPublishingInterval: 3_600_000,
  minSamplingInterval: 10,
  maxKeepAliveCount: 1000,
  maxLifetimeCount: 15_000,
  maxNotificationsPerPublish: 65_536,
  maxPublishRequestsPerSession: 10,
});

/** Longest sampling interval granted (a day): slower than that is not sampling. */
export const MAX_SAMPLING_INTERVAL = 86_400_000;

export function clamp(value: number, min: number, max: number): number {
  return value < min ? min : value > max ? max : value;
}
