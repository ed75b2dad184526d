// The FIELDGATE drive's imports kept as versions of the files they change, in the store the page
// keeps (config-versions.ts, <dataDir>/versions/<kind>/): by "FIELDGATE drive", at the import's
// time, with what changed in words, so that the page's Versions list shows them beside its own
// and can restore the one before. The import runs as root before the gateway starts; what it
// writes there takes the owner of the data folder, the gateway's, which keeps writing to it.
//
// Two steps around the import's commit (import.ts): before it, what each file changes is worked
// out against the file it replaces (that one is kept as the first version when none is kept
// yet); after the files are in place, the new versions are recorded. A run that finishes an
// import after a power cut records each version once (the newest already by the drive at the
// import's time is that one).
import { readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import type { DeviceMap, MapDrivers } from "../config/device-map.js";
import { validateFile } from "../config/load.js";
import { describeApply, mapChanges } from "../devices/map-changes.js";
import { sameConfig } from "../config/same-config.js";
import { ConfigVersions, FROM_THE_DRIVE } from "./config-versions.js";
import { settingsSchema, type SetFile, type SettingsName } from "./import-set.js";

type Kept = Exclude<SettingsName, "authorized_keys" | "admin-password.txt">;

/** The store's kind of each file: the page's names (web/config-api.ts SETTINGS_KINDS). */
const KIND: Readonly<Record<Kept, string>> = { "gateway.yaml": "gateway", "devices.yaml": "devices", "network.yaml": "network" };

/** SSH keys are not the page's to show; admin-password.txt is kept as the gateway.yaml it changes. */
const isKept = (name: SettingsName): name is Kept => name !== "authorized_keys" && name !== "admin-password.txt";

/** The store of `name` under `dir` (<dataDir>/versions), its files owned as `dir`'s parent is. */
function storeOf(dir: string, name: Kept): ConfigVersions {
  let owner: { uid: number; gid: number } | undefined;
  try {
    const st = statSync(dirname(dir));
    owner = { uid: st.uid, gid: st.gid };
  } catch {
    // No data folder yet: the writer's own.
  }
  return new ConfigVersions(join(dir, KIND[name]), undefined, owner);
}

/**
 * Before the commit: what the set's file `f` changes in `dest` (the file it replaces), in words;
 * `dest` as it is becomes the first version when its store keeps none. Undefined for a file that
 * is not kept in versions (authorized_keys).
 */
export async function versionBefore(dir: string, f: SetFile, dest: string, drivers: MapDrivers): Promise<string | undefined> {
  if (!isKept(f.name)) return undefined;
  let before = "";
  let at: Date | undefined;
  try {
    before = readFileSync(dest, "utf8");
    at = statSync(dest).mtime;
  } catch {
    // A first file: nothing to go back to.
  }
  await storeOf(dir, f.name).keepFirst(before, at, FROM_THE_DRIVE);
  if (before === "") return `the first ${f.name}`;
  const old = validateFile(settingsSchema(f.name, drivers), dest);
  if (!old.ok) return `replaced a ${f.name} that had ${old.issues.length} issue(s)`;
  return changeSummary(f.name, old.value, f.value);
}

/** What `after` changes of `before`: devices by name for a device map, top-level sections for the others. */
export function changeSummary(name: Kept, before: unknown, after: unknown): string {
  if (name === "devices.yaml") return describeApply(mapChanges((before as DeviceMap).devices, (after as DeviceMap).devices)).summary;
  const a = (before ?? {}) as Record<string, unknown>;
  const b = (after ?? {}) as Record<string, unknown>;
  const changed = [...new Set([...Object.keys(b), ...Object.keys(a)])].filter((k) => !sameConfig(a[k], b[k]));
  return changed.length === 0 ? "the same settings (comments or layout changed)" : `changed: ${changed.join(", ")}`;
}

/** After the files are in place: `dest`'s text as the newest version of `name`, once. */
export async function recordImported(dir: string, name: SettingsName, dest: string, summary: string, at: Date): Promise<void> {
  if (!isKept(name)) return;
  const store = storeOf(dir, name);
  const newest = store.list()[0];
  if (newest !== undefined && newest.user === FROM_THE_DRIVE && Date.parse(newest.at) === at.getTime()) return;
  await store.record(readFileSync(dest, "utf8"), { user: FROM_THE_DRIVE, summary, at });
}
