// One UA-TCP connection: its states (HEL, open, closing, closed), HEL/ACK negotiation, ERR,
// backpressure and the connection's one timer. The secure channel above it
// (src/security/secure-channel.ts) gets every OPN/MSG/CLO chunk through `ConnectionSink.onChunk`.
//
// Data flow: socket reads -> ChunkFramer (chunk-framer.ts: cut into chunks, copy only what spans
// reads) -> this state machine -> the sink. Responses: the sink encodes into `out` (a ChunkWriter,
// chunk-writer.ts: pool buffers from the memory budget, sealed by the sink as they fill) ->
// SendQueue (send-queue.ts: drain-aware writes) -> socket; control messages (ACK, ERR, RHE, OPN)
// take one pool buffer each through `beginControl`. Reads that cannot be processed yet stay
// queued in the framer and the socket is paused. Everything the connection holds from the pool
// is counted in `heldBytes` (the pool's fair share, buffer-pool.ts).
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { monotonicNow } from "../sampling/monotonic.js";
import { BinaryReader } from "../ua/binary-reader.js";
import { BinaryWriter } from "../ua/binary-writer.js";
import { statusOf, UaStatusError } from "../ua/errors.js";
import { StatusCodes, statusCodeName } from "../ua/generated/status-codes.js";
import type { BufferPool, PoolHolder } from "./buffer-pool.js";
import type { ConnectionContext, ConnectionSink } from "./connection-context.js";
import { ChunkFramer, freeRead, type FramerOwner } from "./chunk-framer.js";
import { ChunkWriter, type ChunkOutput } from "./chunk-writer.js";
import { MIN_BUFFER_SIZE, type TransportLimits } from "./limits.js";
import { OutputSlicer } from "./output-slicer.js";
import { SendQueue } from "./send-queue.js";
import { attachSocketEvents, type SocketEvents } from "./socket-events.js";
import { startReads, stopReads } from "./socket-reads.js";
import { TurnShare, type TurnOwner } from "./turns.js";
export type { ConnectionContext, ConnectionSink, TaskTimer } from "./connection-context.js";
import { HEADER_SIZE, PROTOCOL_VERSION, negotiateHello, readHello, readMessageType, writeAcknowledge, writeError, writeReverseHello } from "./ua-tcp.js";

/** Control messages are written synchronously, one at a time: one writer for all connections. */
const controlWriter = new BinaryWriter(Buffer.alloc(0), 0);
const EMPTY = Buffer.alloc(0);
/** After an ERR, what the peer may still send (read and dropped) before the socket is no longer read. */
const CLOSE_DISCARD_LIMIT = 256 * 1024;
/** Socket reads kept for the next turn before the socket is paused: one read. */
const KEPT_READS_MAX = 64 * 1024;

export const enum ConnectionState {
  AwaitingHello = 0,
  Open = 1,
  Closing = 2,
  Closed = 3,
}

export class TcpConnection implements FramerOwner, PoolHolder, ChunkOutput, TurnOwner, SocketEvents {
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
  /** Writes the sink's messages straight into pool buffers, chunk by chunk. */
  readonly out: ChunkWriter;
  /** Lays out large responses of `out` over several turns; sends that come meanwhile wait in it. */
  readonly output: OutputSlicer;
  /** Bytes of pool buffers this connection holds (kept by the pool: its fair share). */
  heldBytes = 0;

  /** Status and reason this connection was closed with (diagnostics). */
  closeStatus: number = StatusCodes.Good;
  closeReason = "";
  /** Times reading was paused because too many responses were queued, or the socket was full. */
  backpressurePauses = 0;
  /** Highest number of requests queued (handed up or answered but not yet written). */
  maxQueued = 0;
  /** Highest `heldBytes` seen. */
  maxHeldBytes = 0;

  readonly ctx: ConnectionContext;
  private readonly limits: TransportLimits;
  private readonly pool: BufferPool;

  private readonly rx: ChunkFramer;
  private readonly tx: SendQueue;
  private readPaused = false;
  /** Reading is stopped in libuv as well (socket-reads.ts), not only paused. */
  private readStopped = false;
  private pumping = false;
  /** The secure channel holds further input until a queued OPN handshake has run. */
  private inputSuspended = false;
  /** Admitted while the budget was spent: not read until memory comes back (`waitForMemory`). */
  private admitting = false;
  /** Bytes read and dropped since closing began. */
  private discarded = 0;

  // Backpressure: requests handed up and not answered, plus answers not yet written out (tx).
  private awaiting = 0;
  private bpPaused = false;
  /** Reading stopped because the socket is full (counted once per stop in backpressurePauses). */
  private drainPaused = false;
  /** This connection's share of the event loop (turns.ts). */
  private readonly turn = new TurnShare(this);

  // The one timer: HEL deadline, chunk deadline, the sink's deadlines, linger after close.
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  /** HEL, then OPN, must each come within helloTimeoutMs: an idle half-open handshake holds a slot. */
  private helloDeadline: number;
  private lingerDeadline = Infinity;
  // Slow readers: the send queue's completed writes at the last sweep, and since when none came.
  private writesSeen = 0;
  private stalledSince = 0;

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
    this.tx = new SendQueue(socket, this.pool, this);
    this.out = new ChunkWriter(this);
    this.output = new OutputSlicer(this.out, this, ctx.pacer);
    this.helloDeadline = performance.now() + this.limits.helloTimeoutMs;
    socket.setNoDelay(true);
    // Finds peers that vanished without a FIN (a pulled cable) long before their token expires.
    socket.setKeepAlive(true, 60_000);
    attachSocketEvents(socket, this);
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
    if (this.state >= ConnectionState.Closing) {
      // Read on and dropped, so that the peer's FIN comes through; a peer that keeps sending
      // after an ERR (a flood) is not read any more after a little, and is cut off at the linger
      // deadline (destroying now could have the reset overtake the ERR).
      this.discarded += data.length;
      freeRead(data);
      if (this.discarded > CLOSE_DISCARD_LIMIT && this.closeStatus !== StatusCodes.Good && !this.readStopped) {
        stopReads(this.socket);
        this.readPaused = true;
        this.readStopped = true;
      }
      return;
    }
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
        // Answers to input that waits for the next turn go out with that turn's: fewer, fuller writes.
        if (!(this.turn.waiting && this.rx.pending)) this.out.flush();
        this.flush();
        if (!(this.rx.pending && this.canRead())) break;
      }
    } finally {
      this.pumping = false;
    }
    this.rx.settleCharge();
    if (this.heldBytes > this.maxHeldBytes) this.maxHeldBytes = this.heldBytes;
    this.updateReadState();
  }

  /** @internal FramerOwner: whether another chunk may be processed now. */
  canRead(): boolean {
    if (this.state >= ConnectionState.Closing || this.rx.waitingBuffer || this.inputSuspended || this.admitting) return false;
    // A peer that does not take its answers gets no more work done (TCP's own flow control,
    // one level up): no request is read while the socket is full, until it drains. Without
    // this a client that never reads would have the server decode, run and encode requests for
    // as long as the kernel buffers its answers: megabytes, and all the CPU.
    if (this.tx.blocked) {
      if (!this.drainPaused) {
        this.drainPaused = true;
        this.backpressurePauses++;
      }
      return false;
    }
    this.drainPaused = false;
    if (!this.turn.left()) return false;
    // A count of responses says little when each is megabytes: bound the bytes as well. Only
    // the socket taking them lowers this ('drain', write callbacks), and `pump` asks again then.
    if (this.queuedBytes > this.limits.maxQueuedResponseBytes) return false;
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
    // Input left for the next turn (turns.ts) need not stop the socket: only a backlog of more
    // than a turn's worth does (pausing and resuming costs a round through the stream machinery).
    // And none while the budget is spent: socket reads already in are charged as they come.
    const backlog = this.rx.pending && (!this.turn.waiting || this.rx.keptBytes > KEPT_READS_MAX || this.pool.exhausted);
    // A closing connection whose peer floods on past its ERR is not read any more (onData).
    const blocked = closing
      ? this.discarded > CLOSE_DISCARD_LIMIT && this.closeStatus !== StatusCodes.Good
      : backlog ||
        this.admitting ||
        this.rx.waitingBuffer ||
        this.inputSuspended ||
        this.bpPaused ||
        this.tx.blocked ||
        this.queuedBytes > this.limits.maxQueuedResponseBytes;
    if (blocked) {
      if (!this.readPaused) {
        this.socket.pause();
        this.readPaused = true;
      }
      // A stop that can last (a closing connection, a newcomer waiting for memory, a chunk
      // waiting for a buffer, a peer that takes no answers) stops the socket in libuv: a paused
      // stream would still take one more read and hold it, uncharged (socket-reads.ts). The short
      // stops of backpressure (high-water mark, a turn's share) only pause the stream: they come
      // and go with every burst of requests, and stopping the handle costs two epoll_ctl calls
      // each time, CPU every Read pays; there is one such socket per
      // open connection at most (maxChannels).
      if (!this.readStopped && (closing || this.admitting || this.rx.waitingBuffer || this.inputSuspended || this.tx.blocked)) {
        stopReads(this.socket);
        this.readStopped = true;
      }
    } else if (this.readPaused && this.state !== ConnectionState.Closed) {
      // Also while closing (gracefully): reading on lets the peer's FIN (and so 'close') through.
      if (this.readStopped) startReads(this.socket);
      else this.socket.resume();
      this.readPaused = false;
      this.readStopped = false;
    }
  }

  /**
   * Counts work done for this connection in this turn of the event loop (turns.ts); the chunks
   * themselves are counted here, a message put together from chunks by the secure channel.
   */
  spend(bytes: number): void {
    this.turn.spend(bytes);
  }

  /** @internal TurnOwner: the next turn of the loop; input that waited for it goes on. */
  nextTurn(): void {
    const timer = this.ctx.timer;
    if (timer === undefined) {
      this.pump();
      return;
    }
    // Input kept from a socket read is processed as one task, timed as a read is.
    const start = monotonicNow();
    this.pump();
    timer.afterRead(start);
  }

  /** @internal FramerOwner: a complete chunk, header included. */
  onChunk(buf: Buffer, start: number, end: number): void {
    this.spend(end - start);
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
    const n = negotiateHello(hel, { receiveBufferSize: this.receiveBufferSize, sendBufferSize: this.sendBufferSize, maxMessageSize: this.limits.maxMessageSize }, MIN_BUFFER_SIZE);
    this.endpointUrl = hel.endpointUrl;
    // Part 6 §7.1.2.3: a server accepts any version at least its own; we speak 0, and ACK 0.
    this.peerProtocolVersion = hel.protocolVersion;
    this.receiveBufferSize = n.receiveBufferSize;
    this.sendBufferSize = n.sendBufferSize;
    this.maxResponseSize = n.maxResponseSize;
    this.maxResponseChunks = n.maxResponseChunks;
    this.state = ConnectionState.Open;
    this.helloDeadline = performance.now() + this.limits.helloTimeoutMs;
    const w = this.beginControl();
    if (w === undefined) throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "no memory left for the Acknowledge");
    writeAcknowledge(w, {
      protocolVersion: PROTOCOL_VERSION,
      receiveBufferSize: this.receiveBufferSize,
      sendBufferSize: this.sendBufferSize,
      maxMessageSize: this.limits.maxMessageSize,
      maxChunkCount: this.limits.maxChunkCount,
    });
    this.endControl(w, false);
    this.rearm();
  }

  /** @internal FramerOwner: a chunk spans reads; its deadline may come before the timer's. */
  onIncomplete(): void {
    if (this.rx.incompleteSince + this.limits.incompleteMessageTimeoutMs < this.timerAt) this.rearm();
  }

  /**
   * A new connection while the memory budget is spent: nothing of it is read (its HEL waits in
   * the socket) until memory comes back, or its HEL deadline passes (then it is refused with
   * BadTcpNotEnoughResources). Waiting, not refusing at once, keeps a client that reconnects in a
   * loop from costing a connection's set-up again and again.
   */
  waitForMemory(): void {
    this.admitting = true;
    this.pool.waitForReceive(this);
    this.updateReadState();
  }

  /** @internal PoolWaiter */
  onPoolBuffer(): void {
    if (this.admitting) {
      if (this.pool.exhausted) {
        this.pool.waitForReceive(this);
        return;
      }
      this.admitting = false;
    }
    this.rx.bufferArrived();
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

  /** @internal ChunkOutput: a pool buffer to lay chunks out in. */
  takeBuffer(): Buffer | undefined {
    return this.pool.acquireForSend(this);
  }

  /** @internal ChunkOutput */
  dropBuffer(buf: Buffer): void {
    this.pool.release(buf, this);
  }

  /** @internal ChunkOutput: sealed chunks go out after what is queued. */
  sendBuffer(buf: Buffer, length: number, responses: number): void {
    this.tx.enqueue(buf, length, responses);
  }

  /**
   * The message written into `out` (or with `beginControl`) is complete; a response counts as
   * answered (backpressure). Outside the connection's own processing of its input, it is sent now.
   */
  messageDone(isResponse: boolean): void {
    if (isResponse && this.awaiting > 0) this.awaiting--;
    if (!this.pumping) this.pump();
  }

  /** Bytes of pool buffers queued for the socket or written and not yet taken by the kernel. */
  get queuedBytes(): number {
    return this.tx.buffers * this.pool.bufferSize;
  }

  /**
   * A writer over one pool buffer for a single-chunk control message (ACK, ERR, RHE, OPN): the
   * message goes at its start, its size bounded by the buffer. Undefined when the budget has no
   * buffer for this connection. Finish with `endControl` (or `abandonControl`).
   */
  beginControl(): BinaryWriter | undefined {
    // After the responses written so far (and those waiting to be): they go first.
    this.output.settle();
    this.out.flush();
    const buf = this.pool.acquireForSend(this);
    if (buf === undefined) return undefined;
    controlWriter.maxSize = buf.length;
    return controlWriter.setBuffer(buf, 0);
  }

  /** The control message is w.buffer[0, w.pos): it goes out after what is queued. */
  endControl(w: BinaryWriter, isResponse: boolean): void {
    this.tx.enqueue(w.buffer, w.pos, 0);
    w.setBuffer(EMPTY);
    this.messageDone(isResponse);
  }

  /** Gives the buffer of `beginControl` back unsent (writing the message failed). */
  abandonControl(w: BinaryWriter): void {
    if (w.buffer !== EMPTY) this.pool.release(w.buffer, this);
    w.setBuffer(EMPTY);
  }

  /** Ends a message left half-written (the connection is closing). */
  private abortOutput(status: number, reason: string): void {
    try {
      this.out.abort(status, reason, true);
    } catch {
      // No buffer for the abort chunk: the connection ends anyway.
    }
  }

  /** Sends RHE (Part 6 §7.1.2.6) on an outgoing connection, before the client's HEL. */
  sendReverseHello(serverUri: string, endpointUrl: string): void {
    const w = this.beginControl();
    if (w === undefined) throw new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "no memory left for the ReverseHello");
    try {
      writeReverseHello(w, serverUri, endpointUrl);
    } catch (err) {
      this.abandonControl(w);
      throw err;
    }
    this.endControl(w, false);
  }

  private flush(): void {
    if (this.state === ConnectionState.Closed) return;
    if (this.tx.flush() && this.state === ConnectionState.Closing && !this.socket.writableEnded) this.socket.end();
  }

  /** @internal SendOwner: a write completed; reading held back for queued bytes may go on. */
  onSent(): void {
    if (this.readPaused && !this.pumping && this.state < ConnectionState.Closing) this.pump();
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
    this.output.closing();
    if (this.out.active) this.abortOutput(status ?? StatusCodes.BadTcpInternalError, sentReason);
    // What the channel holds (messages being assembled) goes back first: the ERR needs a buffer
    // within this connection's fair share of the budget.
    if (this.sink !== null) this.sink.onClosing();
    if (status !== undefined) {
      // Without a buffer for it (the budget spent on this connection), no ERR: the socket just ends.
      const w = this.beginControl();
      if (w !== undefined) {
        writeError(w, status, sentReason);
        this.endControl(w, false);
      }
    }
    this.lingerDeadline = performance.now() + this.limits.closeLingerMs;
    this.rearm();
    if (!this.pumping) this.flush();
    this.updateReadState();
  }

  /** Ends the connection at once. */
  destroy(): void {
    // What the stream holds for a paused socket would stay with this object as long as anyone
    // keeps it (a session keeps its closed channel until it times out): read out, dropped.
    const s = this.socket;
    if (s.destroyed) return;
    while (s.read() !== null);
    s.destroy();
  }

  /** @internal socket 'error': 'close' follows every one, and cleans up; a reset peer is routine. */
  onSocketError(): void {
    if (this.state < ConnectionState.Closing) this.closeReason = "socket error";
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
    this.output.closing();
    if (this.out.active) this.abortOutput(StatusCodes.BadConnectionClosed, "");
    this.out.flush();
    this.tx.clear();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
    if (this.sink !== null) this.sink.onClosed();
  }

  /**
   * @internal The server's sweep, every `sweepMs` (tcp-server): a peer that took none of the
   * responses waiting for it for `sendTimeoutMs` never reads its socket; it is closed, so that
   * what it holds goes back to the budget.
   */
  sweep(now: number): void {
    if (this.state === ConnectionState.Closed) return;
    const done = this.tx.writesDone;
    if (!this.tx.pending || done !== this.writesSeen) {
      this.writesSeen = done;
      this.stalledSince = 0;
      return;
    }
    if (this.stalledSince === 0) {
      this.stalledSince = now;
    } else if (now - this.stalledSince >= this.limits.sendTimeoutMs) {
      const reason = `the peer took no response bytes for ${Math.round(now - this.stalledSince)} ms`;
      if (this.state < ConnectionState.Closing) this.close(StatusCodes.BadTimeout, reason);
      // ERR cannot reach a peer that does not read: no linger.
      this.destroy();
    }
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
        this.destroy();
        return;
      }
    } else if (now >= this.helloDeadline) {
      if (this.admitting) this.close(StatusCodes.BadTcpNotEnoughResources, "no memory for a new connection came back in time");
      else this.close(StatusCodes.BadTimeout, this.state === ConnectionState.AwaitingHello ? "HEL not received in time" : "OPN not received in time");
    } else if (this.rx.incompleteSince !== 0 && !this.rx.waitingBuffer && now >= this.rx.incompleteSince + this.limits.incompleteMessageTimeoutMs) {
      this.close(StatusCodes.BadTimeout, "chunk not completed in time");
    } else if (this.state === ConnectionState.Open && this.sink !== null && now >= this.sink.nextDeadline()) {
      this.sink.onDeadline(now);
    }
    this.rearm();
  }
}

function onConnectionTimer(c: TcpConnection): void {
  c.onTimer();
}
