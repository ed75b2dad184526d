// Modbus ASCII framing (Modbus over serial line V1.02 §2.5.2): a ':' start, the unit id, PDU and
// LRC as two hexadecimal characters a byte, and CR LF; the LRC (§6.2.1) is the two's complement
// of the 8-bit sum of the unit id and PDU bytes. The PDU is the same as RTU's (pdu.ts); only the
// framing differs. Like RTU there are no transaction ids: input before a request is stale, and an
// answer is its unit id, function code and LRC; the characters of a frame are decoded in place
// (a byte takes two characters, so each lands before the ones still to be read), and its PDU is
// handed on from there until the buffer is next filled.
import { checkResponsePdu, encodeRequestPdu, isReadFunction } from "./pdu.js";
import { Framing, NEED_MORE, sentAddress } from "./framing.js";
import { noteMismatch, type Job } from "./queue.js";

const COLON = 0x3a;
const CR = 0x0d;
const LF = 0x0a;
/** §2.5.2.1: 513 characters at most, ':' and CR LF included. */
const MAX_FRAME = 513;
const HEX = "0123456789ABCDEF";

/** The value of a hexadecimal character (either case), or -1. */
function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/** The LRC of buf[start, end) (§6.2.1). */
export function lrc(buf: Uint8Array, start: number, end: number): number {
  let sum = 0;
  for (let i = start; i < end; i++) sum = (sum + buf[i]!) & 0xff;
  return (0x100 - sum) & 0xff;
}

export class AsciiFraming extends Framing {
  // §2.2, as for RTU: 0 is broadcast (never answered), 248-255 reserved.
  readonly minUnit = 1;
  readonly maxUnit = 247;
  override readonly maxAdu = MAX_FRAME;
  /** The binary request before it is written out as characters. */
  private readonly bin = Buffer.allocUnsafe(256);

  encode(tx: Buffer, job: Job): number {
    const bin = this.bin;
    bin[0] = job.unitId;
    const n = 1 + encodeRequestPdu(bin, 1, job.fc, sentAddress(job), job.count, job.values, job.step);
    bin[n] = lrc(bin, 0, n);
    tx[0] = COLON;
    let at = 1;
    for (let i = 0; i <= n; i++) {
      tx[at++] = HEX.charCodeAt(bin[i]! >> 4);
      tx[at++] = HEX.charCodeAt(bin[i]! & 15);
    }
    tx[at++] = CR;
    tx[at++] = LF;
    // No transaction ids on a serial line: whatever arrived before this request is stale.
    this.clear();
    return at;
  }

  /**
   * The answer to `job`: the scan skips everything up to a ':', decodes the characters up to CR
   * LF, and takes the frame when it is whole hexadecimal with a good LRC, from the request's unit
   * with its function code (or its exception). Frames of other units or functions are skipped
   * whole and counted as the device's mismatched replies; a ':' without a frame after it, bad
   * characters or a bad LRC are bad frames, and the scan goes on from the next ':'. Returns the
   * PDU offset (length in pduLength) or NEED_MORE; with no job awaiting an answer, everything
   * buffered is stale and dropped.
   */
  next(job: Job | null): number {
    if (job === null) {
      this.clear();
      return NEED_MORE;
    }
    const rx = this.buf;
    while (this.start < this.end) {
      const p = this.start;
      if (rx[p] !== COLON) {
        this.start++;
        this.discardedBytes++;
        continue;
      }
      let lf = -1;
      let restart = -1;
      for (let i = p + 1; i < this.end && i - p < MAX_FRAME; i++) {
        if (rx[i] === LF) {
          lf = i;
          break;
        }
        // A new start: the frame before it was cut short.
        if (rx[i] === COLON) {
          restart = i;
          break;
        }
      }
      if (lf < 0) {
        if (restart < 0 && this.end - p < MAX_FRAME) return NEED_MORE;
        this.skipFrame(restart < 0 ? p + 1 : restart, job);
        continue;
      }
      const frameEnd = lf + 1;
      const n = this.decode(p, lf);
      if (n < 0) {
        this.skipFrame(frameEnd, job);
        continue;
      }
      const unit = rx[p]!;
      const f = rx[p + 1]!;
      const fc = job.fc;
      if (unit !== job.unitId || (f !== fc && f !== (fc | 0x80))) {
        noteMismatch(job, unit !== job.unitId ? `reply from unit ${unit}, expected unit ${job.unitId}` : `reply with function code ${f}, expected ${fc}`);
        this.start = frameEnd;
        this.discardedBytes += frameEnd - p;
        continue;
      }
      if (f === fc && !isReadFunction(fc) && checkResponsePdu(rx, p + 1, n - 2, fc, sentAddress(job), job.count, job.values, job.step) !== undefined) {
        // A valid frame that echoes another write: a late answer to an earlier request.
        this.staleFrames++;
        this.start = frameEnd;
        continue;
      }
      this.start = frameEnd;
      this.pduLength = n - 2;
      return p + 1;
    }
    return NEED_MORE;
  }

  /**
   * Decodes the characters of the frame at rx[p] (':') up to `lf` into bytes from rx[p] on;
   * returns how many (unit id, PDU, LRC), or -1 when it is not a frame: no CR before LF, an odd
   * count or a character that is not hexadecimal, fewer than three bytes, or a bad LRC.
   */
  private decode(p: number, lf: number): number {
    const rx = this.buf;
    if (rx[lf - 1] !== CR) return -1;
    const chars = lf - 1 - (p + 1);
    if (chars < 6 || (chars & 1) !== 0) return -1;
    const n = chars >> 1;
    for (let i = 0; i < n; i++) {
      const hi = hexValue(rx[p + 1 + 2 * i]!);
      const lo = hexValue(rx[p + 2 + 2 * i]!);
      if (hi < 0 || lo < 0) return -1;
      rx[p + i] = (hi << 4) | lo;
    }
    return lrc(rx, p, p + n - 1) === rx[p + n - 1] ? n : -1;
  }

  /** Skips a frame that is not one, up to `to`, as a bad frame of `job`. */
  private skipFrame(to: number, job: Job): void {
    this.discardedBytes += to - this.start;
    this.start = to;
    this.badFrame(job);
  }
}
