// Stopping and starting a socket's reads where they happen, in libuv, so that a socket the
// transport does not read holds no read of its own.
//
// Why not `socket.pause()` alone: pausing a net.Socket only stops the stream's flow. The handle
// keeps reading until the stream's buffer passes its high-water mark, so every paused socket
// keeps one read (up to 64 KiB, libuv's read size) that nothing charges to the memory budget.
// Under a chunk flood that is hundreds of connections: the ones lingering in Closing after
// their ERR (the peer floods on), those paused for backpressure, those waiting for memory to be
// admitted at all: memory past the budget at the attack's peak (bench hostile, bench/RESULTS.md).
// Node stops the handle itself on pause() only for
// sockets made with the `onread` option, which an accepted socket cannot be given.
//
// How: the handle under the socket (`_handle`, Node's LibuvStreamWrap: `readStop()`,
// `readStart()`, and the `reading` flag that net.Socket keeps beside them) is stopped directly.
// While stopped, `reading` stays true: net.Socket's `_read()` (which the stream calls to fill
// its buffer, on the next tick after any push, paused or not) starts the handle only when
// `reading` is false, so it leaves a stopped handle alone. The only one to start it again is
// `startReads`. A handle that Node stopped itself (its buffer full: `reading` false) is started
// again by Node as the stream drains, as before. Where the handle is missing or not of that
// shape (a socket wrapped in something else), only the stream is paused: the behaviour of
// before, never an error.
import type { Socket } from "node:net";
import { constants } from "node:os";

/** The part of Node's stream handle this module uses (not in @types/node). */
interface ReadableHandle {
  reading: boolean;
  readStop(): number;
  readStart(): number;
}

/** libuv's error codes are the negated errno values on Unix. */
const UV_EALREADY = -constants.errno.EALREADY;

function handleOf(socket: Socket): ReadableHandle | undefined {
  const h = (socket as unknown as { _handle?: unknown })._handle;
  if (typeof h !== "object" || h === null) return undefined;
  const r = h as Partial<ReadableHandle>;
  return typeof r.readStop === "function" && typeof r.readStart === "function" && typeof r.reading === "boolean" ? (r as ReadableHandle) : undefined;
}

/** Stops reading `socket`: nothing more is read from the kernel until `startReads`. */
export function stopReads(socket: Socket): void {
  socket.pause();
  if (socket.destroyed) return;
  const h = handleOf(socket);
  if (h === undefined) return;
  h.readStop();
  // See above: true keeps net.Socket's _read() from starting the handle again.
  h.reading = true;
}

/** Reads `socket` again after `stopReads`. */
export function startReads(socket: Socket): void {
  if (!socket.destroyed) {
    const h = handleOf(socket);
    if (h !== undefined) {
      h.reading = true;
      const err = h.readStart();
      // UV_EALREADY (already reading) is not an error here; anything else ends the socket, as
      // net.Socket does when its own readStart fails.
      if (err < 0 && err !== UV_EALREADY) {
        socket.destroy(new Error(`readStart failed (${err})`));
        return;
      }
    }
  }
  socket.resume();
}
