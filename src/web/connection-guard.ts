// The status page's port against clients that hold connections without asking anything
// (slowloris), so that a real visitor is still served while they do:
// - at most `maxConnectionsPerAddress` open connections per client address; more are closed as
//   they are accepted, before their TLS handshake costs anything;
// - a connection has `headersTimeout` from its accept to the end of its first request's headers,
//   the TLS handshake included. Node's own headersTimeout counts from a request's first byte, so
//   a connection that sends nothing, or never finishes its handshake, would otherwise be held
//   until TLS's handshakeTimeout (120 s) or, over plain HTTP, for ever.
// Later requests of a kept-alive connection are bounded by Node's headersTimeout, requestTimeout
// and keepAliveTimeout, which web-server.ts sets.
//
// What it closes is said in the log, at most once a minute (an attack would write a line per
// connection otherwise).
import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";

export interface ConnectionLimits {
  readonly maxConnectionsPerAddress: number;
  readonly headersTimeout: number;
}

/** At most one log line per this many ms. */
const REPORT_EVERY_MS = 60_000;

interface Waiting {
  readonly socket: Socket;
  readonly timer: NodeJS.Timeout;
}

export class ConnectionGuard {
  /** Open connections per client address. */
  private readonly perAddress = new Map<string, number>();
  /** Connections whose first request has not arrived, by "address port" (the TCP socket's, which a TLS socket shares). */
  private readonly waiting = new Map<string, Waiting>();
  private refused = 0;
  private timedOut = 0;
  private readonly addresses = new Set<string>();
  private lastReport = -Infinity;
  private reportTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly log: (message: string) => void,
  ) {}

  /** Guards `server` (http or https): ahead of its own listeners, so a refused socket never reaches TLS. */
  attach(server: Server): void {
    server.prependListener("connection", (socket: Socket) => this.accepted(socket));
    server.prependListener("request", (req: IncomingMessage) => this.requested(req.socket));
  }

  close(): void {
    for (const w of this.waiting.values()) clearTimeout(w.timer);
    this.waiting.clear();
    if (this.reportTimer) clearTimeout(this.reportTimer);
    this.reportTimer = undefined;
  }

  private accepted(socket: Socket): void {
    const address = socket.remoteAddress ?? "";
    const open = this.perAddress.get(address) ?? 0;
    if (open >= this.limits.maxConnectionsPerAddress) {
      socket.destroy();
      this.refused++;
      this.note(address);
      return;
    }
    this.perAddress.set(address, open + 1);
    const key = keyOf(socket);
    const timer = setTimeout(() => {
      this.waiting.delete(key);
      socket.destroy();
      this.timedOut++;
      this.note(address);
    }, this.limits.headersTimeout);
    timer.unref();
    this.waiting.set(key, { socket, timer });
    socket.once("close", () => {
      const w = this.waiting.get(key);
      if (w?.socket === socket) {
        clearTimeout(w.timer);
        this.waiting.delete(key);
      }
      const n = (this.perAddress.get(address) ?? 1) - 1;
      if (n > 0) this.perAddress.set(address, n);
      else this.perAddress.delete(address);
    });
  }

  /** A request's headers are complete: its connection has asked something. */
  private requested(socket: Socket): void {
    if (this.waiting.size === 0) return;
    const key = keyOf(socket);
    const w = this.waiting.get(key);
    if (w === undefined) return;
    clearTimeout(w.timer);
    this.waiting.delete(key);
  }

  private note(address: string): void {
    if (this.addresses.size < 8) this.addresses.add(address);
    if (this.reportTimer !== undefined) return;
    const wait = this.lastReport + REPORT_EVERY_MS - Date.now();
    if (wait <= 0) this.report();
    else {
      this.reportTimer = setTimeout(() => this.report(), wait);
      this.reportTimer.unref();
    }
  }

  private report(): void {
    this.reportTimer = undefined;
    this.lastReport = Date.now();
    const parts: string[] = [];
    if (this.refused > 0) parts.push(`closed ${this.refused} connection(s) beyond web.maxConnectionsPerAddress (${this.limits.maxConnectionsPerAddress})`);
    if (this.timedOut > 0) parts.push(`closed ${this.timedOut} connection(s) that sent no complete request within web.headersTimeout (${this.limits.headersTimeout / 1000} s)`);
    this.log(`status page: ${parts.join("; ")}, from ${[...this.addresses].join(", ")}`);
    this.refused = 0;
    this.timedOut = 0;
    this.addresses.clear();
  }
}

function keyOf(socket: Socket): string {
  return `${socket.remoteAddress ?? ""} ${socket.remotePort ?? 0}`;
}
