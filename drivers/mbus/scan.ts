// Finding the meters on an M-Bus (`fieldgate mbus scan`, DriverDefinition.discover) and writing
// each one's device entry, ready to paste.
//
// - Primary search: SND_NKE to each address of a range; a meter that answers E5h is read.
// - Secondary search (EN 13757-3 §7; The M-Bus documentation §7.3, "searching for installed
//   slaves"): selections with wildcards narrow the ID digit by digit, most significant first. A
//   selection nobody answers prunes its digits; one answered with E5h is followed by REQ_UD2 to
//   253: one meter answers with a good telegram, several with telegrams that collide into a
//   corrupt frame (M-Bus slaves draw current together, so their E5h look like one), and then the
//   next digit is tried 0-9 under it. Bytes that are no frame in answer to the selection collide
//   the same way.
// A meter found both ways is one meter (its header's ID, manufacturer, version and medium).
import type { DiscoveredDevice } from "../../src/devices/discovery.js";
import type { BusAccess, MbusLink } from "./link.js";
import type { MbusReading } from "./reading.js";
import { quantityKey, selects } from "./reading.js";
import type { MbusRecord } from "./records.js";
import { ANY, addressOf, formatSecondary, matches, type SecondaryAddress } from "./secondary.js";
import { quantityNames } from "./vif.js";
import { MAX_PRIMARY, SECONDARY_ADDRESS } from "./frame.js";
import { defaultTagType } from "./protocol.js";

export interface ScanOptions {
  /** Search primary addresses `from`-`to` (default 0-250). */
  readonly primary: boolean;
  readonly from?: number;
  readonly to?: number;
  /** Search secondary addresses. */
  readonly secondary: boolean;
  /** The wait for each answer's first character, ms; default the link's for its bus speed. */
  readonly timeout?: number;
  /** Repeats of a readout request left unanswered or answered corrupt. */
  readonly retries?: number;
  readonly signal?: AbortSignal;
  readonly progress?: (message: string) => void;
}

/** A meter found: its readout, and where it answered. */
export interface FoundMeter {
  readonly reading: MbusReading;
  /** The primary address it answered at (primary search), or the A field of its answers. */
  readonly primary: number;
  /** Its full secondary address, from its header (undefined for a meter whose answer has none). */
  readonly secondary: SecondaryAddress | undefined;
  /** Found by the secondary search. */
  readonly bySecondary: boolean;
}

/** Most telegrams a scan reads of one meter (its `telegrams` is written from what it sent). */
const SCAN_TELEGRAMS = 16;

/** The meters on `link`'s bus; the bus is the scan's alone while it runs. */
export function scanBus(link: MbusLink, options: ScanOptions): Promise<FoundMeter[]> {
  return link.exclusive(async (bus) => {
    const found: FoundMeter[] = [];
    const say = options.progress ?? (() => undefined);
    if (options.primary) await primarySearch(bus, options, found, say);
    if (options.secondary) await secondarySearch(bus, "", options, found, say);
    return found;
  });
}

function identity(m: FoundMeter): string | undefined {
  return m.secondary === undefined ? undefined : formatSecondary(m.secondary);
}

function add(found: FoundMeter[], meter: FoundMeter, say: (m: string) => void): void {
  const id = identity(meter);
  const known = id === undefined ? -1 : found.findIndex((m) => identity(m) === id);
  if (known >= 0) {
    // Found both ways: the secondary search's entry is the one to keep (it names the meter).
    if (meter.bySecondary) found[known] = meter;
    return;
  }
  found.push(meter);
  say(`found ${summary(meter)}`);
}

async function primarySearch(bus: BusAccess, o: ScanOptions, found: FoundMeter[], say: (m: string) => void): Promise<void> {
  const from = o.from ?? 0;
  const to = o.to ?? MAX_PRIMARY;
  for (let a = from; a <= to; a++) {
    if (o.signal?.aborted) return;
    const heard = await bus.probe(a, o.timeout);
    if (heard.kind === "silent" || heard.kind === "closed") {
      if (heard.kind === "closed") throw new Error(heard.reason);
      continue;
    }
    if (heard.kind === "garbage") {
      say(`address ${a}: answers collide (${heard.reason}); two meters at one address? Find them by secondary address`);
      continue;
    }
    const out = await bus.read(a, SCAN_TELEGRAMS, o.retries ?? 2, o.timeout);
    if (!out.ok) {
      say(`address ${a}: answered SND_NKE, not REQ_UD2: ${out.error.message}`);
      continue;
    }
    const h = out.reading.header;
    add(found, { reading: out.reading, primary: a, secondary: h === undefined ? undefined : addressOf(h), bySecondary: false }, say);
  }
}

async function secondarySearch(bus: BusAccess, prefix: string, o: ScanOptions, found: FoundMeter[], say: (m: string) => void): Promise<void> {
  for (let digit = 0; digit <= 9; digit++) {
    if (o.signal?.aborted) return;
    const id = `${prefix}${digit}`.padEnd(8, "F");
    const mask: SecondaryAddress = { id, ...ANY };
    const heard = await bus.select(mask, o.timeout);
    if (heard.kind === "closed") throw new Error(heard.reason);
    if (heard.kind === "silent") continue;
    let several = heard.kind !== "ack";
    if (!several) {
      const out = await bus.read(SECONDARY_ADDRESS, SCAN_TELEGRAMS, 0, o.timeout);
      const h = out.ok ? out.reading.header : undefined;
      if (out.ok && h !== undefined && matches(mask, h)) {
        add(found, { reading: out.reading, primary: out.reading.address, secondary: addressOf(h), bySecondary: true }, say);
        continue;
      }
      several = !out.ok && out.heard !== "silent";
      if (out.ok || !several) {
        say(`${id}: selected, but no telegram with a matching ID followed`);
        continue;
      }
    }
    if (prefix.length === 7) {
      say(`${id}: several meters answer to one ID (they differ in manufacturer, version or medium); the search cannot part them`);
      continue;
    }
    await secondarySearch(bus, `${prefix}${digit}`, o, found, say);
  }
}

// ---- device entries ----------------------------------------------------------------------------

/** EN 13757-3 §6.2, the media of the fixed header (and of the fixed structure's 4 bits). */
const MEDIA: Readonly<Record<number, string>> = {
  0x00: "other", 0x01: "oil", 0x02: "electricity", 0x03: "gas", 0x04: "heat (outlet)", 0x05: "steam", 0x06: "warm water (30-90 °C)",
  0x07: "water", 0x08: "heat cost allocator", 0x09: "compressed air", 0x0a: "cooling load (outlet)", 0x0b: "cooling load (inlet)",
  0x0c: "heat (inlet)", 0x0d: "heat / cooling load", 0x0e: "bus / system component", 0x0f: "unknown medium", 0x15: "hot water (90 °C and above)",
  0x16: "cold water", 0x17: "hot and cold water", 0x18: "pressure", 0x19: "A/D converter",
};

export function mediumName(code: number): string {
  return MEDIA[code] ?? `medium ${code.toString(16).toUpperCase().padStart(2, "0")}h`;
}

export function summary(m: FoundMeter): string {
  const h = m.reading.header;
  const what = h === undefined ? "a meter without a fixed header" : `${h.manufacturer} ${mediumName(h.medium)} meter ${h.id} (version ${h.version})`;
  const at = m.bySecondary ? `secondary address ${formatSecondary(m.secondary!)}, primary ${m.primary}` : `address ${m.primary}`;
  const n = m.reading.records.length;
  return `${what} at ${at}: ${n} record${n === 1 ? "" : "s"} in ${m.reading.telegrams} telegram${m.reading.telegrams === 1 ? "" : "s"}`;
}

const KNOWN = new Set(quantityNames().map(quantityKey));
const SUFFIX = { instantaneous: "", maximum: "_max", minimum: "_min", error: "_err" } as const;

function slug(text: string): string {
  const s = text.toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_+|_+$/g, "");
  return s === "" ? "value" : /^[a-z0-9]/.test(s) ? s : `v_${s}`;
}

/** A tag for each record: by its quantity where that names it alone, else by its place. */
function tagsOf(reading: MbusReading): Record<string, unknown>[] {
  const names = new Set<string>();
  return reading.records.map((r) => {
    let name = `${slug(r.quantity)}${r.storage ? `_s${r.storage}` : ""}${SUFFIX[r.function]}${r.tariff ? `_t${r.tariff}` : ""}${r.subunit ? `_u${r.subunit}` : ""}`;
    for (let k = 2; names.has(name); k++) name = `${name.replace(/_\d+$/, "")}_${k}`;
    names.add(name);
    const tag: Record<string, unknown> = { name };
    const selector = { quantity: quantityKey(r.quantity), storage: r.storage, function: r.function, tariff: r.tariff, subunit: r.subunit };
    const alone = KNOWN.has(selector.quantity) && reading.select(selector) === r && reading.records.filter((x) => selects(selector, x)).length === 1;
    if (alone) {
      tag.quantity = r.quantity;
      if (r.storage) tag.storage = r.storage;
      if (r.function !== "instantaneous") tag.function = r.function;
      if (r.tariff) tag.tariff = r.tariff;
      if (r.subunit) tag.subunit = r.subunit;
    } else {
      tag.record = r.index;
    }
    const type = typeOf(r);
    if (type !== defaultTagType(alone ? r.quantity : undefined)) tag.type = type;
    const about = [r.extensions.length > 0 ? r.extensions.join(", ") : "", r.invalid ? `read as no value: ${r.invalid}` : ""].filter((s) => s !== "");
    if (!alone || about.length > 0) tag.description = `${r.quantity}${about.length > 0 ? `: ${about.join("; ")}` : ""} (${r.head})`;
    return tag;
  });
}

function typeOf(r: MbusRecord): "number" | "text" | "time" {
  const v = r.value;
  if (typeof v === "string" || v instanceof Uint8Array) return "text";
  if (v !== undefined && typeof v === "object") return "time";
  return "number";
}

/** Where the entries say the meters are: a bus of the map (by name) or a TCP converter. */
export type EntryLink = { readonly bus: string } | { readonly host: string; readonly port: number; readonly baudRate?: number };

/** The device entry of each meter found, with unique names. */
export function deviceEntries(found: readonly FoundMeter[], link: EntryLink): DiscoveredDevice[] {
  const names = new Set<string>();
  return found.map((m) => {
    const h = m.reading.header;
    let name = h === undefined ? `meter_${m.primary}` : `${h.manufacturer.toLowerCase().replace(/[^a-z]/g, "") || "meter"}_${h.id.toLowerCase()}`;
    for (let k = 2; names.has(name); k++) name = `${name.replace(/-\d+$/, "")}-${k}`;
    names.add(name);
    const entry: Record<string, unknown> = { name, driver: "mbus", ...link };
    if (m.bySecondary && m.secondary !== undefined) entry.secondaryAddress = formatSecondary(m.secondary);
    else entry.address = m.primary;
    if (m.reading.telegrams > 1) entry.telegrams = m.reading.telegrams;
    if (h !== undefined) entry.description = `${h.manufacturer} ${mediumName(h.medium)} meter, ID ${h.id}, version ${h.version}`;
    entry.tags = tagsOf(m.reading);
    return { entry, summary: summary(m) };
  });
}
