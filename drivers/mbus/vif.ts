// What a record's value is (EN 13757-3 §6.4, the value information block): the primary VIF
// table, the extension tables behind VIF FDh and FBh, and the combinable VIFEs that modify a
// value (its multiplier, an added constant, "per hour", "date/time of", ...). Values are given in
// the table's base unit (W·h, J, m³, kg, s, W, m³/h, °C, K, bar, V, A): a VIF's multiplier 10^n
// and its unit's prefix (MW·h, GJ, t) are applied by the decoder, durations are in seconds.
// Units are UNECE codes (Part 8 §5.6.3), as the EngineeringUnits of a tag show them.
//
// The tables are EN 13757-3's (as The M-Bus documentation rev. 4.8 gives them in §8.4: 8.4.3
// primary VIFs, 8.4.4 the extensions FDh and FBh, 8.4.5 the combinable VIFEs); a reserved code
// has no meaning here and its record decodes as "VIF xxh", its value unscaled.

/** How a record's data is read beside its data field: a number, or as the VIF says. */
export type ValueKind = "number" | "unsigned" | "date" | "datetime";

export interface VifMeaning {
  /** The quantity, as the device map's `quantity` names it and a tag's description shows it. */
  readonly quantity: string;
  /** The UNECE code of the value's unit once scaled; none for counts, identifiers and time points. */
  readonly unit?: string;
  /** The value is raw × 10^exponent × factor. */
  readonly exponent: number;
  readonly factor?: number;
  /** Dates and date-times (EN 13757-3 Annex A types G, F, I); bit fields (type D) unsigned. */
  readonly kind?: ValueKind;
}

const m = (quantity: string, unit: string | undefined, exponent: number, more: Partial<VifMeaning> = {}): VifMeaning => ({ quantity, exponent, ...(unit === undefined ? {} : { unit }), ...more });

/** Seconds in the duration units of a VIF's last two bits: seconds, minutes, hours, days. */
const DURATION = [1, 60, 3600, 86400] as const;

function duration(quantity: string, nn: number): VifMeaning {
  return m(quantity, "SEC", 0, { factor: DURATION[nn & 3] });
}

/** Durations counted in hours, days, months or years (the VIFs with "pp" units): months and years kept as such. */
function longDuration(quantity: string, pp: number): VifMeaning {
  switch (pp & 3) {
    case 0:
      return m(quantity, "SEC", 0, { factor: 3600 });
    case 1:
      return m(quantity, "SEC", 0, { factor: 86400 });
    case 2:
      return m(quantity, "MON", 0);
    default:
      return m(quantity, "ANN", 0);
  }
}

/** The primary VIF table (VIF with its extension bit cleared, below 7Bh: 7Bh-7Fh are the escapes). */
export function primaryVif(v: number): VifMeaning | undefined {
  const n3 = v & 7;
  const n2 = v & 3;
  if (v <= 0x07) return m("Energy", "WHR", n3 - 3);
  if (v <= 0x0f) return m("Energy", "JOU", n3);
  if (v <= 0x17) return m("Volume", "MTQ", n3 - 6);
  if (v <= 0x1f) return m("Mass", "KGM", n3 - 3);
  if (v <= 0x23) return duration("On time", n2);
  if (v <= 0x27) return duration("Operating time", n2);
  if (v <= 0x2f) return m("Power", "WTT", n3 - 3);
  if (v <= 0x37) return m("Power", "P16", n3);
  if (v <= 0x3f) return m("Volume flow", "MQH", n3 - 6);
  if (v <= 0x47) return m("Volume flow", "G53", n3 - 7);
  if (v <= 0x4f) return m("Volume flow", "MQS", n3 - 9);
  if (v <= 0x57) return m("Mass flow", "E93", n3 - 3);
  if (v <= 0x5b) return m("Flow temperature", "CEL", n2 - 3);
  if (v <= 0x5f) return m("Return temperature", "CEL", n2 - 3);
  if (v <= 0x63) return m("Temperature difference", "KEL", n2 - 3);
  if (v <= 0x67) return m("External temperature", "CEL", n2 - 3);
  if (v <= 0x6b) return m("Pressure", "BAR", n2 - 3);
  if (v === 0x6c) return m("Time point", undefined, 0, { kind: "date" });
  if (v === 0x6d) return m("Time point", undefined, 0, { kind: "datetime" });
  if (v === 0x6e) return m("Units for H.C.A.", undefined, 0);
  if (v === 0x6f) return undefined;
  if (v <= 0x73) return duration("Averaging duration", n2);
  if (v <= 0x77) return duration("Actuality duration", n2);
  if (v === 0x78) return m("Fabrication No", undefined, 0);
  if (v === 0x79) return m("Enhanced identification", undefined, 0);
  if (v === 0x7a) return m("Bus address", undefined, 0);
  return undefined;
}

/** The extension table behind VIF FDh: its first VIFE, extension bit cleared. */
export function fdVif(v: number): VifMeaning | undefined {
  const n2 = v & 3;
  if (v <= 0x03) return m("Credit", undefined, n2 - 3);
  if (v <= 0x07) return m("Debit", undefined, n2 - 3);
  const named: Record<number, VifMeaning> = {
    0x08: m("Access number", undefined, 0),
    0x09: m("Medium", undefined, 0),
    0x0a: m("Manufacturer", undefined, 0),
    0x0b: m("Parameter set identification", undefined, 0),
    0x0c: m("Model / Version", undefined, 0),
    0x0d: m("Hardware version", undefined, 0),
    0x0e: m("Firmware version", undefined, 0),
    0x0f: m("Software version", undefined, 0),
    0x10: m("Customer location", undefined, 0),
    0x11: m("Customer", undefined, 0),
    0x12: m("Access code user", undefined, 0),
    0x13: m("Access code operator", undefined, 0),
    0x14: m("Access code system operator", undefined, 0),
    0x15: m("Access code developer", undefined, 0),
    0x16: m("Password", undefined, 0),
    0x17: m("Error flags", undefined, 0, { kind: "unsigned" }),
    0x18: m("Error mask", undefined, 0, { kind: "unsigned" }),
    0x1a: m("Digital output", undefined, 0, { kind: "unsigned" }),
    0x1b: m("Digital input", undefined, 0, { kind: "unsigned" }),
    0x1c: m("Baud rate", undefined, 0),
    0x1d: m("Response delay time", undefined, 0),
    0x1e: m("Retry", undefined, 0),
    0x20: m("First storage number", undefined, 0),
    0x21: m("Last storage number", undefined, 0),
    0x22: m("Size of storage block", undefined, 0),
    0x28: m("Storage interval", "MON", 0),
    0x29: m("Storage interval", "ANN", 0),
    0x30: m("Start of tariff", undefined, 0, { kind: "datetime" }),
    0x38: m("Period of tariff", "MON", 0),
    0x39: m("Period of tariff", "ANN", 0),
    0x3a: m("Dimensionless", undefined, 0),
    0x60: m("Reset counter", undefined, 0),
    0x61: m("Cumulation counter", undefined, 0),
    0x62: m("Control signal", undefined, 0),
    0x63: m("Day of week", undefined, 0),
    0x64: m("Week number", undefined, 0),
    0x65: m("Time point of day change", undefined, 0),
    0x66: m("State of parameter activation", undefined, 0),
    0x67: m("Special supplier information", undefined, 0),
    0x70: m("Date and time of battery change", undefined, 0, { kind: "datetime" }),
  };
  const found = named[v];
  if (found !== undefined) return found;
  if (v >= 0x24 && v <= 0x27) return duration("Storage interval", n2);
  if (v >= 0x2c && v <= 0x2f) return duration("Duration since last readout", n2);
  if (v >= 0x31 && v <= 0x33) return duration("Duration of tariff", n2);
  if (v >= 0x34 && v <= 0x37) return duration("Period of tariff", n2);
  if (v >= 0x40 && v <= 0x4f) return m("Voltage", "VLT", (v & 15) - 9);
  if (v >= 0x50 && v <= 0x5f) return m("Current", "AMP", (v & 15) - 12);
  if (v >= 0x68 && v <= 0x6b) return longDuration("Duration since last cumulation", n2);
  if (v >= 0x6c && v <= 0x6f) return longDuration("Operating time battery", n2);
  return undefined;
}

/** The extension table behind VIF FBh: its first VIFE, extension bit cleared. */
export function fbVif(v: number): VifMeaning | undefined {
  const n1 = v & 1;
  const n2 = v & 3;
  // MW·h, GJ, 100 m³, 100 t, MW and GJ/h in the base units: W·h, J, m³, kg, W, J/h.
  if (v <= 0x01) return m("Energy", "WHR", n1 - 1 + 6);
  if (v >= 0x08 && v <= 0x09) return m("Energy", "JOU", n1 - 1 + 9);
  if (v >= 0x10 && v <= 0x11) return m("Volume", "MTQ", n1 + 2);
  if (v >= 0x18 && v <= 0x19) return m("Mass", "KGM", n1 + 2 + 3);
  if (v === 0x21) return m("Volume", "FTQ", -1);
  if (v === 0x22) return m("Volume", "GLL", -1);
  if (v === 0x23) return m("Volume", "GLL", 0);
  if (v === 0x24) return m("Volume flow", "G2", -3);
  if (v === 0x25) return m("Volume flow", "G2", 0);
  if (v === 0x26) return m("Volume flow", "G50", 0);
  if (v >= 0x28 && v <= 0x29) return m("Power", "WTT", n1 - 1 + 6);
  if (v >= 0x30 && v <= 0x31) return m("Power", "P16", n1 - 1 + 9);
  if (v >= 0x58 && v <= 0x5b) return m("Flow temperature", "FAH", n2 - 3);
  if (v >= 0x5c && v <= 0x5f) return m("Return temperature", "FAH", n2 - 3);
  if (v >= 0x60 && v <= 0x63) return m("Temperature difference", "FAH", n2 - 3);
  if (v >= 0x64 && v <= 0x67) return m("External temperature", "FAH", n2 - 3);
  if (v >= 0x70 && v <= 0x73) return m("Cold / warm temperature limit", "FAH", n2 - 3);
  if (v >= 0x74 && v <= 0x77) return m("Cold / warm temperature limit", "CEL", n2 - 3);
  if (v >= 0x78) return m("Cumulative count max power", "WTT", (v & 7) - 3);
  return undefined;
}

/** What a combinable VIFE does to its record (EN 13757-3 table of orthogonal VIFEs). */
export interface VifeMeaning {
  /** In words, for the record's description. */
  readonly text: string;
  /** The value is multiplied by this (correction factors). */
  readonly multiply?: number;
  /** This many units of the VIF are added to the value (additive correction constant). */
  readonly add?: number;
  /** The value is no longer the VIF's quantity in its unit: a per-unit rate, a count, a duration, a time point. */
  readonly changesUnit?: boolean;
  /** The data is a time point (type F/G by its size) of the event the VIFE names. */
  readonly timePoint?: boolean;
  /** The data is a duration in these seconds per unit. */
  readonly durationFactor?: number;
}

const PER: Record<number, string> = {
  0x20: "per second", 0x21: "per minute", 0x22: "per hour", 0x23: "per day", 0x24: "per week", 0x25: "per month", 0x26: "per year",
  0x27: "per revolution / measurement", 0x28: "increment per input pulse on input channel 0", 0x29: "increment per input pulse on input channel 1",
  0x2a: "increment per output pulse on output channel 0", 0x2b: "increment per output pulse on output channel 1", 0x2c: "per litre", 0x2d: "per m³",
  0x2e: "per kg", 0x2f: "per K", 0x30: "per kW·h", 0x31: "per GJ", 0x32: "per kW", 0x33: "per K·l", 0x34: "per V", 0x35: "per A",
  0x36: "multiplied by s", 0x37: "multiplied by s/V", 0x38: "multiplied by s/A",
};

/** A combinable VIFE, extension bit cleared (7Fh, "manufacturer specific VIFEs follow", is the caller's). */
export function vifeMeaning(e: number): VifeMeaning {
  if (e <= 0x1f) return { text: `error or action code ${e}` };
  const per = PER[e];
  // A pulse weight ("increment per input pulse") is still an amount of the VIF's quantity in its unit.
  if (per !== undefined) return { text: per, changesUnit: e < 0x28 || e > 0x2b };
  switch (e) {
    case 0x39:
      return { text: "start date/time of", timePoint: true, changesUnit: true };
    case 0x3a:
      return { text: "uncorrected unit" };
    case 0x3b:
      return { text: "accumulation only of positive contributions" };
    case 0x3c:
      return { text: "accumulation of the absolute value only of negative contributions" };
    case 0x40:
      return { text: "lower limit value" };
    case 0x48:
      return { text: "upper limit value" };
    case 0x41:
      return { text: "number of exceeds of the lower limit", changesUnit: true };
    case 0x49:
      return { text: "number of exceeds of the upper limit", changesUnit: true };
    case 0x7d:
      return { text: "multiplicative correction factor 1000", multiply: 1000 };
    case 0x7e:
      return { text: "future value" };
  }
  // E100 u f 1 b / E110 1 f 1 b: date (b=0) or date/time (b=1) of the begin/end of an event.
  if ((e >= 0x42 && e <= 0x47 && e !== 0x44 && e !== 0x45) || (e >= 0x4a && e <= 0x4f && e !== 0x4c && e !== 0x4d)) {
    return { text: `date/time of the ${e & 4 ? "end" : "begin"} of the ${e & 2 ? "last" : "first"} ${e & 8 ? "upper" : "lower"} limit exceed`, timePoint: true, changesUnit: true };
  }
  // E101 u f bb: duration of a limit exceed, in seconds, minutes, hours or days.
  if (e >= 0x50 && e <= 0x5f) {
    return { text: `duration of the ${e & 4 ? "last" : "first"} ${e & 8 ? "upper" : "lower"} limit exceed`, durationFactor: DURATION[e & 3], changesUnit: true };
  }
  if (e >= 0x60 && e <= 0x67) return { text: `duration of the ${e & 4 ? "last" : "first"} event`, durationFactor: DURATION[e & 3], changesUnit: true };
  if (e >= 0x68 && e <= 0x6f) return { text: `date/time of the ${e & 4 ? "last" : "first"} event`, timePoint: true, changesUnit: true };
  if (e >= 0x70 && e <= 0x77) return { text: `multiplicative correction factor 10^${(e & 7) - 6}`, multiply: 10 ** ((e & 7) - 6) };
  if (e >= 0x78 && e <= 0x7b) return { text: `additive correction constant 10^${(e & 3) - 3}`, add: 10 ** ((e & 3) - 3) };
  return { text: `VIFE ${e.toString(16).toUpperCase().padStart(2, "0")}h` };
}

/** Every quantity a record can be (for the device map's `quantity` key and its suggestions). */
export function quantityNames(): readonly string[] {
  const names = new Set<string>();
  for (let v = 0; v < 0x80; v++) for (const t of [primaryVif(v), fdVif(v), fbVif(v)]) if (t !== undefined) names.add(t.quantity);
  names.add("Manufacturer specific");
  return [...names];
}
