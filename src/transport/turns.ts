// Turns of the event loop, for the connections' fair share of it (DESIGN: "The event loop is a
// shared resource"). libuv reads a readable socket up to 32 times in a row (2 MiB at 64 KiB a
// read) before it looks at the next one, and each read is parsed and its requests run at once:
// one client that pipelines big requests would hold the loop for hundreds of milliseconds while
// every other client waits. So each connection takes at most TURN_BYTES of input per turn; the
// rest waits for the next turn (tcp-connection.ts `canRead`), and a message that was put together
// from many chunks costs its whole size (decoding and running it is what takes the time).
//
// A turn is one pass of the loop: it ends when the check phase runs the one immediate that
// `currentTurn()` schedules, whichever connection asked first. Nothing asks while every
// connection stays under its share: a connection counts its bytes without looking at the turn,
// and looks (scheduling that immediate) only once it has TURN_BYTES counted. Then a connection
// whose bytes came over many turns in which nobody asked (one request at a time, as an HMI
// polls) waits for one turn it need not have waited for, once per TURN_BYTES; in exchange no
// request pays for an immediate and a turn of the loop of its own.

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

/** Who a TurnShare works for: called at the next turn when it had to wait for one. */
export interface TurnOwner {
  nextTurn(): void;
}

/** One connection's share of the event loop: input bytes handled in the current turn. */
export class TurnShare {
  /** Waiting for the next turn (an immediate is scheduled). */
  waiting = false;
  private turnId = -1;
  private used = 0;

  constructor(private readonly owner: TurnOwner) {}

  /** Counts `bytes` of work (in this turn, or in turns since the last look at the turn: see above). */
  spend(bytes: number): void {
    this.used += bytes;
  }

  /** True while this turn has room; else the owner's `nextTurn` is scheduled and false returned. */
  left(): boolean {
    if (this.used < TURN_BYTES) return true;
    this.refresh();
    if (this.used < TURN_BYTES) return true;
    if (!this.waiting) {
      this.waiting = true;
      setImmediate(onNextTurn, this);
    }
    return false;
  }

  /** @internal */
  turnCame(): void {
    this.waiting = false;
    this.owner.nextTurn();
  }

  private refresh(): void {
    const turn = currentTurn();
    if (turn === this.turnId) return;
    // A big message's cost is carried over: TURN_BYTES come off per turn gone by.
    this.used = this.turnId < 0 ? 0 : Math.max(0, this.used - (turn - this.turnId) * TURN_BYTES);
    this.turnId = turn;
  }
}

function onNextTurn(share: TurnShare): void {
  share.turnCame();
}
