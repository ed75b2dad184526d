// Kepware (KEPServerEX) tag lists <-> the device map: `fieldgate import kepware` and
// `fieldgate export csv`. Kepware exports the tags of one device as CSV with these columns
// (Tag Name, Address, Data Type, Respect Data Type, Client Access, Scan Rate, Scaling, Raw Low,
// Raw High, Scaled Low, Scaled High, Scaled Data Type, Clamp Low, Clamp High, Eng Units,
// Description, Negate Value), the list separator of the machine's locale (a comma, or a
// semicolon where the decimal mark is a comma), and the name, address and description quoted.
//
// Modbus addresses in Kepware are Modicon numbers, 1-based: 000001 coils, 100001 discrete
// inputs, 300001 input registers, 400001 holding registers (5 digits, 40001, too); a bit of a
// register is 400001.0 to 400001.15; a string is 400001.20H (20 bytes, high byte first) or
// 400001.20L (low byte first). Data types: Boolean, Word, Short, DWord, Long, Float, Double,
// LLong, QWord, String and Default (the address's own type) convert; BCD, LBCD, Char, Byte,
// Date and arrays have no equivalent here, and such rows are listed, not converted.
// Word order of 32- and 64-bit values is a device property in Kepware (Data Encoding), not in
// the CSV: the import takes it as an option.
import { formatAddress, parseAddress, parseUnit, unitByAlias, tagType, type ByteOrder, type DataType, type DeviceConfig, type ModbusAddress, type TagConfig } from "./device-map.js";

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

/** A tag as the import writes it into the device map (the keys of devices.yaml, defaults left out). */
export interface ImportedTag {
  name: string;
  address: string;
  type?: DataType;
  length?: number;
  byteOrder?: ByteOrder;
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

const TYPE_OF: Readonly<Record<string, DataType | "default">> = {
  boolean: "bool",
  word: "uint16",
  short: "int16",
  dword: "uint32",
  long: "int32",
  float: "float32",
  double: "float64",
  llong: "int64",
  qword: "uint64",
  string: "string",
  default: "default",
};

const NO_EQUIVALENT: Readonly<Record<string, string>> = {
  bcd: "BCD registers have no data type here (fieldgate reads binary integers)",
  lbcd: "LBCD registers have no data type here (fieldgate reads binary integers)",
  char: "Char is one byte of a register: read the register as Word (or Short) and scale it",
  byte: "Byte is one byte of a register: read the register as Word and scale it",
  date: "Date has no data type here",
};

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

/** Converts one device's Kepware tag CSV; the notes name every row not converted, and what was left out of the others. */
export function importKepwareCsv(text: string): ImportResult {
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
    const tag = convertRow(get, delimiter, fail, note);
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

interface KepwareAddress {
  readonly address: ModbusAddress;
  /** A string's length in bytes and byte order (400001.20H). */
  readonly stringBytes?: number;
  readonly lowByteFirst?: boolean;
}

/** 400001, 40001, 400001.3 and 400001.20H; undefined with `why` set otherwise. */
function kepwareAddress(text: string, isString: boolean): KepwareAddress | string {
  const t = text.trim().toUpperCase();
  if (t.includes("[")) return `"${text}" is an array; arrays have no equivalent here (one tag per value)`;
  if (t.startsWith("H")) return `"${text}" is a hexadecimal address; write it in decimal (400001 ...)`;
  const m = /^(\d{5,6})(?:\.(\d{1,3})([HL])?)?$/.exec(t);
  if (m === null) return `"${text}" is not a Modbus address in Kepware's decimal form (400001, 400001.3, 400001.20H)`;
  const base = parseAddress(m[1]!);
  if (!base.ok) return `"${text}": ${base.message || "not a Modbus address"}`;
  if (isString) {
    if (m[2] === undefined) return `"${text}": a string address gives its length in bytes (400001.20H)`;
    const bytes = Number(m[2]);
    if (bytes < 1 || bytes > 250) return `"${text}": a string of ${bytes} bytes; 1 to 250 fit in one read`;
    return { address: base.value, stringBytes: bytes, lowByteFirst: m[3] === "L" };
  }
  if (m[3] !== undefined) return `"${text}" is a string address, but the data type is not String`;
  if (m[2] === undefined) return { address: base.value };
  const bit = Number(m[2]);
  if (bit > 15) return `"${text}": a register has bits 0 to 15`;
  if (base.value.area === "coil" || base.value.area === "discrete") return `"${text}": only registers have bits`;
  return { address: { ...base.value, bit } };
}

function convertRow(
  get: (name: string) => string,
  delimiter: string,
  fail: (m: string) => undefined,
  note: (m: string) => void,
): ImportedTag | undefined {
  const kepType = get("Data Type");
  const key = kepType.toLowerCase();
  if (/array/.test(key)) return fail(`data type ${kepType}: arrays have no equivalent here (one tag per value)`);
  const noEq = NO_EQUIVALENT[key];
  if (noEq !== undefined) return fail(`data type ${kepType}: ${noEq}`);
  const mapped = TYPE_OF[key === "" ? "default" : key];
  if (mapped === undefined) return fail(`data type "${kepType}" is not one of Kepware's (Boolean, Word, Short, DWord, Long, Float, Double, LLong, QWord, String, ...)`);
  const addr = kepwareAddress(get("Address"), mapped === "string");
  if (typeof addr === "string") return fail(addr);
  const a = addr.address;
  const bits = a.area === "coil" || a.area === "discrete";
  let type: DataType;
  if (mapped === "default") type = a.bit !== undefined ? "bit" : bits ? "bool" : "uint16";
  else if (mapped === "bool" && a.bit !== undefined) type = "bit";
  else type = mapped;
  if (bits && type !== "bool") return fail(`data type ${kepType} at ${get("Address")}: a ${a.area === "coil" ? "coil" : "discrete input"} holds one bit (Boolean)`);
  if (!bits && mapped === "bool" && a.bit === undefined) return fail(`Boolean at ${get("Address")}: name the bit of the register (${get("Address")}.0 to .15)`);
  if (a.bit !== undefined && type !== "bit") return fail(`data type ${kepType} at ${get("Address")}: a bit address needs Boolean`);
  const tag: ImportedTag = { name: "", address: formatAddress(a) };
  if (type !== tagType({ type: undefined, address: a })) tag.type = type;
  if (addr.stringBytes !== undefined) {
    tag.length = Math.ceil(addr.stringBytes / 2);
    if (addr.lowByteFirst) tag.byteOrder = "BADC";
    if (addr.stringBytes % 2 === 1) note(`a string of ${addr.stringBytes} bytes is read as ${tag.length} registers (${tag.length * 2} bytes)`);
  }

  const access = get("Client Access").toUpperCase().replace(/\s/g, "");
  if (access === "R/W" || access === "RW" || access === "READ/WRITE") {
    if (a.area === "coil" || a.area === "holding") tag.access = "readwrite";
    else note(`Client Access R/W on ${a.area === "input" ? "an input register" : "a discrete input"}: Modbus cannot write it, imported read-only`);
  } else if (access !== "" && access !== "RO" && access !== "R" && access !== "READONLY" && access !== "READ ONLY") {
    note(`Client Access "${get("Client Access")}" is neither RO nor R/W: imported read-only`);
  }

  const scan = numberField(get("Scan Rate"), delimiter);
  if (scan !== undefined) {
    if (scan >= 10 && scan <= 86_400_000 && Number.isInteger(scan)) tag.rate = scan;
    else note(`Scan Rate ${get("Scan Rate")} ms is outside 10 ms to 24 h: the device's rate applies`);
  }

  const scaling = get("Scaling").toLowerCase();
  const numeric = type !== "bool" && type !== "bit" && type !== "string";
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

const KEPWARE_TYPE: Readonly<Record<DataType, string>> = {
  bool: "Boolean",
  bit: "Boolean",
  int16: "Short",
  uint16: "Word",
  int32: "Long",
  uint32: "DWord",
  int64: "LLong",
  uint64: "QWord",
  float32: "Float",
  float64: "Double",
  string: "String",
};

const MODICON_PREFIX = { coil: "0", discrete: "1", input: "3", holding: "4" } as const;

/** A tag's address in Kepware's decimal form (6 digits, 1-based). */
export function kepwareAddressOf(t: TagConfig, deviceByteOrder: ByteOrder): string {
  const a = t.address;
  const base = `${MODICON_PREFIX[a.area]}${String(a.offset + 1).padStart(5, "0")}`;
  if (tagType(t) === "string") {
    const order = t.byteOrder ?? deviceByteOrder;
    return `${base}.${(t.length ?? 1) * 2}${order === "BADC" || order === "DCBA" ? "L" : "H"}`;
  }
  return a.bit === undefined ? base : `${base}.${a.bit}`;
}

/** One device's tags as Kepware's tag CSV (comma separated, CRLF, as Kepware writes it). */
export function exportKepwareCsv(device: DeviceConfig, delimiter: "," | ";" = ","): string {
  const num = (n: number): string => (delimiter === ";" ? String(n).replace(".", ",") : String(n));
  const lines = [KEPWARE_COLUMNS.join(delimiter)];
  for (const t of device.tags) {
    const type = tagType(t);
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
      csvField(kepwareAddressOf(t, device.byteOrder), delimiter, true),
      KEPWARE_TYPE[type],
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
