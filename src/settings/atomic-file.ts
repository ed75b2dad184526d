// Replacing a settings file so that a power cut at any moment leaves the old file or the new one,
// never half of one, and the one before kept beside it (devices.yaml.previous): the new text goes
// to a temporary file in the same folder and is fsynced, the old file gets a second name by a
// hard link (so the file's own name never points at nothing), then rename(2) puts the new one in
// place and the folder is fsynced so that the rename itself survives (POSIX rename is atomic
// within one file system; ext4 and vfat both honour fsync of a folder).
//
// Used by the FAT drive's import at boot and by `fieldgate network try|confirm` (processes of
// their own, where waiting on the disk blocks nobody), and off the loop (replaceFileOffLoop, the
// same steps on libuv's threads) by the gateway's page: an fsync on an SD card can take longer
// than a sampling interval, and the gateway's event loop is shared with sampling and clients.
import { open, link, rename, stat, unlink } from "node:fs/promises";
import { closeSync, existsSync, fsyncSync, linkSync, openSync, renameSync, statSync, unlinkSync, writeSync, fchownSync, fchmodSync } from "node:fs";
import { basename, dirname, join } from "node:path";

export interface ReplaceOptions {
  /** Keep the file being replaced as `<file>.previous` (replacing an older .previous). */
  readonly keepPrevious?: boolean;
  /** Mode, owner and group of a new file; a replaced file keeps its own. Default 0644, the caller's ids. */
  readonly mode?: number;
  readonly uid?: number;
  readonly gid?: number;
  /** Tests stop here to stand for a power cut: "written" (temp fsynced), "kept" (.previous linked), "renamed". */
  readonly step?: (name: "written" | "kept" | "renamed") => void;
}

export const previousOf = (file: string): string => `${file}.previous`;

/** The temporary name a new file is written under before it takes `file`'s place. */
export const pendingOf = (file: string): string => join(dirname(file), `.${basename(file)}.new`);

/** Writes `data` to `file` and fsyncs it, creating or truncating it (no atomicity of its own). */
export function writeSynced(file: string, data: string | Uint8Array, mode = 0o644, uid?: number, gid?: number): void {
  const fd = openSync(file, "w", mode);
  try {
    // The mode given applies to a new file only; an existing temp file may carry another.
    fchmodSync(fd, mode);
    if (uid !== undefined && gid !== undefined && isRoot()) fchownSync(fd, uid, gid);
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsync of a folder: makes the names created, renamed or removed in it durable. */
export function fsyncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Replaces (or creates) `file` with `data`, atomically; with keepPrevious the replaced text stays
 * as `<file>.previous`. A crash leaves at most a stale `.<name>.new`, which the next call overwrites.
 */
export function replaceFile(file: string, data: string | Uint8Array, opts: ReplaceOptions = {}): void {
  const old = statIfAny(file);
  const pending = pendingOf(file);
  writeSynced(pending, data, old ? old.mode & 0o7777 : (opts.mode ?? 0o644), old?.uid ?? opts.uid, old?.gid ?? opts.gid);
  opts.step?.("written");
  if (opts.keepPrevious && old !== undefined) keepPrevious(file);
  opts.step?.("kept");
  renameSync(pending, file);
  fsyncDir(dirname(file));
  opts.step?.("renamed");
}

/** replaceFile with each step on libuv's threads: the event loop goes on while the disk works. */
export async function replaceFileOffLoop(file: string, data: string | Uint8Array, opts: ReplaceOptions = {}): Promise<void> {
  const old = await stat(file).catch(() => undefined);
  const pending = pendingOf(file);
  const mode = old ? old.mode & 0o7777 : (opts.mode ?? 0o644);
  const uid = old?.uid ?? opts.uid;
  const gid = old?.gid ?? opts.gid;
  const fh = await open(pending, "w", mode);
  try {
    await fh.chmod(mode);
    if (uid !== undefined && gid !== undefined && isRoot()) await fh.chown(uid, gid);
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  opts.step?.("written");
  if (opts.keepPrevious && old !== undefined) {
    const previousLink = join(dirname(file), `.${basename(file)}.previous.new`);
    await unlink(previousLink).catch(() => {});
    await link(file, previousLink);
    await rename(previousLink, previousOf(file));
  }
  opts.step?.("kept");
  await rename(pending, file);
  const dir = await open(dirname(file), "r");
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
  opts.step?.("renamed");
}

/**
 * Gives `file`'s current content the name `<file>.previous` without ever leaving `file` absent:
 * a hard link under a temporary name, renamed over the older .previous.
 */
export function keepPrevious(file: string): void {
  const previous = previousOf(file);
  const link = join(dirname(file), `.${basename(file)}.previous.new`);
  if (existsSync(link)) unlinkSync(link);
  linkSync(file, link);
  renameSync(link, previous);
}

/** Removes `file`, keeping it as `<file>.previous` when asked; nothing when it does not exist. */
export function removeFile(file: string, opts: { keepPrevious?: boolean } = {}): void {
  if (!existsSync(file)) return;
  if (opts.keepPrevious) keepPrevious(file);
  unlinkSync(file);
  fsyncDir(dirname(file));
}

function statIfAny(file: string): { mode: number; uid: number; gid: number } | undefined {
  try {
    const st = statSync(file);
    return { mode: st.mode, uid: st.uid, gid: st.gid };
  } catch {
    return undefined;
  }
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}
