// Kepware (KEPServerEX) tag lists <-> the device map: `fieldgate import kepware` and
// `fieldgate export csv`. Kepware exports the tags of one device as CSV with these columns
// (Tag Name, Address, Data Type, Respect Data Type, Client Access, Scan Rate, Scaling, Raw Low,
// Raw High, Scaled Low, Scaled High, Scaled Data Type, Clamp Low, Clamp High, Eng Units,
// Description, Negate Value), the list separator of the machine's locale (a comma, or a
// semicolon where the decimal mark is a comma), and the name, address and description quoted.
//
// Kepware has a driver per protocol, each with its own address forms and data types: the
// Address and Data Type columns are read and written by the device's driver (KepwareAddressing,
// which a driver's protocol gives where Kepware has a driver for it); the rest (names, access,
// scan rates, linear scaling, units, descriptions) is Kepware's own and converted here.
import { parseUnit, unitByAlias, type DeviceConfig, type MapDrivers, type TagConfig, type ValueType } from "./device-map.js";

/** Where a converted row's tag is and how it reads, as its driver's keys (KepwareAddressing.importPlace). */
export interface KepwarePlace {
  /** The tag's keys that say it (address, type, ...), in the order the map writes them. */
  readonly keys: Readonly<Record<string, unknown>>;
  /** Its value type: only numbers take scaling and units. */
  readonly type: ValueType;
  /** Why the place cannot be written, when it cannot: Client Access R/W is then left out, with this as its note. */
  readonly readOnly?: string;
}

/** The options of `fieldgate import kepware` that say where the device is, as given. */
export interface KepwareDeviceOptions {
  readonly host?: string;
  readonly port?: string;
  /** The device's address on its link (--unit-id). */
  readonly station?: string;
  readonly byteOrder?: string;
}

/** The device entry an import writes, beside its tags. */
export interface KepwareDevice {
  /** The device's keys of its driver, from the command's options. */
  readonly keys: Readonly<Record<string, unknown>>;
  /** Sections of the map the device needs (a placeholder serial bus). */
  readonly sections: Readonly<Record<string, unknown>>;
  /** What the person should check before using the map, one line each (written as comments). */
  readonly advice: readonly string[];
}

/** How one protocol's tags are written in Kepware's CSV: its Kepware driver's addresses and data types. */
export interface KepwareAddressing {
  /**
   * A row's Address and Data Type (as written, trimmed; "" for none) as the tag's keys, or why
   * the row cannot be converted. `note` says what a converted row lost.
   */
  importPlace(address: string, dataType: string, note: (message: string) => void): KepwarePlace | string;
  /** A tag's Address and Data Type columns. */
  exportPlace(tag: TagConfig, device: DeviceConfig): { readonly address: string; readonly dataType: string };
  /** The device an import makes for `driver` from the command's options, or what is wrong with one ("--byte-order: ..."). */
  importDevice(driver: string, options: KepwareDeviceOptions): KepwareDevice | string;
  /** What the CSV of `device` cannot carry, each said after an export. */
  exportNotes(device: DeviceConfig): string[];
}

/** The drivers as the Kepware commands need them: the driver registry is one. */
export interface KepwareDrivers extends MapDrivers {
  kepwareOf(name: string): KepwareAddressing | undefined;
}

export const KEPWARE_COLUMNS = [
  "Tag Name",
  "Address",
  "Data Type",
  "Respect Data Type",
  "Client Access",
  "Scan Rate",
  "Scaling",
  "Raw Low",
  "Raw High",
  "Scaled Low",
  "Scaled High",
  "Scaled Data Type",
  "Clamp Low",
  "Clamp High",
  "Eng Units",
  "Description",
  "Negate Value",
] as const;

/** A tag as the import writes it into the device map (the keys of devices.yaml, defaults left out; its driver's keys between name and scale). */
export interface ImportedTag {
  name: string;
  [driverKey: string]: unknown;
  scale?: number;
  offset?: number;
  unit?: string;
  range?: [number, number];
  rate?: number;
  access?: "readwrite";
  description?: string;
}

/** A row that was not converted (`converted: false`), or converted with something left out. */
export interface ImportNote {
  /** 1-based line of the file where the row starts. */
  readonly line: number;
  readonly tag: string;
  readonly message: string;
  readonly converted: boolean;
}

export interface ImportResult {
  readonly tags: ImportedTag[];
  readonly notes: ImportNote[];
  readonly rows: number;
  readonly delimiter: "," | ";";
  /** The most common scan rate (ms), for the device's `rate`; undefined without any. */
  readonly rate: number | undefined;
}

// ---- CSV ------------------------------------------------------------------------------------

/** Text of a file as Kepware may have written it: UTF-8 (with or without a BOM) or Windows-1252. */
export function decodeText(bytes: Uint8Array): string {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    text = new TextDecoder("windows-1252").decode(bytes);
  }
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** The list separator of a header line: the one of "," and ";" found more often outside quotes. */
export function detectDelimiter(firstLine: string): "," | ";" {
  let commas = 0;
  let semicolons = 0;
  let quoted = false;
  for (const ch of firstLine) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && ch === ",") commas++;
    else if (!quoted && ch === ";") semicolons++;
  }
  return semicolons > commas ? ";" : ",";
}

/** RFC 4180 records, each with the line it starts on: quotes doubled inside quoted fields, line breaks allowed there. */
export function parseCsv(text: string, delimiter: string): { line: number; fields: string[] }[] {
  const out: { line: number; fields: string[] }[] = [];
  let fields: string[] = [];
  let field = "";
  let quoted = false;
  let line = 1;
  let start = 1;
  let any = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else {
        if (ch === "\n") line++;
        field += ch;
      }
      continue;
    }
    if (ch === '"') {
      quoted = true;
      any = true;
    } else if (ch === delimiter) {
      fields.push(field);
      field = "";
      any = true;
    } else if (ch === "\n" || ch === "\r") {
      if (ch === "\r" && text[i + 1] === "\n") i++;
      if (any || field !== "") {
        fields.push(field);
        out.push({ line: start, fields });
      }
      fields = [];
      field = "";
      any = false;
      line++;
      start = line;
    } else {
      field += ch;
      any = true;
    }
  }
  if (any || field !== "") {
    fields.push(field);
    out.push({ line: start, fields });
  }
  return out;
}

function csvField(value: string, delimiter: string, quote: boolean): string {
  return quote || value.includes(delimiter) || value.includes('"') || /[\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

// ---- import ---------------------------------------------------------------------------------

/** A number of a CSV field; with a ";" separator a "," is the decimal mark. */
function numberField(text: string, delimiter: string): number | undefined {
  const t = (delimiter === ";" ? text.replace(",", ".") : text).trim();
  if (t === "") return undefined;
  const n = Number(t);
  return Number.isFinite(n) ? n : undefined;
}

function truthy(text: string): boolean {
  const t = text.trim().toLowerCase();
  return t === "1" || t === "true" || t === "yes";
}

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/**
 * Converts one device's Kepware tag CSV, its addresses by `addressing` (the device's driver's);
 * the notes name every row not converted, and what was left out of the others.
 */
export function importKepwareCsv(text: string, addressing: KepwareAddressing): ImportResult {
  const firstLine = text.slice(0, text.search(/\r?\n|$/));
  const delimiter = detectDelimiter(firstLine);
  const records = parseCsv(text, delimiter);
  const notes: ImportNote[] = [];
  const headerIndex = records.findIndex((r) => r.fields.some((f) => f.trim().toLowerCase() === "tag name"));
  if (headerIndex < 0) {
    notes.push({ line: 1, tag: "", converted: false, message: `no header row with "Tag Name": expected Kepware's columns (${KEPWARE_COLUMNS.slice(0, 3).join(", ")}, ...)` });
    return { tags: [], notes, rows: 0, delimiter, rate: undefined };
  }
  const header = records[headerIndex]!.fields.map((f) => f.trim().toLowerCase().replace(/\.$/, "").replace(/^eng\. units$/, "eng units"));
  const col = (name: string): number => header.indexOf(name.toLowerCase());
  const missing = ["Tag Name", "Address", "Data Type"].filter((c) => col(c) < 0);
  if (missing.length > 0) {
    notes.push({ line: records[headerIndex]!.line, tag: "", converted: false, message: `the header has no ${missing.map((m) => `"${m}"`).join(", ")} column` });
    return { tags: [], notes, rows: 0, delimiter, rate: undefined };
  }
  const tags: ImportedTag[] = [];
  const names = new Map<string, number>();
  const rates = new Map<number, number>();
  let rows = 0;
  for (const r of records.slice(headerIndex + 1)) {
    const get = (name: string): string => {
      const i = col(name);
      return i < 0 ? "" : (r.fields[i] ?? "").trim();
    };
    if (r.fields.every((f) => f.trim() === "")) continue;
    rows++;
    const name = get("Tag Name");
    const fail = (message: string): undefined => void notes.push({ line: r.line, tag: name, converted: false, message });
    const note = (message: string): void => void notes.push({ line: r.line, tag: name, converted: true, message });
    if (!NAME.test(name)) {
      fail(name === "" ? "no tag name" : `"${name}" is not a tag name here (letters, digits, "_", "-" and "."; no spaces)`);
      continue;
    }
    const first = names.get(name);
    if (first !== undefined) {
      fail(`a second tag named "${name}" (first on line ${first})`);
      continue;
    }
    const tag = convertRow(get, delimiter, addressing, fail, note);
    if (tag === undefined) continue;
    tag.name = name;
    names.set(name, r.line);
    if (tag.rate !== undefined) rates.set(tag.rate, (rates.get(tag.rate) ?? 0) + 1);
    tags.push(tag);
  }
  // The most common scan rate becomes the device's; tags keep theirs only where it differs.
  let rate: number | undefined;
  let best = 0;
  for (const [ms, n] of rates) if (n > best || (n === best && ms < (rate ?? Infinity))) [rate, best] = [ms, n];
  for (const t of tags) if (t.rate === rate) delete t.rate;
  return { tags, notes, rows, delimiter, rate };
}

function convertRow(
  get: (name: string) => string,
  delimiter: string,
  addressing: KepwareAddressing,
  fail: (m: string) => undefined,
  note: (m: string) => void,
): ImportedTag | undefined {
  const place = addressing.importPlace(get("Address"), get("Data Type"), note);
  if (typeof place === "string") return fail(place);
  const type = place.type.name;
  const tag: ImportedTag = { name: "", ...place.keys };

  const access = get("Client Access").toUpperCase().replace(/\s/g, "");
  if (access === "R/W" || access === "RW" || access === "READ/WRITE") {
    if (place.readOnly === undefined) tag.access = "readwrite";
    else note(place.readOnly);
  } else if (access !== "" && access !== "RO" && access !== "R" && access !== "READONLY" && access !== "READ ONLY") {
    note(`Client Access "${get("Client Access")}" is neither RO nor R/W: imported read-only`);
  }

  const scan = numberField(get("Scan Rate"), delimiter);
  if (scan !== undefined) {
    if (scan >= 10 && scan <= 86_400_000 && Number.isInteger(scan)) tag.rate = scan;
    else note(`Scan Rate ${get("Scan Rate")} ms is outside 10 ms to 24 h: the device's rate applies`);
  }

  const scaling = get("Scaling").toLowerCase();
  const numeric = place.type.numeric;
  if (scaling === "linear" || scaling === "1") {
    if (!numeric) return fail(`Linear scaling of a ${type} tag`);
    const [rl, rh, sl, sh] = ["Raw Low", "Raw High", "Scaled Low", "Scaled High"].map((c) => numberField(get(c), delimiter));
    if (rl === undefined || rh === undefined || sl === undefined || sh === undefined) return fail("Linear scaling needs Raw Low, Raw High, Scaled Low and Scaled High");
    if (rh === rl) return fail(`Linear scaling with Raw Low = Raw High (${rl})`);
    let scale = (sh - sl) / (rh - rl);
    let offset = sl - rl * scale;
    // Negate Value: the scaled value's sign is flipped.
    if (truthy(get("Negate Value"))) {
      scale = -scale;
      offset = -offset;
    }
    tag.scale = roundSignificant(scale);
    tag.offset = roundSignificant(offset);
    if (tag.offset === 0) delete tag.offset;
    if (tag.scale === 0) return fail("Linear scaling with Scaled Low = Scaled High: every value would read the same");
    const lo = Math.min(sl, sh);
    const hi = Math.max(sl, sh);
    // 0 - x, not -x: a range of [-100, -0] would read oddly.
    if (lo < hi) tag.range = truthy(get("Negate Value")) ? [0 - hi, 0 - lo] : [lo, hi];
    if (truthy(get("Clamp Low")) || truthy(get("Clamp High"))) {
      note(`Clamp ${[truthy(get("Clamp Low")) ? "Low" : "", truthy(get("Clamp High")) ? "High" : ""].filter(Boolean).join(" and ")}: not done here; values outside [${tag.range?.join(", ")}] are published as read (writes outside it are refused)`);
    }
  } else if (scaling === "square root" || scaling === "2") {
    return fail("Square Root scaling has no equivalent here (engineering = raw * scale + offset)");
  } else if (scaling !== "" && scaling !== "none" && scaling !== "0") {
    return fail(`Scaling "${get("Scaling")}" is not None, Linear or Square Root`);
  } else if (truthy(get("Negate Value")) && numeric) {
    tag.scale = -1;
  }

  const units = get("Eng Units");
  if (units !== "") {
    if (!numeric) note(`Eng Units "${units}" on a ${type} tag: left out`);
    else {
      const u = parseUnit(units);
      const alias = u.ok ? undefined : unitByAlias(units);
      if (u.ok) tag.unit = u.value.displayName;
      else if (alias !== undefined) tag.unit = alias.displayName;
      else note(`Eng Units "${units}": ${u.message || "not in the UNECE unit table"}; left out`);
    }
  }
  const description = get("Description");
  if (description !== "") tag.description = description;
  return tag;
}

/** 0.1 + 0.2 and friends: 12 significant digits, so that a scale of 0.1 reads 0.1. */
function roundSignificant(n: number): number {
  return Number(n.toPrecision(12));
}

// ---- export ---------------------------------------------------------------------------------

/** One device's tags as Kepware's tag CSV (comma separated, CRLF, as Kepware writes it), its addresses by `addressing`. */
export function exportKepwareCsv(device: DeviceConfig, addressing: KepwareAddressing, delimiter: "," | ";" = ","): string {
  const num = (n: number): string => (delimiter === ";" ? String(n).replace(".", ",") : String(n));
  const lines = [KEPWARE_COLUMNS.join(delimiter)];
  for (const t of device.tags) {
    const place = addressing.exportPlace(t, device);
    const scaled = t.scale !== 1 || t.offset !== 0;
    // engineering = raw * scale + offset as Kepware's linear scaling between two points: the
    // ends of the tag's range when it has one, else raw 0 and 1. A negative scale goes out as
    // Negate Value, since Kepware wants Scaled High above Scaled Low.
    const negate = scaled && t.scale < 0;
    const scale = negate ? -t.scale : t.scale;
    const offset = negate ? -t.offset : t.offset;
    const [sl, sh] = t.range === undefined ? [offset, scale + offset] : negate ? [-t.range[1]!, -t.range[0]!] : [t.range[0]!, t.range[1]!];
    const [rl, rh] = t.range === undefined ? [0, 1] : [roundSignificant((sl - offset) / scale), roundSignificant((sh - offset) / scale)];
    const fields = [
      csvField(t.name, delimiter, true),
      csvField(place.address, delimiter, true),
      place.dataType,
      "1",
      t.access === "readwrite" ? "R/W" : "RO",
      String(t.rate),
      scaled ? "Linear" : "",
      scaled ? num(rl) : "",
      scaled ? num(rh) : "",
      scaled ? num(roundSignificant(sl)) : "",
      scaled ? num(roundSignificant(sh)) : "",
      scaled ? "Double" : "",
      scaled ? "0" : "",
      scaled ? "0" : "",
      csvField(t.unit?.displayName ?? "", delimiter, false),
      csvField(t.description ?? "", delimiter, true),
      scaled ? (negate ? "1" : "0") : "",
    ];
    lines.push(fields.join(delimiter));
  }
  return `${lines.join("\r\n")}\r\n`;
}
