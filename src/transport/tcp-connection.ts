// One UA-TCP connection: framing of incoming bytes, HEL/ACK, ERR, output staging, backpressure and
// the connection's one timer. The secure channel above it (src/security/secure-channel.ts) gets
// every OPN/MSG/CLO chunk through `ConnectionSink.onChunk`.
//
// Incoming bytes (after ws' receiver and pg-protocol's parser): the 8-byte header is checked as
// soon as it is there, before anything is buffered. A chunk that lies whole in one socket read is
// handed on as a view of that read; only a chunk that spans reads is copied, into one pool buffer.
// Socket reads that cannot be processed yet (waiting for a pool buffer, or too many responses
// queued) are kept by reference and the socket is paused.
//
// Outgoing bytes: complete chunks are written into the connection's reusable writer (staging),
// then copied into pool buffers and written; a buffer returns to the pool in its write callback.
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { BinaryReader } from "../ua/binary-reader.js";
import { BinaryWriter } from "../ua/binary-writer.js";
import { statusOf, UaStatusError } from "../ua/errors.js";
import { StatusCodes, statusCodeName } from "../ua/generated/status-codes.js";
import type { BufferPool, PoolWaiter } from "./buffer-pool.js";
import { MIN_BUFFER_SIZE, type TransportLimits } from "./limits.js";
import type { PendingBudget } from "./message-assembler.js";
import {
  ChunkType,
  HEADER_SIZE,
  MessageType,
  PROTOCOL_VERSION,
  messageTypeName,
  minMessageSize,
  readHello,
  readMessageType,
  writeAcknowledge,
  writeError,
  writeReverseHello,
} from "./ua-tcp.js";

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

/** Staging writers above this size are dropped once empty, so one big response does not pin memory. */
const STAGING_KEEP = 256 * 1024;

export class TcpConnection implements PoolWaiter {
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
  /** Staging for outgoing chunks; stream offsets [base, base + writer.pos). */
  readonly writer: BinaryWriter;

  /** Status and reason this connection was closed with (diagnostics). */
  closeStatus: number = StatusCodes.Good;
  closeReason = "";
  /** Times reading was paused because too many responses were queued. */
  backpressurePauses = 0;
  /** Highest number of requests queued (handed up or answered but not yet written). */
  maxQueued = 0;

  private readonly ctx: ConnectionContext;
  private readonly limits: TransportLimits;
  private readonly pool: BufferPool;

  // Receive side.
  private readonly hdr = Buffer.allocUnsafe(HEADER_SIZE);
  private hdrLen = 0;
  private partial: Buffer | null = null;
  private partialLen = 0;
  private partialNeed = 0;
  /** performance.now() when the chunk being collected began, 0 when none. */
  private partialSince = 0;
  private readonly queue: Buffer[] = [];
  private queuePos = 0;
  private waitingReceiveBuffer = false;
  private readPaused = false;
  private pumping = false;
  /** The secure channel holds further input until a queued OPN handshake has run. */
  private inputSuspended = false;

  // Backpressure: requests handed up and not answered, plus answers not yet written out.
  private awaiting = 0;
  private ring = new Float64Array(64);
  private ringHead = 0;
  private ringLen = 0;
  private bpPaused = false;

  // Send side.
  private base = 0;
  private sent = 0;
  private waitingDrain = false;
  private waitingSendBuffer = false;
  private readonly inflight: Buffer[] = [];
  private readonly onWriteDone: (err?: Error | null) => void;

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
    this.writer = new BinaryWriter(Buffer.allocUnsafe(this.sendBufferSize), 0x7fffffff);
    this.helloDeadline = performance.now() + this.limits.helloTimeoutMs;
    // One callback per connection (not per write): writes complete in order, so it frees the oldest.
    this.onWriteDone = () => {
      const buf = this.inflight.shift();
      if (buf !== undefined) this.pool.release(buf);
    };
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
    return this.awaiting + this.ringLen;
  }

  get isOpen(): boolean {
    return this.state === ConnectionState.Open;
  }

  // ---------------------------------------------------------------- receive

  /** @internal socket 'data' */
  onData(data: Buffer): void {
    if (this.state >= ConnectionState.Closing) return;
    this.queue.push(data);
    this.pump();
  }

  /** Processes queued input and output as far as buffers and backpressure allow. */
  pump(): void {
    if (this.pumping || this.state === ConnectionState.Closed) return;
    this.pumping = true;
    try {
      for (;;) {
        while (this.queue.length > 0 && this.canRead()) {
          const data = this.queue[0];
          const pos = this.parse(data, this.queuePos);
          if (pos >= data.length) {
            this.queue.shift();
            this.queuePos = 0;
          } else {
            this.queuePos = pos;
          }
        }
        this.flush();
        if (!(this.queue.length > 0 && this.canRead())) break;
      }
    } finally {
      this.pumping = false;
    }
    this.updateReadState();
  }

  private canRead(): boolean {
    if (this.state >= ConnectionState.Closing || this.waitingReceiveBuffer || this.inputSuspended) return false;
    // A count of responses says little when each is megabytes: bound the bytes as well. Only
    // `flush` lowers this, and `pump` asks again right after it.
    if (this.base + this.writer.pos - this.sent > this.limits.maxQueuedResponseBytes) return false;
    const q = this.awaiting + this.ringLen;
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
      (this.queue.length > 0 ||
        this.waitingReceiveBuffer ||
        this.inputSuspended ||
        this.bpPaused ||
        this.base + this.writer.pos - this.sent > this.limits.maxQueuedResponseBytes);
    if (blocked && !this.readPaused) {
      this.socket.pause();
      this.readPaused = true;
    } else if (!blocked && this.readPaused && this.state !== ConnectionState.Closed) {
      // Also while closing: reading on lets the peer's FIN (and so 'close') through.
      this.socket.resume();
      this.readPaused = false;
    }
  }

  /** Parses data[pos...]; returns where it stopped (data.length when all is consumed). */
  private parse(data: Buffer, pos: number): number {
    const len = data.length;
    while (pos < len) {
      if (!this.canRead()) return pos;
      if (this.partial !== null) {
        const n = Math.min(this.partialNeed - this.partialLen, len - pos);
        data.copy(this.partial, this.partialLen, pos, pos + n);
        this.partialLen += n;
        pos += n;
        if (this.partialLen < this.partialNeed) return pos;
        const buf = this.partial;
        this.partial = null;
        this.partialSince = 0;
        this.dispatch(buf, 0, this.partialNeed);
        this.pool.release(buf);
        continue;
      }
      if (this.hdrLen > 0 || len - pos < HEADER_SIZE) {
        // The header spans socket reads: collect it in the 8-byte scratch, no pool buffer yet.
        const n = Math.min(HEADER_SIZE - this.hdrLen, len - pos);
        data.copy(this.hdr, this.hdrLen, pos, pos + n);
        this.hdrLen += n;
        pos += n;
        this.markIncomplete();
        if (this.hdrLen < HEADER_SIZE) return pos;
        const size = this.checkHeader(this.hdr, 0);
        if (size < 0) return len;
        const buf = this.pool.acquire();
        if (buf === undefined) {
          this.waitForReceiveBuffer();
          return pos;
        }
        this.hdr.copy(buf, 0, 0, HEADER_SIZE);
        this.hdrLen = 0;
        this.partial = buf;
        this.partialLen = HEADER_SIZE;
        this.partialNeed = size;
        continue;
      }
      const size = this.checkHeader(data, pos);
      if (size < 0) return len;
      if (len - pos >= size) {
        this.partialSince = 0;
        this.dispatch(data, pos, pos + size);
        pos += size;
        continue;
      }
      const buf = this.pool.acquire();
      if (buf === undefined) {
        this.waitForReceiveBuffer();
        return pos;
      }
      data.copy(buf, 0, pos, len);
      this.partial = buf;
      this.partialLen = len - pos;
      this.partialNeed = size;
      this.markIncomplete();
      return len;
    }
    return pos;
  }

  /** Validates the header at buf[p]; returns MessageSize, or -1 after closing the connection. */
  private checkHeader(buf: Buffer, p: number): number {
    const type = readMessageType(buf, p);
    const chunkType = buf[p + 3];
    const size = buf.readUInt32LE(p + 4);
    if (this.state === ConnectionState.AwaitingHello) {
      // Part 6 §7.1.3: the first message on a connection is HEL.
      if (type !== MessageType.HEL) return this.fail(StatusCodes.BadTcpMessageTypeInvalid, `expected HEL, got ${messageTypeName(type)}`);
    } else if (type !== MessageType.MSG && type !== MessageType.OPN && type !== MessageType.CLO) {
      return this.fail(StatusCodes.BadTcpMessageTypeInvalid, `unexpected message type ${messageTypeName(type)}`);
    }
    if (chunkType !== ChunkType.Final && !(type === MessageType.MSG && (chunkType === ChunkType.Intermediate || chunkType === ChunkType.Abort))) {
      return this.fail(StatusCodes.BadTcpMessageTypeInvalid, `invalid chunk type ${chunkType} for ${messageTypeName(type)}`);
    }
    // Part 6 §7.1.2.3: no chunk larger than the negotiated ReceiveBufferSize; checked before buffering.
    if (size > this.receiveBufferSize) return this.fail(StatusCodes.BadTcpMessageTooLarge, `chunk of ${size} bytes`);
    if (size < minMessageSize(type)) return this.fail(StatusCodes.BadDecodingError, `MessageSize ${size} too small for ${messageTypeName(type)}`);
    return size;
  }

  private fail(status: number, reason: string): -1 {
    this.close(status, reason);
    return -1;
  }

  private dispatch(buf: Buffer, start: number, end: number): void {
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

  private markIncomplete(): void {
    if (this.partialSince !== 0) return;
    this.partialSince = performance.now();
    if (this.partialSince + this.limits.incompleteMessageTimeoutMs < this.timerAt) this.rearm();
  }

  private waitForReceiveBuffer(): void {
    this.waitingReceiveBuffer = true;
    this.pool.waitForReceive(this);
  }

  /** @internal PoolWaiter */
  onPoolBuffer(): void {
    if (this.waitingReceiveBuffer) {
      this.waitingReceiveBuffer = false;
      // The wait was ours, not the peer's: the chunk deadline starts again.
      if (this.partialSince !== 0) this.partialSince = performance.now();
    }
    this.waitingSendBuffer = false;
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
    const w = this.writer;
    const unsent = this.sent - this.base;
    if (unsent > 0 && unsent >= w.pos >> 1) {
      // Most of the staging is already written out: move the rest to the front.
      w.buffer.copyWithin(0, unsent, w.pos);
      w.pos -= unsent;
      this.base = this.sent;
    }
    return w.pos;
  }

  /** The bytes appended since `beginOutput()` are complete chunks: send them. */
  commitOutput(isResponse: boolean): void {
    if (isResponse) {
      if (this.awaiting > 0) this.awaiting--;
      if (this.ringLen === this.ring.length) this.growRing();
      this.ring[(this.ringHead + this.ringLen) % this.ring.length] = this.base + this.writer.pos;
      this.ringLen++;
    }
    if (!this.pumping) this.pump();
  }

  /** Drops bytes appended since `beginOutput()` (an encoding failed). */
  rollbackOutput(start: number): void {
    this.writer.reset(start);
  }

  /** Sends RHE (Part 6 §7.1.2.6) on an outgoing connection, before the client's HEL. */
  sendReverseHello(serverUri: string, endpointUrl: string): void {
    this.beginOutput();
    writeReverseHello(this.writer, serverUri, endpointUrl);
    this.commitOutput(false);
  }

  private growRing(): void {
    const next = new Float64Array(this.ring.length * 2);
    for (let i = 0; i < this.ringLen; i++) next[i] = this.ring[(this.ringHead + i) % this.ring.length];
    this.ring = next;
    this.ringHead = 0;
  }

  private flush(): void {
    if (this.state === ConnectionState.Closed || this.waitingDrain || this.waitingSendBuffer) return;
    const w = this.writer;
    const end = this.base + w.pos;
    let corked = false;
    while (this.sent < end) {
      const buf = this.pool.acquireForSend();
      if (buf === undefined) {
        this.waitingSendBuffer = true;
        this.pool.waitForSend(this);
        break;
      }
      const off = this.sent - this.base;
      const n = Math.min(buf.length, w.pos - off);
      w.buffer.copy(buf, 0, off, off + n);
      this.sent += n;
      if (!corked && this.sent < end) {
        // More than one buffer to go: let them leave in one writev.
        this.socket.cork();
        corked = true;
      }
      this.inflight.push(buf);
      const ok = this.socket.write(n === buf.length ? buf : buf.subarray(0, n), this.onWriteDone);
      while (this.ringLen > 0 && this.ring[this.ringHead] <= this.sent) {
        this.ringHead = (this.ringHead + 1) % this.ring.length;
        this.ringLen--;
      }
      if (!ok) {
        this.waitingDrain = true;
        break;
      }
    }
    if (corked) this.socket.uncork();
    if (this.sent === end) {
      this.base = this.sent;
      w.reset(0);
      if (w.buffer.length > STAGING_KEEP) w.buffer = Buffer.allocUnsafe(this.sendBufferSize);
      if (this.state === ConnectionState.Closing && !this.socket.writableEnded) this.socket.end();
    }
  }

  /** @internal socket 'drain' */
  onDrain(): void {
    this.waitingDrain = false;
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
    this.releaseInput();
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

  private releaseInput(): void {
    if (this.partial !== null) {
      this.pool.release(this.partial);
      this.partial = null;
    }
    this.hdrLen = 0;
    this.partialSince = 0;
    this.queue.length = 0;
    this.queuePos = 0;
    this.waitingReceiveBuffer = false;
  }

  /** @internal socket 'close' */
  onSocketClose(): void {
    if (this.state === ConnectionState.Closed) return;
    const wasClosing = this.state === ConnectionState.Closing;
    if (!wasClosing) {
      this.state = ConnectionState.Closing;
      this.closeReason ||= "connection closed by peer";
      this.releaseInput();
      if (this.sink !== null) this.sink.onClosing();
    }
    this.state = ConnectionState.Closed;
    this.pool.cancelWait(this);
    this.writer.reset(0);
    this.base = this.sent = 0;
    this.ringLen = 0;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
    if (this.sink !== null) this.sink.onClosed();
  }

  /** Re-arms the connection's one timer for the earliest deadline. */
  rearm(): void {
    if (this.state === ConnectionState.Closed) return;
    let at = Math.min(this.helloDeadline, this.lingerDeadline);
    if (this.partialSince !== 0) at = Math.min(at, this.partialSince + this.limits.incompleteMessageTimeoutMs);
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
    } else if (this.partialSince !== 0 && !this.waitingReceiveBuffer && now >= this.partialSince + this.limits.incompleteMessageTimeoutMs) {
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
  connectionOf(this).onData(data);
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
