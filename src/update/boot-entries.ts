// The boot entries of the two slots on the boot partition, as systemd-boot reads them (Boot
// Loader Specification, type #1 entries, with boot counting):
//   loader/entries/fieldgate-a.conf        slot A, good
//   loader/entries/fieldgate-b+1.conf      slot B, one trial boot left
//   loader/entries/fieldgate-b+0-1.conf    slot B, its trial used up by one boot
// Every entry has `sort-key fieldgate` and `version <generation>` (an install counter): without a
// default in loader.conf systemd-boot starts the entry that sorts first, the highest version,
// except that an entry with no tries left sorts after all others. Before it starts an entry
// with a counter it renames it (+1 -> +0-1); if that boot is not confirmed (the counter
// removed: `bless`), the next boot starts the other slot. No EFI variable is needed for any of
// this, so it works on boards whose firmware keeps none at run time (U-Boot's EFI).
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, statfsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Slot } from "./layout.js";

export interface BootEntry {
  readonly slot: Slot;
  readonly file: string;
  /** The entry's `version`: the install counter. */
  readonly generation: number;
  /** Boot counting: tries left and done; undefined for a confirmed (good) entry. */
  readonly triesLeft?: number;
  readonly triesDone?: number;
  readonly title: string;
}

const ENTRY_FILE = /^fieldgate-([ab])(?:\+(\d+)(?:-(\d+))?)?\.conf$/;
/** One trial boot: a version that does not come up healthy is left at the next boot. */
export const TRIAL_BOOTS = 1;

export const entriesDir = (esp: string): string => join(esp, "loader/entries");
export const slotDir = (slot: Slot): string => `fieldgate-${slot.toLowerCase()}`;

export function listEntries(esp: string): BootEntry[] {
  const dir = entriesDir(esp);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: BootEntry[] = [];
  for (const name of names) {
    const m = ENTRY_FILE.exec(name);
    if (!m) continue;
    const text = readFileSync(join(dir, name), "utf8");
    const field = (k: string): string => new RegExp(`^${k}[ \\t]+(.*)$`, "m").exec(text)?.[1].trim() ?? "";
    out.push({
      slot: m[1].toUpperCase() as Slot,
      file: name,
      generation: Number(field("version")) || 0,
      ...(m[2] === undefined ? {} : { triesLeft: Number(m[2]), triesDone: Number(m[3] ?? 0) }),
      title: field("title"),
    });
  }
  return out.sort((a, b) => b.generation - a.generation);
}

export function entryOf(esp: string, slot: Slot): BootEntry | undefined {
  return listEntries(esp).find((e) => e.slot === slot);
}

/** Removes a slot's entries, kernel and initramfs: the slot is then free, and never started. */
export function removeSlot(esp: string, slot: Slot): void {
  for (const e of listEntries(esp)) if (e.slot === slot) rmSync(join(entriesDir(esp), e.file), { force: true });
  syncDir(entriesDir(esp));
  rmSync(join(esp, slotDir(slot)), { recursive: true, force: true });
}

/** Bytes the boot partition can take for a slot's kernel and initramfs, counting those it already has. */
export function espRoomFor(esp: string, slot: Slot): number {
  const fs = statfsSync(esp);
  let own = 0;
  for (const f of ["vmlinuz", "initrd.img"]) {
    try {
      own += statSync(join(esp, slotDir(slot), f)).size;
    } catch {
      // Not there.
    }
  }
  return fs.bavail * fs.bsize + own;
}

/** Writes a file through a temporary name and fsync, then renames it into place. */
export function writeDurable(path: string, data: Buffer | string): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, data);
  const fd = openSync(tmp, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Not every file system lets a folder be synced; the files themselves were.
  }
}

export function writeKernel(esp: string, slot: Slot, kernel: Buffer, initrd: Buffer): void {
  const dir = join(esp, slotDir(slot));
  mkdirSync(dir, { recursive: true });
  writeDurable(join(dir, "vmlinuz"), kernel);
  writeDurable(join(dir, "initrd.img"), initrd);
  syncDir(dir);
}

/** The entry of a freshly written slot, with TRIAL_BOOTS tries; written last, after everything it points to. */
export function writeTrialEntry(esp: string, slot: Slot, generation: number, version: string, cmdline: string): string {
  const dir = entriesDir(esp);
  mkdirSync(dir, { recursive: true });
  const name = `fieldgate-${slot.toLowerCase()}+${TRIAL_BOOTS}.conf`;
  const s = slotDir(slot);
  const text =
    `title fieldgate ${version} (${slot})\nsort-key fieldgate\nversion ${generation}\n` +
    `linux /${s}/vmlinuz\ninitrd /${s}/initrd.img\noptions root=PARTLABEL=fieldgate-root${slot} ${cmdline}\n`;
  writeDurable(join(dir, name), text);
  syncDir(dir);
  return name;
}

/** Confirms an entry: the boot counter goes from its name, so it is a good entry from now on. */
export function bless(esp: string, entry: BootEntry): string {
  const name = `fieldgate-${entry.slot.toLowerCase()}.conf`;
  renameSync(join(entriesDir(esp), entry.file), join(entriesDir(esp), name));
  syncDir(entriesDir(esp));
  return name;
}

/** The version systemd-boot's `version` field gets for the next install. */
export function nextGeneration(esp: string): number {
  return Math.max(0, ...listEntries(esp).map((e) => e.generation)) + 1;
}

/** The version shown in an entry's title ("fieldgate 0.1.0.2 (B)"), for messages. */
export function titleVersion(e: BootEntry | undefined): string {
  return e ? (/^fieldgate (\S+)/.exec(e.title)?.[1] ?? "?") : "?";
}
