// Modbus TCP framing (MBAP spec §4.1): a 7-byte MBAP header before the PDU, answers cut by the
// header's length and matched by transaction id. A stream that cannot be framed any more
// (MALFORMED) costs the connection; a late answer to a timed-out request is skipped.
import { encodeRequestPdu } from "./pdu.js";
import { Framing, MALFORMED, NEED_MORE, sentAddress } from "./framing.js";
import { noteMismatch, type Job } from "./queue.js";

export class MbapFraming extends Framing {
  readonly minUnit = 0;
  readonly maxUnit = 255;
  /** Transaction id of the last request sent. */
  private tid = 0;

  encode(tx: Buffer, job: Job): number {
    // MBAP header (MBAP spec §4.1): transaction id, protocol 0, length of unit id + PDU.
    const pduLength = encodeRequestPdu(tx, 7, job.fc, sentAddress(job), job.count, job.values, job.step);
    this.tid = (this.tid + 1) & 0xffff;
    tx.writeUInt16BE(this.tid, 0);
    tx.writeUInt16BE(0, 2);
    tx.writeUInt16BE(pduLength + 1, 4);
    tx[6] = job.unitId;
    return 7 + pduLength;
  }

  next(job: Job | null): number {
    return this.scan(job === null ? -1 : this.tid, job);
  }

  /**
   * Modbus TCP: frames are cut by the MBAP length (MBAP spec §4.1) and matched by transaction
   * id; complete frames of other transactions (late answers to timed-out requests, or a server
   * that does not echo the id) are skipped, and while a request waits, counted as its device's
   * mismatched replies.
   * The server echoes the request's unit identifier (MBAP spec §4.1.3): an answer naming another
   * unit (a TCP-to-serial gateway that mixed up its slaves) is skipped as a bad frame, so the
   * request times out Bad instead of delivering another device's registers as Good. Units 0
   * and 255 stay accepted, as devices addressed directly over TCP may answer with either.
   * Returns the PDU offset of the answer to `tid` (-1 when none is awaited), NEED_MORE or MALFORMED.
   */
  private scan(tid: number, job: Job | null): number {
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
      const got = rx.readUInt16BE(s);
      if (got !== tid) {
        this.staleFrames++;
        if (job !== null) noteMismatch(job, `reply with transaction id ${got}, expected ${tid}`);
        continue;
      }
      const unit = rx[s + 6]!;
      if (job !== null && unit !== job.unitId && unit !== 0 && unit !== 255 && job.unitId !== 0 && job.unitId !== 255) {
        this.badFrame(job);
        noteMismatch(job, `reply from unit ${unit}, expected unit ${job.unitId}`);
        continue;
      }
      this.pduLength = length - 1;
      return s + 7;
    }
    return NEED_MORE;
  }
}
