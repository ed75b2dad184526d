// The history's spool file (<database>.spool): where the flushed samples of a gateway whose
// history is light wait for the database while the writer's thread is not running
// (write-thread.ts says when it runs). The main thread appends one record per flush, off the
// event loop (libuv's pool writes it); the writer's thread, each time it starts, stores the
// records into the database and the main thread then empties the file. A crash loses what was not
// yet appended, as it loses what the thread had not yet committed: flushInterval's promise is
// the same either way. Appends are plain writes (no fsync), as SQLite's commits are with
// synchronous=NORMAL.
//
// A record, little-endian, every part padded to 8 bytes:
//    0  u32  "FGS1"
//    4  u32  the record's length in bytes
//    8  u32  n: samples
//   12  u32  k: series named for the first time in this file
//   16  u32  m: values kept as bytes (the ring's Other forms: their binary Variant encoding)
//   20  u32  0
//   24       k x { u32 series index, u32 UTF-8 length, the NodeId's text }
//            the n samples as a SampleRing of capacity n (sample-ring.ts's layout)
//            m x { u32 sample, u32 length, bytes }
// A series index is the recording thread's, named once per file: a record read after a restart
// stores each sample under its NodeId's text. A file cut short (a crash during an append) ends at
// its last whole record; anything else that does not read as records is damage.
import type { DamagedFileInfo } from "../storage/damaged.js";
import { SampleRing } from "./sample-ring.js";

/** The spool beside the history database `file`. */
export function spoolFileOf(file: string): string {
  return `${file}.spool`;
}

/** The spool as a damaged file (storage/damaged.ts): moved aside whole, a history file. */
export const SPOOL_FILE: DamagedFileInfo = {
  kind: "history",
  what: "history spool",
  advice: "the whole records before the damage were stored in the history database; the file is of no further use and may be deleted",
};

const MAGIC = 0x31534746; // "FGS1"
const HEADER = 24;
/** The most samples a record may say it holds: more is damage, not a record (a ring is smaller). */
const MAX_SAMPLES = 1 << 26;

function pad8(n: number): number {
  return (n + 7) & ~7;
}

/**
 * The record of ring samples [from, from + n) (wrapping at its capacity), naming the series
 * `series[declared..]` by their keys (every series the recording thread knows that the file
 * does not name yet; a series' index is its place in `series`).
 */
export function spoolRecord(ring: SampleRing, from: number, n: number, series: readonly { readonly key: string }[], declared: number): Buffer {
  const named: Buffer[] = [];
  let namesBytes = 0;
  for (let i = declared; i < series.length; i++) {
    const text = Buffer.from(series[i]!.key, "utf8");
    named.push(text);
    namesBytes += 8 + text.length;
  }
  const cap = ring.capacity;
  const other: [number, Uint8Array][] = [];
  let otherBytes = 0;
  for (const [slot, value] of ring.other) {
    const k = (slot - from + cap) % cap;
    if (k >= n) continue;
    const bytes = value as Uint8Array;
    other.push([k, bytes]);
    otherBytes += 8 + bytes.length;
  }
  const columnsAt = HEADER + pad8(namesBytes);
  const otherAt = columnsAt + pad8(SampleRing.bytes(n));
  const length = otherAt + pad8(otherBytes);
  const out = Buffer.alloc(length);
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt32LE(length, 4);
  out.writeUInt32LE(n, 8);
  out.writeUInt32LE(named.length, 12);
  out.writeUInt32LE(other.length, 16);
  let at = HEADER;
  for (let i = 0; i < named.length; i++) {
    out.writeUInt32LE(declared + i, at);
    out.writeUInt32LE(named[i]!.length, at + 4);
    named[i]!.copy(out, at + 8);
    at += 8 + named[i]!.length;
  }
  // The batch as a ring of its own (its arrays start at offset 0 of their buffer), then copied in.
  const columns = new SampleRing(n);
  const first = Math.min(n, cap - from);
  const copy = (dst: { set(src: ArrayLike<number>, at: number): void }, src: { subarray(a: number, b: number): ArrayLike<number> }): void => {
    dst.set(src.subarray(from, from + first), 0);
    if (first < n) dst.set(src.subarray(0, n - first), first);
  };
  copy(columns.ts, ring.ts);
  copy(columns.num, ring.num);
  copy(columns.series, ring.series);
  copy(columns.status, ring.status);
  copy(columns.type, ring.type);
  copy(columns.form, ring.form);
  Buffer.from(columns.buffer as ArrayBuffer).copy(out, columnsAt);
  at = otherAt;
  for (const [k, bytes] of other) {
    out.writeUInt32LE(k, at);
    out.writeUInt32LE(bytes.length, at + 4);
    out.set(bytes, at + 8);
    at += 8 + bytes.length;
  }
  return out;
}

/** The records of a spool file, read back. */
export interface SpoolContents {
  /** Each record's samples as a ring of their own (slot k: the record's kth sample), in order, with their offsets. */
  readonly records: ReadonlyArray<{ readonly offset: number; readonly ring: SampleRing }>;
  /** The series the file names, by the recording thread's index. */
  readonly names: ReadonlyMap<number, string>;
  /** Bytes of whole records: a file longer than this ends with a record cut short. */
  readonly end: number;
  /** What makes the file not a spool from `end` on (damage, not a record cut short). */
  readonly problem?: string;
}

/** Reads the records of spool bytes, up to the first one cut short or not a record. */
export function readSpool(bytes: Buffer): SpoolContents {
  const records: { offset: number; ring: SampleRing }[] = [];
  const names = new Map<number, string>();
  let at = 0;
  const damaged = (why: string): SpoolContents => ({ records, names, end: at, problem: `${why} at byte ${at}` });
  while (at < bytes.length) {
    if (bytes.length - at < HEADER) break;
    if (bytes.readUInt32LE(at) !== MAGIC) return damaged("not a spool record");
    const length = bytes.readUInt32LE(at + 4);
    const n = bytes.readUInt32LE(at + 8);
    const k = bytes.readUInt32LE(at + 12);
    const m = bytes.readUInt32LE(at + 16);
    if (length < HEADER || length % 8 !== 0 || n > MAX_SAMPLES || length < HEADER + SampleRing.bytes(n)) return damaged(`a record of ${length} bytes for ${n} samples`);
    if (bytes.length - at < length) break;
    const end = at + length;
    let p = at + HEADER;
    const declared: [number, string][] = [];
    for (let i = 0; i < k; i++) {
      if (p + 8 > end) return damaged("series names past the record's end");
      const index = bytes.readUInt32LE(p);
      const len = bytes.readUInt32LE(p + 4);
      if (p + 8 + len > end) return damaged("a series name past the record's end");
      declared.push([index, bytes.toString("utf8", p + 8, p + 8 + len)]);
      p += 8 + len;
    }
    const columnsAt = pad8(p);
    const otherAt = columnsAt + pad8(SampleRing.bytes(n));
    if (otherAt > end) return damaged("samples past the record's end");
    const columns = new ArrayBuffer(SampleRing.bytes(n));
    bytes.copy(new Uint8Array(columns), 0, columnsAt, columnsAt + SampleRing.bytes(n));
    const ring = new SampleRing(n, columns);
    p = otherAt;
    for (let i = 0; i < m; i++) {
      if (p + 8 > end) return damaged("values past the record's end");
      const slot = bytes.readUInt32LE(p);
      const len = bytes.readUInt32LE(p + 4);
      if (slot >= n || p + 8 + len > end) return damaged("a value past the record's end");
      ring.other.set(slot, new Uint8Array(bytes.subarray(p + 8, p + 8 + len)));
      p += 8 + len;
    }
    for (const [index, name] of declared) names.set(index, name);
    for (let i = 0; i < n; i++) if (!names.has(ring.series[i]!)) return damaged(`a sample of series ${ring.series[i]}, which the file does not name`);
    records.push({ offset: at, ring });
    at = end;
  }
  return { records, names, end: at };
}
