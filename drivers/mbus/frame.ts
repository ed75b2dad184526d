// The M-Bus link layer (EN 13757-2 §5, as The M-Bus documentation rev. 4.8 gives it in §5.2-5.4):
// the single character E5h (ACK), the short frame [10h C A CS 16h], and the long frame
// [68h L L 68h C A CI data CS 16h], whose L counts C, A, CI and the data, and whose checksum is
// the 8-bit sum of those bytes. The reader cuts frames out of the bytes a link receives with one
// buffer and cursors (the pg-protocol parser pattern in STYLE.md): anything that cannot start a
// frame is skipped byte by byte, and a frame whose lengths, start, checksum or stop byte are
// wrong is a bad frame with its reason, skipped by one byte so that the scan finds a good frame
// that follows it (resynchronisation).

export const ACK = 0xe5;
const SHORT_START = 0x10;
const LONG_START = 0x68;
const STOP = 0x16;

/** C field values (EN 13757-2 §5.3, master to slave and back); FCB is REQ_UD2's frame count bit. */
export const enum Control {
  SND_NKE = 0x40,
  SND_UD = 0x53,
  REQ_UD2 = 0x5b,
  FCB = 0x20,
  /** RSP_UD: the slave's answer (with its ACD 20h and DFC 10h bits, which the master ignores here). */
  RSP_UD = 0x08,
}

/** A field values (EN 13757-2 §5.3): primary addresses 0-250 (0: as delivered), 253 the selected slave (secondary addressing), 255 broadcast. */
export const SECONDARY_ADDRESS = 0xfd;
export const BROADCAST = 0xff;
export const MAX_PRIMARY = 250;

/** CI 52h: selection of a slave by its secondary address (EN 13757-3 §7, network layer). */
export const CI_SELECT = 0x52;

/** Longest frame: L is at most 255 (C, A, CI and 252 bytes of data), plus 68h L L 68h and CS 16h. */
export const MAX_FRAME = 255 + 6;

export function shortFrame(c: number, a: number): Buffer {
  return Buffer.from([SHORT_START, c, a, (c + a) & 0xff, STOP]);
}

export function longFrame(c: number, a: number, ci: number, data: Uint8Array): Buffer {
  if (data.length > 252) throw new RangeError(`an M-Bus long frame holds at most 252 bytes of data, got ${data.length}`);
  const f = Buffer.allocUnsafe(data.length + 9);
  f[0] = LONG_START;
  f[1] = f[2] = data.length + 3;
  f[3] = LONG_START;
  f[4] = c;
  f[5] = a;
  f[6] = ci;
  f.set(data, 7);
  f[7 + data.length] = checksum(f, 4, 7 + data.length);
  f[8 + data.length] = STOP;
  return f;
}

function checksum(b: Uint8Array, from: number, to: number): number {
  let s = 0;
  for (let i = from; i < to; i++) s = (s + b[i]!) & 0xff;
  return s;
}

/** A frame received: the single character, a short frame, or a long frame (its data copied: the reader's buffer is reused). */
export type Frame =
  | { readonly kind: "ack" }
  | { readonly kind: "short"; readonly c: number; readonly a: number }
  | { readonly kind: "long"; readonly c: number; readonly a: number; readonly ci: number; readonly data: Buffer };

/** Bytes that looked like a frame and were not one, and why. */
export interface BadFrame {
  readonly kind: "bad";
  readonly reason: string;
}

const h = (b: number): string => `${b.toString(16).toUpperCase().padStart(2, "0")}h`;

/** Room for a few frames; the scan keeps at most one partial frame. */
const RX_SIZE = 2048;

export class FrameReader {
  private readonly buf = Buffer.allocUnsafe(RX_SIZE);
  private start = 0;
  private end = 0;
  /** Bytes skipped that could not start a frame (noise, the tail of a frame cut off). */
  discarded = 0;

  get buffered(): number {
    return this.end - this.start;
  }

  /** Appends received bytes, making room by moving the unread ones to the front. */
  push(chunk: Uint8Array): void {
    let off = 0;
    while (off < chunk.length) {
      if (this.end === RX_SIZE) this.compact();
      const n = Math.min(chunk.length - off, RX_SIZE - this.end);
      this.buf.set(chunk.subarray(off, off + n), this.end);
      this.end += n;
      off += n;
    }
  }

  private compact(): void {
    // A buffer full of one "frame" that never ends (its L says more than can come): its first
    // byte cannot start a frame, so it goes, and the scan goes on.
    if (this.start === 0) {
      this.start = 1;
      this.discarded++;
    }
    this.buf.copyWithin(0, this.start, this.end);
    this.end -= this.start;
    this.start = 0;
  }

  /** Drops what is buffered (stale bytes before a new request). */
  clear(): void {
    this.discarded += this.end - this.start;
    this.start = this.end = 0;
  }

  /** The next frame, a bad frame, or undefined when more bytes are needed. */
  next(): Frame | BadFrame | undefined {
    const b = this.buf;
    while (this.start < this.end) {
      const p = this.start;
      const first = b[p]!;
      if (first === ACK) {
        this.start++;
        return { kind: "ack" };
      }
      if (first === SHORT_START) {
        if (this.end - p < 5) return undefined;
        const bad = shortProblem(b, p);
        if (bad !== undefined) return this.bad(bad);
        this.start = p + 5;
        return { kind: "short", c: b[p + 1]!, a: b[p + 2]! };
      }
      if (first === LONG_START) {
        if (this.end - p < 4) return undefined;
        const header = longHeaderProblem(b, p);
        if (header !== undefined) return this.bad(header);
        const total = b[p + 1]! + 6;
        if (this.end - p < total) return undefined;
        const bad = longProblem(b, p);
        if (bad !== undefined) return this.bad(bad);
        this.start = p + total;
        return { kind: "long", c: b[p + 4]!, a: b[p + 5]!, ci: b[p + 6]!, data: Buffer.from(b.subarray(p + 7, p + total - 2)) };
      }
      this.start++;
      this.discarded++;
    }
    return undefined;
  }

  /** A bad frame at the start: skipped by one byte, so that a frame inside it is still found. */
  private bad(reason: string): BadFrame {
    this.start++;
    this.discarded++;
    return { kind: "bad", reason };
  }
}

function shortProblem(b: Uint8Array, p: number): string | undefined {
  const sum = (b[p + 1]! + b[p + 2]!) & 0xff;
  if (b[p + 3] !== sum) return `short frame with checksum ${h(b[p + 3]!)}, expected ${h(sum)}`;
  if (b[p + 4] !== STOP) return `short frame without its stop byte (${h(b[p + 4]!)})`;
  return undefined;
}

function longHeaderProblem(b: Uint8Array, p: number): string | undefined {
  if (b[p + 1] !== b[p + 2]) return `long frame whose length fields differ (${h(b[p + 1]!)}, ${h(b[p + 2]!)})`;
  if (b[p + 3] !== LONG_START) return `long frame without its second start byte (${h(b[p + 3]!)})`;
  if (b[p + 1]! < 3) return `long frame of length ${b[p + 1]}, below the 3 of C, A and CI`;
  return undefined;
}

function longProblem(b: Uint8Array, p: number): string | undefined {
  const l = b[p + 1]!;
  const sum = checksum(b, p + 4, p + 4 + l);
  if (b[p + 4 + l] !== sum) return `long frame with checksum ${h(b[p + 4 + l]!)}, expected ${h(sum)}`;
  if (b[p + 5 + l] !== STOP) return `long frame without its stop byte (${h(b[p + 5 + l]!)})`;
  return undefined;
}

/** Exactly one frame from `bytes` (a capture), or why they are not one. */
export function decodeFrame(bytes: Uint8Array): Frame | BadFrame {
  const r = new FrameReader();
  r.push(bytes);
  const f = r.next();
  if (f === undefined) return { kind: "bad", reason: `${bytes.length} bytes that end before a whole frame` };
  if (f.kind !== "bad" && r.buffered > 0) return { kind: "bad", reason: `${r.buffered} bytes after the frame` };
  if (f.kind !== "bad" && r.discarded > 0) return { kind: "bad", reason: `${r.discarded} bytes before the frame` };
  return f;
}
