// Cutting answers out of the bytes a link receives: one receive buffer per link with cursors
// (no Buffer.concat per chunk; the pg-protocol parser pattern in STYLE.md).
import { FunctionCode, checkResponsePdu, crc16, isReadFunction, responsePduLength } from "./pdu.js";
import type { Job } from "./queue.js";

/** More bytes are needed (everything before them was consumed or skipped). */
export const NEED_MORE = -1;
/** The TCP byte stream cannot be framed any more: the connection must go. */
export const MALFORMED = -2;

/** Room for a few frames; a frame is at most 260 bytes and the scans never keep more than one. */
const RX_SIZE = 1024;

/** The address a job's current request carries: FC5/FC6 sequences write one item per request. */
export function sentAddress(job: Job): number {
  const single = job.fc === FunctionCode.WriteSingleCoil || job.fc === FunctionCode.WriteSingleRegister;
  return single ? job.address + job.step : job.address;
}

export class Receiver {
  readonly buf = Buffer.allocUnsafe(RX_SIZE);
  private start = 0;
  private end = 0;
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

  /**
   * Modbus TCP: frames are cut by the MBAP length (MBAP spec §4.1) and matched by transaction
   * id; complete frames of other transactions (late answers to timed-out requests) are skipped.
   * The server echoes the request's unit identifier (MBAP spec §4.1.3): an answer naming another
   * unit (a TCP-to-serial gateway that mixed up its slaves) is skipped as a bad frame, so the
   * request times out Bad instead of delivering another device's registers as Good. Units 0
   * and 255 stay accepted, as devices addressed directly over TCP may answer with either.
   * Returns the PDU offset of the answer to `tid` (-1 when none is awaited), NEED_MORE or MALFORMED.
   */
  mbap(tid: number, job: Job | null = null): number {
    const rx = this.buf;
    while (this.end - this.start >= 7) {
      const s = this.start;
      const protocol = rx.readUInt16BE(s + 2);
      const length = rx.readUInt16BE(s + 4);
      // Unit id + function code + at least one byte, at most unit id + 253-byte PDU.
      if (protocol !== 0 || length < 3 || length > 254) {
        this.badFrames++;
        this.problem = `malformed MBAP header (protocol ${protocol}, length ${length})`;
        return MALFORMED;
      }
      if (this.end - s < 6 + length) return NEED_MORE;
      this.start = s + 6 + length;
      if (rx.readUInt16BE(s) !== tid) {
        this.staleFrames++;
        continue;
      }
      const unit = rx[s + 6]!;
      if (job !== null && unit !== job.unitId && unit !== 0 && unit !== 255 && job.unitId !== 0 && job.unitId !== 255) {
        this.badFrame(job);
        continue;
      }
      this.pduLength = length - 1;
      return s + 7;
    }
    return NEED_MORE;
  }

  /**
   * Modbus RTU (serial spec §2.5.1.1): an answer ends at the length its request implies (5 bytes
   * for an exception) and only counts when its CRC holds — never at a silence. The scan
   * resynchronises byte by byte past garbage, answers of other slaves and frames with a bad
   * CRC, so noise costs at most the request's time-out. Returns the PDU offset or NEED_MORE;
   * with no job awaiting an answer, everything buffered is stale and dropped.
   */
  rtu(job: Job | null): number {
    if (job === null) {
      this.clear();
      return NEED_MORE;
    }
    const rx = this.buf;
    const fc = job.fc;
    const aduLength = responsePduLength(fc, job.count) + 3;
    const read = isReadFunction(fc);
    while (this.end - this.start >= 5) {
      const p = this.start;
      const f = rx[p + 1]!;
      if (rx[p] === job.unitId) {
        if (f === (fc | 0x80)) {
          if (crc16(rx, p, p + 3) === rx.readUInt16LE(p + 3)) {
            this.start = p + 5;
            this.pduLength = 2;
            return p + 1;
          }
          this.badFrame(job);
        } else if (f === fc && (!read || rx[p + 2] === aduLength - 5)) {
          if (this.end - p < aduLength) return NEED_MORE;
          const crcAt = p + aduLength - 2;
          if (crc16(rx, p, crcAt) === rx.readUInt16LE(crcAt)) {
            const wrongEcho = checkResponsePdu(rx, p + 1, aduLength - 3, fc, sentAddress(job), job.count, job.values, job.step);
            if (wrongEcho === undefined) {
              this.start = p + aduLength;
              this.pduLength = aduLength - 3;
              return p + 1;
            }
            // A valid frame that echoes another write: a late answer to an earlier request.
            this.staleFrames++;
          } else {
            this.badFrame(job);
          }
        }
      }
      this.start = p + 1;
      this.discardedBytes++;
    }
    return NEED_MORE;
  }

  private badFrame(job: Job): void {
    this.badFrames++;
    job.sawBadFrame = true;
  }
}
