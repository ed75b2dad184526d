// Store-and-forward (DESIGN: Northbound): data changes that cannot be published are kept in
// their own SQLite file (WAL, synchronous=NORMAL: a committed row survives a crash or a kill -9
// of the gateway; only a power loss can take the last transactions, as for the history) and
// replayed oldest first once the broker and the primary host are back.
//
// Schema:
// - `meta(key, value)`: the bdSeq of the last MQTT CONNECT (Sparkplug 3.0 §4.2.1.1: it starts at
//   0 and goes up by one on every new CONNECT, also across restarts, so hosts can tell this
//   session's NDEATH from an older one).
// - `metric(id, device, tag)`: the names values are stored under. Not aliases or cache slots:
//   those are only valid for one session or one process, the rows outlive both.
// - `buffer(id, m, t, v, q)`: one row per data change, in the order they happened. `id` is an
//   AUTOINCREMENT key, so ids only grow and the rows waiting are always the contiguous range
//   [first, last]: replay and retention both delete from the front. `v` holds a number, a
//   string, a 64-bit integer as decimal text, or NULL; `q` the Sparkplug quality with the kind
//   of `v` in the bits above it.
//
// Appends are staged in typed arrays and committed in slices of at most `sliceRows` rows per
// task (~1-2 ms on a small board): a device of 10,000 tags going offline does not stall polling.
// `stored` counts only what was committed: that is what the gateway reports as stored.
import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { sqliteFileInfo } from "../storage/sqlite-check.js";

type Db = Database.Database;
type Statement = Database.Statement;

/**
 * The store as a damaged file (storage/damaged.ts): moved aside whole with its WAL. What it held
 * is counted from ids (rows are the range [first, last], see the schema above): the last id given
 * out (sqlite_sequence, AUTOINCREMENT's own table) and the first one waiting, two lookups that a
 * damaged file may still answer when a count of its rows would not.
 */
export const NORTHBOUND_FILE = sqliteFileInfo("northbound", "store-and-forward database", {
  sql: "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'buffer') - min(id) + 1, 0) FROM buffer",
  unit: "stored change(s) not yet replayed",
});

/** The kind of a stored value (bits 10.. of q). */
export const enum StoredKind {
  Number = 0,
  String = 1,
  BigInt = 2,
  Null = 3,
}

const KIND_SHIFT = 10;
const QUALITY_MASK = (1 << KIND_SHIFT) - 1;

export interface ForwardStoreOptions {
  readonly maxAge: number;
  readonly maxSize: number;
  /** Rows committed per synchronous task. */
  readonly sliceRows?: number;
  /** Most rows staged in memory while the disk is slow or failing; older staged rows are dropped (counted). */
  readonly maxStaged?: number;
  readonly log?: (message: string) => void;
  /** Wall clock (ms); injectable for retention tests. */
  readonly now?: () => number;
}

/** One stored row as replay reads it. */
export interface StoredRow {
  readonly id: number;
  readonly device: string;
  readonly tag: string;
  readonly time: number;
  readonly quality: number;
  readonly kind: StoredKind;
  readonly num: number;
  readonly obj: string | bigint | undefined;
}

export class ForwardStore {
  readonly file: string;
  /** Rows committed since the store was opened. */
  stored = 0;
  /** Rows dropped unsent: too old, over maxSize, staging full, or of a tag no longer in the map. */
  dropped = 0;
  /** Rows replayed (sent as historical data) since the store was opened. */
  replayed = 0;
  /** Commits that failed (disk full, I/O error); their rows stay staged and are tried again. */
  failedCommits = 0;
  lastError = "";
  private readonly db: Db;
  private readonly o: Required<Omit<ForwardStoreOptions, "log" | "now">>;
  private readonly log: (message: string) => void;
  private readonly now: () => number;
  private readonly insert: Statement;
  private readonly insertMetric: Statement;
  private readonly deleteThrough: Statement;
  private readonly readFrom: Statement;
  private readonly bounds: Statement;
  private readonly oldest: Statement;
  private readonly commitSlice: (from: number, to: number) => void;
  private readonly metricIds = new Map<string, number>();
  private readonly metricNames: (readonly [string, string] | undefined)[] = [];
  private first = 0;
  private last = 0;
  // Staged rows (not yet committed).
  private sm = new Int32Array(1024);
  private st = new Float64Array(1024);
  private sq = new Uint16Array(1024);
  private sv = new Float64Array(1024);
  private so: (string | bigint | undefined)[] = [];
  /** Staged rows are [head, tail) of the arrays above. */
  private head = 0;
  private tail = 0;
  private closed = false;

  constructor(file: string, options: ForwardStoreOptions) {
    this.file = file;
    this.o = { maxAge: options.maxAge, maxSize: options.maxSize, sliceRows: options.sliceRows ?? 500, maxStaged: options.maxStaged ?? 200_000 };
    this.log = options.log ?? (() => undefined);
    this.now = options.now ?? Date.now;
    mkdirSync(dirname(file), { recursive: true });
    const db = (this.db = new Database(file));
    try {
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      // The WAL is cut back after each checkpoint: it must not grow past maxSize on its own.
      db.pragma("journal_size_limit = 4194304");
      db.exec(`
        CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS metric(id INTEGER PRIMARY KEY, device TEXT NOT NULL, tag TEXT NOT NULL, UNIQUE(device, tag));
        CREATE TABLE IF NOT EXISTS buffer(id INTEGER PRIMARY KEY AUTOINCREMENT, m INTEGER NOT NULL, t INTEGER NOT NULL, v, q INTEGER NOT NULL);
      `);
      this.insert = db.prepare("INSERT INTO buffer(m, t, v, q) VALUES (?, ?, ?, ?)");
      this.insertMetric = db.prepare("INSERT INTO metric(device, tag) VALUES (?, ?)");
      this.deleteThrough = db.prepare("DELETE FROM buffer WHERE id <= ?");
      this.readFrom = db.prepare("SELECT id, m, t, v, q FROM buffer WHERE id >= ? ORDER BY id LIMIT ?").raw(true).safeIntegers(false);
      this.bounds = db.prepare("SELECT min(id), max(id) FROM buffer").raw(true);
      this.oldest = db.prepare("SELECT t FROM buffer WHERE id = ?").raw(true);
      for (const row of db.prepare("SELECT id, device, tag FROM metric").raw(true).all() as [number, string, string][]) {
        this.metricIds.set(keyOf(row[1], row[2]), row[0]);
        this.metricNames[row[0]] = [row[1], row[2]];
      }
      const [lo, hi] = this.bounds.get() as [number | null, number | null];
      this.first = lo ?? 0;
      this.last = hi ?? 0;
    } catch (err) {
      // A damaged file fails here: the connection must not outlive the refusal (the file may be
      // moved aside next, storage/sqlite-check.ts).
      db.close();
      throw err;
    }
    this.commitSlice = db.transaction((from: number, to: number) => {
      const ins = this.insert;
      for (let i = from; i < to; i++) {
        const q = this.sq[i]!;
        const kind = q >>> KIND_SHIFT;
        const v = kind === StoredKind.Number ? this.sv[i] : kind === StoredKind.Null ? null : kind === StoredKind.BigInt ? String(this.so[i]) : this.so[i];
        const r = ins.run(this.sm[i], this.st[i], v, q);
        const id = Number(r.lastInsertRowid);
        if (this.first === 0) this.first = id;
        this.last = id;
      }
    });
  }

  /** Rows waiting to be replayed (committed). */
  get waiting(): number {
    return this.first === 0 ? 0 : this.last - this.first + 1;
  }

  /** Rows staged, not yet committed. */
  get stagedRows(): number {
    return this.tail - this.head;
  }

  /** The id of the oldest waiting row (0 when none). */
  get firstId(): number {
    return this.first;
  }

  /**
   * The bdSeq for the next MQTT CONNECT: one more than the last one that reached the broker (0
   * after 255, and 0 for a new store). Attempts that never got a CONNACK reuse it.
   */
  nextBdSeq(): number {
    const row = this.db.prepare("SELECT value FROM meta WHERE key = 'bdSeq'").raw(true).get() as [number] | undefined;
    return row === undefined ? 0 : (row[0] + 1) & 255;
  }

  /** The broker took a CONNECT with `bdSeq` in its will: the next one must differ (written before the NBIRTH). */
  usedBdSeq(bdSeq: number): void {
    this.db.prepare("INSERT INTO meta(key, value) VALUES ('bdSeq', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(bdSeq);
  }

  /** The id values of (device, tag) are stored under, made once. */
  metricId(device: string, tag: string): number {
    const key = keyOf(device, tag);
    let id = this.metricIds.get(key);
    if (id === undefined) {
      id = Number(this.insertMetric.run(device, tag).lastInsertRowid);
      this.metricIds.set(key, id);
      this.metricNames[id] = [device, tag];
    }
    return id;
  }

  /** Stages one data change; `obj` is the value when it is not a number (kind String/BigInt). */
  append(metric: number, time: number, quality: number, kind: StoredKind, num: number, obj: string | bigint | undefined): void {
    if (this.closed) return;
    if (this.tail - this.head === this.o.maxStaged) {
      // The disk has not taken a row for a long time: the oldest staged change goes.
      this.so[this.head++] = undefined;
      this.dropped++;
    }
    if (this.tail === this.sm.length) this.makeRoom();
    const i = this.tail++;
    this.sm[i] = metric;
    this.st[i] = time;
    this.sq[i] = (quality & QUALITY_MASK) | (kind << KIND_SHIFT);
    this.sv[i] = num;
    this.so[i] = obj;
  }

  /**
   * Commits up to `sliceRows` staged rows in one transaction; returns how many are still
   * staged (call again in a later task while > 0). A failing disk keeps the rows staged.
   */
  commit(): number {
    if (this.tail === this.head || this.closed) return this.tail - this.head;
    const n = Math.min(this.tail - this.head, this.o.sliceRows);
    try {
      this.commitSlice(this.head, this.head + n);
    } catch (err) {
      this.failedCommits++;
      const message = err instanceof Error ? err.message : String(err);
      if (message !== this.lastError) this.log(`store-and-forward: commit failed: ${message}; ${this.tail - this.head} change(s) kept in memory`);
      this.lastError = message;
      return this.tail - this.head;
    }
    this.stored += n;
    this.so.fill(undefined, this.head, this.head + n);
    this.head += n;
    if (this.head === this.tail) this.head = this.tail = 0;
    return this.tail - this.head;
  }

  /**
   * Up to `limit` waiting rows from id `from` on (the oldest when `from` is 0), oldest first.
   * Rows of a metric the store does not know are skipped.
   */
  read(from: number, limit: number): StoredRow[] {
    if (this.first === 0) return [];
    const rows = this.readFrom.all(Math.max(from, this.first), limit) as [number, number, number, number | string | null, number][];
    const out: StoredRow[] = [];
    for (const [id, m, t, v, q] of rows) {
      const names = this.metricNames[m];
      if (names === undefined) continue;
      const kind = (q >>> KIND_SHIFT) as StoredKind;
      out.push({
        id,
        device: names[0],
        tag: names[1],
        time: t,
        quality: q & QUALITY_MASK,
        kind,
        num: kind === StoredKind.Number ? Number(v) : 0,
        obj: kind === StoredKind.String ? String(v) : kind === StoredKind.BigInt ? BigInt(String(v)) : undefined,
      });
    }
    return out;
  }

  /** Rows through `id` were sent (or are dropped): they leave the store. */
  release(id: number, replayed: number): void {
    if (this.first === 0 || id < this.first) return;
    this.deleteThrough.run(id);
    this.replayed += replayed;
    if (id >= this.last) this.first = this.last = 0;
    else this.first = id + 1;
  }

  /**
   * One step of retention (call every few seconds): drops at most `chunk` of the oldest rows
   * when they are older than maxAge or the file is over maxSize. Returns rows dropped.
   */
  retain(chunk = 2000): number {
    if (this.first === 0 || this.closed) return 0;
    let through = 0;
    const cutoff = this.now() - this.o.maxAge;
    const oldest = this.oldest.get(this.first) as [number] | undefined;
    if (oldest !== undefined && oldest[0] < cutoff) {
      // Rows are in time order (almost: devices' clocks agree): the expired ones are at the front.
      const expired = this.db.prepare("SELECT max(id) FROM (SELECT id FROM buffer WHERE id >= ? AND t < ? ORDER BY id LIMIT ?)").raw(true).get(this.first, cutoff, chunk) as [
        number | null,
      ];
      through = expired[0] ?? 0;
    }
    if (through === 0 && this.usedBytes() > this.o.maxSize * 0.95) through = Math.min(this.last, this.first + chunk - 1);
    if (through === 0) return 0;
    const n = through - this.first + 1;
    this.deleteThrough.run(through);
    if (through >= this.last) this.first = this.last = 0;
    else this.first = through + 1;
    this.dropped += n;
    this.log(`store-and-forward: dropped the ${n} oldest stored change(s) (${this.usedBytes() > this.o.maxSize * 0.95 ? "over maxSize" : "older than maxAge"})`);
    return n;
  }

  /** Drops rows read but not replayable (their tag is gone from the map). */
  countDropped(n: number): void {
    this.dropped += n;
  }

  /** Bytes of the database's pages in use (free pages are reused, so the file stays near this). */
  usedBytes(): number {
    const pages = this.db.pragma("page_count", { simple: true }) as number;
    const free = this.db.pragma("freelist_count", { simple: true }) as number;
    const size = this.db.pragma("page_size", { simple: true }) as number;
    return (pages - free) * size;
  }

  /** Commits everything staged (a stop) and closes the file. */
  close(): void {
    if (this.closed) return;
    for (let guard = 0; this.tail > this.head && guard < 1_000_000; guard++) {
      const before = this.tail - this.head;
      if (this.commit() === before) break;
    }
    const left = this.tail - this.head;
    if (left > 0) {
      this.dropped += left;
      this.log(`store-and-forward: ${left} change(s) could not be written before closing`);
      this.head = this.tail = 0;
    }
    this.closed = true;
    this.db.close();
  }

  /** Moves the staged rows to the front, or doubles the arrays when they are mostly in use. */
  private makeRoom(): void {
    const n = this.tail - this.head;
    const size = n * 2 > this.sm.length ? this.sm.length * 2 : this.sm.length;
    this.sm = moved(this.sm, new Int32Array(size), this.head, this.tail);
    this.st = moved(this.st, new Float64Array(size), this.head, this.tail);
    this.sq = moved(this.sq, new Uint16Array(size), this.head, this.tail);
    this.sv = moved(this.sv, new Float64Array(size), this.head, this.tail);
    this.so = this.so.slice(this.head, this.tail);
    this.head = 0;
    this.tail = n;
  }
}

function moved<T extends Int32Array | Float64Array | Uint16Array>(from: T, to: T, head: number, tail: number): T {
  to.set(from.subarray(head, tail));
  return to;
}

function keyOf(device: string, tag: string): string {
  return `${device}/${tag}`;
}
