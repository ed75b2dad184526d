// The connection under one driver's link (Modbus, M-Bus): opening the TCP socket or the serial
// port, the connect time-out, and reconnecting with backoff (DESIGN: Devices: a device that stops
// answering is retried with backoff and comes back without a restart). It knows nothing of
// requests: the link is told when the connection opens, fails to open, or is lost, and decides
// what happens to the requests waiting on it.
import { DriverError } from "../../src/devices/driver.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { attach, createSerial, detach, openSerial, openTcp } from "./streams.js";
import type { LinkStream, SerialSettings, StreamOwner } from "./streams.js";

/** Where a connection goes and how long it may take to get there. */
export interface ConnectionOptions extends SerialSettings {
  /** A serial port (`path` and its line settings), else a TCP connection to `host`:`port`. */
  readonly serial: boolean;
  readonly host: string;
  readonly port: number;
  /** Bounds a connect or a port's open, ms. */
  readonly timeout: number;
  /** First reconnect delay, ms, doubling per failed attempt up to maxReconnectDelay. */
  readonly reconnectDelay: number;
  readonly maxReconnectDelay: number;
}

export const enum LinkState { Idle, Connecting, Open, Closed }
export const LINK_STATE_NAMES = ["idle", "connecting", "open", "closed"] as const;

/** What the connection reports to its link. */
export interface ConnectionOwner {
  /** Bytes from the open stream (`stream` is the connection's until `drop` or `close`). */
  receive(stream: LinkStream, chunk: Buffer): void;
  /** The connection is open: queued requests may go. */
  connectionOpened(): void;
  /** An attempt to connect failed; `err` is for the requests that waited for it. */
  connectFailed(err: DriverError): void;
  /** The open connection broke (the peer closed it, a socket error). */
  connectionLost(reason: string): void;
}

function onConnectTimer(c: LinkConnection): void {
  c.connectTimerFired();
}

export class LinkConnection implements StreamOwner {
  state = LinkState.Idle;
  stream: LinkStream | null = null;
  /** Connections (or port opens) made. */
  connects = 0;

  private readonly options: ConnectionOptions;
  private readonly owner: ConnectionOwner;
  private lastConnectAttempt = 0;
  private nextConnectAt = 0;
  private reconnectDelay: number;
  private connectError = "";
  private waiters: { resolve: () => void; reject: (e: DriverError) => void }[] = [];
  private timer: NodeJS.Timeout | null = null;
  private timerDeadline = 0;

  constructor(options: ConnectionOptions, owner: ConnectionOwner) {
    this.options = options;
    this.owner = owner;
    this.reconnectDelay = options.reconnectDelay;
  }

  /** Driver.connect(): resolves when open; refused at once while the backoff lasts. */
  connect(): Promise<void> {
    if (this.state === LinkState.Closed) this.state = LinkState.Idle;
    if (this.state === LinkState.Open) return Promise.resolve();
    if (this.state === LinkState.Idle) {
      const wait = this.backoffLeft(performance.now());
      if (wait > 0) return Promise.reject(this.notConnectedError(wait));
    }
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      if (this.state === LinkState.Idle) this.start();
    });
  }

  /** ms until the backoff allows the next attempt; <= 0 when it allows one now. */
  backoffLeft(now: number): number {
    return this.nextConnectAt - now;
  }

  /** Starts an attempt (state Idle): the socket connects or the port opens, bounded by `timeout`. */
  start(): void {
    const now = performance.now();
    this.state = LinkState.Connecting;
    this.lastConnectAttempt = now;
    this.armTimer(now);
    const o = this.options;
    if (o.serial) {
      void this.startSerial();
      return;
    }
    this.take(openTcp(o.host, o.port), "connect");
  }

  /** A request was answered: the peer is alive, so the next reconnect starts from the first delay. */
  answered(): void {
    this.reconnectDelay = this.options.reconnectDelay;
  }

  /**
   * Ends the open connection (the link's decision, or the stream's through `connectionLost`);
   * the next attempt waits for the backoff. Returns why, for the request in flight, or
   * undefined when the connection was not open.
   */
  drop(reason: string): string | undefined {
    if (this.state !== LinkState.Open) return undefined;
    this.detach();
    this.state = LinkState.Idle;
    this.connectError = `connection lost: ${reason}`;
    this.scheduleReconnect();
    return this.connectError;
  }

  /** What requests get while the link is down and the backoff lasts `wait` ms more. */
  notConnectedError(wait: number): DriverError {
    return new DriverError("refused", StatusCodes.BadCommunicationError, `${this.connectError || "not connected"}; next attempt in ${Math.ceil(wait)} ms`, true);
  }

  /**
   * Closes for good (until the next `connect()` or request): waiters get `err`, the backoff
   * starts over. Resolves once a serial port has let go of its lock.
   */
  close(err: DriverError): Promise<void> {
    const stream = this.stream;
    this.state = LinkState.Closed;
    this.stopTimer();
    this.nextConnectAt = 0;
    this.reconnectDelay = this.options.reconnectDelay;
    this.rejectWaiters(err);
    if (stream === null || !this.detach()) return Promise.resolve();
    // A serial port holds an exclusive lock until its close completes; wait for it (bounded),
    // so that a link reopened on the same path right after close() does not find it busy.
    return new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 1000);
      stream.once("close", () => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  // ------------------------------------------------------------ StreamOwner

  receive(stream: LinkStream, chunk: Buffer): void {
    if (stream === this.stream) this.owner.receive(stream, chunk);
  }

  opened(stream: LinkStream): void {
    if (stream !== this.stream || this.state !== LinkState.Connecting) return;
    this.state = LinkState.Open;
    this.connects++;
    this.stopTimer();
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.resolve();
    this.owner.connectionOpened();
  }

  /** The stream failed or closed. */
  lost(stream: LinkStream, reason: string): void {
    if (stream !== this.stream) return;
    if (this.state === LinkState.Connecting) this.connectFailed(reason);
    else this.owner.connectionLost(reason);
  }

  /** @internal the connect time-out */
  connectTimerFired(): void {
    this.timer = null;
    if (this.state !== LinkState.Connecting) return;
    const now = performance.now();
    // Node timers run on a millisecond clock and can fire a fraction early.
    if (now < this.timerDeadline - 1) {
      this.timer = setTimeout(onConnectTimer, this.timerDeadline - now, this);
      this.timer.unref();
      return;
    }
    this.connectFailed(`connect timed out after ${this.options.timeout} ms`);
  }

  // ---------------------------------------------------------------- private

  private async startSerial(): Promise<void> {
    let port: LinkStream;
    try {
      port = await createSerial(this.options);
    } catch (e) {
      if (this.state === LinkState.Connecting) this.connectFailed((e as Error).message);
      return;
    }
    // close() or the connect time-out may have come first.
    if (this.state !== LinkState.Connecting || this.stream !== null) return;
    this.take(port, "open");
    openSerial(port);
  }

  private take(stream: LinkStream, openEvent: "connect" | "open"): void {
    this.stream = stream;
    attach(stream, this, openEvent);
  }

  /** Lets go of the stream and closes it; returns whether its 'close' event is still to come. */
  private detach(): boolean {
    const s = this.stream;
    if (s === null) return false;
    this.stream = null;
    return detach(s);
  }

  private connectFailed(reason: string): void {
    this.detach();
    this.state = LinkState.Idle;
    this.stopTimer();
    const o = this.options;
    this.connectError = `${o.serial ? `open ${o.path}` : `connect to ${o.host}:${o.port}`} failed: ${reason}`;
    this.scheduleReconnect();
    const err = new DriverError("refused", StatusCodes.BadCommunicationError, this.connectError, true);
    this.rejectWaiters(err);
    this.owner.connectFailed(err);
  }

  /**
   * The next attempt waits `reconnectDelay` from the previous attempt; the delay doubles (up to
   * maxReconnectDelay) until a request is answered. A peer that accepts and drops connections
   * therefore sees ever rarer attempts, never a storm; a long-lived connection that drops once
   * reconnects at the next request.
   */
  private scheduleReconnect(): void {
    this.nextConnectAt = this.lastConnectAttempt + this.reconnectDelay;
    this.reconnectDelay = Math.min(this.reconnectDelay * 2, this.options.maxReconnectDelay);
  }

  private rejectWaiters(err: DriverError): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(err);
  }

  private armTimer(now: number): void {
    this.timerDeadline = now + this.options.timeout;
    if (this.timer === null) {
      this.timer = setTimeout(onConnectTimer, this.options.timeout, this);
      this.timer.unref();
    } else {
      this.timer.refresh();
    }
  }

  private stopTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}
