// What a reload of the device map changed, per device, in words for the log and the page: which
// devices came, went or changed, and for each, its tags added, removed and changed (counts and
// the first few names) and the settings that differ. "device map: changed simulator; 0
// unchanged" left the person who edited the map to guess whether their edit was the one taken.
import type { DeviceConfig, TagConfig } from "../config/device-map.js";
import type { SlicedTask } from "../sampling/slices.js";
import { sameConfig } from "../config/same-config.js";

/** What an apply of a map (DeviceRuntime.apply) changed, by device name. */
export interface ApplyReport {
  readonly added: string[];
  readonly removed: string[];
  readonly changed: string[];
  readonly unchanged: string[];
  /** What changed in each device removed, changed or added, in that order. */
  readonly details: DeviceChanges[];
}

/** Names shown of each kind of change before "and N more". */
export const FIRST_NAMES = 5;
/** Devices described one line each after a reload's summary; the rest are counted. */
export const DEVICE_LINES = 20;

/** A count and the first FIRST_NAMES names, in the map's order. */
export interface Names {
  readonly count: number;
  readonly first: readonly string[];
}

/** What a reload did to one device. */
export interface DeviceChanges {
  readonly device: string;
  /** The device is new in the map, gone from it, or in both and different. */
  readonly kind: "added" | "removed" | "changed";
  /** Settings of the device itself (not its tags) that differ, by key; empty unless changed. */
  readonly settings: readonly string[];
  readonly tagsAdded: Names;
  readonly tagsRemoved: Names;
  readonly tagsChanged: Names;
}


const NONE: Names = Object.freeze({ count: 0, first: Object.freeze([]) as readonly string[] });

class NameList {
  count = 0;
  readonly first: string[] = [];
  add(name: string): void {
    if (this.count++ < FIRST_NAMES) this.first.push(name);
  }
}

/** All the tags of a device that came or went. */
export function wholeDevice(config: DeviceConfig, kind: "added" | "removed"): DeviceChanges {
  const tags = new NameList();
  const n = config.tags.length;
  for (let i = 0; i < Math.min(n, FIRST_NAMES); i++) tags.add(config.tags[i]!.name);
  tags.count = n;
  return { device: config.name, kind, settings: [], tagsAdded: kind === "added" ? tags : NONE, tagsRemoved: kind === "removed" ? tags : NONE, tagsChanged: NONE };
}

/** The differences of a device in both maps: its settings by key, its tags by name, compared in the slices of `task`. */
export async function deviceChanges(before: DeviceConfig, after: DeviceConfig, task: SlicedTask): Promise<DeviceChanges> {
  const settings: string[] = [];
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  keys.delete("tags");
  for (const k of keys) if (!sameConfig((before as unknown as Record<string, unknown>)[k], (after as unknown as Record<string, unknown>)[k])) settings.push(k);
  const old = new Map<string, TagConfig>();
  await task.loop(before.tags.length, (from) => tagsByName(before.tags, old, from, task));
  const added = new NameList();
  const changed = new NameList();
  await task.loop(after.tags.length, (from) => compareTags(after.tags, old, added, changed, from, task));
  const removed = new NameList();
  for (const name of old.keys()) removed.add(name);
  return { device: after.name, kind: "changed", settings, tagsAdded: added, tagsRemoved: removed, tagsChanged: changed };
}

/** Tags from `from` on into `old` by name, until the slice is spent; returns where it stopped. */
function tagsByName(tags: readonly TagConfig[], old: Map<string, TagConfig>, from: number, task: SlicedTask): number {
  let i = from;
  while (i < tags.length) {
    old.set(tags[i]!.name, tags[i]!);
    i++;
    if ((i & 63) === 0 && task.over()) break;
  }
  return i;
}

/** Tags of the new map from `from` on against `old` (what is left there was removed), until the slice is spent; returns where it stopped. */
function compareTags(tags: readonly TagConfig[], old: Map<string, TagConfig>, added: NameList, changed: NameList, from: number, task: SlicedTask): number {
  let i = from;
  while (i < tags.length) {
    const t = tags[i]!;
    const was = old.get(t.name);
    if (was === undefined) added.add(t.name);
    else if (!sameConfig(was, t)) changed.add(t.name);
    old.delete(t.name);
    i++;
    if ((i & 15) === 0 && task.over()) break;
  }
  return i;
}

/**
 * Which devices of `after` are new, gone, changed or the same as in `before`, compared whole
 * (no details): for a map applied where no runtime compares them (the FIELDGATE drive's import).
 */
export function mapChanges(before: readonly DeviceConfig[], after: readonly DeviceConfig[]): ApplyReport {
  const old = new Map(before.map((d) => [d.name, d]));
  const report: ApplyReport = { added: [], removed: [], changed: [], unchanged: [], details: [] };
  for (const d of after) {
    const was = old.get(d.name);
    if (was === undefined) report.added.push(d.name);
    else (sameConfig(was, d) ? report.unchanged : report.changed).push(d.name);
    old.delete(d.name);
  }
  report.removed.push(...old.keys());
  return report;
}

/** "3 added (a, b, c)", "7 added (a, b, c, d, e and 2 more)". */
function names(n: Names, what: string): string {
  const more = n.count > n.first.length ? ` and ${n.count - n.first.length} more` : "";
  return `${n.count} ${what} (${n.first.join(", ")}${more})`;
}

/** One device's changes in words: "sim: 2 tags added (b, c), 1 changed (a); settings changed: timeout". */
export function describeDevice(c: DeviceChanges): string {
  if (c.kind !== "changed") {
    const tags = c.kind === "added" ? c.tagsAdded : c.tagsRemoved;
    return `${c.device}: ${c.kind} with ${names(tags, tags.count === 1 ? "tag" : "tags")}`;
  }
  const parts: string[] = [];
  for (const [n, what] of [[c.tagsAdded, "added"], [c.tagsRemoved, "removed"], [c.tagsChanged, "changed"]] as const) {
    if (n.count === 0) continue;
    // "2 tags added (a, b), 1 removed (c)": the noun once, with the first count.
    parts.push(names(n, parts.length > 0 ? what : `${n.count === 1 ? "tag" : "tags"} ${what}`));
  }
  const said = parts.length > 0 ? [parts.join(", ")] : [];
  if (c.settings.length > 0) said.push(`settings changed: ${c.settings.join(", ")}`);
  // Restarted for its link alone: a device that shares it (a bus, a gateway) changed its settings.
  if (said.length === 0) return `${c.device}: restarted, its link's settings changed (another device on it changed)`;
  return `${c.device}: ${said.join("; ")}`;
}

/**
 * A reload in words: the summary line ("added a; changed b; 3 unchanged") and a line for each
 * device it touched (describeDevice), DEVICE_LINES of them at most.
 */
export function describeApply(r: ApplyReport): { readonly summary: string; readonly devices: readonly string[] } {
  const summary = [
    r.added.length ? `added ${r.added.join(", ")}` : "",
    r.removed.length ? `removed ${r.removed.join(", ")}` : "",
    r.changed.length ? `changed ${r.changed.join(", ")}` : "",
    `${r.unchanged.length} unchanged`,
  ]
    .filter((p) => p !== "")
    .join("; ");
  const devices = r.details.slice(0, DEVICE_LINES).map(describeDevice);
  if (r.details.length > DEVICE_LINES) devices.push(`and ${r.details.length - DEVICE_LINES} more devices`);
  return { summary, devices };
}
