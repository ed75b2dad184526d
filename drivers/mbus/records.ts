// The M-Bus application layer (EN 13757-3): what a meter's answer (RSP_UD, a long frame) says,
// by its CI field (§5, Table 2 of CI values): the variable data structure (CI 72h with the fixed
// header of 12 bytes, 7Ah with the short header of 4, 78h with none: §6.2-6.3) of data records,
// the fixed data structure of the older meters (CI 73h/77h, The M-Bus documentation §6.2), or a
// report of an application error (CI 70h, §6.6). A record is its data information block (DIF and
// up to ten DIFEs: the data field, the function, the storage number, tariff and subunit bits,
// §6.3.1-6.3.2), its value information block (VIF and up to ten VIFEs, vif.ts, §6.4) and its data
// (data.ts). Records are numbered from `first` so that the telegrams of one readout ("more
// records follow", DIF 1Fh) number them on.
//
// Nothing here throws on a meter's bytes: every length is checked before it is read, and a
// telegram that cannot be decoded is a TelegramFailure with a named reason.
import { unitByCode, type UneceUnit } from "../../src/ua/units.js";
import { bcd, dateG, dateTimeF, dateTimeI, hex, integer, lvar, real, text, type TimePoint } from "./data.js";
import { fbVif, fdVif, primaryVif, vifeMeaning, type VifMeaning } from "./vif.js";

export type RecordFunction = "instantaneous" | "maximum" | "minimum" | "error";
/** DIF bits 4-5 (§6.3.1). */
export const FUNCTIONS: readonly RecordFunction[] = ["instantaneous", "maximum", "minimum", "error"];

/** The fixed header of a variable data answer (§6.2: CI 72h; 7Ah carries only its last four fields). */
export interface FixedHeader {
  /** The identification number as 8 hexadecimal digits, most significant first (BCD: the digits printed on the meter). */
  readonly id: string;
  /** Three letters (EN 62056-21 FLAG code: 5 bits a letter). */
  readonly manufacturer: string;
  readonly version: number;
  /** Medium code (§6.2 table of media: 04h heat, 07h water, ...). */
  readonly medium: number;
  readonly accessNumber: number;
  readonly status: number;
  readonly signature: number;
}

/** A record's value: a number, text, a time point, or bytes (LVAR binary); none for data field 0 or a value its bytes do not make. */
export type RecordValue = number | string | TimePoint | Uint8Array | undefined;

export interface MbusRecord {
  /** 0-based, in the order of the telegrams of one readout. */
  readonly index: number;
  readonly function: RecordFunction;
  readonly storage: number;
  readonly tariff: number;
  readonly subunit: number;
  /** What it is: the VIF's quantity (vif.ts), a plain-text VIF's text, "Manufacturer specific", or "VIF xxh". */
  readonly quantity: string;
  /** The unit of `value` (base unit, the VIF's multiplier applied); undefined when it has none or a VIFE changed it. */
  readonly unit: UneceUnit | undefined;
  readonly value: RecordValue;
  /** Why `value` is undefined although the record has data (a BCD digit above 9, a time point whose fields make none). */
  readonly invalid?: string;
  /** The combinable VIFEs, in words ("per hour", "date/time of the last event"). */
  readonly extensions: readonly string[];
  /** The record's DIB and VIB as sent, hexadecimal: its identity for a person. */
  readonly head: string;
}

export interface Telegram {
  readonly ci: number;
  readonly header: FixedHeader | undefined;
  readonly records: readonly MbusRecord[];
  /** The bytes after DIF 0Fh/1Fh, as sent. */
  readonly manufacturerData: Uint8Array | undefined;
  /** DIF 1Fh: the meter has more records in its next telegram (§6.3.1). */
  readonly moreRecordsFollow: boolean;
}

export type TelegramFault =
  | "application-error"
  | "unsupported-ci"
  | "short-header"
  | "premature-end"
  | "too-many-dife"
  | "too-many-vife"
  | "reserved-lvar"
  | "reserved-dif";

export type TelegramResult =
  | { readonly ok: true; readonly telegram: Telegram }
  | { readonly ok: false; readonly reason: TelegramFault; readonly message: string; readonly errorCode?: number };

/** §6.6: the codes of an application error report (CI 70h). */
const APPLICATION_ERRORS = [
  "unspecified error",
  "unimplemented CI-field",
  "buffer too long, truncated",
  "too many records",
  "premature end of record",
  "more than 10 DIFEs",
  "more than 10 VIFEs",
  "reserved",
  "application too busy for handling readout request",
  "too many readouts",
];

/** Application error code 8: busy (the meter will answer later). */
export const APPLICATION_BUSY = 8;

const MAX_EXTENSIONS = 10;

function fail(reason: TelegramFault, message: string, errorCode?: number): TelegramResult {
  return { ok: false, reason, message, ...(errorCode === undefined ? {} : { errorCode }) };
}

function manufacturer(code: number): string {
  return String.fromCharCode(((code >> 10) & 0x1f) + 64, ((code >> 5) & 0x1f) + 64, (code & 0x1f) + 64);
}

function idDigits(data: Uint8Array, at: number): string {
  let s = "";
  for (let i = 3; i >= 0; i--) s += data[at + i]!.toString(16).toUpperCase().padStart(2, "0");
  return s;
}

/** Decodes the CI and data of a meter's answer (a long frame's); records are numbered from `first`. */
export function decodeTelegram(ci: number, data: Uint8Array, first = 0): TelegramResult {
  switch (ci) {
    case 0x70: {
      const code = data.length > 0 ? data[0]! : 0;
      const what = APPLICATION_ERRORS[code] ?? `error code ${code}`;
      return fail("application-error", `the meter reports an application error: ${what}`, code);
    }
    case 0x72: {
      if (data.length < 12) return fail("short-header", `a variable data answer (CI 72h) of ${data.length} bytes, shorter than its fixed header of 12`);
      const header: FixedHeader = {
        id: idDigits(data, 0),
        manufacturer: manufacturer(data[4]! | (data[5]! << 8)),
        version: data[6]!,
        medium: data[7]!,
        accessNumber: data[8]!,
        status: data[9]!,
        signature: data[10]! | (data[11]! << 8),
      };
      return records(ci, data, 12, header, first);
    }
    case 0x7a:
      if (data.length < 4) return fail("short-header", `a variable data answer (CI 7Ah) of ${data.length} bytes, shorter than its header of 4`);
      return records(ci, data, 4, undefined, first);
    case 0x78:
      return records(ci, data, 0, undefined, first);
    case 0x73:
    case 0x77:
      return fixedStructure(ci, data, first);
    default:
      return fail("unsupported-ci", `an answer with CI ${ci.toString(16).toUpperCase().padStart(2, "0")}h, which is not one of a meter's data (72h, 78h, 7Ah, 73h, 77h) nor an error report (70h)`);
  }
}

/** Bytes a data field holds (§6.3.1 Table 4), LVAR (Dh) and special functions (Fh) aside. */
const DATA_SIZES = [0, 1, 2, 3, 4, 4, 6, 8, 0, 1, 2, 3, 4, -1, 6, -1];

interface Vib {
  readonly meaning: VifMeaning | undefined;
  readonly quantity: string;
  readonly extensions: string[];
  multiply: number;
  add: number;
  changesUnit: boolean;
  timePoint: boolean;
  durationFactor: number;
}

function records(ci: number, data: Uint8Array, start: number, header: FixedHeader | undefined, first: number): TelegramResult {
  const out: MbusRecord[] = [];
  let pos = start;
  const end = data.length;
  while (pos < end) {
    const dif = data[pos]!;
    // §6.3.1: 2Fh idle filler; 0Fh/1Fh: manufacturer specific data to the end (1Fh: more records follow).
    if (dif === 0x2f) {
      pos++;
      continue;
    }
    if (dif === 0x0f || dif === 0x1f) {
      return { ok: true, telegram: { ci, header, records: out, manufacturerData: data.slice(pos + 1), moreRecordsFollow: dif === 0x1f } };
    }
    const n = first + out.length;
    if ((dif & 0x0f) === 0x0f) return fail("reserved-dif", `record ${n}: DIF ${dif.toString(16).toUpperCase()}h is a special function no answer holds`);
    const headAt = pos;
    pos++;
    let storage = (dif >> 6) & 1;
    let tariff = 0;
    let subunit = 0;
    let more = (dif & 0x80) !== 0;
    for (let i = 0; more; i++) {
      if (pos >= end) return fail("premature-end", `record ${n}: the telegram ends in its DIFEs`);
      if (i === MAX_EXTENSIONS) return fail("too-many-dife", `record ${n}: more than ${MAX_EXTENSIONS} DIFEs`);
      const dife = data[pos++]!;
      storage += (dife & 0x0f) * 2 ** (1 + 4 * i);
      tariff += ((dife >> 4) & 3) * 2 ** (2 * i);
      subunit += ((dife >> 6) & 1) * 2 ** i;
      more = (dife & 0x80) !== 0;
    }
    const vib = valueInformation(data, pos, dif & 0x0f, n);
    if (!vib.ok) return vib.failure;
    pos = vib.pos;
    const value = recordValue(data, pos, dif & 0x0f, vib.info, n);
    if (!value.ok) return value.failure;
    out.push({
      index: n,
      function: FUNCTIONS[(dif >> 4) & 3]!,
      storage,
      tariff,
      subunit,
      quantity: vib.info.quantity,
      unit: typeof value.value === "number" ? unitOf(vib.info) : undefined,
      value: value.value,
      ...(value.invalid === undefined ? {} : { invalid: value.invalid }),
      extensions: vib.info.extensions,
      head: hex(data.subarray(headAt, vib.pos)),
    });
    pos = value.pos;
  }
  return { ok: true, telegram: { ci, header, records: out, manufacturerData: undefined, moreRecordsFollow: false } };
}

type Step<T> = ({ readonly ok: true; readonly pos: number } & T) | { readonly ok: false; readonly failure: TelegramResult };

function premature(n: number, what: string): { ok: false; failure: TelegramResult } {
  return { ok: false, failure: fail("premature-end", `record ${n}: the telegram ends in its ${what}`) };
}

/** The VIF and VIFEs of record `n` from data[pos] (§6.4): what its value is and how it is scaled. */
function valueInformation(data: Uint8Array, pos: number, dataField: number, n: number): Step<{ readonly info: Vib }> {
  const end = data.length;
  if (pos >= end) return premature(n, "VIF");
  const vif = data[pos++]!;
  const code = vif & 0x7f;
  let meaning: VifMeaning | undefined;
  let quantity: string;
  let last = vif;
  let vifes = 0;
  let manufacturerVifes = false;
  if (code === 0x7b || code === 0x7d) {
    // FBh/FDh: the true VIF is the first VIFE, from the extension table (§6.4.2).
    if ((vif & 0x80) === 0) return { ok: true, pos, info: plainVib(undefined, `VIF ${hexByte(vif)}`) };
    if (pos >= end) return premature(n, "VIFEs");
    last = data[pos++]!;
    vifes++;
    meaning = code === 0x7b ? fbVif(last & 0x7f) : fdVif(last & 0x7f);
    quantity = meaning?.quantity ?? `VIF ${hexByte(vif)} ${hexByte(last)}`;
  } else if (code === 0x7f) {
    quantity = "Manufacturer specific";
    manufacturerVifes = true;
  } else if (code === 0x7e) {
    quantity = "Any VIF";
  } else if (code === 0x7c) {
    return plainTextVif(data, pos, vif, dataField, n);
  } else {
    meaning = primaryVif(code);
    quantity = meaning?.quantity ?? `VIF ${hexByte(vif)}`;
  }
  const info = plainVib(meaning, quantity);
  while (last & 0x80) {
    if (pos >= end) return premature(n, "VIFEs");
    if (vifes === MAX_EXTENSIONS) return { ok: false, failure: fail("too-many-vife", `record ${n}: more than ${MAX_EXTENSIONS} VIFEs`) };
    last = data[pos++]!;
    vifes++;
    if (manufacturerVifes) continue;
    if ((last & 0x7f) === 0x7f) {
      // The VIFEs after 7Fh/FFh are the manufacturer's (§6.4.3).
      manufacturerVifes = true;
      info.extensions.push("manufacturer specific");
      continue;
    }
    applyVife(info, last & 0x7f);
  }
  return { ok: true, pos, info };
}

/** The unit of a number a VIB describes: seconds for a duration VIFE, none when a VIFE changed what the value is. */
function unitOf(info: Vib): UneceUnit | undefined {
  if (info.durationFactor !== 0) return unitByCode("SEC");
  if (info.changesUnit || info.meaning?.unit === undefined) return undefined;
  return unitByCode(info.meaning.unit);
}

function plainVib(meaning: VifMeaning | undefined, quantity: string): Vib {
  return { meaning, quantity, extensions: [], multiply: 1, add: 0, changesUnit: false, timePoint: false, durationFactor: 0 };
}

function applyVife(info: Vib, e: number): void {
  const v = vifeMeaning(e);
  info.extensions.push(v.text);
  if (v.multiply !== undefined) info.multiply *= v.multiply;
  if (v.add !== undefined) info.add += v.add;
  if (v.changesUnit) info.changesUnit = true;
  if (v.timePoint) info.timePoint = true;
  if (v.durationFactor !== undefined) info.durationFactor = v.durationFactor;
}

/**
 * A plain-text VIF (7Ch/FCh, §6.4.2): its unit or quantity as text, a length byte and the
 * characters last first. EN 13757-3 places the text after the VIFEs; meters built to its older
 * text (the Elvaco CMa10 of the test data) put it right after the VIF. The standard's placement
 * is taken when the text and the record's data fit the telegram, else the older one.
 */
function plainTextVif(data: Uint8Array, pos: number, vif: number, dataField: number, n: number): Step<{ readonly info: Vib }> {
  const afterVifes = (): Step<{ readonly info: Vib }> | undefined => {
    const info = plainVib(undefined, "");
    let at = pos;
    let last = vif;
    for (let i = 0; last & 0x80; i++) {
      if (at >= data.length || i === MAX_EXTENSIONS) return undefined;
      last = data[at++]!;
      applyVife(info, last & 0x7f);
    }
    const text = textAt(data, at);
    if (text === undefined || !dataFits(data, text.end, dataField)) return undefined;
    return { ok: true, pos: text.end, info: { ...info, quantity: text.value } };
  };
  const afterVif = (): Step<{ readonly info: Vib }> | undefined => {
    const text = textAt(data, pos);
    if (text === undefined) return undefined;
    const info = plainVib(undefined, text.value);
    let at = text.end;
    let last = vif;
    for (let i = 0; last & 0x80; i++) {
      if (at >= data.length || i === MAX_EXTENSIONS) return undefined;
      last = data[at++]!;
      applyVife(info, last & 0x7f);
    }
    return dataFits(data, at, dataField) ? { ok: true, pos: at, info } : undefined;
  };
  return afterVifes() ?? afterVif() ?? premature(n, "plain-text VIF");
}

function textAt(data: Uint8Array, at: number): { readonly value: string; readonly end: number } | undefined {
  if (at >= data.length) return undefined;
  const length = data[at]!;
  if (at + 1 + length > data.length) return undefined;
  return { value: text(data, at + 1, length), end: at + 1 + length };
}

function dataFits(data: Uint8Array, at: number, dataField: number): boolean {
  if (dataField === 0x0d) return at < data.length && at + 1 + lvar(data[at]!).length <= data.length;
  return at + DATA_SIZES[dataField]! <= data.length;
}

function hexByte(b: number): string {
  return `${b.toString(16).toUpperCase().padStart(2, "0")}h`;
}

type ValueStep = Step<{ readonly value: RecordValue; readonly invalid?: string }>;

/** The data of record `n` at data[pos] by its data field (§6.3.1 Table 4), scaled as its VIB says. */
function recordValue(data: Uint8Array, pos: number, dataField: number, vib: Vib, n: number): ValueStep {
  const end = data.length;
  let size = DATA_SIZES[dataField]!;
  if (dataField === 0x0d) {
    if (pos >= end) return premature(n, "data (its LVAR)");
    const l = lvar(data[pos]!);
    if (l.kind === "reserved") return { ok: false, failure: fail("reserved-lvar", `record ${n}: LVAR ${hexByte(data[pos]!)} is reserved`) };
    pos++;
    if (pos + l.length > end) return premature(n, "data");
    const at = pos;
    pos += l.length;
    if (l.kind === "text") return { ok: true, pos, value: text(data, at, l.length) };
    if (l.kind === "binary") return { ok: true, pos, value: data.slice(at, at + l.length) };
    const v = bcd(data, at, l.length);
    return v.ok ? number(pos, (l.negative ? -1 : 1) * v.value, vib) : { ok: true, pos, value: undefined, invalid: v.reason };
  }
  if (pos + size > end) return premature(n, "data");
  const at = pos;
  pos += size;
  if (size === 0) return { ok: true, pos, value: undefined };
  const kind = vib.meaning?.kind;
  if (kind === "date" || kind === "datetime" || vib.timePoint) {
    const t = size === 2 ? dateG(data, at) : size === 4 ? dateTimeF(data, at) : size === 6 ? dateTimeI(data, at) : undefined;
    if (t !== undefined && dataField <= 7 && dataField !== 5) return { ok: true, pos, value: t, ...(t.invalid ? { invalid: "the time point's fields make no time" } : {}) };
  }
  if (dataField >= 9) {
    const v = bcd(data, at, size);
    return v.ok ? number(pos, v.value, vib) : { ok: true, pos, value: undefined, invalid: v.reason };
  }
  if (dataField === 5) return number(pos, real(data, at), vib);
  return number(pos, integer(data, at, size, kind !== "unsigned"), vib);
}

function number(pos: number, raw: number, vib: Vib): ValueStep {
  const m = vib.meaning;
  if (vib.durationFactor !== 0) return { ok: true, pos, value: raw * vib.durationFactor };
  const scale = m === undefined ? 1 : scaleOf(m);
  // The correction constant is in the VIF's unit (§6.4.3, Table of combinable VIFEs).
  return { ok: true, pos, value: (raw * vib.multiply + vib.add) * scale };
}

/** 10^exponent × factor, exact for the negative exponents (0.001 rather than 1e-3 as a product of 0.1s). */
function scaleOf(m: VifMeaning): number {
  const p = m.exponent >= 0 ? 10 ** m.exponent : 1 / 10 ** -m.exponent;
  return p * (m.factor ?? 1);
}

/** The unit codes of the fixed data structure's two counters (The M-Bus documentation §6.2, table of units). */
const FIXED_UNITS: ReadonlyArray<readonly [string, string | undefined, number]> = (() => {
  const out: [string, string | undefined, number][] = [["Time", undefined, 0], ["Date", undefined, 0]];
  const decades = (quantity: string, unit: string, exponents: readonly number[]) => {
    for (const e of exponents) for (let d = 0; d < 3; d++) out.push([quantity, unit, e + d]);
  };
  decades("Energy", "WHR", [0, 3, 6]);
  decades("Energy", "JOU", [3, 6, 9]);
  decades("Power", "WTT", [0, 3, 6]);
  decades("Power", "P16", [3, 6, 9]);
  decades("Volume", "MTQ", [-6, -3, 0]);
  decades("Volume flow", "MQH", [-6, -3, 0]);
  out.push(["Flow temperature", "CEL", -3], ["Units for H.C.A.", undefined, 0]);
  return out;
})();

/**
 * The fixed data structure (CI 73h, 77h with most significant byte first; The M-Bus
 * documentation §6.2): identification, access number, status, the medium and the units of two
 * counters, and the counters (BCD, or binary when status bit 7 is set). Counter 2's unit 3Eh is
 * counter 1's "historic" value: storage 1 of the same quantity.
 */
function fixedStructure(ci: number, data: Uint8Array, first: number): TelegramResult {
  const msbFirst = ci === 0x77;
  if (data.length < 16) return fail("short-header", `a fixed data structure (CI ${msbFirst ? "77h" : "73h"}) of ${data.length} bytes, shorter than its 16`);
  const order = (at: number, n: number): Uint8Array => (msbFirst ? Uint8Array.from(data.subarray(at, at + n)).reverse() : data.subarray(at, at + n));
  const status = data[5]!;
  const units = [data[6]! & 0x3f, data[7]! & 0x3f];
  const medium = (data[6]! >> 6) | ((data[7]! >> 6) << 2);
  const header: FixedHeader = { id: idDigits(order(0, 4), 0), manufacturer: "", version: 0, medium, accessNumber: data[4]!, status, signature: 0 };
  const out: MbusRecord[] = [];
  for (let k = 0; k < 2; k++) {
    const raw = order(8 + 4 * k, 4);
    const historic = k === 1 && units[1] === 0x3e;
    const code = historic ? units[0]! : units[k]!;
    const [quantity, unit, exponent] = FIXED_UNITS[code] ?? ["Without unit", undefined, 0];
    let value: number | undefined;
    let invalid: string | undefined;
    if (status & 0x80) {
      value = integer(raw, 0, 4, false);
    } else {
      const v = bcd(raw, 0, 4);
      if (v.ok) value = v.value;
      else invalid = v.reason;
    }
    out.push({
      index: first + k,
      function: "instantaneous",
      storage: historic ? 1 : 0,
      tariff: 0,
      subunit: 0,
      quantity,
      unit: unit === undefined || value === undefined ? undefined : unitByCode(unit),
      value: value === undefined ? undefined : value * scaleOf({ quantity, exponent }),
      ...(invalid === undefined ? {} : { invalid }),
      extensions: [],
      head: `counter ${k + 1}, unit ${hexByte(units[k]!)}`,
    });
  }
  return { ok: true, telegram: { ci, header, records: out, manufacturerData: undefined, moreRecordsFollow: false } };
}
