// The history database (DESIGN: History): one SQLite file, WAL, synchronous=NORMAL.
//
// Schema, chosen for the access pattern (one series, by time) and for bytes on an SD card:
// - `series(id, node, type)`: one row per historized node; `node` is the NodeId's text form,
//   `type` the BuiltinType of its scalar values (0 until the first value arrives).
// - one table per series, `h<id>(ts INTEGER PRIMARY KEY, v INTEGER, st INTEGER)`: the timestamp
//   (ms since 1970) is the rowid itself, so a row is ~20 bytes for a Double and ~13 for a
//   register value, and appends always land on the right edge of the b-tree (full leaf pages,
//   no page splits in the middle). A (series, ts) WITHOUT ROWID table is larger: the series id
//   is repeated in every row and interleaved inserts leave pages partly empty.
// - `v` has INTEGER affinity: SQLite keeps integral numbers as 0-8 byte integers and fractional
//   ones as 8-byte REAL. Float values are stored as their 32 bits (4 bytes), Booleans as 0/1
//   (0 bytes), Int64/UInt64 as 64-bit integers. A value of another type than the series' (an
//   array, a string, a NaN) is stored as its binary Variant encoding in a BLOB; no value is NULL.
// - `st` is the StatusCode, NULL for Good (0 bytes). The source timestamp is the key; the server
//   timestamp is not stored (the gateway stamps samples when it polls them, so they coincide).
//   Sub-millisecond parts are dropped; two samples of one series in the same millisecond keep
//   the later one.
// - `staging(seq, series, ts, v, st)`: flushes append here, in one place at the end of one
//   b-tree, so a flush writes a few pages whatever the number of series. Writing each flush
//   straight into the series' tables dirtied one page per series per flush, kilobytes written to
//   the card per stored sample with 100 tags flushed every second. The
//   staged rows move to their series' tables in bulk (compact(): once a minute, when many are
//   staged, and before any read), touching each series' last page once per move.
import Database from "better-sqlite3";
import { BinaryReader } from "../ua/binary-reader.js";
import { BinaryWriter } from "../ua/binary-writer.js";
import { decodeVariant, encodeVariant } from "../ua/builtin-codec.js";
import { BuiltinType, VariantArrayType, type DataValue, type NodeId, type Variant } from "../ua/builtins.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { nodeIdToString } from "../ua/node-id.js";
import { isNumericType, ValueForm, type SampleRing } from "./sample-ring.js";
import { HISTORY_SCHEMA_READABLE_FROM, HISTORY_SCHEMA_VERSION } from "./schema-version.js";
import { sqliteFileInfo } from "../storage/sqlite-check.js";
import { extentWith, mergeRows, type Row } from "./row-merge.js";

type Db = Database.Database;
type Statement = Database.Statement;

/** The history database as a damaged file (storage/damaged.ts): moved aside whole, with its WAL. */
export const HISTORY_FILE = sqliteFileInfo("history", "history database");

/** Bounds that stand for "no bound" in range queries (past any JS Date). */
export const TIME_MIN = -8.64e15;
export const TIME_MAX = 8.64e15;

/** One historized node as the store knows it. */
export class Series {
  /** BuiltinType of the series' scalar values, 0 while unknown. */
  type = 0;
  insert: Statement | undefined = undefined;
  private asc: Statement | undefined = undefined;
  private desc: Statement | undefined = undefined;

  constructor(
    readonly id: number,
    readonly key: string,
    private readonly store: HistoryStore,
  ) {}

  get table(): string {
    return `h${this.id}`;
  }

  /** Rows in [lo, hi) ascending or in (lo, hi] descending, at most `limit`, as [ts, v, st] tuples. */
  rows(lo: number, hi: number, ascending: boolean, limit: number): unknown[][] {
    this.store.readyToRead();
    let stmt = ascending ? this.asc : this.desc;
    if (!stmt) {
      stmt = ascending
        ? this.store.prepare(`SELECT ts, v, st FROM ${this.table} WHERE ts >= ? AND ts < ? ORDER BY ts LIMIT ?`)
        : this.store.prepare(`SELECT ts, v, st FROM ${this.table} WHERE ts > ? AND ts <= ? ORDER BY ts DESC LIMIT ?`);
      stmt.raw(true);
      if (this.type === BuiltinType.Int64 || this.type === BuiltinType.UInt64) stmt.safeIntegers(true);
      if (ascending) this.asc = stmt;
      else this.desc = stmt;
    }
    // Stored timestamps are whole ms: [lo, hi) is ts >= ceil(lo) AND ts < ceil(hi); (lo, hi] is
    // ts > floor(lo) AND ts <= floor(hi).
    const rows = (ascending ? stmt.all(Math.ceil(lo), Math.ceil(hi), limit) : stmt.all(Math.floor(lo), Math.floor(hi), limit)) as unknown[][];
    const extra = this.store.overlay?.get(this.id);
    return extra === undefined ? rows : mergeRows(rows, extra, lo, hi, ascending, limit);
  }

  /** Drops cached statements (after the type became known: Int64 needs safe integers). */
  resetStatements(): void {
    this.asc = undefined;
    this.desc = undefined;
  }
}

export interface HistoryStoreOptions {
  /** Largest size of the database and its WAL together, in bytes; 0 = unbounded. */
  maxSize?: number;
  /**
   * The SQLite page cache in bytes, fixed. Unset, it follows the series: four pages each, at
   * least 8 MiB and at most 64 MiB, because every flush touches the rightmost leaf and interior
   * pages of each series, and with those evicted a flush costs several times more CPU.
   */
  cacheSize?: number;
  /**
   * A connection that only reads (a HistoryRead worker's, or a tool's), beside the one that
   * writes: WAL lets it read while the other writes. It never moves staged samples itself.
   */
  readonly?: boolean;
  /**
   * Read-only connections: called before each read, to have the writing connection move the
   * staged samples (reads see every flushed sample).
   */
  beforeRead?: () => void;
}

/**
 * The schema version rule of src/history/schema-version.ts: a database that a newer build
 * migrated stays open to this one while that build says that this one can read it; otherwise
 * it is refused with what to do, never misread. Both numbers are in PRAGMA user_version (the
 * header field SQLite leaves to the application; no table of its own): the version in the low
 * 16 bits, readable_from above them. 0 is a new database or one from before versions were
 * stamped (the same layout as version 1).
 */
export function schemaStamp(userVersion: number): { version: number; readableFrom: number } {
  const version = userVersion & 0xffff;
  return { version, readableFrom: userVersion >>> 16 || version };
}

function checkSchema(db: Db, path: string): void {
  const { version, readableFrom } = schemaStamp(db.pragma("user_version", { simple: true }) as number);
  if (version > HISTORY_SCHEMA_VERSION && readableFrom > HISTORY_SCHEMA_VERSION) {
    throw new Error(
      `history database ${path} has schema ${version}, readable by builds of schema ${readableFrom} or later; this build reads schema ${HISTORY_SCHEMA_VERSION}: ` +
        "run the version that wrote it, or move the file away to start a new history",
    );
  }
}

/** Stamps a new or older database with this build's version; a newer one keeps its own. */
function stampSchema(db: Db): void {
  const { version } = schemaStamp(db.pragma("user_version", { simple: true }) as number);
  if (version >= HISTORY_SCHEMA_VERSION) return;
  // Migrations from version N to N + 1 go here, in order, each in the transaction below.
  db.transaction(() => {
    db.pragma(`user_version = ${(HISTORY_SCHEMA_READABLE_FROM << 16) | HISTORY_SCHEMA_VERSION}`);
  })();
}

/** Staged rows moved per transaction. */
const COMPACT_CHUNK = 20_000;
/** Rows deleted per statement (and transaction) by retention. */
const DELETE_CHUNK = 1000;
/** Rows fetched per query by large reads. */
const READ_CHUNK = 8192;
const f32 = new Float32Array(1);
const i32 = new Int32Array(f32.buffer);

export class HistoryStore {
  readonly path: string;
  readonly pageSize: number;
  /** Bytes the database file may reach (max_page_count), 0 = unbounded. */
  readonly fileBudget: number;
  /** Bytes the WAL is kept near (autocheckpoint threshold and journal_size_limit). */
  readonly walBudget: number;
  private readonly db: Db;
  private readonly byKey = new Map<string, Series>();
  private readonly byId = new Map<number, Series>();
  private readonly stageInsert: Statement;
  private readonly stageSelect: Statement;
  private readonly stageDelete: Statement;
  /** Rows in the staging table: flushed, not yet in their series' table. */
  staged = 0;
  /**
   * A read-only connection's overlay for the read under way (read-overlay.ts), by series id:
   * rows a series' reads see beside its table.
   */
  overlay: ReadonlyMap<number, readonly Row[]> | undefined;
  private readonly setType: Statement;
  private readonly addSeries: Statement;
  private readonly findSeries: Statement;
  /** This connection only reads (HistoryStoreOptions.readonly). */
  readonly readonly: boolean;
  private readonly beforeRead: (() => void) | undefined;
  private readonly writer = new BinaryWriter(Buffer.allocUnsafe(256), 16 << 20);
  private readonly reader = new BinaryReader();
  /** The configured cache size, or undefined to follow the series. */
  private readonly fixedCache: number | undefined;
  private cacheBytes = 0;

  constructor(path: string, options: HistoryStoreOptions = {}) {
    this.path = path;
    this.readonly = options.readonly === true;
    this.beforeRead = options.beforeRead;
    const db = this.readonly ? new Database(path, { readonly: true, fileMustExist: true }) : new Database(path);
    this.db = db;
    try {
      if (!this.readonly) {
        // auto_vacuum must be chosen before the first table exists; INCREMENTAL lets a shrunk size
        // limit give pages back to the file system in bounded steps (incremental_vacuum).
        db.pragma("auto_vacuum = INCREMENTAL");
        db.pragma("journal_mode = WAL");
        db.pragma("synchronous = NORMAL");
      }
      this.pageSize = db.pragma("page_size", { simple: true }) as number;
      this.fixedCache = options.cacheSize;
      const maxSize = options.maxSize ?? 0;
      // The WAL grows to the autocheckpoint threshold plus one flush, then restarts from the top;
      // journal_size_limit truncates it back after a checkpoint. Two WAL budgets are kept free.
      this.walBudget = maxSize > 0 ? Math.min(4 << 20, Math.max(64 << 10, Math.floor(maxSize / 8))) : 4 << 20;
      this.fileBudget = maxSize > 0 ? Math.max(maxSize - 2 * this.walBudget, 16 * this.pageSize) : 0;
      if (!this.readonly) {
        db.pragma(`wal_autocheckpoint = ${Math.max(16, Math.floor(this.walBudget / this.pageSize))}`);
        db.pragma(`journal_size_limit = ${this.walBudget}`);
        this.applyPageLimit();
      }
      // A reader refuses a database it cannot read as the writer does; only the writer stamps it.
      checkSchema(db, path);
      if (!this.readonly) {
        db.exec("CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, node TEXT NOT NULL UNIQUE, type INTEGER NOT NULL DEFAULT 0)");
        db.exec("CREATE TABLE IF NOT EXISTS staging(seq INTEGER PRIMARY KEY, series INTEGER NOT NULL, ts INTEGER NOT NULL, v INTEGER, st INTEGER)");
      }
      this.setType = db.prepare("UPDATE series SET type = ? WHERE id = ?");
      this.addSeries = db.prepare("INSERT INTO series(node) VALUES (?)");
      this.findSeries = db.prepare("SELECT id, type FROM series WHERE node = ?").raw(true);
      this.stageInsert = db.prepare("INSERT INTO staging(series, ts, v, st) VALUES (?, ?, ?, ?)");
      // Safe integers: an Int64 value must come back exact; the others are turned into numbers.
      this.stageSelect = db.prepare("SELECT seq, series, ts, v, st FROM staging ORDER BY seq LIMIT ?").raw(true).safeIntegers(true);
      this.stageDelete = db.prepare("DELETE FROM staging WHERE seq <= ?");
      this.staged = this.readonly ? 0 : (db.prepare("SELECT count(*) FROM staging").raw(true).get() as number[])[0];
      for (const row of db.prepare("SELECT id, node, type FROM series").all() as { id: number; node: string; type: number }[]) {
        const s = new Series(row.id, row.node, this);
        s.type = row.type;
        this.byKey.set(row.node, s);
        this.byId.set(row.id, s);
      }
      this.sizeCache();
      if (!this.readonly) stampSchema(db);
    } catch (err) {
      // A damaged file fails here, at its first read: the connection must not outlive the
      // refusal (the file may be moved aside next, storage/sqlite-check.ts).
      db.close();
      throw err;
    }
  }

  /** Four pages per series (leaf, interiors, a spare), between 8 and 64 MiB, unless fixed. */
  private sizeCache(): void {
    const bytes = this.fixedCache ?? Math.min(64 << 20, Math.max(8 << 20, this.byKey.size * 4 * this.pageSize));
    if (bytes === this.cacheBytes) return;
    this.cacheBytes = bytes;
    this.db.pragma(`cache_size = ${-Math.ceil(bytes / 1024)}`);
  }

  /** @internal Series use it for their cached statements. */
  prepare(sql: string): Statement {
    return this.db.prepare(sql);
  }

  get seriesCount(): number {
    return this.byKey.size;
  }

  allSeries(): IterableIterator<Series> {
    return this.byKey.values();
  }

  find(nodeId: NodeId): Series | undefined {
    return this.findKey(nodeIdToString(nodeId));
  }

  /**
   * The series of a node by its NodeId's text form. A read-only connection looks again in the
   * database for a series it does not know, or whose type was not known yet: the writing
   * connection may have created it, or stored its first value, since.
   */
  findKey(key: string): Series | undefined {
    const s = this.byKey.get(key);
    if (!this.readonly || (s !== undefined && s.type !== 0)) return s;
    const row = this.findSeries.get(key) as [number, number] | undefined;
    if (row === undefined) return s;
    if (s !== undefined) {
      if (row[1] !== s.type) {
        s.type = row[1];
        s.resetStatements();
      }
      return s;
    }
    const found = new Series(row[0], key, this);
    found.type = row[1];
    this.byKey.set(key, found);
    this.byId.set(found.id, found);
    return found;
  }

  /** Before a read: staged samples move to their tables (here, or by the writing connection). */
  readyToRead(): void {
    if (this.readonly) this.beforeRead?.();
    else if (this.staged > 0) this.compact();
  }

  /** The series of a node, created (row and table) when new. */
  ensureSeries(nodeId: NodeId): Series {
    return this.ensureSeriesKey(nodeIdToString(nodeId));
  }

  /** The series of a NodeId's text form, created when new. */
  ensureSeriesKey(key: string): Series {
    let s = this.byKey.get(key);
    if (s) return s;
    const id = this.db.transaction(() => {
      const info = this.addSeries.run(key);
      const newId = Number(info.lastInsertRowid);
      this.db.exec(`CREATE TABLE h${newId}(ts INTEGER PRIMARY KEY, v INTEGER, st INTEGER)`);
      return newId;
    })();
    s = new Series(id, key, this);
    this.byKey.set(key, s);
    this.byId.set(id, s);
    this.sizeCache();
    return s;
  }

  /**
   * Writes samples [from, from+count) of a ring (wrapping at its capacity) to the staging table
   * in one transaction; `series` maps the ring's series indexes to series. Throws what SQLite
   * throws (SQLITE_FULL when the size cap is hit): nothing of the batch is then stored.
   */
  writeBatch(ring: SampleRing, series: readonly (Series | undefined)[], from: number, count: number): void {
    const cap = ring.capacity;
    let written = 0;
    this.db.transaction(() => {
      for (let k = 0, i = from; k < count; k++, i = i + 1 === cap ? 0 : i + 1) {
        const s = series[ring.series[i]];
        if (s === undefined) continue;
        const form = ring.form[i];
        if (s.type === 0 && form !== ValueForm.None && form !== ValueForm.OtherArray && isNumericType(ring.type[i])) {
          s.type = ring.type[i];
          this.setType.run(s.type, s.id);
          s.resetStatements();
        }
        const st = ring.status[i];
        this.stageInsert.run(s.id, Math.floor(ring.ts[i]), this.sqlOf(s.type, ring, i), st === StatusCodes.Good ? null : st);
        written++;
      }
    })();
    this.staged += written;
  }

  /** @internal The stored `v` of ring slot i in a series of `type` (see the schema note at the top). */
  sqlOf(type: number, ring: SampleRing, i: number): number | bigint | Buffer | null {
    const form = ring.form[i];
    if (form === ValueForm.None) return null;
    if (form === ValueForm.Number || form === ValueForm.BigInt) {
      if (ring.type[i] === type) {
        switch (type) {
          case BuiltinType.Float:
            f32[0] = ring.num[i];
            return i32[0];
          case BuiltinType.Int64:
          case BuiltinType.UInt64:
            return form === ValueForm.BigInt ? ring.big[i] : ring.num[i];
          default: {
            // SQLite stores NaN as NULL: keep it in the Variant form instead.
            const x = ring.num[i];
            if (x === x) return x;
          }
        }
      }
      return this.encoded(ring.scalar(i));
    }
    const v = ring.other.get(i);
    // Bytes: the binary Variant encoding, made by the thread that recorded the sample.
    if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    return this.toSql(type, v);
  }

  /**
   * Moves up to `maxRows` staged rows (oldest first) to their series' tables, COMPACT_CHUNK rows
   * per transaction; returns how many moved.
   */
  compact(maxRows = Infinity): number {
    let moved = 0;
    while (this.staged > 0 && moved < maxRows) {
      const rows = this.stageSelect.all(Math.min(COMPACT_CHUNK, maxRows - moved)) as unknown[][];
      if (rows.length === 0) {
        this.staged = 0;
        break;
      }
      this.db.transaction(() => {
        // Delete first: the pages it frees take the moved rows, so a move never grows the
        // file (it has to fit under max_page_count when the database is at its size cap).
        this.stageDelete.run(rows[rows.length - 1][0]);
        for (let i = 0; i < rows.length; i++) {
          const r = rows[i];
          const s = this.byId.get(Number(r[1]));
          if (s === undefined) continue;
          let ins = s.insert;
          if (!ins) ins = s.insert = this.db.prepare(`INSERT OR REPLACE INTO ${s.table}(ts, v, st) VALUES (?, ?, ?)`);
          const v = r[3];
          const keepBig = s.type === BuiltinType.Int64 || s.type === BuiltinType.UInt64;
          ins.run(Number(r[2]), typeof v === "bigint" && !keepBig ? Number(v) : v, r[4] === null ? null : Number(r[4]));
        }
      })();
      moved += rows.length;
      this.staged = Math.max(0, this.staged - rows.length);
    }
    return moved;
  }

  private toSql(type: number, v: Variant | undefined): number | bigint | Buffer | null {
    if (v === undefined || v.dataType === BuiltinType.Null) return null;
    if (v.dataType === type && v.arrayType === VariantArrayType.Scalar) {
      const x = v.value;
      switch (type) {
        case BuiltinType.Boolean:
          return x ? 1 : 0;
        case BuiltinType.Float:
          f32[0] = x as number;
          return i32[0];
        case BuiltinType.Int64:
          return x as bigint;
        case BuiltinType.UInt64:
          return BigInt.asIntN(64, x as bigint);
        default:
          // SQLite stores NaN as NULL: keep it in the Variant form instead.
          if (typeof x === "number" && x === x) return x;
      }
    }
    return this.encoded(v);
  }

  private encoded(v: Variant): Buffer {
    const w = this.writer.reset();
    encodeVariant(w, v);
    return Buffer.from(w.buffer.subarray(0, w.pos));
  }

  /** The Variant of a stored `v` (see the schema note at the top). */
  fromSql(type: number, v: unknown): Variant | undefined {
    if (v === null || v === undefined) return undefined;
    if (Buffer.isBuffer(v)) return decodeVariant(this.reader.setBuffer(v));
    switch (type) {
      case BuiltinType.Boolean:
        return { dataType: type, arrayType: VariantArrayType.Scalar, value: v !== 0 };
      case BuiltinType.Float:
        i32[0] = v as number;
        return { dataType: type, arrayType: VariantArrayType.Scalar, value: f32[0] };
      case BuiltinType.Int64:
        return { dataType: type, arrayType: VariantArrayType.Scalar, value: BigInt(v as bigint) };
      case BuiltinType.UInt64:
        return { dataType: type, arrayType: VariantArrayType.Scalar, value: BigInt.asUintN(64, BigInt(v as bigint)) };
      default:
        return isNumericType(type)
          ? { dataType: type, arrayType: VariantArrayType.Scalar, value: typeof v === "bigint" ? Number(v) : v }
          : undefined;
    }
  }

  /** A stored row as a DataValue with its source timestamp. */
  toDataValue(s: Series, row: unknown[]): DataValue {
    const st = row[2];
    return {
      value: this.fromSql(s.type, row[1]),
      statusCode: st === null ? StatusCodes.Good : Number(st),
      sourceTimestamp: Number(row[0]),
    };
  }

  /** Samples in [lo, hi) ascending, or in (lo, hi] descending. */
  read(s: Series, lo: number, hi: number, ascending: boolean, limit: number): DataValue[] {
    if (limit <= READ_CHUNK) {
      const rows = s.rows(lo, hi, ascending, limit);
      const out: DataValue[] = new Array(rows.length);
      for (let i = 0; i < rows.length; i++) out[i] = this.toDataValue(s, rows[i]);
      return out;
    }
    // Large reads go in chunks: each chunk's row arrays die young instead of 100,000 of them
    // living until the end.
    const out: DataValue[] = [];
    for (;;) {
      const rows = s.rows(lo, hi, ascending, Math.min(READ_CHUNK, limit - out.length));
      for (let i = 0; i < rows.length; i++) out.push(this.toDataValue(s, rows[i]));
      if (rows.length < READ_CHUNK || out.length >= limit) return out;
      const last = Number(rows[rows.length - 1][0]);
      if (ascending) lo = last + 1;
      else hi = last - 1;
    }
  }

  /** The last sample at or before `t`, or undefined. */
  atOrBefore(s: Series, t: number): DataValue | undefined {
    return this.read(s, TIME_MIN, t, false, 1)[0];
  }

  /** The first sample at or after `t`, or undefined. */
  atOrAfter(s: Series, t: number): DataValue | undefined {
    return this.read(s, t, TIME_MAX, true, 1)[0];
  }

  /** Oldest timestamp of a series, or undefined when it is empty. */
  /** `withStaged` false looks at the tag's table only (size retention must not write first). */
  oldest(s: Series, withStaged = true): number | undefined {
    if (withStaged) this.readyToRead();
    const row = this.db.prepare(`SELECT ts FROM ${s.table} ORDER BY ts LIMIT 1`).raw(true).get() as number[] | undefined;
    return extentWith(row?.[0], this.overlay?.get(s.id), true);
  }

  newest(s: Series, withStaged = true): number | undefined {
    if (withStaged) this.readyToRead();
    const row = this.db.prepare(`SELECT ts FROM ${s.table} ORDER BY ts DESC LIMIT 1`).raw(true).get() as number[] | undefined;
    return extentWith(row?.[0], this.overlay?.get(s.id), false);
  }

  /** The staging table's rows in the order they were staged, as [series, ts, v, st] (integers as bigints). */
  stagingRows(): unknown[][] {
    return this.db.prepare("SELECT series, ts, v, st FROM staging ORDER BY seq").raw(true).safeIntegers(true).all() as unknown[][];
  }

  /**
   * Deletes up to `limit` of the oldest rows older than `cutoff`, DELETE_CHUNK rows per
   * statement, each its own transaction: one delete never makes the WAL grow by more than a few
   * dozen pages. Returns how many rows went.
   */
  deleteBefore(s: Series, cutoff: number, limit: number): number {
    const stmt = this.db.prepare(`DELETE FROM ${s.table} WHERE ts IN (SELECT ts FROM ${s.table} WHERE ts < ? ORDER BY ts LIMIT ?)`);
    let deleted = 0;
    while (deleted < limit) {
      const n = Math.min(DELETE_CHUNK, limit - deleted);
      const changes = stmt.run(Math.ceil(cutoff), n).changes;
      deleted += changes;
      if (changes < n) break;
    }
    return deleted;
  }

  /** Runs `fn` in one transaction. */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  /** Bytes of pages holding data (the file minus its free pages). */
  usedBytes(): number {
    const pages = this.db.pragma("page_count", { simple: true }) as number;
    const free = this.db.pragma("freelist_count", { simple: true }) as number;
    return (pages - free) * this.pageSize;
  }

  fileBytes(): number {
    return (this.db.pragma("page_count", { simple: true }) as number) * this.pageSize;
  }

  freePages(): number {
    return this.db.pragma("freelist_count", { simple: true }) as number;
  }

  /**
   * Caps the file at its budget (SQLITE_FULL past it). SQLite never sets the cap below the
   * current size, so it is applied again after the file shrank.
   */
  applyPageLimit(): void {
    if (this.fileBudget > 0) this.db.pragma(`max_page_count = ${Math.floor(this.fileBudget / this.pageSize)}`);
  }

  /** Gives up to `pages` free pages back to the file system. */
  incrementalVacuum(pages: number): void {
    this.db.pragma(`incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
  }

  checkpoint(): void {
    this.db.pragma("wal_checkpoint(TRUNCATE)");
  }

  integrityCheck(): string {
    return String(this.db.pragma("integrity_check", { simple: true }));
  }

  get open(): boolean {
    return this.db.open;
  }

  close(): void {
    if (!this.db.open) return;
    // A clean close checkpoints and removes the WAL; a crash leaves it for the next open.
    this.db.close();
  }
}
