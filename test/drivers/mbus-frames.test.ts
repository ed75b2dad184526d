// The M-Bus decoder (drivers/mbus: frame.ts, records.ts) against telegrams captured from real
// meters and what libmbus decodes from them (test/drivers/mbus-frames/, see its README): every
// telegram decodes to the records libmbus lists, with the same function, storage number, tariff,
// subunit, quantity, unit and value (units as UNECE codes, values in the base units the VIF's
// multiplier gives), except where this decoder reads the standard differently, each such
// record listed below with its reason; every broken telegram or error report is refused with a
// named reason, never an exception.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { hex, type TimePoint } from "../../drivers/mbus/data.js";
import { decodeFrame } from "../../drivers/mbus/frame.js";
import { decodeTelegram, type MbusRecord, type Telegram, type TelegramResult } from "../../drivers/mbus/records.js";

const DIR = join(dirname(fileURLToPath(import.meta.url)), "mbus-frames");

function bytesOf(file: string): Uint8Array {
  const words = readFileSync(file, "latin1").trim().split(/\s+/);
  return Uint8Array.from(words, (w) => parseInt(w, 16));
}

/** A telegram's decoding, from its frame. */
function decode(bytes: Uint8Array): TelegramResult | { ok: false; reason: "frame"; message: string } {
  const f = decodeFrame(bytes);
  if (f.kind === "bad") return { ok: false, reason: "frame", message: f.reason };
  if (f.kind !== "long") return { ok: false, reason: "frame", message: `a ${f.kind} frame, not a meter's answer` };
  return decodeTelegram(f.ci, f.data);
}

// ---- libmbus's XML ----------------------------------------------------------------------------

const ENTITIES: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'" };
const unescape = (s: string) => s.replace(/&(amp|lt|gt|quot|apos);/g, (e) => ENTITIES[e]!);

function fields(block: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of block.matchAll(/<(\w+)>([^<]*)<\/\1>/g)) out[m[1]!] = unescape(m[2]!);
  return out;
}

interface Norm {
  readonly slave: Record<string, string>;
  readonly records: Record<string, string>[];
  readonly error?: string;
}

function readNorm(file: string): Norm {
  const xml = readFileSync(file, "latin1");
  const slave = fields(/<SlaveInformation>([\s\S]*?)<\/SlaveInformation>/.exec(xml)![1]!);
  const records = [...xml.matchAll(/<DataRecord id="(\d+)">([\s\S]*?)<\/DataRecord>/g)].map((m) => fields(m[2]!));
  return { slave, records, ...(slave.Error === undefined ? {} : { error: slave.Error }) };
}

// ---- libmbus's words in ours ------------------------------------------------------------------

const FUNCTION: Record<string, string> = {
  "Instantaneous value": "instantaneous",
  "Maximum value": "maximum",
  "Minimum value": "minimum",
  "Value during error state": "error",
  "Actual value": "instantaneous",
};
/** libmbus's unit names: the UNECE code, and the factor to the base unit for the fixed structure's. */
const UNIT: Record<string, readonly [string | undefined, number]> = {
  "": [undefined, 1], "-": [undefined, 1], "Units for H.C.A.": [undefined, 1],
  Wh: ["WHR", 1], J: ["JOU", 1], "m^3": ["MTQ", 1], kg: ["KGM", 1], s: ["SEC", 1], W: ["WTT", 1], "J/h": ["P16", 1],
  "m^3/h": ["MQH", 1], "m^3/min": ["G53", 1], "m^3/s": ["MQS", 1], "kg/h": ["E93", 1], "°C": ["CEL", 1], K: ["KEL", 1],
  bar: ["BAR", 1], V: ["VLT", 1], A: ["AMP", 1], kWh: ["WHR", 1000], l: ["MTQ", 0.001],
};
const QUANTITY: Record<string, string> = {
  "h.c.a.": "units for h.c.a.",
  "time point (date)": "time point",
  "time point (date & time)": "time point",
  "(enhanced) identification": "enhanced identification",
};
const MEDIUM: Record<string, number> = {
  Other: 0x00, Oil: 0x01, Electricity: 0x02, Gas: 0x03, "Heat: Outlet": 0x04, Heat: 0x04, Steam: 0x05, "Warm water (30-90°C)": 0x06, Water: 0x07,
  "Heat Cost Allocator": 0x08, "Heat: Inlet": 0x0c, "Heat / Cooling load meter": 0x0d, "Bus/System": 0x0e, "Cold water": 0x16,
};

/** A time point as libmbus prints it: the fields as sent (2000-00-00 for a zero date), an invalid date-time as 1900-01-00T00:00:00Z. */
function libmbusTime(t: TimePoint): string {
  const p = (n: number) => String(n).padStart(2, "0");
  if (t.hour === undefined) return `${t.year}-${p(t.month)}-${p(t.day)}`;
  if (t.invalid) return "1900-01-00T00:00:00Z";
  return `${t.year}-${p(t.month)}-${p(t.day)}T${p(t.hour)}:${p(t.minute ?? 0)}:00Z`;
}

/** Our record's value as libmbus's XML would say it, or the number to compare. */
function shown(r: MbusRecord): string | number {
  const v = r.value;
  if (v === undefined) return "";
  if (typeof v === "number" || typeof v === "string") return v;
  // LVAR binary: libmbus prints the bytes most significant first.
  if (v instanceof Uint8Array) return hex(Uint8Array.from(v).reverse());
  return libmbusTime(v);
}

/** Where one record differs from libmbus's, in words: "unit WTT, libmbus's W->WTT". */
function differences(ours: MbusRecord, theirs: Record<string, string>, fixed: boolean): string[] {
  const out: string[] = [];
  const fn = FUNCTION[theirs.Function!];
  if (fn !== ours.function) out.push(`function ${ours.function}, libmbus's ${theirs.Function}`);
  if (!fixed && Number(theirs.StorageNumber) !== ours.storage) out.push(`storage ${ours.storage}, libmbus's ${theirs.StorageNumber}`);
  if (Number(theirs.Tariff ?? 0) !== ours.tariff) out.push(`tariff ${ours.tariff}, libmbus's ${theirs.Tariff}`);
  if (Number(theirs.Device ?? 0) !== ours.subunit) out.push(`subunit ${ours.subunit}, libmbus's ${theirs.Device}`);
  const unit = UNIT[theirs.Unit!];
  if (unit === undefined) out.push(`libmbus's unit ${theirs.Unit} is not in the test's table`);
  else if (unit[0] !== ours.unit?.code) out.push(`unit ${ours.unit?.code}, libmbus's ${theirs.Unit}`);
  if (!fixed) {
    const q = theirs.Quantity!.toLowerCase();
    if ((QUANTITY[q] ?? q) !== ours.quantity.toLowerCase()) out.push(`quantity ${ours.quantity}, libmbus's ${theirs.Quantity}`);
  }
  const mine = shown(ours);
  const value = theirs.Value!;
  if (typeof mine === "number") {
    const want = Number(value) * (unit?.[1] ?? 1);
    if (!(Math.abs(mine - want) <= 1e-6 * Math.max(1, Math.abs(want)))) out.push(`value ${mine}, libmbus's ${value}`);
  } else if (mine !== value) {
    out.push(`value "${mine}", libmbus's "${value}"${ours.invalid ? ` (${ours.invalid})` : ""}`);
  }
  return out;
}

/** The records as libmbus lists them: ours, then the manufacturer's data after DIF 0Fh/1Fh as one more. */
function compare(t: Telegram, norm: Norm): string[] {
  const out: string[] = [];
  const fixed = t.ci === 0x73 || t.ci === 0x77;
  const h = t.header!;
  const s = norm.slave;
  const id = h.id.replace(/^0+(?=.)/, "");
  if (id !== s.Id) out.push(`id ${id}, libmbus's ${s.Id}`);
  if (!fixed && h.manufacturer !== s.Manufacturer) out.push(`manufacturer ${h.manufacturer}, libmbus's ${s.Manufacturer}`);
  if (!fixed && String(h.version) !== s.Version) out.push(`version ${h.version}, libmbus's ${s.Version}`);
  if (MEDIUM[s.Medium!] !== h.medium) out.push(`medium ${h.medium}, libmbus's ${s.Medium}`);
  if (String(h.accessNumber) !== s.AccessNumber) out.push(`access number ${h.accessNumber}, libmbus's ${s.AccessNumber}`);
  if (h.status.toString(16).toUpperCase().padStart(2, "0") !== s.Status) out.push(`status ${h.status}, libmbus's ${s.Status}`);
  if (!fixed && h.signature.toString(16).toUpperCase().padStart(4, "0") !== s.Signature) out.push(`signature ${h.signature}, libmbus's ${s.Signature}`);
  const theirs = norm.records;
  const extra = t.manufacturerData === undefined ? 0 : 1;
  if (theirs.length !== t.records.length + extra) out.push(`${t.records.length + extra} records, libmbus's ${theirs.length}`);
  t.records.forEach((r, i) => {
    const rec = theirs[i];
    if (rec === undefined) return;
    // libmbus lists a record of a VIF it has no name for with no fields at all.
    if (rec.Function === undefined) {
      if (!/^VIF /.test(r.quantity)) out.push(`record ${i}: ${r.quantity}, a VIF libmbus has no name for`);
      return;
    }
    for (const d of differences(r, rec, fixed)) out.push(`record ${i}: ${d}`);
  });
  if (t.manufacturerData !== undefined) {
    const rec = theirs[t.records.length];
    const fn = t.moreRecordsFollow ? "More records follow" : "Manufacturer specific";
    if (rec?.Function !== fn || rec.Value !== hex(t.manufacturerData)) out.push(`manufacturer data ${fn}: ${hex(t.manufacturerData)}, libmbus's ${rec?.Function}: ${rec?.Value}`);
  }
  return out;
}

/**
 * Where this decoder reads a telegram otherwise than libmbus, record by record, and why. Every
 * difference the comparison finds must be here, and everything here must still differ.
 */
const DEVIATIONS: Readonly<Record<string, readonly string[]>> = {
  // BCD with digits above 9 in records of function "error" (the meter is in error): EN 13757-3
  // Annex A gives such digits no number (only Fh as the most significant digit, a minus sign),
  // so the record has no value; libmbus adds the digit's value and prints a number.
  "ELS_Elster-F96-Plus": [
    "record 4: unit undefined, libmbus's W",
    'record 4: value "", libmbus\'s "13131113.000000" (BCD digit Dh)',
    "record 5: unit undefined, libmbus's m^3/h",
    'record 5: value "", libmbus\'s "131.113000" (BCD digit Dh)',
  ],
  abb_f95: [
    "record 2: unit undefined, libmbus's W",
    'record 2: value "", libmbus\'s "1311041.300000" (BCD digit Dh)',
    "record 3: unit undefined, libmbus's m^3/h",
    'record 3: value "", libmbus\'s "11.041300" (BCD digit Eh)',
  ],
  // VIFE 50h/58h: the duration of a limit exceed (in seconds, its last bits 00), not a volume flow.
  SEN_Pollustat: ["record 12: unit SEC, libmbus's m^3/h", "record 13: unit SEC, libmbus's m^3/h"],
  "landis+gyr_ultraheat_t230": [
    // VIFE 6Fh: the date/time of the last event (the maximum), a type F time point, not a power,
    // flow or temperature; zeros make no time.
    "record 19: unit undefined, libmbus's W",
    'record 19: value "1900-01-00T00:00:00Z", libmbus\'s "0.000000" (the time point\'s fields make no time)',
    "record 20: unit undefined, libmbus's m^3/h",
    'record 20: value "1900-01-00T00:00:00Z", libmbus\'s "0.000000" (the time point\'s fields make no time)',
    "record 21: unit undefined, libmbus's °C",
    'record 21: value "2011-08-26T20:50:00Z", libmbus\'s "41065374.600000"',
    "record 22: unit undefined, libmbus's °C",
    'record 22: value "2011-08-09T11:43:00Z", libmbus\'s "40953732.300000"',
    // Year field 127: type F's year is 0-99; libmbus prints 2127.
    'record 32: value "1900-01-00T00:00:00Z", libmbus\'s "2127-01-01T00:00:00Z" (the time point\'s fields make no time)',
  ],
};

const frames = readdirSync(join(DIR, "test-frames")).filter((f) => f.endsWith(".hex")).map((f) => f.slice(0, -4)).sort();

describe("the M-Bus decoder against libmbus's captured telegrams", () => {
  it("has them all: every telegram with its decoded XML", () => {
    expect(frames.length).toBe(71);
    for (const f of frames) expect(readdirSync(join(DIR, "test-frames"))).toContain(`${f}.norm.xml`);
  });

  it.each(frames)("%s decodes to libmbus's records, units and values", (name) => {
    const result = decode(bytesOf(join(DIR, "test-frames", `${name}.hex`)));
    expect(result.ok, result.ok ? "" : `${result.reason}: ${result.message}`).toBe(true);
    if (!result.ok) return;
    const found = compare(result.telegram, readNorm(join(DIR, "test-frames", `${name}.norm.xml`)));
    expect(found).toEqual(DEVIATIONS[name] ?? []);
  });
});

/** libmbus's words for a meter's application error (CI 70h) in ours (EN 13757-3 §6.6). */
const ERROR_WORDS: Record<string, string> = {
  "Application busy": "application too busy for handling readout request",
  "Buffer too long, truncated": "buffer too long, truncated",
  "Unspecified error": "unspecified error",
  "Premature end of record": "premature end of record",
  "More than 10 DIFE´s": "more than 10 DIFEs",
  "Too many readouts": "too many readouts",
  "Too many records": "too many records",
  "More than 10 VIFE´s": "more than 10 VIFEs",
  "Unimplemented CI-Field": "unimplemented CI-field",
};

/** The reasons of the broken telegrams libmbus has no XML for. */
const BROKEN: Record<string, string> = {
  premature_end_of_data1: "premature-end",
  premature_end_of_data2: "premature-end",
  premature_end_of_dif1: "premature-end",
  premature_end_of_dif2: "premature-end",
  premature_end_of_var_vif1: "premature-end",
  too_long_var_vif: "premature-end",
  too_many_dife: "too-many-dife",
  too_short_header: "short-header",
  unspecified_error: "application-error",
};

const errors = readdirSync(join(DIR, "error-frames")).filter((f) => f.endsWith(".hex")).map((f) => f.slice(0, -4)).sort();

describe("the M-Bus decoder against libmbus's broken telegrams and error reports", () => {
  it("has them all", () => {
    expect(errors.length).toBe(18);
  });

  it.each(errors)("refuses %s with a named reason", (name) => {
    const result = decode(bytesOf(join(DIR, "error-frames", `${name}.hex`)));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const xml = join(DIR, "error-frames", `${name}.xml`);
    const norm = readdirSync(join(DIR, "error-frames")).includes(`${name}.xml`) ? readNorm(xml) : undefined;
    if (norm !== undefined) {
      expect(result.reason).toBe("application-error");
      expect(result.message).toBe(`the meter reports an application error: ${ERROR_WORDS[norm.error!]}`);
    } else {
      expect(result.reason).toBe(BROKEN[name]);
      expect(result.message).toMatch(/^record \d+: |^a variable data answer|^the meter reports/);
    }
  });
});

describe("the M-Bus decoder on any bytes", () => {
  it("never throws: every cut of every captured telegram, and random data after a good header, is a telegram or a named failure", () => {
    let seed = 1;
    const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000);
    for (const name of frames) {
      const f = decodeFrame(bytesOf(join(DIR, "test-frames", `${name}.hex`)));
      if (f.kind !== "long") throw new Error(name);
      for (let cut = 0; cut <= f.data.length; cut++) {
        const r = decodeTelegram(f.ci, f.data.subarray(0, cut));
        if (!r.ok) expect(r.message.length).toBeGreaterThan(0);
      }
      for (let k = 0; k < 20; k++) {
        const data = Uint8Array.from(f.data);
        for (let i = 12; i < data.length; i++) if (random() < 0.2) data[i] = Math.floor(random() * 256);
        const r = decodeTelegram(f.ci, data);
        if (!r.ok) expect(r.reason).toMatch(/^[a-z-]+$/);
      }
    }
  });
});
