// Device entries written as YAML for a person to paste into a device map: what `fieldgate import
// kepware` converts and what a driver's search finds (src/devices/discovery.ts). Each tag is one
// flow mapping on its line, as maps are written by hand; the text is checked against the map's
// schema before anyone sees it, so that what is printed is what `fieldgate validate` accepts.
import { Document, isMap, isSeq } from "yaml";
import { deviceMapSchema, type MapDrivers } from "./device-map.js";
import { validateYaml, type ConfigIssue } from "./load.js";

export interface EntriesText {
  /** The YAML: the comment lines, then the sections (e.g. `buses`) and `devices`. */
  readonly text: string;
  /** Why the map it makes is not valid; empty when it is. */
  readonly issues: readonly ConfigIssue[];
}

/**
 * The map of `devices` (entries as written: keys in the order given, `tags` last) with the other
 * top-level `sections` before them, under `comments` (one `# ` line each); `file` names it in
 * the issues.
 */
export function deviceEntriesText(
  comments: readonly string[],
  sections: Readonly<Record<string, unknown>>,
  devices: readonly Readonly<Record<string, unknown>>[],
  drivers: MapDrivers,
  file: string,
): EntriesText {
  const doc = new Document({ ...sections, devices });
  for (let i = 0; i < devices.length; i++) flowTags(doc.getIn(["devices", i], true));
  const text = `${comments.map((line) => `# ${line}`.trimEnd()).join("\n")}${comments.length > 0 ? "\n" : ""}${doc.toString({ lineWidth: 0 })}`;
  const check = validateYaml(deviceMapSchema(drivers), text, file);
  return { text, issues: check.ok ? [] : check.issues };
}

/** Each tag of a device node on a line of its own (`- { name: ..., address: ... }`), as the shipped map writes them. */
export function flowTags(device: unknown): void {
  const tags = isMap(device) ? device.get("tags") : undefined;
  if (isSeq(tags)) for (const item of tags.items) if (isMap(item)) item.flow = true;
}
