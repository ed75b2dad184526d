// Device entries written as YAML for a person to paste into a device map: what `fieldgate import
// kepware` converts and what a driver's search finds (src/devices/discovery.ts). Each tag is one
// flow mapping on its line, as maps are written by hand; the text is checked against the map's
// schema before anyone sees it, so that what is printed is what `fieldgate validate` accepts.
// And the same entries added to a map being edited (the status page's Kepware upload and search),
// whose comments and layout stay as they were. Parsing a whole map grows with it: the page has it
// done on the validation worker (validate-off-loop.ts).
import { Document, isMap, isScalar, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from "yaml";
import { sameConfig } from "./same-config.js";
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

export interface EntriesAdded {
  /** The map with the devices added. */
  readonly text: string;
  /** The devices added, by name. */
  readonly added: readonly string[];
  /** Those not added: the map has a device of that name. */
  readonly skipped: readonly string[];
}

/** The map node at `key` of `doc`, made (empty, as `empty`) when absent; undefined when it is there but another kind. */
function section(doc: Document, key: string, empty: unknown[] | Record<string, never>): YAMLSeq | YAMLMap | undefined {
  let node = doc.get(key);
  if (node === undefined || node === null) {
    doc.set(key, doc.createNode(empty));
    node = doc.get(key);
  }
  return Array.isArray(empty) ? (isSeq(node) ? node : undefined) : isMap(node) ? node : undefined;
}

/**
 * The map `text` with `devices` (entries as written, `tags` last) appended to its devices, but
 * for those whose name it has; and the entries of `sections` (e.g. `buses: {heating: {...}}`, the
 * bus they name) added where the map has none of their names. With `sameSections`, an entry the
 * map has under that name must be the same (a search's bus on another port is refused);
 * without, the map's is kept (a placeholder the person filled in).
 */
export function addDeviceEntries(
  text: string,
  devices: readonly Readonly<Record<string, unknown>>[],
  sections: Readonly<Record<string, unknown>>,
  o: { readonly sameSections?: boolean } = {},
): EntriesAdded | { readonly error: string } {
  const doc = parseDocument(text.trim() === "" ? "devices: []\n" : text);
  if (doc.errors.length > 0) return { error: `the map has a YAML syntax error (${doc.errors[0]!.message.split("\n")[0]}): fix it first` };
  if (!isMap(doc.contents)) return { error: "the map is not a mapping of devices: fix it first" };
  const list = section(doc, "devices", []) as YAMLSeq | undefined;
  if (list === undefined) return { error: "devices: is not a list in the map: fix it first" };
  for (const [key, value] of Object.entries(sections)) {
    const into = section(doc, key, {}) as YAMLMap | undefined;
    if (into === undefined) return { error: `${key}: is not a mapping in the map: fix it first` };
    if (typeof value !== "object" || value === null) continue;
    for (const [name, v] of Object.entries(value)) {
      const has = into.get(name, true);
      if (has === undefined) into.set(name, doc.createNode(v));
      else if (o.sameSections && !sameConfig(JSON.parse(JSON.stringify(has)), v)) {
        return { error: `the map has ${key}.${name} already, as ${JSON.stringify(has)}, not ${JSON.stringify(v)}: give the new one another name` };
      }
    }
  }
  const names = new Set(list.items.map((d) => (isMap(d) ? String(d.get("name")) : "")));
  const added: string[] = [];
  const skipped: string[] = [];
  // A flow list ([]) would put the whole device on one line.
  list.flow = false;
  for (const d of devices) {
    const name = String(d.name);
    if (names.has(name)) {
      skipped.push(name);
      continue;
    }
    names.add(name);
    const node = doc.createNode(d);
    flowTags(node);
    list.items.push(node);
    added.push(name);
  }
  return { text: doc.toString({ lineWidth: 0 }), added, skipped };
}

/** Each tag of a device node on a line of its own (`- { name: ..., address: ... }`), as the shipped map writes them. */
export function flowTags(device: unknown): void {
  const tags = isMap(device) ? device.get("tags") : undefined;
  if (isSeq(tags)) for (const item of tags.items) if (isMap(item)) item.flow = true;
}

/**
 * `text` with the entry `name` of its top-level mapping `key` set to `value` (a user of
 * gateway.yaml's `users`): added after the entries there are, or the one of that name replaced
 * whole. The rest of the file stays as written, byte for byte, comments and their alignment
 * included: the entry is spliced in where the yaml library's Document places the nodes. The
 * result is parsed again and must hold exactly the values of `text` with the entry set; where it
 * would not (a flow mapping, an empty `key:`), the Document itself writes the file, which keeps
 * the comments but not their layout.
 */
export function setSectionEntry(text: string, key: string, name: string, value: Readonly<Record<string, unknown>>): { readonly text: string } | { readonly error: string } {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) return { error: `the file has a YAML syntax error (${doc.errors[0]!.message.split("\n")[0]}): fix it first` };
  if (doc.contents !== null && !isMap(doc.contents)) return { error: "the file is not a mapping of settings: fix it first" };
  const want = (doc.toJS() ?? {}) as Record<string, unknown>;
  const sectionValue = want[key];
  if (sectionValue !== undefined && sectionValue !== null && (typeof sectionValue !== "object" || Array.isArray(sectionValue))) return { error: `${key}: is not a mapping in the file: fix it first` };
  want[key] = { ...((sectionValue ?? {}) as Record<string, unknown>), [name]: value };
  const spliced = spliceEntry(doc, text, key, name, value);
  if (spliced !== undefined) {
    const again = parseDocument(spliced);
    if (again.errors.length === 0 && sameConfig(again.toJS(), want)) return { text: spliced };
  }
  const into = section(doc, key, {}) as YAMLMap;
  into.set(name, doc.createNode(value));
  return { text: doc.toString({ lineWidth: 0 }) };
}

/** The text with the entry spliced into a block mapping `key` (or a new `key:` section at the end); undefined where it cannot be. */
function spliceEntry(doc: Document, text: string, key: string, name: string, value: Readonly<Record<string, unknown>>): string | undefined {
  const rendered = new Document({ [name]: value }).toString({ lineWidth: 0 }).replace(/\n$/, "").split("\n");
  const node = isMap(doc.contents) ? doc.contents.get(key, true) : undefined;
  if (node === undefined) {
    const sep = text === "" || text.endsWith("\n") ? "" : "\n";
    return `${text}${sep}${key}:\n${rendered.map((l) => `  ${l}`).join("\n")}\n`;
  }
  if (!isMap(node) || node.flow || node.items.length === 0) return undefined;
  /** The offset after the line on which `end` (a node's end) lies: a block node's end is after its line already. */
  const afterLine = (end: number): number => {
    if (end > 0 && text[end - 1] === "\n") return end;
    const nl = text.indexOf("\n", end);
    return nl < 0 ? text.length : nl + 1;
  };
  const endOf = (p: (typeof node.items)[number]): number | undefined => ((p.value as { range?: number[] } | null)?.range ?? (p.key as { range?: number[] } | null)?.range)?.[1];
  const firstKey = (node.items[0]!.key as { range?: number[] } | null)?.range?.[0];
  if (firstKey === undefined) return undefined;
  const indent = " ".repeat(firstKey - (text.lastIndexOf("\n", firstKey - 1) + 1));
  const block = rendered.map((l) => `${indent}${l}`).join("\n");
  const has = node.items.find((p) => isScalar(p.key) && String(p.key.value) === name);
  if (has !== undefined) {
    const start = (has.key as { range?: number[] }).range?.[0];
    const end = endOf(has);
    if (start === undefined || end === undefined) return undefined;
    const stop = afterLine(end);
    return `${text.slice(0, start)}${block.slice(indent.length)}\n${text.slice(stop)}`;
  }
  const end = endOf(node.items[node.items.length - 1]!);
  if (end === undefined) return undefined;
  const at = afterLine(end);
  const sep = at > 0 && text[at - 1] !== "\n" ? "\n" : "";
  return `${text.slice(0, at)}${sep}${block}\n${text.slice(at)}`;
}
