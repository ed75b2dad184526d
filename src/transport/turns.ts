// Turns of the event loop, for the connections' fair share of it (DESIGN: "The event loop is a
// shared resource"). libuv reads a readable socket up to 32 times in a row (2 MiB at 64 KiB a
// read) before it looks at the next one, and each read is parsed and its requests run at once:
// one client that pipelines big requests would hold the loop for hundreds of milliseconds while
// every other client waits. So each connection takes at most TURN_BYTES of input per turn; the
// rest waits for the next turn (tcp-connection.ts `canRead`), and a message that was put together
// from many chunks costs its whole size (decoding and running it is what takes the time).
//
// A turn is one pass of the loop: it ends when the check phase runs the one immediate that
// `currentTurn()` schedules, whichever connection asked first.

/** Input bytes one connection may have handled in one turn. */
export const TURN_BYTES = 128 * 1024;

let turn = 0;
let scheduled = false;

function advance(): void {
  scheduled = false;
  turn++;
}

/** The number of the turn the loop is in; the next turn starts with the next check phase. */
export function currentTurn(): number {
  if (!scheduled) {
    scheduled = true;
    setImmediate(advance);
  }
  return turn;
}
