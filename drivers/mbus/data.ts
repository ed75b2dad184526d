// The data of a record (EN 13757-3 Annex A, the data types): BCD (type A), signed and unsigned
// integers (types B, C, D) of 1 to 8 bytes, reals (type H), dates and date-times (types G, F, I)
// and the variable-length data of data field Dh (LVAR: text, BCD, binary). Multi-byte values are
// sent least significant byte first (mode 1), as are the characters of a text.

/** A date or date-time as the meter gives it: its fields as sent, and whether they make one. */
export interface TimePoint {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  /** Absent for a date (type G). */
  readonly hour?: number;
  readonly minute?: number;
  readonly second?: number;
  /** Type F's SU bit: the meter's clock is on summer time. */
  readonly summerTime?: boolean;
  /** The fields do not make a time: type F's IV bit, a month or day 0, a year past 99. */
  readonly invalid: boolean;
  /** Milliseconds since 1970 of the meter's clock read as UTC (M-Bus time points carry no zone); NaN when invalid. */
  readonly epoch: number;
}

/** A BCD number, or why its digits do not make one. */
export type BcdValue = { readonly ok: true; readonly value: number } | { readonly ok: false; readonly reason: string };

/**
 * Type A: `length` bytes of BCD, least significant byte first. Fh as the most significant digit
 * makes the number negative (EN 13757-3 Annex A); any other digit above 9 is no number.
 */
export function bcd(data: Uint8Array, at: number, length: number): BcdValue {
  let value = 0;
  let negative = false;
  for (let i = length - 1; i >= 0; i--) {
    const b = data[at + i]!;
    const hi = b >> 4;
    const lo = b & 15;
    if (i === length - 1 && hi === 15) negative = true;
    else if (hi > 9) return badDigit(hi);
    else value = value * 10 + hi;
    if (lo > 9) return badDigit(lo);
    value = value * 10 + lo;
  }
  return { ok: true, value: negative ? -value : value };
}

function badDigit(d: number): BcdValue {
  return { ok: false, reason: `BCD digit ${d.toString(16).toUpperCase()}h` };
}

/** Type B (signed) or C/D (unsigned) integer of `length` bytes (1-8), least significant byte first. */
export function integer(data: Uint8Array, at: number, length: number, signed: boolean): number {
  if (length <= 6) {
    let v = 0;
    for (let i = length - 1; i >= 0; i--) v = v * 256 + data[at + i]!;
    if (signed && data[at + length - 1]! & 0x80) v -= 2 ** (8 * length);
    return v;
  }
  let v = 0n;
  for (let i = length - 1; i >= 0; i--) v = (v << 8n) | BigInt(data[at + i]!);
  if (signed) v = BigInt.asIntN(8 * length, v);
  return Number(v);
}

/** Type H: an IEEE 754 single, least significant byte first. */
export function real(data: Uint8Array, at: number): number {
  return new DataView(data.buffer, data.byteOffset + at, 4).getFloat32(0, true);
}

/** Years 0-99 of the two-digit year fields: 81-99 are the 1900s (EN 13757-3 Annex A), or per type F's hundred-year bits. */
function fullYear(y: number, hundreds: number): number {
  if (hundreds > 0) return 1900 + 100 * hundreds + y;
  return y < 81 ? 2000 + y : 1900 + y;
}

function timePoint(fields: Omit<TimePoint, "epoch" | "invalid">, flagged: boolean, yearField: number): TimePoint {
  const { year, month, day } = fields;
  const hour = fields.hour ?? 0;
  const minute = fields.minute ?? 0;
  const second = fields.second ?? 0;
  const invalid = flagged || yearField > 99 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59;
  return { ...fields, invalid, epoch: invalid ? NaN : Date.UTC(year, month - 1, day, hour, minute, second) };
}

/** Type G (CP16): a date. */
export function dateG(data: Uint8Array, at: number): TimePoint {
  const b0 = data[at]!;
  const b1 = data[at + 1]!;
  const y = ((b0 & 0xe0) >> 5) | ((b1 & 0xf0) >> 1);
  return timePoint({ year: fullYear(y, 0), month: b1 & 0x0f, day: b0 & 0x1f }, false, y);
}

/** Type F (CP32): date and time to the minute, with its invalid (IV) and summer time (SU) bits and hundred-year bits. */
export function dateTimeF(data: Uint8Array, at: number): TimePoint {
  const [b0, b1, b2, b3] = [data[at]!, data[at + 1]!, data[at + 2]!, data[at + 3]!];
  const y = ((b2 & 0xe0) >> 5) | ((b3 & 0xf0) >> 1);
  return timePoint(
    { year: fullYear(y, (b1 >> 5) & 3), month: b3 & 0x0f, day: b2 & 0x1f, hour: b1 & 0x1f, minute: b0 & 0x3f, summerTime: (b1 & 0x80) !== 0 },
    (b0 & 0x80) !== 0,
    y,
  );
}

/** Type I (CP48): type F's date and time after a byte of seconds. */
export function dateTimeI(data: Uint8Array, at: number): TimePoint {
  const f = dateTimeF(data, at + 1);
  const y = ((data[at + 3]! & 0xe0) >> 5) | ((data[at + 4]! & 0xf0) >> 1);
  const fields = { year: f.year, month: f.month, day: f.day, hour: f.hour, minute: f.minute, second: data[at]! & 0x3f, summerTime: f.summerTime };
  return timePoint(fields, (data[at + 1]! & 0x80) !== 0, y);
}

/** What the LVAR byte of data field Dh says follows (EN 13757-3 Annex A, variable length data). */
export type Lvar =
  | { readonly kind: "text"; readonly length: number }
  | { readonly kind: "bcd"; readonly length: number; readonly negative: boolean }
  | { readonly kind: "binary"; readonly length: number }
  | { readonly kind: "reserved"; readonly length: 0 };

export function lvar(l: number): Lvar {
  if (l <= 0xbf) return { kind: "text", length: l };
  if (l <= 0xc9) return { kind: "bcd", length: l - 0xc0, negative: false };
  if (l >= 0xd0 && l <= 0xd9) return { kind: "bcd", length: l - 0xd0, negative: true };
  if (l >= 0xe0 && l <= 0xef) return { kind: "binary", length: l - 0xe0 };
  if (l >= 0xf0 && l <= 0xf4) return { kind: "binary", length: 4 * (l - 0xec) };
  if (l === 0xf5) return { kind: "binary", length: 48 };
  if (l === 0xf6) return { kind: "binary", length: 64 };
  return { kind: "reserved", length: 0 };
}

/** Text as a meter sends it, last character first (ISO/IEC 8859-1). */
export function text(data: Uint8Array, at: number, length: number): string {
  let s = "";
  for (let i = at + length - 1; i >= at; i--) s += String.fromCharCode(data[i]!);
  return s;
}

/** Bytes as two hexadecimal digits each, space-separated, in the order given. */
export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).toUpperCase().padStart(2, "0")).join(" ");
}
