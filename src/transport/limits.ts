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
  /**
   * All the memory the transport's connections may hold together: chunk buffers received, being
   * assembled and being sent, and socket reads waiting (buffer-pool.ts). When it is spent,
   * connections stop reading and new ones are refused with BadTcpNotEnoughResources.
   */
  memoryLimit: number;
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
  /** A connection whose peer takes none of the responses waiting for it in this many ms is closed (a slow reader). */
  sendTimeoutMs: number;
  /** Live connections; one over evicts the oldest channel without a session. */
  maxChannels: number;
  /** Bounds of the revised token lifetime (Part 4 §5.5.2). */
  minTokenLifetimeMs: number;
  maxTokenLifetimeMs: number;
  /** Lifetime given when the client asks for 0. */
  defaultTokenLifetimeMs: number;
  /** After ERR or close, how long the peer gets to read what is pending before the socket is destroyed. */
  closeLingerMs: number;
}

export const DEFAULT_TRANSPORT_LIMITS: Readonly<TransportLimits> = Object.freeze({
  receiveBufferSize: 64 * 1024,
  sendBufferSize: 64 * 1024,
  maxMessageSize: 16 * 1024 * 1024,
  maxChunkCount: 256,
  maxPendingBytesPerChannel: 16 * 1024 * 1024,
  memoryLimit: 32 * 1024 * 1024,
  maxIncompleteMessagesPerChannel: 4,
  incompleteMessageTimeoutMs: 10_000,
  helloTimeoutMs: 5_000,
  responseHighWater: 100,
  responseLowWater: 50,
  maxQueuedResponseBytes: 8 * 1024 * 1024,
  sendTimeoutMs: 10_000,
  maxChannels: 100,
  minTokenLifetimeMs: 10_000,
  maxTokenLifetimeMs: 3_600_000,
  defaultTokenLifetimeMs: 3_600_000,
  closeLingerMs: 1_000,
});

/** Part 6 §7.1.2.3: buffer sizes below this are refused. */
export const MIN_BUFFER_SIZE = 8192;
/** The smallest memory budget: room for a few connections' chunks and the send reserve. */
export const MIN_MEMORY_LIMIT = 1024 * 1024;

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
    // A smaller budget without its own per-connection bounds scales them down with it.
    if (overrides.memoryLimit !== undefined) {
      if (overrides.maxPendingBytesPerChannel === undefined) l.maxPendingBytesPerChannel = Math.min(l.maxPendingBytesPerChannel, Math.floor(l.memoryLimit / 2));
      if (overrides.maxQueuedResponseBytes === undefined) l.maxQueuedResponseBytes = Math.min(l.maxQueuedResponseBytes, Math.floor(l.memoryLimit / 4));
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
  const chunk = Math.max(l.receiveBufferSize, l.sendBufferSize);
  if (l.memoryLimit < Math.max(MIN_MEMORY_LIMIT, 8 * chunk)) {
    throw invalid("memoryLimit", `must be at least ${Math.max(MIN_MEMORY_LIMIT, 8 * chunk)} bytes (1 MiB and 8 chunks)`);
  }
  if (l.maxPendingBytesPerChannel > l.memoryLimit) throw invalid("maxPendingBytesPerChannel", "must not exceed memoryLimit");
  return l;
}
