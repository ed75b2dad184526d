// What a TcpConnection (tcp-connection.ts, which re-exports these) is given and calls: the sink
// above it (the secure channel), the context all connections of a server share, the timer of the
// tasks it runs and the pacer of its large responses' slices.
import type { BufferPool } from "./buffer-pool.js";
import type { TransportLimits } from "./limits.js";
import type { ReassemblyBuffer } from "./message-assembler.js";
import type { OutputPacer } from "./output-slicer.js";

/** What the secure channel layer implements. */
export interface ConnectionSink {
  /** An OPN, MSG or CLO chunk: buf[start, end) including its 8-byte header. Valid only during the call. */
  onChunk(type: number, chunkType: number, buf: Buffer, start: number, end: number): void;
  /** performance.now() at which `onDeadline` is due, or Infinity. */
  nextDeadline(): number;
  onDeadline(now: number): void;
  /** The connection starts closing (called once, before the socket is gone). */
  onClosing(): void;
  /** The socket is gone (called once, last). */
  onClosed(): void;
}

/** Shared by all connections of one server. */
export interface ConnectionContext {
  readonly limits: TransportLimits;
  /** The memory budget and its chunk buffers. */
  readonly pool: BufferPool;
  /** Where messages longer than one pool buffer are put together for decoding. */
  readonly scratch: ReassemblyBuffer;
  /** Times each socket read's processing (the server's loop trace); absent: nothing is timed. */
  readonly timer?: TaskTimer;
  /** When the slices of a large response end (output-slicer.ts): the server's Slicer. */
  readonly pacer: OutputPacer;
}

/**
 * What the transport tells the rest of the process about the time it holds the event loop
 * (the server's loop governor: src/server/loop-governor.ts).
 */
export interface TaskTimer {
  /**
   * One socket read of requests was processed from `start` (performance.now()) until now: the
   * governor times it and runs the sampling slots that came due meanwhile.
   */
  afterRead(start: number): void;
}
