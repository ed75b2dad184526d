// The byte streams under a driver's link (Modbus, M-Bus): a TCP socket or a serial port, with
// module-level handlers that reach their link through a symbol (no closure per connection; the
// ws pattern in STYLE.md).
import net from "node:net";
import type { Duplex } from "node:stream";

export const LINK = Symbol("streamOwner");

/** What a stream reports to its link. */
export interface StreamOwner {
  receive(stream: LinkStream, chunk: Buffer): void;
  opened(stream: LinkStream): void;
  lost(stream: LinkStream, reason: string): void;
}

export type LinkStream = Duplex & { [LINK]?: StreamOwner };

function onStreamData(this: LinkStream, chunk: Buffer): void {
  const owner = this[LINK];
  if (owner !== undefined) owner.receive(this, chunk);
}
function onStreamOpen(this: LinkStream): void {
  const owner = this[LINK];
  if (owner !== undefined) owner.opened(this);
  // A port whose open completed after its link gave up on it (time-out, close()).
  else endStream(this);
}
function onStreamError(this: LinkStream, err: Error): void {
  const owner = this[LINK];
  if (owner !== undefined) owner.lost(this, err.message);
}
function onStreamClose(this: LinkStream): void {
  const owner = this[LINK];
  if (owner !== undefined) owner.lost(this, "closed by peer");
}

export function openTcp(host: string, port: number): LinkStream {
  const socket = net.createConnection({ host, port, noDelay: true });
  // Detects a dead peer on an idle link; a busy link finds out through its time-outs first.
  socket.setKeepAlive(true, 10_000);
  return socket as LinkStream;
}

export interface SerialSettings {
  path: string;
  baudRate: number;
  dataBits: 7 | 8;
  stopBits: 1 | 2;
  parity: "none" | "even" | "odd";
}

type SerialPortClass = typeof import("serialport").SerialPort;
let serialPortClass: SerialPortClass | undefined;

/** Creates (does not open) a serial port. Loads serialport on first use: TCP-only gateways never load its native addon. */
export async function createSerial(s: SerialSettings): Promise<LinkStream> {
  serialPortClass ??= (await import("serialport")).SerialPort;
  const { path, baudRate, dataBits, stopBits, parity } = s;
  return new serialPortClass({ path, baudRate, dataBits, stopBits, parity, autoOpen: false }) as unknown as LinkStream;
}

export function openSerial(port: LinkStream): void {
  (port as unknown as { open(): void }).open();
}

/** Hands a stream to its link; `openEvent` is "connect" for sockets, "open" for serial ports. */
export function attach(stream: LinkStream, owner: StreamOwner, openEvent: "connect" | "open"): void {
  stream[LINK] = owner;
  stream.on("data", onStreamData);
  stream.on("error", onStreamError);
  stream.on("close", onStreamClose);
  stream.once(openEvent, onStreamOpen);
}

/**
 * Takes a stream from its link and closes it; returns whether a 'close' event is still to come.
 * The error listener stays: a late socket error must not become an uncaught exception.
 */
export function detach(stream: LinkStream): boolean {
  stream[LINK] = undefined;
  stream.removeListener("data", onStreamData);
  return endStream(stream);
}

interface SerialLike {
  readonly isOpen: boolean;
  close(): void;
}

/**
 * A serial port must be closed, not destroyed: serialport's stream has no _destroy, so destroy()
 * would leave the file descriptor and its exclusive lock behind.
 */
function endStream(s: LinkStream): boolean {
  if (s instanceof net.Socket) {
    if (s.closed) return false;
    s.destroy();
    return true;
  }
  const port = s as unknown as SerialLike;
  if (!port.isOpen) return false;
  port.close();
  return true;
}
