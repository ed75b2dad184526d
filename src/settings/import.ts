// `fieldgate settings import --from DIR --to DIR`: the settings a person left in the FAT drive's
// fieldgate/ folder, applied at boot before the gateway starts (fieldgate-settings.service), all
// of them or none.
//
//   1. read and check the set (import-set.ts); any issue: IMPORT-RESULT.txt says what to fix,
//      the status file says the same for the page, and nothing else changes
//   2. stage: each new file written and fsynced beside the one it replaces (.<name>.import)
//   3. commit: the journal (<configDir>/.settings-import.json) lists what goes where; from here
//      on the import is finished by whichever run finds the journal
//   4. apply: each staged file renamed over its target, the old one kept as <name>.previous
//   5. the versions: each file kept as a version by "FIELDGATE drive" in the page's store
//      (import-versions.ts; what it changed was worked out before the commit)
//   6. on the drive: the set moved to fieldgate/applied/<time>/, but admin-password.txt, which
//      is removed (admin-password.ts), IMPORT-RESULT.txt written
//   7. the status file written, the journal removed
// A power cut before 3 leaves every target as it was and the set on the drive, imported again
// at the next boot; after 3 the next run completes 4 to 7 from the journal (each step looks
// before it acts, so it can be repeated), and a set is never applied twice: it has left the
// folder once its import is done. Every target is the old file or the new one at every moment
// (atomic-file.ts), never half of one.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { MapDrivers } from "../config/device-map.js";
import type { ConfigIssue } from "../config/errors.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import { parsePasswordHash, verifyPassword } from "../sessions/users.js";
import { PASSWORD_FILE, readPasswordFile } from "./admin-password.js";
import { fsyncDir, keepPrevious, removeFile, replaceFile, writeSynced } from "./atomic-file.js";
import { readSet, sha256Of, type SetFile, type SettingsName } from "./import-set.js";
import { appliedText, crlf, refusedText, RESULT_FILE, type ImportStatus } from "./import-result.js";
import { recordImported, versionBefore } from "./import-versions.js";

export interface ImportPaths {
  /** The drive's fieldgate/ folder. */
  readonly from: string;
  /** Where gateway.yaml, devices.yaml and network.yaml go: /etc/fieldgate. */
  readonly configDir: string;
  /** SSH's folder on the data partition: /data/etc/ssh (authorized_keys/root, enabled). */
  readonly sshDir: string;
  /** What the page reads: /var/lib/fieldgate/settings-import.json. */
  readonly statusFile: string;
  /** The versions the page keeps of each file (/var/lib/fieldgate/versions); undefined: none recorded. */
  readonly versionsDir?: string;
}

export interface ImportOptions {
  readonly now?: () => Date;
  /** Tests stop at a named step to stand for a power cut there. */
  readonly step?: (name: string) => void;
}

export type ImportOutcome =
  | { readonly result: "nothing" }
  | { readonly result: "refused"; readonly issues: readonly ConfigIssue[]; readonly files: readonly string[]; readonly unchanged: boolean }
  | { readonly result: "applied"; readonly files: readonly string[]; readonly movedTo: string; readonly resumed: boolean; readonly notes: readonly string[] };

interface Action {
  readonly dest: string;
  readonly op: "write" | "remove";
  readonly keepPrevious: boolean;
}

interface JournalFile {
  readonly name: SettingsName;
  readonly shown: string;
  readonly sha256: string;
  readonly keys?: readonly string[];
  readonly actions: readonly Action[];
  /** What it changes, in words, for its version; undefined: no version is recorded. */
  readonly summary?: string;
  /** admin-password.txt: its user, and the hash the password became (in the gateway.yaml applied). */
  readonly user?: string;
  readonly hash?: string;
  /** The gateway's own gateway.yaml with that user: not a file of the drive. */
  readonly derived?: boolean;
}

interface Journal {
  readonly format: 1;
  readonly id: string;
  readonly at: string;
  readonly files: readonly JournalFile[];
  /** What could not be done before the commit that the outcome names (a version not kept). */
  readonly notes?: readonly string[];
}

const journalOf = (p: ImportPaths): string => join(p.configDir, ".settings-import.json");
const stagedOf = (dest: string): string => join(dirname(dest), `.${basename(dest)}.import`);

/** Imports the set in paths.from; `drivers`: those a device map may name (the gateway's registry). */
export async function importSettings(paths: ImportPaths, drivers: MapDrivers, opts: ImportOptions = {}): Promise<ImportOutcome> {
  const now = opts.now ?? (() => new Date());
  const step = opts.step ?? (() => {});
  const pending = readJournal(paths);
  if (pending !== undefined) return finish(paths, pending, step, true);

  const set = await readSet(paths.from, { configDir: paths.configDir, drivers });
  const shown = set.files.filter((f) => !f.derived).map((f) => f.shown);
  if (set.issues.length > 0) return refuse(paths, shown, set.files, set.issues, now());
  if (set.files.length === 0) return { result: "nothing" };

  const at = now();
  const notes: string[] = [];
  const gateway = set.files.find((f) => f.name === "gateway.yaml")?.value as GatewayConfig | undefined;
  const files: JournalFile[] = [];
  for (const f of set.files) {
    files.push({
      ...plan(f, paths),
      ...(await summaryOf(f, paths, drivers, notes)),
      ...(f.password !== undefined ? { user: f.password.user, hash: gateway?.users[f.password.user]?.password } : {}),
      ...(f.derived ? { derived: true } : {}),
    });
  }
  const journal: Journal = { format: 1, id: folderName(paths.from, at), at: at.toISOString(), files, ...(notes.length > 0 ? { notes } : {}) };
  // 2. Stage.
  for (const f of set.files) stage(f, journal.files.find((j) => j.name === f.name)!);
  step("staged");
  // 3. Commit.
  replaceFile(journalOf(paths), JSON.stringify(journal, null, 1), { mode: 0o600 });
  step("committed");
  return finish(paths, journal, step, false);
}

/** What `f` changes, for its version (and the file it replaces kept as the first one). */
async function summaryOf(f: SetFile, p: ImportPaths, drivers: MapDrivers, notes: string[]): Promise<{ summary?: string }> {
  if (p.versionsDir === undefined) return {};
  try {
    const summary = await versionBefore(p.versionsDir, f, join(p.configDir, f.name), drivers);
    return summary === undefined ? {} : { summary };
  } catch (err) {
    // The versions are the page's convenience: the import goes on without them.
    notes.push(`${f.shown} is not kept as a version for the status page: ${err instanceof Error ? err.message : String(err)}`);
    return {};
  }
}

/** Where each file goes, and how. */
function plan(f: SetFile, p: ImportPaths): JournalFile {
  const base = { name: f.name, shown: f.shown, sha256: f.sha256 };
  // admin-password.txt writes nothing of its own: the gateway.yaml of the set has its user.
  if (f.name === PASSWORD_FILE) return { ...base, actions: [] };
  if (f.name !== "authorized_keys") return { ...base, actions: [{ dest: join(p.configDir, f.name), op: "write", keepPrevious: true }] };
  const on = (f.keys?.length ?? 0) > 0;
  // sshd reads AuthorizedKeysFile /data/etc/ssh/authorized_keys/%u; ssh.service starts only
  // when `enabled` exists (image/rootfs/etc/systemd/system/ssh.service.d/fieldgate.conf).
  const keys = join(p.sshDir, "authorized_keys", "root");
  const enabled = join(p.sshDir, "enabled");
  return {
    ...base,
    keys: f.keys ?? [],
    actions: [
      { dest: keys, op: on ? "write" : "remove", keepPrevious: true },
      { dest: enabled, op: on ? "write" : "remove", keepPrevious: false },
    ],
  };
}

function stage(f: SetFile, j: JournalFile): void {
  for (const a of j.actions) {
    if (a.op !== "write") continue;
    const dir = dirname(a.dest);
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    const text = f.name === "authorized_keys" ? (basename(a.dest) === "enabled" ? "" : `${(j.keys ?? []).join("\n")}\n`) : f.text;
    const old = statOr(a.dest);
    // A new file: root's, readable by the gateway's group as its folder is (/etc/fieldgate is
    // root:fieldgate 0750); SSH's files root's alone, as sshd's StrictModes wants them.
    const ssh = f.name === "authorized_keys";
    const mode = old ? old.mode & 0o7777 : ssh ? (basename(a.dest) === "enabled" ? 0o644 : 0o600) : 0o640;
    const gid = old?.gid ?? (ssh ? 0 : statOr(dir)?.gid);
    writeSynced(stagedOf(a.dest), text, mode, old?.uid ?? 0, gid);
  }
  for (const dir of new Set(j.actions.map((a) => dirname(a.dest)))) fsyncDir(dir);
}

/** Steps 4 to 6; each looks before it acts, so a run after a power cut repeats what it must. */
async function finish(paths: ImportPaths, j: Journal, step: (name: string) => void, resumed: boolean): Promise<ImportOutcome> {
  const notes: string[] = [...(j.notes ?? [])];
  // 4. Apply.
  for (const f of j.files) {
    for (const a of f.actions) {
      const staged = stagedOf(a.dest);
      if (a.op === "write") {
        if (!existsSync(staged)) continue; // renamed by an earlier run
        if (a.keepPrevious && existsSync(a.dest)) keepPrevious(a.dest);
        renameSync(staged, a.dest);
        fsyncDir(dirname(a.dest));
      } else {
        removeFile(a.dest, { keepPrevious: a.keepPrevious });
      }
      step(`applied ${basename(a.dest)}`);
    }
  }
  // 5. The versions.
  for (const f of j.files) {
    if (paths.versionsDir === undefined || f.summary === undefined) continue;
    try {
      await recordImported(paths.versionsDir, f.name, f.actions[0]!.dest, f.summary, new Date(j.at));
    } catch (err) {
      notes.push(`${f.shown} is not kept as a version for the status page: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  step("versions recorded");
  // 6. The drive: the set leaves the folder (only files still as they were imported).
  const movedTo = `applied/${j.id}`;
  const onDrive = j.files.filter((f) => !f.derived);
  /** admin-password.txt files edited on the drive since the import: they stay there. */
  const kept = new Set<string>();
  const resultText = (): string => appliedText(new Date(j.at), j.files.map((f) => (kept.has(f.shown) ? { ...f, kept: true } : f)), movedTo);
  if (existsSync(paths.from)) {
    const moving = onDrive.filter((f) => f.name !== PASSWORD_FILE);
    if (moving.length > 0) {
      const target = join(paths.from, movedTo);
      mkdirSync(target, { recursive: true });
      for (const f of moving) {
        const src = join(paths.from, f.shown);
        if (!existsSync(src)) continue;
        if (sha256Of(src) !== f.sha256) {
          notes.push(`${f.shown} changed on the drive after it was imported: left where it is`);
          continue;
        }
        renameSync(src, join(target, f.shown));
        step(`moved ${f.shown}`);
      }
      fsyncDir(target);
      pruneApplied(join(paths.from, "applied"), j.id);
    }
    for (const f of onDrive) {
      if (f.name !== PASSWORD_FILE) continue;
      const done = await removePassword(paths.from, f, notes);
      if (done === "removed") step(`removed ${f.shown}`);
      if (done === "kept") kept.add(f.shown);
    }
    fsyncDir(paths.from);
    writeResult(paths.from, resultText());
    step("result written");
  } else {
    notes.push(`the drive's folder ${paths.from} is not there: the set was applied, but not moved to ${movedTo}`);
  }
  // 7. The status for the page; the journal goes last.
  const files = onDrive.map((f) => f.shown);
  writeStatus(paths, { format: 1, result: "applied", at: j.at, files, issues: [], movedTo, fingerprint: j.id, text: resultText() });
  step("status written");
  unlinkSync(journalOf(paths));
  fsyncDir(paths.configDir);
  return { result: "applied", files, movedTo, resumed, notes };
}

/**
 * admin-password.txt leaves the drive once its user is in place, when it still holds the password
 * that was imported (checked against the hash, as a login would: no digest of the password is
 * kept anywhere); one edited since stays, to be imported at the next start. "gone": removed by an
 * earlier run.
 */
async function removePassword(from: string, f: JournalFile, notes: string[]): Promise<"removed" | "kept" | "gone"> {
  const file = join(from, f.shown);
  if (!existsSync(file)) return "gone";
  const pw = readPasswordFile(file, f.shown);
  const hash = f.hash === undefined ? undefined : parsePasswordHash(f.hash);
  const same = !("file" in pw) && pw.user === f.user && hash !== undefined && typeof hash !== "string" && (await verifyPassword(pw.password, hash));
  if (!same) {
    notes.push(`${f.shown} changed on the drive after it was imported: left where it is, to be imported at the next start`);
    return "kept";
  }
  unlinkSync(file);
  return "removed";
}

function refuse(paths: ImportPaths, shown: readonly string[], files: readonly SetFile[], issues: readonly ConfigIssue[], at: Date): ImportOutcome {
  // Staged files of a run that a power cut stopped before its commit are not wanted any more.
  for (const f of files) for (const a of plan(f, paths).actions) rmSync(stagedOf(a.dest), { force: true });
  const fingerprint = createHash("sha256")
    .update(JSON.stringify([files.map((f) => [f.shown, f.sha256]), issues]))
    .digest("hex");
  const last = readStatus(paths);
  // The same refused set at the next boot: the drive and the status stay as they are.
  const unchanged = last?.result === "refused" && last.fingerprint === fingerprint && existsSync(join(paths.from, RESULT_FILE));
  if (!unchanged) {
    const text = refusedText(at, shown, issues);
    writeResult(paths.from, text);
    writeStatus(paths, { format: 1, result: "refused", at: at.toISOString(), files: shown, issues, fingerprint, text });
  }
  return { result: "refused", issues, files: shown, unchanged };
}

/** IMPORT-RESULT.txt, replaced whole (CRLF for Notepad). */
function writeResult(from: string, text: string): void {
  const tmp = join(from, `.${RESULT_FILE}.new`);
  writeSynced(tmp, crlf(text));
  renameSync(tmp, join(from, RESULT_FILE));
  fsyncDir(from);
}

function writeStatus(paths: ImportPaths, status: ImportStatus): void {
  mkdirSync(dirname(paths.statusFile), { recursive: true });
  replaceFile(paths.statusFile, `${JSON.stringify(status, null, 1)}\n`, { mode: 0o644 });
}

export function readStatus(paths: Pick<ImportPaths, "statusFile">): ImportStatus | undefined {
  try {
    return JSON.parse(readFileSync(paths.statusFile, "utf8")) as ImportStatus;
  } catch {
    return undefined;
  }
}

/**
 * A journal that cannot be read was never committed whole (it is written by rename): what it
 * stood for is imported again from the drive, and the damaged file is kept aside, named.
 */
function readJournal(paths: ImportPaths): Journal | undefined {
  const file = journalOf(paths);
  if (!existsSync(file)) return undefined;
  try {
    const j = JSON.parse(readFileSync(file, "utf8")) as Journal;
    if (j.format === 1 && Array.isArray(j.files) && typeof j.id === "string") return j;
  } catch {
    // Falls through to setting it aside.
  }
  renameSync(file, `${file}.damaged`);
  return undefined;
}

/** The drive keeps the last sets applied, newest first by their names (times); older ones go. */
export const KEEP_APPLIED = 10;

function pruneApplied(dir: string, keep: string): void {
  const sets = readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && /^\d{4}-\d{2}-\d{2}_\d{6}(-\d+)?$/.test(d.name))
    .map((d) => d.name)
    .sort(compareSets)
    .reverse();
  for (const old of sets.slice(KEEP_APPLIED)) if (old !== keep) rmSync(join(dir, old), { recursive: true, force: true });
}

/** By time, then by the -N of sets made in the same second. */
function compareSets(a: string, b: string): number {
  const [ta, na] = [a.slice(0, 17), Number(a.slice(18) || 1)];
  const [tb, nb] = [b.slice(0, 17), Number(b.slice(18) || 1)];
  return ta < tb ? -1 : ta > tb ? 1 : na - nb;
}

/** applied/2026-12-05_140211 (UTC), with -2, -3 ... when that folder exists. */
function folderName(from: string, at: Date): string {
  const base = at.toISOString().slice(0, 19).replace(/:/g, "").replace("T", "_");
  let name = base;
  for (let n = 2; existsSync(join(from, "applied", name)); n++) name = `${base}-${n}`;
  return name;
}


function statOr(path: string): { mode: number; uid: number; gid: number } | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}
