// The opc.tcp listener: accepts connections, keeps the registry of live channels under the
// `maxChannels` cap and the memory budget (a new connection waits, unread, while the budget is
// spent, and is refused with BadTcpNotEnoughResources at its HEL deadline), opens reverse
// connections (Part 6 §7.1.2.6 ReverseHello), sweeps once a second (slow readers closed, idle
// memory released), and closes it all. It lives in server/, not transport/: it builds
// SecureChannels (security/) on the connections that transport/ frames, and the layers below it
// import neither.
import net from "node:net";
import { performance } from "node:perf_hooks";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { UaStatusError } from "../ua/errors.js";
import { SecureChannel, type ChannelContext, type ChannelHandler } from "../security/secure-channel.js";
import { defaultSecurityPolicies, type SecurityPolicyRegistry } from "../security/security-policy.js";
import type { HandshakeLimiter } from "../security/handshake-limiter.js";
import { BufferPool } from "../transport/buffer-pool.js";
import { MIN_BUFFER_SIZE, resolveLimits, type TransportLimits } from "../transport/limits.js";
import { ReassemblyBuffer } from "../transport/message-assembler.js";
import type { TaskTimer } from "../transport/tcp-connection.js";
import type { OutputPacer } from "../transport/output-slicer.js";
import { ConnectionState } from "../transport/tcp-connection.js";
import { MAX_URL_LENGTH } from "../transport/ua-tcp.js";

export interface UaTcpServerOptions {
  host: string;
  port: number;
  limits?: Partial<TransportLimits>;
  handler: ChannelHandler;
  /** Times the processing of each socket read (the server's loop trace). */
  timer?: TaskTimer;
  /** When the slices of a large response end: the server's Slicer. */
  pacer: OutputPacer;
  /** The memory budget and its buffers; by default the server makes one from `limits`. */
  pool?: BufferPool;
  /** ApplicationUri sent in ReverseHello. */
  serverUri?: string;
  /** Policies offered; SecurityPolicy None by default. */
  policies?: SecurityPolicyRegistry;
  /** Bounds RSA handshakes; without one each OPN is handled as it arrives. */
  handshakes?: HandshakeLimiter;
  /** Told the pool's live slabs after each trim, once a second (server/heap-return.ts). */
  onTrim?: (slabs: number) => void;
}

export class UaTcpServer {
  readonly limits: TransportLimits;
  readonly pool: BufferPool;
  readonly serverUri: string;
  private readonly host: string;
  private readonly requestedPort: number;
  private readonly server: net.Server;
  private readonly ctx: ChannelContext;
  /** Live channels, oldest first (a Set keeps insertion order). */
  private readonly live = new Set<SecureChannel>();
  private readonly ids = new Set<number>();
  private nextId: number;
  private actualPort = 0;
  private closing = false;
  private serverClosed = false;
  private closeResolvers: (() => void)[] = [];
  private sweepTimer: NodeJS.Timeout | null = null;
  private readonly sweepMs: number;
  private sweeps = 0;
  private readonly onTrim: ((slabs: number) => void) | undefined;
  /** Connections that had to wait for memory to be read at all (the budget was spent when they came). */
  waitedForMemory = 0;

  constructor(options: UaTcpServerOptions) {
    this.limits = resolveLimits(options.limits);
    this.pool =
      options.pool ??
      new BufferPool({
        bufferSize: Math.max(this.limits.receiveBufferSize, this.limits.sendBufferSize),
        limit: this.limits.memoryLimit,
      });
    if (this.pool.bufferSize < MIN_BUFFER_SIZE) throw new RangeError(`pool buffers must hold at least ${MIN_BUFFER_SIZE} bytes`);
    this.host = options.host;
    this.requestedPort = options.port;
    this.onTrim = options.onTrim;
    this.serverUri = options.serverUri ?? "urn:fieldgate:server";
    // Not 1 on every start, so a client reconnecting after a restart does not meet its old id.
    this.nextId = 1 + Math.floor(Math.random() * 0x10000);
    // The slow-reader deadline is checked at a quarter of its length (at most once a second).
    this.sweepMs = Math.max(50, Math.min(1000, Math.floor(this.limits.sendTimeoutMs / 4)));
    this.ctx = {
      limits: this.limits,
      pool: this.pool,
      scratch: new ReassemblyBuffer(this.pool),
      handler: options.handler,
      policies: options.policies ?? defaultSecurityPolicies(),
      handshakes: options.handshakes,
      timer: options.timer,
      pacer: options.pacer,
      allocateChannelId: () => this.allocateChannelId(),
      channelGone: (channel) => this.channelGone(channel),
    };
    this.server = net.createServer((socket) => this.admit(socket));
    this.server.on("error", () => {
      // Errors after listen() (e.g. EMFILE on accept) are transient; listen() reports its own.
    });
  }

  /** The port listened on (the real one when 0 was asked for). */
  get port(): number {
    return this.actualPort;
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once("error", onError);
      this.server.listen(this.requestedPort, this.host, () => {
        this.server.off("error", onError);
        const address = this.server.address();
        this.actualPort = typeof address === "object" && address !== null ? address.port : this.requestedPort;
        this.sweepTimer = setInterval(onSweep, this.sweepMs, this);
        this.sweepTimer.unref();
        resolve();
      });
    });
  }

  channels(): Iterable<SecureChannel> {
    return this.live.values();
  }

  /**
   * Stops accepting, closes every channel (with ERR `status` if given) and resolves once every
   * socket is gone (at most `closeLingerMs` after this call).
   */
  close(status?: number): Promise<void> {
    this.closing = true;
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
    const done = new Promise<void>((resolve) => {
      this.closeResolvers.push(resolve);
    });
    if (this.server.listening) {
      this.server.close(() => {
        this.serverClosed = true;
        this.checkClosed();
      });
    } else {
      this.serverClosed = true;
    }
    for (const channel of this.live) channel.close(status);
    this.checkClosed();
    return done;
  }

  /**
   * Part 6 §7.1.2.6: connects to a client that listens (e.g. behind a firewall), sends RHE with
   * our ServerUri and `endpointUrl`, then serves the connection like an accepted one (the client
   * sends HEL next). Resolves once the RHE is queued.
   */
  reverseConnect(host: string, port: number, endpointUrl: string): Promise<void> {
    if (Buffer.byteLength(endpointUrl) > MAX_URL_LENGTH || Buffer.byteLength(this.serverUri) > MAX_URL_LENGTH) {
      return Promise.reject(new UaStatusError(StatusCodes.BadTcpEndpointUrlInvalid, "ServerUri or EndpointUrl over 4096 bytes"));
    }
    if (this.closing) return Promise.reject(new UaStatusError(StatusCodes.BadShutdown, "server is closing"));
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port });
      const onError = (err: Error): void => {
        socket.destroy();
        reject(err);
      };
      socket.once("error", onError);
      socket.once("connect", () => {
        socket.off("error", onError);
        const channel = this.admit(socket);
        if (channel === undefined) {
          reject(new UaStatusError(StatusCodes.BadTcpNotEnoughResources, "no channel left for the reverse connection"));
          return;
        }
        channel.connection.sendReverseHello(this.serverUri, endpointUrl);
        resolve();
      });
    });
  }

  /** Takes a connected socket in; returns its channel, or undefined when it was turned away. */
  private admit(socket: net.Socket): SecureChannel | undefined {
    if (this.closing) {
      socket.destroy();
      return undefined;
    }
    let active = 0;
    let victim: SecureChannel | undefined;
    for (const c of this.live) {
      if (c.connection.state >= ConnectionState.Closing) continue;
      active++;
      if (victim === undefined && c.sessionCount === 0) victim = c;
    }
    const channel = new SecureChannel(socket, this.ctx);
    this.live.add(channel);
    if (this.pool.exhausted) {
      // The budget is spent: established channels keep what is left; a newcomer waits, unread,
      // until memory comes back or its HEL deadline passes (BadTcpNotEnoughResources then).
      this.waitedForMemory++;
      channel.connection.waitForMemory();
    }
    if (active >= this.limits.maxChannels) {
      if (victim !== undefined) {
        // The oldest channel without a session makes room (a client that connected and idles).
        victim.close(StatusCodes.BadTcpNotEnoughResources);
      } else {
        channel.close(StatusCodes.BadTcpNotEnoughResources);
        return undefined;
      }
    }
    return channel;
  }

  private allocateChannelId(): number {
    let id = this.nextId;
    while (id === 0 || this.ids.has(id)) id = (id + 1) >>> 0;
    this.nextId = (id + 1) >>> 0;
    this.ids.add(id);
    return id;
  }

  private channelGone(channel: SecureChannel): void {
    this.live.delete(channel);
    if (channel.channelId !== 0) this.ids.delete(channel.channelId);
    this.checkClosed();
  }

  /** @internal Once a second (sweepMs): slow readers, idle memory. */
  sweep(): void {
    const now = performance.now();
    for (const c of this.live) c.connection.sweep(now);
    // Memory is released once a second even when the sweep runs more often.
    if (++this.sweeps * this.sweepMs >= 1000) {
      this.sweeps = 0;
      this.pool.trim();
      this.ctx.scratch.trim();
      this.onTrim?.(this.pool.slabCount);
    }
  }

  private checkClosed(): void {
    if (!this.closing || !this.serverClosed || this.live.size > 0) return;
    const resolvers = this.closeResolvers;
    this.closeResolvers = [];
    for (const resolve of resolvers) resolve();
  }
}

function onSweep(server: UaTcpServer): void {
  server.sweep();
}
