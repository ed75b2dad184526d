// Damaged files (DESIGN: Damaged files): a file the gateway keeps in its data folder (a SQLite
// database, a cache, its certificate) that cannot be used is moved aside whole, never deleted,
// to `<name>.damaged-<time>` beside it, and the part that owns it starts a new one. What was
// moved, why, and what to do with it is one report (DamagedFile), plain data so that a worker
// thread can hand it over; DamagedFiles collects the reports of a process for its log, status
// page, /metrics and event.
//
// A SQLite database moves with its journal files (-wal, -shm, -journal), renamed so that the
// moved database still finds them: sqlite3 opening `history.db.damaged-<time>` reads
// `history.db.damaged-<time>-wal`, with the last transactions in it.
import { existsSync, renameSync } from "node:fs";
import { basename } from "node:path";

/** What the moved file was, for the metrics label: one per kind of file the gateway keeps. */
export type DamagedKind = "history" | "northbound" | "device-map-cache" | "certificate";

export const DAMAGED_KINDS: readonly DamagedKind[] = ["history", "northbound", "device-map-cache", "certificate"];

/** One file moved aside. Plain data (it crosses from worker threads). */
export interface DamagedFile {
  readonly kind: DamagedKind;
  /** In words: "history database". */
  readonly what: string;
  /** Where it was (and where the new one is). */
  readonly file: string;
  /** Where it is now. */
  readonly movedTo: string;
  /** The files moved with it (a database's -wal, -shm), at their new names. */
  readonly companions: readonly string[];
  /** Why: SQLite's message, or the first problems quick_check found. */
  readonly reason: string;
  /** Date.now() when it was moved. */
  readonly at: number;
  /** What was lost with it, in words ("1,234 stored change(s)"), when known. */
  readonly lost?: string;
  /** What the operator can do with the moved file. */
  readonly advice: string;
}

/** How a kind of file is named and what to do with it once moved. */
export interface DamagedFileInfo {
  readonly kind: DamagedKind;
  readonly what: string;
  /** Suffixes of the files that go with it (["-wal", "-shm", "-journal"] for SQLite). */
  readonly companions?: readonly string[];
  /** What the operator can do with the moved file; `{moved}` stands for its path. */
  readonly advice: string;
}

/** A SQLite database's journal files. */
export const SQLITE_COMPANIONS: readonly string[] = ["-wal", "-shm", "-journal"];

/** The advice for a moved SQLite database. */
export const SQLITE_ADVICE =
  "keep it to recover what it holds (sqlite3 {moved} .recover | sqlite3 recovered.db, then look at recovered.db), or delete it (with the files named like it) when it is not needed";

/** `2025-01-02T03:04:05.678Z` as `20250102T030405Z`: sortable, and no colon (FAT, Windows shares). */
function stamp(at: number): string {
  return new Date(at).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

/**
 * Renames `file` (and its companions) to `<file>.damaged-<time>`, with `-2`, `-3`, ... when that
 * name is taken. Throws what rename throws (a read-only or full file system): the caller's part
 * then cannot start, and says so.
 */
export function moveAside(file: string, info: DamagedFileInfo, reason: string, extra: { readonly lost?: string; readonly at?: number } = {}): DamagedFile {
  const at = extra.at ?? Date.now();
  const suffixes = info.companions ?? [];
  let target = `${file}.damaged-${stamp(at)}`;
  for (let n = 2; taken(target, suffixes); n++) target = `${file}.damaged-${stamp(at)}-${n}`;
  // The main file first: with it gone, an open of `file` makes a new database, whatever is left.
  renameSync(file, target);
  const companions: string[] = [];
  for (const s of suffixes) {
    if (!existsSync(file + s)) continue;
    renameSync(file + s, target + s);
    companions.push(target + s);
  }
  return { kind: info.kind, what: info.what, file, movedTo: target, companions, reason, at, lost: extra.lost, advice: info.advice.replaceAll("{moved}", target) };
}

function taken(target: string, suffixes: readonly string[]): boolean {
  return existsSync(target) || suffixes.some((s) => existsSync(target + s));
}

/** The report as one log line: what, where it went, why, what was lost, what to do. */
export function describeDamaged(d: DamagedFile): string {
  const withIt = d.companions.length > 0 ? ` (with ${d.companions.map((c) => basename(c).slice(basename(d.movedTo).length)).join(", ")})` : "";
  const lost = d.lost === undefined ? "" : `; lost with it: ${d.lost}`;
  return `${d.what} ${d.file} is damaged (${d.reason}): moved aside to ${d.movedTo}${withIt} and started anew${lost}. What to do: ${d.advice}`;
}

/** The reports of this process, in order; each is logged once, as it comes. */
export class DamagedFiles {
  private readonly reports: DamagedFile[] = [];
  /** Told of each report after it is logged (the server raises its event). */
  onReport: ((d: DamagedFile) => void) | undefined = undefined;

  /** `error` for a file whose content is lost to the gateway; `warn` for a cache, made again from its source. */
  constructor(private readonly log: { error(message: string): void; warn(message: string): void }) {}

  /** A file was moved aside. */
  readonly note = (d: DamagedFile): void => {
    this.reports.push(d);
    if (d.kind === "device-map-cache") this.log.warn(describeDamaged(d));
    else this.log.error(describeDamaged(d));
    this.onReport?.(d);
  };

  get list(): readonly DamagedFile[] {
    return this.reports;
  }

  /** Files of `kind` moved aside since the start. */
  count(kind: DamagedKind): number {
    let n = 0;
    for (const d of this.reports) if (d.kind === kind) n++;
    return n;
  }
}
