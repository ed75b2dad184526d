// A large response leaves over several turns of the event loop (DESIGN: the event loop is a
// shared resource). The chunk writer keeps the large raw bytes of a message begun with `lend` by
// reference and lays them out later (chunk-writer.ts, "Lent bytes"); this is the connection's
// part: it calls `feed()` in slices, each ending when the pacer says (the server's Slicer: its
// time budget, and before the next sampling deadline), with a turn of the loop between them in
// which other connections' I/O and the sampling slots run. Each slice's sealed buffers are written
// to the socket before the next (SendQueue: drain-aware); the memory budget bounds them as it
// bounds any response (no buffer: the message ends with an abort chunk, Part 6 §6.7.3).
//
// Order on the connection: while a message is being laid out the writer is taken, so the sends
// that come meanwhile wait here, in order, and run once it is finished (each of them may slice in
// turn). A sender that must know its outcome at once (a control message needs its sequence number
// after the chunks before it) calls `settle()` first: what waits is laid out and sent now, in one
// go. A Publish, which commits or rolls back its notifications on its outcome, does not: it waits
// until the writer is free (`whenFree`; subscriptions/publisher.ts) and is then sent whole.
//
// When the channel closes midway, `closing()` drops what waits and forgets the message; the
// connection ends the message itself with an abort chunk (tcp-connection.ts close()).
import { UaStatusError } from "../ua/errors.js";
import { StatusCodes, statusCodeName } from "../ua/generated/status-codes.js";
import type { ChunkWriter } from "./chunk-writer.js";
import { SliceTail } from "../sampling/slices.js";

/** When slices end and when the next one runs: the server's Slicer (sampling/slices.ts). */
export interface OutputPacer {
  /** The clock the slice ends are in. */
  now(): number;
  /** When a slice that starts now must end (now() units), `tail` ms earlier (what the slices ran past their end lately). */
  end(tail?: number): number;
  /** Calls fn(arg) when the next slice may start (after a turn of the loop at least), timed under `label`. */
  later<A>(fn: (arg: A) => void, arg: A, label?: string): void;
}

/** The loop trace's names of a response's later slices, and of the sends that waited for them. */
const LATER_SLICE = "a response's later slice";
const FREED = "sends that waited for a response's slices";

/** The message being laid out: told how it ended. */
export interface SlicedMessage {
  /** Its bytes are all out of the value it was encoded from: sent whole (true), cut off by an abort chunk or by the channel closing (false). */
  finished(whole: boolean): void;
  /** Nothing of it was sent (no chunk sealed when it failed): the sender may answer otherwise. */
  refused(err: unknown): void;
}

/** A send that waits behind a message being laid out. */
export interface QueuedSend {
  /** The writer is free: encode and send now. */
  send(): void;
  /** The connection closed first. */
  drop(): void;
}

/** What the slicer needs of its connection. */
export interface SlicerOwner {
  /** A response is complete (backpressure) and queued output may be written. */
  messageDone(isResponse: boolean): void;
  /** Writes what is queued. */
  pump(): void;
  close(status: number, reason: string): void;
}

/**
 * Bytes one slice copies at most, whatever the clock says: ~0.1-0.5 ms here (out of shared
 * memory, the slowest source: 0.5 ms per 1.8 MB at best, measured), and what bounds a slice when
 * the clock is coarse or stopped (tests).
 */
export const SLICE_BYTES = 256 * 1024;

/** Process-wide counts of sliced responses (diagnostics, tests); `settled`: messages that a `settle()` laid out in one go. */
export const slicedOutput = { messages: 0, slices: 0, settled: 0 };

export class OutputSlicer {
  /** Slices run so far (diagnostics and tests). */
  slices = 0;
  private message: SlicedMessage | undefined = undefined;
  private readonly waiting: QueuedSend[] = [];
  private scheduled = false;
  private readonly freeListeners: (() => void)[] = [];
  private freeScheduled = false;
  private readonly now: () => number;
  /** How far its slices ran past their end (sealing, signing, the socket write): the next ones end that much earlier. */
  private readonly tail = new SliceTail();

  constructor(
    private readonly writer: ChunkWriter,
    private readonly owner: SlicerOwner,
    private readonly pacer: OutputPacer,
  ) {
    this.now = () => pacer.now();
  }

  /** A message is being laid out, or sends wait behind one: a new send must wait too (`enqueue`) or `settle()` first. */
  get busy(): boolean {
    return this.message !== undefined || this.waiting.length > 0;
  }

  /** Sends waiting behind the message being laid out. */
  get queued(): number {
    return this.waiting.length;
  }

  enqueue(send: QueuedSend): void {
    this.waiting.push(send);
  }

  /**
   * Calls fn once, on a later turn (the pacer's), when no message is being laid out and nothing
   * waits, or the connection closed. A listener that finds the writer taken again asks again.
   */
  whenFree(fn: () => void): void {
    this.freeListeners.push(fn);
    this.freed();
  }

  /** The writer's message ended pending (end() returned false): its first slice runs now, the rest on later turns. */
  start(message: SlicedMessage): void {
    this.message = message;
    slicedOutput.messages++;
    this.slice(this.pacer.end(this.tail.ms));
  }

  /** Lays out the message and runs what waits, now, in one go. */
  settle(): void {
    while (this.busy) {
      if (this.message !== undefined) {
        slicedOutput.settled++;
        this.slice(Infinity);
      } else {
        this.waiting.shift()!.send();
      }
    }
    this.freed();
  }

  /** The connection is closing: the message is over (the connection writes its abort chunk), what waits is dropped. */
  closing(): void {
    const m = this.message;
    this.message = undefined;
    m?.finished(false);
    const waiting = this.waiting.splice(0);
    for (const w of waiting) w.drop();
    this.freed();
  }

  /** @internal The pacer's turn came. */
  next(): void {
    this.scheduled = false;
    if (this.message !== undefined) this.slice(this.pacer.end(this.tail.ms));
  }

  private slice(until: number): void {
    const m = this.message!;
    this.slices++;
    slicedOutput.slices++;
    let done: boolean;
    try {
      done = this.writer.feed(until, this.now, until === Infinity ? Infinity : SLICE_BYTES);
    } catch (err) {
      this.failed(m, err);
      return;
    }
    if (!done) {
      // What this slice sealed goes to the socket now, not with the last slice.
      this.owner.pump();
      this.tail.note(until, this.now());
      if (!this.scheduled) {
        this.scheduled = true;
        this.pacer.later(nextSlice, this, LATER_SLICE);
      }
      return;
    }
    this.message = undefined;
    this.owner.messageDone(true);
    m.finished(true);
    this.runWaiting();
  }

  private failed(m: SlicedMessage, err: unknown): void {
    this.message = undefined;
    let status = err instanceof UaStatusError ? err.statusCode : StatusCodes.BadEncodingError;
    // Part 6 §7.1.2.3: a response over the client's limits is BadResponseTooLarge.
    if (status === StatusCodes.BadEncodingLimitsExceeded) status = StatusCodes.BadResponseTooLarge;
    let nothingSent: boolean;
    try {
      nothingSent = this.writer.abort(status, statusCodeName(status), true);
    } catch (abortErr) {
      // Chunks went out and not even the abort chunk fits the budget: the channel ends.
      m.finished(false);
      this.owner.close(StatusCodes.BadTcpNotEnoughResources, abortErr instanceof Error ? abortErr.message : String(abortErr));
      return;
    }
    if (nothingSent) {
      m.finished(false);
      m.refused(err);
    } else {
      this.owner.messageDone(true);
      m.finished(false);
    }
    this.runWaiting();
  }

  /** The writer is free: what waited goes, in order, until one of them slices in its turn. */
  private runWaiting(): void {
    while (this.message === undefined && this.waiting.length > 0) this.waiting.shift()!.send();
    this.freed();
  }

  private freed(): void {
    if (this.freeListeners.length === 0 || this.busy || this.freeScheduled) return;
    this.freeScheduled = true;
    this.pacer.later(notifyFree, this, FREED);
  }

  /** @internal The pacer's turn came for the listeners of `whenFree`. */
  notifyFree(): void {
    this.freeScheduled = false;
    if (this.busy) return;
    const fns = this.freeListeners.splice(0);
    for (const fn of fns) fn();
  }
}

function notifyFree(slicer: OutputSlicer): void {
  slicer.notifyFree();
}

function nextSlice(slicer: OutputSlicer): void {
  slicer.next();
}
