// What a HistoryRead sees beside the tags' tables when the writer has not moved every flushed
// sample there (write-thread.ts): its thread may not be running (a light history's samples wait
// in the spool file, spool.ts), or it is starting, checking the database, replaying an earlier
// run's spool, or waiting for a lock. A read does not wait for any of that: the read worker
// (read-worker.ts) takes the staging table's rows and the spool file's samples of the series
// it reads as an overlay, and every read of a series' rows (Series.rows) merges them in.
//
// For one series and millisecond the writer keeps the last sample it stores (store.ts), so the
// overlay does too: a table row gives way to a staged row, a staged row to a spooled sample (the
// spool holds the newest samples; one the writer has stored meanwhile is the same sample), and
// within each, the later one wins. The spool file is read before the read's snapshot is taken:
// a sample that leaves the file for the database meanwhile is then in the snapshot, or in both.
import { readFileSync } from "node:fs";
import { BuiltinType } from "../ua/builtins.js";
import { ValueForm, isNumericType } from "./sample-ring.js";
import { readSpool, type SpoolContents } from "./spool.js";
import type { HistoryStore, Series } from "./store.js";
import type { Row } from "./row-merge.js";

/** The spool file's records, or undefined without one (read before the read's snapshot). */
export function readSpoolFile(file: string | undefined): SpoolContents | undefined {
  if (file === undefined) return undefined;
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    // Emptied meanwhile: its samples are in the database.
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  // Whole records only: an append under way ends the file with one cut short, and bytes that are
  // not records are the writer's to move aside.
  return readSpool(bytes);
}

/**
 * The overlay of the series named `keys`: their staged rows and spooled samples by series id,
 * each ascending by ts with one row per ms. Inside the read's transaction (the staging table is
 * read in its snapshot).
 */
export function buildOverlay(store: HistoryStore, spool: SpoolContents | undefined, keys: Iterable<string>): Map<number, Row[]> {
  const byId = new Map<number, { series: Series; rows: Map<number, Row> }>();
  for (const key of keys) {
    const s = store.findKey(key);
    if (s !== undefined && !byId.has(s.id)) byId.set(s.id, { series: s, rows: new Map() });
  }
  if (byId.size === 0) return new Map();
  for (const r of store.stagingRows()) {
    const o = byId.get(Number(r[0]));
    if (o !== undefined) o.rows.set(Number(r[1]), [Number(r[1]), tableForm(o.series.type, r[2]), r[3] === null ? null : Number(r[3])]);
  }
  if (spool !== undefined) {
    const idOf = new Map<number, { series: Series; rows: Map<number, Row> }>();
    for (const [index, name] of spool.names) {
      const s = store.findKey(name);
      const o = s && byId.get(s.id);
      if (o !== undefined) idOf.set(index, o);
    }
    if (idOf.size > 0) {
      for (const { ring } of spool.records) {
        for (let i = 0; i < ring.capacity; i++) {
          const o = idOf.get(ring.series[i]!);
          if (o === undefined) continue;
          const s = o.series;
          // As the writer would: a series takes the type of its first numeric value.
          if (s.type === 0 && ring.form[i] !== ValueForm.None && ring.form[i] !== ValueForm.OtherArray && isNumericType(ring.type[i]!)) {
            s.type = ring.type[i]!;
            s.resetStatements();
          }
          const ts = Math.floor(ring.ts[i]!);
          const st = ring.status[i]!;
          o.rows.set(ts, [ts, tableForm(s.type, store.sqlOf(s.type, ring, i)), st === 0 ? null : st]);
        }
      }
    }
  }
  const out = new Map<number, Row[]>();
  for (const [id, o] of byId) {
    if (o.rows.size === 0) continue;
    out.set(id, [...o.rows.values()].sort((a, b) => (a[0] as number) - (b[0] as number)));
  }
  return out;
}

/** A value as the series' table query returns it: bigints for Int64/UInt64 series (safe integers), numbers otherwise. */
function tableForm(type: number, v: unknown): unknown {
  const big = type === BuiltinType.Int64 || type === BuiltinType.UInt64;
  if (big) return typeof v === "number" && Number.isInteger(v) ? BigInt(v) : v;
  return typeof v === "bigint" ? Number(v) : v;
}
