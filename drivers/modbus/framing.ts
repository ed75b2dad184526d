// Framing of one link: the request ADU around a PDU, and cutting answers out of the bytes the
// link receives. One receive buffer per link with cursors (no Buffer.concat per chunk; the
// pg-protocol parser pattern in STYLE.md). What differs per transport lives beside this file:
// mbap.ts (Modbus TCP), rtu.ts (RTU on a serial line or through a TCP gateway) and ascii.ts.
import { FunctionCode } from "./pdu.js";
import type { Job } from "./queue.js";

/** More bytes are needed (everything before them was consumed or skipped). */
export const NEED_MORE = -1;
/** The TCP byte stream cannot be framed any more: the connection must go. */
export const MALFORMED = -2;

/** Room for a few frames; a frame is at most 260 bytes (513 characters in ASCII) and the scans never keep more than one. */
const RX_SIZE = 1024;

/** The address a job's current request carries: FC5/FC6 sequences write one item per request. */
export function sentAddress(job: Job): number {
  const single = job.fc === FunctionCode.WriteSingleCoil || job.fc === FunctionCode.WriteSingleRegister;
  return single ? job.address + job.step : job.address;
}

export abstract class Framing {
  readonly buf = Buffer.allocUnsafe(RX_SIZE);
  protected start = 0;
  protected end = 0;
  /** Length of the PDU whose offset the last successful parse returned. */
  pduLength = 0;
  /** What the last MALFORMED was about. */
  problem = "";
  discardedBytes = 0;
  badFrames = 0;
  staleFrames = 0;

  get buffered(): number {
    return this.end - this.start;
  }

  /** Copies as much of chunk[off..] as fits and returns the offset of the rest. */
  fill(chunk: Buffer, off: number): number {
    if (this.end === RX_SIZE) this.compact();
    const n = Math.min(chunk.length - off, RX_SIZE - this.end);
    chunk.copy(this.buf, this.end, off, off + n);
    this.end += n;
    return off + n;
  }

  compact(): void {
    const rest = this.end - this.start;
    if (rest > 0 && this.start > 0) this.buf.copyWithin(0, this.start, this.end);
    this.start = 0;
    this.end = rest;
  }

  /** Drops everything buffered: stale input before a new request, or a new connection. */
  clear(): void {
    this.discardedBytes += this.end - this.start;
    this.start = this.end = 0;
  }

  /** Longest request ADU this framing writes, bytes (RTU and TCP: 260; ASCII: 513 characters). */
  readonly maxAdu: number = 260;

  /** Unit ids a request may address on this transport. */
  abstract readonly minUnit: number;
  abstract readonly maxUnit: number;

  /** Writes the request ADU of `job`'s current step into tx[0...]; returns its length. */
  abstract encode(tx: Buffer, job: Job): number;

  /**
   * Cuts the answer to `job` (null: none is awaited) out of the buffered bytes. Returns the
   * offset of its PDU in `buf` (length in `pduLength`), NEED_MORE, or MALFORMED.
   */
  abstract next(job: Job | null): number;

  protected badFrame(job: Job): void {
    this.badFrames++;
    job.sawBadFrame = true;
  }
}
