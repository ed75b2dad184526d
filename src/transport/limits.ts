// Transport limits (DESIGN: every limit is in the config with a safe default). The defaults suit a
// 512 MB gateway serving a handful of SCADA clients; config may override any of them.
import { StatusCodes } from "../ua/generated/status-codes.js";
import { UaStatusError } from "../ua/errors.js";

export interface TransportLimits {
  /** Largest chunk we accept (ACK ReceiveBufferSize is at most this). Part 6 §7.1.2.3: >= 8192. */
  receiveBufferSize: number;
  /** Largest chunk we send (ACK SendBufferSize is at most this). */
  sendBufferSize: number;
  /** Largest request message body we accept (ACK MaxMessageSize), and our cap on responses. */
  maxMessageSize: number;
  /** Most chunks of one request message (ACK MaxChunkCount). */
  maxChunkCount: number;
  /** Bytes of incomplete multi-chunk messages one channel may hold. */
  maxPendingBytesPerChannel: number;
  /** Bytes of incomplete multi-chunk messages all channels together may hold. */
  maxPendingBytesTotal: number;
  /** Incomplete multi-chunk messages one channel may have open at once. */
  maxIncompleteMessagesPerChannel: number;
  /** A chunk or message not completed within this many ms closes the channel (BadTimeout). */
  incompleteMessageTimeoutMs: number;
  /** A connection that has not completed its HEL within this many ms is closed (slowloris). */
  helloTimeoutMs: number;
  /** Pause reading a channel when this many requests are handed up and not yet sent back. */
  responseHighWater: number;
  /** Resume reading once the count is down to this. */
  responseLowWater: number;
  /** Also pause reading while more than this many response bytes wait to be written (big responses). */
  maxQueuedResponseBytes: number;
  /** Live connections; one over evicts the oldest channel without a session. */
  maxChannels: number;
  /** Bounds of the revised token lifetime (Part 4 §5.5.2). */
  minTokenLifetimeMs: number;
  maxTokenLifetimeMs: number;
  /** Lifetime given when the client asks for 0. */
  defaultTokenLifetimeMs: number;
  /** Fixed-size buffers in the process-wide pool. */
  poolBufferCount: number;
  /** Of those, how many only sends may take, so responses always drain (see buffer-pool.ts). */
  poolSendReserve: number;
  /** After ERR or close, how long the peer gets to read what is pending before the socket is destroyed. */
  closeLingerMs: number;
}

export const DEFAULT_TRANSPORT_LIMITS: Readonly<TransportLimits> = Object.freeze({
  receiveBufferSize: 64 * 1024,
  sendBufferSize: 64 * 1024,
  maxMessageSize: 16 * 1024 * 1024,
  maxChunkCount: 256,
  maxPendingBytesPerChannel: 16 * 1024 * 1024,
  maxPendingBytesTotal: 64 * 1024 * 1024,
  maxIncompleteMessagesPerChannel: 4,
  incompleteMessageTimeoutMs: 10_000,
  helloTimeoutMs: 5_000,
  responseHighWater: 100,
  responseLowWater: 50,
  maxQueuedResponseBytes: 8 * 1024 * 1024,
  maxChannels: 100,
  minTokenLifetimeMs: 10_000,
  maxTokenLifetimeMs: 3_600_000,
  defaultTokenLifetimeMs: 3_600_000,
  poolBufferCount: 256,
  poolSendReserve: 32,
  closeLingerMs: 1_000,
});

/** Part 6 §7.1.2.3: buffer sizes below this are refused. */
export const MIN_BUFFER_SIZE = 8192;

function invalid(name: string, why: string): UaStatusError {
  return new UaStatusError(StatusCodes.BadConfigurationError, `transport limit ${name} ${why}`);
}

/** Defaults overlaid with `overrides`, checked for consistency. Throws BadConfigurationError. */
export function resolveLimits(overrides?: Partial<TransportLimits>): TransportLimits {
  const l: TransportLimits = { ...DEFAULT_TRANSPORT_LIMITS };
  if (overrides) {
    for (const key of Object.keys(overrides) as (keyof TransportLimits)[]) {
      const v = overrides[key];
      if (v !== undefined) l[key] = v;
    }
    // A pool sized in the config without a reserve gets an eighth of it for sends.
    if (overrides.poolSendReserve === undefined && overrides.poolBufferCount !== undefined) {
      l.poolSendReserve = Math.max(1, Math.min(l.poolBufferCount - 1, Math.ceil(l.poolBufferCount / 8)));
    }
  }
  for (const key of Object.keys(l) as (keyof TransportLimits)[]) {
    const v = l[key];
    if (!Number.isFinite(v) || v < 0 || !Number.isInteger(v)) throw invalid(key, `must be a non-negative integer, got ${v}`);
  }
  if (l.receiveBufferSize < MIN_BUFFER_SIZE) throw invalid("receiveBufferSize", `must be at least ${MIN_BUFFER_SIZE}`);
  if (l.sendBufferSize < MIN_BUFFER_SIZE) throw invalid("sendBufferSize", `must be at least ${MIN_BUFFER_SIZE}`);
  if (l.receiveBufferSize > 0x7fffffff || l.sendBufferSize > 0x7fffffff) throw invalid("buffer sizes", "must fit an Int32");
  if (l.maxMessageSize < l.receiveBufferSize) throw invalid("maxMessageSize", "must be at least receiveBufferSize");
  if (l.maxChunkCount < 1) throw invalid("maxChunkCount", "must be at least 1");
  if (l.responseHighWater < 1) throw invalid("responseHighWater", "must be at least 1");
  if (l.responseLowWater >= l.responseHighWater) throw invalid("responseLowWater", "must be below responseHighWater");
  if (l.maxChannels < 1) throw invalid("maxChannels", "must be at least 1");
  if (l.minTokenLifetimeMs > l.maxTokenLifetimeMs) throw invalid("minTokenLifetimeMs", "must not exceed maxTokenLifetimeMs");
  if (l.maxTokenLifetimeMs > 0xffffffff) throw invalid("maxTokenLifetimeMs", "must fit a UInt32");
  if (l.poolBufferCount < 2) throw invalid("poolBufferCount", "must be at least 2");
  if (l.poolSendReserve < 1 || l.poolSendReserve >= l.poolBufferCount) {
    throw invalid("poolSendReserve", "must be at least 1 and below poolBufferCount");
  }
  return l;
}
