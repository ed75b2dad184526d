// One UA-TCP connection: its states (HEL, open, closing, closed), HEL/ACK negotiation, ERR,
// backpressure and the connection's one timer. The secure channel above it
// (src/security/secure-channel.ts) gets every OPN/MSG/CLO chunk through `ConnectionSink.onChunk`.
//
// Data flow: socket reads -> ChunkFramer (chunk-framer.ts: cut into chunks, copy only what spans
// reads) -> this state machine -> the sink. Responses: the sink encodes into `writer`, then
// `commitOutput` -> SendQueue (send-queue.ts: pool buffers, drain-aware writes) -> socket.
// Reads that cannot be processed yet stay queued in the framer and the socket is paused.
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { BinaryReader } from "../ua/binary-reader.js";
import type { BinaryWriter } from "../ua/binary-writer.js";
import { statusOf, UaStatusError } from "../ua/errors.js";
import { StatusCodes, statusCodeName } from "../ua/generated/status-codes.js";
import type { BufferPool } from "./buffer-pool.js";
import { ChunkFramer, type FramerOwner } from "./chunk-framer.js";
import { MIN_BUFFER_SIZE, type TransportLimits } from "./limits.js";
import type { PendingBudget } from "./message-assembler.js";
import { SendQueue } from "./send-queue.js";
import { HEADER_SIZE, PROTOCOL_VERSION, readHello, readMessageType, writeAcknowledge, writeError, writeReverseHello } from "./ua-tcp.js";

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
  readonly pool: BufferPool;
  readonly budget: PendingBudget;
  /** Times each socket read's processing (the server's loop trace); absent: nothing is timed. */
  readonly timer?: TaskTimer;
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

export const enum ConnectionState {
  AwaitingHello = 0,
  Open = 1,
  Closing = 2,
  Closed = 3,
}

const kConnection: unique symbol = Symbol("fieldgate.connection");
interface SocketWithConnection extends Socket {
  [kConnection]: TcpConnection;
}

export class TcpConnection implements FramerOwner {
  readonly socket: Socket;
  readonly remoteAddress: string;
  state = ConnectionState.AwaitingHello;
  sink: ConnectionSink | null = null;

  // Negotiated by HEL/ACK (Part 6 §7.1.2.3/§7.1.2.4).
  endpointUrl = "";
  receiveBufferSize: number;
  sendBufferSize: number;
  /** Largest response body the client takes (its HEL MaxMessageSize, capped by ours). */
  maxResponseSize: number;
  /** Most chunks of one response, 0 = no limit (HEL MaxChunkCount). */
  maxResponseChunks = 0;
  protocolVersion = PROTOCOL_VERSION;
  /** ProtocolVersion of the client's HEL; its OPN must carry the same (Part 6 §6.7.4). */
  peerProtocolVersion = 0;

  /** Reused for every header and control message of this connection. */
  readonly reader = new BinaryReader();
  /** Staging for outgoing chunks (the send queue's). */
  readonly writer: BinaryWriter;

  /** Status and reason this connection was closed with (diagnostics). */
  closeStatus: number = StatusCodes.Good;
  closeReason = "";
  /** Times reading was paused because too many responses were queued. */
  backpressurePauses = 0;
  /** Highest number of requests queued (handed up or answered but not yet written). */
  maxQueued = 0;

  readonly ctx: ConnectionContext;
  private readonly limits: TransportLimits;
  private readonly pool: BufferPool;

  private readonly rx: ChunkFramer;
  private readonly tx: SendQueue;
  private readPaused = false;
  private pumping = false;
  /** The secure channel holds further input until a queued OPN handshake has run. */
  private inputSuspended = false;

  // Backpressure: requests handed up and not answered, plus answers not yet written out (tx).
  private awaiting = 0;
  private bpPaused = false;

  // The one timer: HEL deadline, chunk deadline, the sink's deadlines, linger after close.
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  /** HEL, then OPN, must each come within helloTimeoutMs: an idle half-open handshake holds a slot. */
  private helloDeadline: number;
  private lingerDeadline = Infinity;

  constructor(socket: Socket, ctx: ConnectionContext) {
    this.socket = socket;
    this.ctx = ctx;
    this.limits = ctx.limits;
    this.pool = ctx.pool;
    this.remoteAddress = `${socket.remoteAddress ?? "?"}:${socket.remotePort ?? 0}`;
    this.receiveBufferSize = Math.min(this.limits.receiveBufferSize, this.pool.bufferSize);
    this.sendBufferSize = Math.min(this.limits.sendBufferSize, this.pool.bufferSize);
    this.maxResponseSize = this.limits.maxMessageSize;
    this.rx = new ChunkFramer(this, this.pool);
    this.tx = new SendQueue(socket, this.pool, this, this.sendBufferSize);
    this.writer = this.tx.writer;
    this.helloDeadline = performance.now() + this.limits.helloTimeoutMs;
    (socket as SocketWithConnection)[kConnection] = this;
    socket.setNoDelay(true);
    // Finds peers that vanished without a FIN (a pulled cable) long before their token expires.
    socket.setKeepAlive(true, 60_000);
    socket.on("data", onSocketData);
    socket.on("drain", onSocketDrain);
    socket.on("error", onSocketError);
    socket.on("close", onSocketClose);
    this.rearm();
  }

  /** Requests handed up and not yet written back. */
  get queued(): number {
    return this.awaiting + this.tx.unsentResponses;
  }

  get isOpen(): boolean {
    return this.state === ConnectionState.Open;
  }

  /** @internal FramerOwner */
  get awaitingHello(): boolean {
    return this.state === ConnectionState.AwaitingHello;
  }

  // ---------------------------------------------------------------- receive

  /** @internal socket 'data' */
  onData(data: Buffer): void {
    if (this.state >= ConnectionState.Closing) return;
    this.rx.push(data);
    this.pump();
  }

  /** Processes queued input and output as far as buffers and backpressure allow. */
  pump(): void {
    if (this.pumping || this.state === ConnectionState.Closed) return;
    this.pumping = true;
    try {
      for (;;) {
        this.rx.run();
        this.flush();
        if (!(this.rx.pending && this.canRead())) break;
      }
    } finally {
      this.pumping = false;
    }
    this.updateReadState();
  }

  /** @internal FramerOwner: whether another chunk may be processed now. */
  canRead(): boolean {
    if (this.state >= ConnectionState.Closing || this.rx.waitingBuffer || this.inputSuspended) return false;
    // A count of responses says little when each is megabytes: bound the bytes as well. Only
    // `flush` lowers this, and `pump` asks again right after it.
    if (this.tx.unsentBytes > this.limits.maxQueuedResponseBytes) return false;
    const q = this.awaiting + this.tx.unsentResponses;
    if (q > this.maxQueued) this.maxQueued = q;
    if (this.bpPaused) {
      if (q > this.limits.responseLowWater) return false;
      this.bpPaused = false;
    } else if (q >= this.limits.responseHighWater) {
      // DESIGN: backpressure instead of faulting the channel.
      this.bpPaused = true;
      this.backpressurePauses++;
      return false;
    }
    return true;
  }

  private updateReadState(): void {
    const closing = this.state >= ConnectionState.Closing;
    const blocked =
      !closing &&
      (this.rx.pending ||
        this.rx.waitingBuffer ||
        this.inputSuspended ||
        this.bpPaused ||
        this.tx.unsentBytes > this.limits.maxQueuedResponseBytes);
    if (blocked && !this.readPaused) {
      this.socket.pause();
      this.readPaused = true;
    } else if (!blocked && this.readPaused && this.state !== ConnectionState.Closed) {
      // Also while closing: reading on lets the peer's FIN (and so 'close') through.
      this.socket.resume();
      this.readPaused = false;
    }
  }

  /** @internal FramerOwner: a complete chunk, header included. */
  onChunk(buf: Buffer, start: number, end: number): void {
    try {
      if (this.state === ConnectionState.AwaitingHello) {
        this.onHello(buf, start, end);
      } else if (this.sink !== null) {
        this.sink.onChunk(readMessageType(buf, start), buf[start + 3], buf, start, end);
      }
    } catch (err) {
      this.close(statusOf(err), err instanceof Error ? err.message : String(err));
    }
  }

  private onHello(buf: Buffer, start: number, end: number): void {
    const hel = readHello(this.reader.setBuffer(buf, start + HEADER_SIZE, end));
    const { receiveBufferSize, sendBufferSize, maxMessageSize } = hel;
    if (receiveBufferSize < MIN_BUFFER_SIZE || sendBufferSize < MIN_BUFFER_SIZE) {
      throw new UaStatusError(StatusCodes.BadCommunicationError, `buffer sizes ${receiveBufferSize}/${sendBufferSize} below ${MIN_BUFFER_SIZE}`);
    }
    this.endpointUrl = hel.endpointUrl;
    // Part 6 §7.1.2.3: a server accepts any version at least its own; we speak 0, and ACK 0.
    this.peerProtocolVersion = hel.protocolVersion;
    // Part 6 §7.1.2.4: ACK ReceiveBufferSize <= HEL SendBufferSize, ACK SendBufferSize <= HEL ReceiveBufferSize.
    this.receiveBufferSize = Math.min(this.receiveBufferSize, sendBufferSize);
    this.sendBufferSize = Math.min(this.sendBufferSize, receiveBufferSize);
    this.maxResponseSize = maxMessageSize === 0 ? this.limits.maxMessageSize : Math.min(maxMessageSize, this.limits.maxMessageSize);
    this.maxResponseChunks = hel.maxChunkCount;
    this.state = ConnectionState.Open;
    this.helloDeadline = performance.now() + this.limits.helloTimeoutMs;
    this.beginOutput();
    writeAcknowledge(this.writer, {
      protocolVersion: PROTOCOL_VERSION,
      receiveBufferSize: this.receiveBufferSize,
      sendBufferSize: this.sendBufferSize,
      maxMessageSize: this.limits.maxMessageSize,
      maxChunkCount: this.limits.maxChunkCount,
    });
    this.commitOutput(false);
    this.rearm();
  }

  /** @internal FramerOwner: a chunk spans reads; its deadline may come before the timer's. */
  onIncomplete(): void {
    if (this.rx.incompleteSince + this.limits.incompleteMessageTimeoutMs < this.timerAt) this.rearm();
  }

  /** @internal PoolWaiter */
  onPoolBuffer(): void {
    this.rx.bufferArrived();
    this.tx.bufferArrived();
    this.pump();
  }

  // ---------------------------------------------------------------- send

  /** A request goes up to the service layer: it counts against the high-water mark until answered. */
  requestHandedUp(): void {
    this.awaiting++;
  }

  /**
   * Stops handing chunks up (the socket pauses) until `resumeInput()`: the OPN being handled
   * was queued for the handshake limiter, and nothing after it may overtake it.
   */
  suspendInput(): void {
    this.inputSuspended = true;
  }

  resumeInput(): void {
    if (!this.inputSuspended) return;
    this.inputSuspended = false;
    this.pump();
  }

  /** The peer's address without the port (per-address handshake rates). */
  get remoteHost(): string {
    return this.socket.remoteAddress ?? "?";
  }

  /** The secure channel is open (OPN Issue answered): no more handshake deadline. */
  handshakeDone(): void {
    this.helloDeadline = Infinity;
  }

  /** Prepares the staging writer for one more message; returns the offset it starts at. */
  beginOutput(): number {
    return this.tx.begin();
  }

  /** The bytes appended since `beginOutput()` are complete chunks: send them. */
  commitOutput(isResponse: boolean): void {
    if (isResponse && this.awaiting > 0) this.awaiting--;
    this.tx.commit(isResponse);
    if (!this.pumping) this.pump();
  }

  /** Drops bytes appended since `beginOutput()` (an encoding failed). */
  rollbackOutput(start: number): void {
    this.tx.rollback(start);
  }

  /** Sends RHE (Part 6 §7.1.2.6) on an outgoing connection, before the client's HEL. */
  sendReverseHello(serverUri: string, endpointUrl: string): void {
    this.beginOutput();
    writeReverseHello(this.writer, serverUri, endpointUrl);
    this.commitOutput(false);
  }

  private flush(): void {
    if (this.state === ConnectionState.Closed) return;
    if (this.tx.flush() && this.state === ConnectionState.Closing && !this.socket.writableEnded) this.socket.end();
  }

  /** @internal socket 'drain' */
  onDrain(): void {
    this.tx.drained();
    this.pump();
  }

  // ---------------------------------------------------------------- close and timer

  /**
   * Starts closing: with a status, ERR (Part 6 §7.1.2.5) goes out after what is already queued.
   * The socket ends once the output is written, or is destroyed after `closeLingerMs`.
   */
  close(status?: number, reason?: string): void {
    if (this.state >= ConnectionState.Closing) return;
    this.state = ConnectionState.Closing;
    this.closeStatus = status ?? StatusCodes.Good;
    this.closeReason = reason ?? (status !== undefined ? statusCodeName(status) : "");
    // Part 6 §6.7.3: nothing about why a security check failed goes back to the peer.
    const sentReason = status === StatusCodes.BadSecurityChecksFailed ? statusCodeName(status) : this.closeReason;
    this.rx.release();
    if (status !== undefined) {
      this.beginOutput();
      writeError(this.writer, status, sentReason);
    }
    this.lingerDeadline = performance.now() + this.limits.closeLingerMs;
    if (this.sink !== null) this.sink.onClosing();
    this.rearm();
    if (!this.pumping) this.flush();
    this.updateReadState();
  }

  /** Ends the connection at once. */
  destroy(): void {
    this.socket.destroy();
  }

  /** @internal socket 'close' */
  onSocketClose(): void {
    if (this.state === ConnectionState.Closed) return;
    const wasClosing = this.state === ConnectionState.Closing;
    if (!wasClosing) {
      this.state = ConnectionState.Closing;
      this.closeReason ||= "connection closed by peer";
      this.rx.release();
      if (this.sink !== null) this.sink.onClosing();
    }
    this.state = ConnectionState.Closed;
    this.pool.cancelWait(this);
    this.tx.clear();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
    if (this.sink !== null) this.sink.onClosed();
  }

  /** Re-arms the connection's one timer for the earliest deadline. */
  rearm(): void {
    if (this.state === ConnectionState.Closed) return;
    let at = Math.min(this.helloDeadline, this.lingerDeadline);
    const since = this.rx.incompleteSince;
    if (since !== 0) at = Math.min(at, since + this.limits.incompleteMessageTimeoutMs);
    if (this.state === ConnectionState.Open && this.sink !== null) at = Math.min(at, this.sink.nextDeadline());
    if (at === this.timerAt && this.timer !== null) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = at === Infinity ? null : setTimeout(onConnectionTimer, Math.max(0, Math.ceil(at - performance.now())) + 1, this);
  }

  /** @internal */
  onTimer(): void {
    this.timer = null;
    this.timerAt = Infinity;
    const now = performance.now();
    if (this.state >= ConnectionState.Closing) {
      if (now >= this.lingerDeadline) {
        this.socket.destroy();
        return;
      }
    } else if (now >= this.helloDeadline) {
      this.close(StatusCodes.BadTimeout, this.state === ConnectionState.AwaitingHello ? "HEL not received in time" : "OPN not received in time");
    } else if (this.rx.incompleteSince !== 0 && !this.rx.waitingBuffer && now >= this.rx.incompleteSince + this.limits.incompleteMessageTimeoutMs) {
      this.close(StatusCodes.BadTimeout, "chunk not completed in time");
    } else if (this.state === ConnectionState.Open && this.sink !== null && now >= this.sink.nextDeadline()) {
      this.sink.onDeadline(now);
    }
    this.rearm();
  }
}

function connectionOf(socket: Socket): TcpConnection {
  return (socket as SocketWithConnection)[kConnection];
}

function onSocketData(this: Socket, data: Buffer): void {
  const c = connectionOf(this);
  const timer = c.ctx.timer;
  if (timer === undefined) {
    c.onData(data);
    return;
  }
  // One socket read can carry hundreds of requests: its processing is one task on the loop.
  const start = performance.now();
  c.onData(data);
  timer.afterRead(start);
}

function onSocketDrain(this: Socket): void {
  connectionOf(this).onDrain();
}

function onSocketError(this: Socket): void {
  // 'close' follows every 'error'; the connection is cleaned up there. A reset peer is routine.
  const c = connectionOf(this);
  if (c.state < ConnectionState.Closing) c.closeReason = "socket error";
}

function onSocketClose(this: Socket): void {
  connectionOf(this).onSocketClose();
}

function onConnectionTimer(c: TcpConnection): void {
  c.onTimer();
}
