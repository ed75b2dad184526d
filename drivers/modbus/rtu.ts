// Modbus RTU framing (serial spec §2.5.1.1): unit id, PDU and CRC-16, on a serial line or
// through a TCP-to-RTU gateway. There are no transaction ids: input that arrives before a request
// is stale, and an answer is recognised by its unit id, function code, length and CRC alone.
import { checkResponsePdu, crc16, encodeRequestPdu, isReadFunction, responsePduLength } from "./pdu.js";
import { Framing, NEED_MORE, sentAddress } from "./framing.js";
import type { Job } from "./queue.js";

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
   * CRC, so noise costs at most the request's time-out. Returns the PDU offset or NEED_MORE;
   * with no job awaiting an answer, everything buffered is stale and dropped.
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
}
