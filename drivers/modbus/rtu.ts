// Modbus RTU framing (serial spec §2.5.1.1): unit id, PDU and CRC-16, on a serial line or
// through a TCP-to-RTU gateway. There are no transaction ids: input that arrives before a request
// is stale, and an answer is recognised by its unit id, function code, length and CRC alone.
import { checkResponsePdu, crc16, encodeRequestPdu, FunctionCode, isReadFunction, responsePduLength } from "./pdu.js";
import { Framing, NEED_MORE, sentAddress } from "./framing.js";
import { noteMismatch, type Job } from "./queue.js";

export class RtuFraming extends Framing {
  // Serial spec §2.2: 0 is broadcast (no answer; not supported here), 248-255 are reserved.
  readonly minUnit = 1;
  readonly maxUnit = 247;

  encode(tx: Buffer, job: Job): number {
    const pduLength = encodeRequestPdu(tx, 1, job.fc, sentAddress(job), job.count, job.values, job.step);
    tx[0] = job.unitId;
    tx.writeUInt16LE(crc16(tx, 0, 1 + pduLength), 1 + pduLength);
    // No transaction ids on a serial line: whatever arrived before this request is stale.
    this.clear();
    return 3 + pduLength;
  }

  /**
   * Modbus RTU (serial spec §2.5.1.1): an answer ends at the length its request implies (5 bytes
   * for an exception) and only counts when its CRC holds — never at a silence. The scan
   * resynchronises byte by byte past garbage, answers of other slaves and frames with a bad
   * CRC, so noise costs at most the request's time-out. A whole frame with a good CRC that
   * answers something else (another unit id to this function, another function from this unit)
   * is skipped whole and counted as the request's device's mismatched reply. Returns the PDU
   * offset or NEED_MORE; with no job awaiting an answer, everything buffered is stale and dropped.
   */
  next(job: Job | null): number {
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
      let other = 0;
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
        } else {
          other = this.wholeFrame(p, aduLength);
          if (other === NEED_MORE) return NEED_MORE;
          if (other > 0) noteMismatch(job, `reply with function code ${f}, expected ${fc}`);
        }
      } else if (f === fc || f === (fc | 0x80)) {
        other = this.wholeFrame(p, aduLength);
        if (other === NEED_MORE) return NEED_MORE;
        if (other > 0) noteMismatch(job, `reply from unit ${rx[p]}, expected unit ${job.unitId}`);
      }
      const skip = other > 0 ? other : 1;
      this.start = p + skip;
      this.discardedBytes += skip;
    }
    return NEED_MORE;
  }

  /**
   * The length of the frame at `p` if it is one whole frame with a good CRC, by the length its
   * function code implies (an exception 5 bytes, a read its byte count + 5, a write's echo 8);
   * 0 if it is not; NEED_MORE when it may be one and is not all here yet. Only a frame no longer
   * than the awaited answer (`limit`) is waited for: the answer, if it follows, ends later than
   * that, so waiting never delays it.
   */
  private wholeFrame(p: number, limit: number): number {
    const rx = this.buf;
    const f = rx[p + 1]!;
    let length: number;
    if (f & 0x80) length = 5;
    else if (isReadFunction(f) && f > 0) length = rx[p + 2]! + 5;
    else if (f === FunctionCode.WriteSingleCoil || f === FunctionCode.WriteSingleRegister || f === FunctionCode.WriteMultipleCoils || f === FunctionCode.WriteMultipleRegisters) length = 8;
    else return 0;
    if (this.end - p < length) return length <= limit ? NEED_MORE : 0;
    const crcAt = p + length - 2;
    return crc16(rx, p, crcAt) === rx.readUInt16LE(crcAt) ? length : 0;
  }
}
