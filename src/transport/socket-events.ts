// A socket's events, routed to its connection by functions shared by every socket: the
// connection is found on the socket itself, so no closure is made per connection. A socket
// read is one task of the event loop, timed as one (ConnectionContext.timer) when the server
// measures its tasks.
import type { Socket } from "node:net";
import { monotonicNow } from "../sampling/monotonic.js";
import type { ConnectionContext } from "./connection-context.js";

/** What the socket's events call. */
export interface SocketEvents {
  readonly ctx: ConnectionContext;
  onData(data: Buffer): void;
  onDrain(): void;
  onSocketError(): void;
  onSocketClose(): void;
}

const kConnection: unique symbol = Symbol("fieldgate.connection");
interface SocketWithConnection extends Socket {
  [kConnection]: SocketEvents;
}

/** Hands `socket`'s data, drain, error and close events to `target`. */
export function attachSocketEvents(socket: Socket, target: SocketEvents): void {
  (socket as SocketWithConnection)[kConnection] = target;
  socket.on("data", onSocketData);
  socket.on("drain", onSocketDrain);
  socket.on("error", onSocketError);
  socket.on("close", onSocketClose);
}

function connectionOf(socket: Socket): SocketEvents {
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
  const start = monotonicNow();
  c.onData(data);
  timer.afterRead(start);
}

function onSocketDrain(this: Socket): void {
  connectionOf(this).onDrain();
}

function onSocketError(this: Socket): void {
  connectionOf(this).onSocketError();
}

function onSocketClose(this: Socket): void {
  connectionOf(this).onSocketClose();
}
