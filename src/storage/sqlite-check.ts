// The two ways a SQLite database of the gateway is found damaged (DESIGN: Damaged files), for
// every database it keeps (history.db, northbound.db):
// - SQLite refuses it when it is opened: SQLITE_NOTADB ("file is not a database": random bytes,
//   a header overwritten) or SQLITE_CORRUPT* ("database disk image is malformed": a file cut
//   short, a b-tree page the schema reads broken). openOrMoveAside() moves it aside and opens
//   a new one in its place.
// - It opens, but PRAGMA quick_check finds pages that are not what the b-trees say (pages
//   overwritten after a power cut on an SD card). quickCheck() runs it on a read-only
//   connection of its own, so that the file is never written before it is judged (a read-write
//   connection would checkpoint a hot WAL into a damaged file). quick_check reads every page:
//   its time grows with the file, so it runs on a worker thread, never on the event loop
//   (the history's writer runs it before its first write, check-worker.ts for the others).
// Any other failure (no permission, a full disk, a newer schema) is not damage: the file is
// left alone and the error goes to the part that opened it.
import Database from "better-sqlite3";
import { existsSync } from "node:fs";
import { moveAside, SQLITE_ADVICE, SQLITE_COMPANIONS, type DamagedFile, type DamagedFileInfo, type DamagedKind } from "./damaged.js";

/** What quick_check reports at most: the first problems name the place; the rest is the same story. */
const MAX_PROBLEMS = 5;
/** Longest reason kept (log line, page, event message). */
const MAX_REASON = 400;

/** A SQLite database of the gateway, as a damaged file, and how to count what it held. */
export interface SqliteFileInfo extends DamagedFileInfo {
  /** A query of one number (rows waiting, ...) and its unit, for the lost count of a damaged copy. */
  readonly held?: { readonly sql: string; readonly unit: string };
}

export function sqliteFileInfo(kind: DamagedKind, what: string, held?: SqliteFileInfo["held"]): SqliteFileInfo {
  return { kind, what, companions: SQLITE_COMPANIONS, advice: SQLITE_ADVICE, held };
}

/** What quickCheck found wrong. */
export interface CheckVerdict {
  readonly problem: string;
  /** What the damaged file held, in words (SqliteFileInfo.held). */
  readonly lost?: string;
  /** The same as a number, when its pages still answered the count. */
  readonly held?: number;
}

/** The errors that mean the file is damaged (better-sqlite3 gives SQLite's extended code). */
export function isDamage(err: unknown): boolean {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" && (code === "SQLITE_NOTADB" || code.startsWith("SQLITE_CORRUPT"));
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function shortened(text: string): string {
  const flat = text.replace(/\s*\n\s*/g, "; ");
  return flat.length <= MAX_REASON ? flat : `${flat.slice(0, MAX_REASON - 1)}…`;
}

/**
 * PRAGMA quick_check of `file` on a read-only connection. Undefined when there is no file, when
 * it is sound, or when it cannot be opened for a reason that is not damage (the part's own open
 * then says what).
 */
export function quickCheck(file: string, info: SqliteFileInfo): CheckVerdict | undefined {
  if (!existsSync(file)) return undefined;
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (err) {
    return isDamage(err) ? { problem: shortened(messageOf(err)), ...heldIn(undefined, info) } : undefined;
  }
  try {
    const rows = db.pragma(`quick_check(${MAX_PROBLEMS})`) as { quick_check: string }[];
    if (rows.length === 1 && rows[0]!.quick_check === "ok") return undefined;
    return { problem: shortened(`quick_check: ${rows.map((r) => r.quick_check).join("; ")}`), ...heldIn(db, info) };
  } catch (err) {
    if (!isDamage(err)) return undefined;
    return { problem: shortened(messageOf(err)), ...heldIn(db, info) };
  } finally {
    db.close();
  }
}

/** The count of `info.held` in a damaged database, when its pages still answer it. */
function heldIn(db: Database.Database | undefined, info: SqliteFileInfo): { lost?: string; held?: number } {
  if (info.held === undefined) return {};
  try {
    if (db === undefined) throw new Error("not readable");
    const held = Number((db.prepare(info.held.sql).raw(true).get() as unknown[] | undefined)?.[0] ?? 0);
    return { lost: `${held} ${info.held.unit}`, held };
  } catch {
    return { lost: unknownHeld(info) };
  }
}

function unknownHeld(info: SqliteFileInfo): string | undefined {
  return info.held === undefined ? undefined : `an unknown number of ${info.held.unit} (the file no longer says how many)`;
}

/** quickCheck, then the move aside of a damaged file (on the calling thread; renames only). */
export function checkOrMoveAside(file: string, info: SqliteFileInfo, note: (d: DamagedFile) => void): void {
  const verdict = quickCheck(file, info);
  if (verdict !== undefined) note(moveAside(file, info, verdict.problem, { lost: verdict.lost }));
}

/**
 * `open()`; when SQLite refuses the file as damaged, it is moved aside and `open()` makes a new
 * one. `open` must close what it opened before it throws.
 */
export function openOrMoveAside<T>(file: string, info: SqliteFileInfo, open: () => T, note: (d: DamagedFile) => void): T {
  try {
    return open();
  } catch (err) {
    if (!isDamage(err) || !existsSync(file)) throw err;
    note(moveAside(file, info, shortened(messageOf(err)), { lost: unknownHeld(info) }));
    return open();
  }
}
