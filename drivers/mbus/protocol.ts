// M-Bus as the device map and the poll groups see it (definition.ts makes the DriverProtocol of
// src/devices/registry.ts from it): a meter on a serial `bus` or behind a TCP converter
// (`host`, `port`), at a primary `address` or by its `secondaryAddress`, read whole each cycle
// (one block: every tag of a meter in one readout of its telegrams), and tags that find their
// record in the readout by its place (`record: 2`) or by what it is (`quantity`, `storage`,
// `function`, `tariff`, `subunit`). A tag's value is the record's, in its VIF's base unit, and
// its EngineeringUnits come from the VIF when the map names no `unit` (TagCodec.unitOf).
//
// Decisions where the issue is silent:
// - The poll rate a meter allows is the time its readout can take on the bus at its speed, when
//   every answer comes at the latest EN 13757-2 allows (timing.ts worstReadTime): a faster rate
//   is refused with that time; so is a bus whose meters together need more bus time than there is
//   (the sum, over its meters and their rates, of readout time / rate above 1).
// - `telegrams` (default 1) bounds a readout: a meter that says more records follow is read that
//   many telegrams far. The scan writes the count each meter sent.
// - Primary addresses 0-250: 0 is the address meters leave the factory with.
// - Time points are published as DateTime, the meter's clock read as UTC (they carry no zone).
import type { DeviceConfig, DeviceSyntax, TagConfig, ValueType, BusConfig, BusMember } from "../../src/config/device-map.js";
import { custom, duration, enumOf, formatDuration, integer, optional, string, text, MAX_HOST, type Checker, type ObjectValue, type ParseResult } from "../../src/config/schema.js";
import { suggest } from "../../src/config/validate.js";
import type { BlockData } from "../../src/devices/driver.js";
import type { DriverProtocol, TagPlan } from "../../src/devices/registry.js";
import { ValuePath, type Encoded, type RawValue, type TagCodec } from "../../src/devices/tag-codec.js";
import { BuiltinType, type Variant } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import type { UneceUnit } from "../../src/ua/units.js";
import { hex } from "./data.js";
import { MAX_PRIMARY } from "./frame.js";
import type { MbusStation } from "./link.js";
import { MbusReading, quantityKey, type RecordSelector } from "./reading.js";
import { FUNCTIONS, type MbusRecord } from "./records.js";
import { formatSecondary, parseSecondary, type SecondaryAddress } from "./secondary.js";
import { worstReadTime } from "./timing.js";
import { quantityNames } from "./vif.js";

/** The M-Bus's customary line (EN 13757-2: 300 to 38400 baud, 2400 the common one; 8E1). */
export const MBUS_LINE = { baudRate: 2400, parity: "even", dataBits: 8, stopBits: 1 } as const;
export const TAG_TYPES = ["number", "text", "time"] as const;
export type TagType = (typeof TAG_TYPES)[number];

const QUANTITIES = quantityNames();
const QUANTITY_BY_KEY = new Map(QUANTITIES.map((q) => [quantityKey(q), q] as const));
/** Quantities whose records are time points: a tag of one is a time unless it says otherwise. */
const TIME_QUANTITIES = new Set(["timepoint", "startoftariff", "dateandtimeofbatterychange"]);

// ---- the device map's keys ----------------------------------------------------------------

const secondaryAddress = custom<SecondaryAddress>({
  expected: 'a secondary address: the meter\'s 8-digit ID ("12345678", F for any digit), or the 16 hexadecimal digits the scan prints',
  description: "The meter's secondary address: its ID, or ID, manufacturer, version and medium as `fieldgate mbus scan` prints them; F digits match any.",
  jsonSchema: { type: "string", pattern: "^\\s*[0-9Ff]{8}([0-9A-Fa-f]{8})?\\s*$" },
  parse: (raw) => parseSecondary(raw),
});

function parseQuantity(raw: unknown): ParseResult<string> {
  if (typeof raw !== "string" || raw.trim() === "") return { ok: false, message: "" };
  const found = QUANTITY_BY_KEY.get(quantityKey(raw));
  if (found !== undefined) return { ok: true, value: found };
  const near = suggest(raw.trim(), QUANTITIES);
  return { ok: false, message: near ? `did you mean "${near}"?` : `M-Bus knows ${QUANTITIES.slice(0, 12).join(", ")}, ...` };
}

const quantity = custom<string>({
  expected: 'a quantity of EN 13757-3 such as "Energy", "Volume", "Flow temperature", "Power"',
  description: "What the record is, as its VIF says (case and spaces aside: flowTemperature is Flow temperature).",
  jsonSchema: { type: "string", minLength: 1 },
  parse: parseQuantity,
});

const tagKeys = {
  record: optional(integer({ description: "The record's place in the meter's readout, 0-based, the telegrams in order.", min: 0, max: 10_000 })),
  quantity: optional(quantity),
  storage: optional(integer({ description: "Storage number (0: the current value; 1, 2, ...: stored ones, e.g. at the last due date); default 0.", min: 0, max: 2 ** 41 })),
  function: optional(enumOf(FUNCTIONS, { description: "instantaneous (default), maximum, minimum, or error (the value during an error state)." })),
  tariff: optional(integer({ description: "Tariff; default 0.", min: 0, max: 2 ** 20 })),
  subunit: optional(integer({ description: "Subunit (a meter's second channel, ...); default 0.", min: 0, max: 1023 })),
  type: optional(enumOf(TAG_TYPES, { description: "number (default), text, or time (a time point, published as DateTime); default time for time points." })),
};

const deviceKeys = {
  bus: optional(string({ description: "The serial bus (under `buses`) of the meter's level converter.", minLength: 1 })),
  host: optional(text({ description: "Address of an M-Bus to TCP converter the meter is behind.", minLength: 1, maxLength: MAX_HOST })),
  port: optional(integer({ description: "The converter's TCP port (it has no standard one).", min: 1, max: 65535 })),
  baudRate: optional(integer({ description: "The speed of the M-Bus behind a TCP converter, for the waits and the rate check; default 2400.", min: 300, max: 38400 })),
  address: optional(integer({ description: "Primary address, 0-250 (0: as delivered).", min: 0, max: MAX_PRIMARY })),
  secondaryAddress: optional(secondaryAddress),
  telegrams: integer({ description: "Most telegrams of one readout (meters that say more records follow).", default: 1, min: 1, max: 16 }),
  retries: integer({ description: "Repeats of a request left unanswered or answered with a corrupt frame (with the same FCB).", default: 2, min: 0, max: 5 }),
  timeout: optional(duration({ description: "The wait for an answer's first character; default from the bus speed (EN 13757-2: 330 bit times + 50 ms) and the converter's.", min: "10ms", max: "60s" })),
};

export type MbusTag = TagConfig & ObjectValue<typeof tagKeys>;
export type MbusDevice = Omit<DeviceConfig, "tags"> & ObjectValue<typeof deviceKeys> & { readonly tags: readonly MbusTag[] };

/** The type of a tag that gives none: time for a quantity whose records are time points, else number. */
export function defaultTagType(quantity: string | undefined): TagType {
  return quantity !== undefined && TIME_QUANTITIES.has(quantityKey(quantity)) ? "time" : "number";
}

/** A tag's value type: its `type`, or what its quantity's records are. */
export function tagType(t: MbusTag): TagType {
  return t.type ?? defaultTagType(t.quantity);
}

function valueType(tag: TagConfig): ValueType {
  const type = tagType(tag as MbusTag);
  return { name: type, numeric: type === "number" };
}

/** The selector of a tag that names its quantity. */
export function selectorOf(t: MbusTag): RecordSelector {
  return { quantity: quantityKey(t.quantity!), storage: t.storage ?? 0, function: t.function ?? "instantaneous", tariff: t.tariff ?? 0, subunit: t.subunit ?? 0 };
}

/** Where a tag's record is, in the map's words: "record 2", "Volume, storage 1, maximum". */
export function formatPlace(t: MbusTag): string {
  if (t.record !== undefined) return `record ${t.record}`;
  const s = selectorOf(t);
  const parts = [t.quantity!];
  if (s.storage !== 0) parts.push(`storage ${s.storage}`);
  if (s.function !== "instantaneous") parts.push(s.function);
  if (s.tariff !== 0) parts.push(`tariff ${s.tariff}`);
  if (s.subunit !== 0) parts.push(`subunit ${s.subunit}`);
  return parts.join(", ");
}

const SELECTOR_KEYS = ["storage", "function", "tariff", "subunit"] as const;

function checkTag(tag: TagConfig, c: Checker): void {
  const t = tag as MbusTag;
  if (t.record === undefined && t.quantity === undefined) c.report("record", "missing required key; a tag names its record: `record: N`, or `quantity:` (with storage, function, tariff, subunit where not 0 / instantaneous)");
  if (t.record !== undefined && t.quantity !== undefined) c.report("quantity", "a tag names its record once: by `record` or by `quantity`, not both");
  if (t.record !== undefined) for (const k of SELECTOR_KEYS) if (t[k] !== undefined) c.report(k, `${k} applies to a tag that names its quantity; \`record\` names one record already`);
  if (t.access === "readwrite") c.report("access", "an M-Bus meter's records are read-only: expected read");
  // A unit comes from the meter's VIF for an unscaled value; scaled, it is the map's to give.
  if (tagType(t) === "number" && t.unit === undefined && (t.scale !== 1 || t.offset !== 0)) {
    c.report(c.given("scale") ? "scale" : "offset", "a scaled value is no longer in the meter's unit: give its `unit` too (e.g. kW·h for an energy scaled by 0.001)");
  }
}

function checkDevice(device: DeviceConfig, c: Checker): void {
  const d = device as MbusDevice;
  if ((d.bus === undefined) === (d.host === undefined)) c.report(d.bus === undefined ? "bus" : "host", d.bus === undefined ? "missing required key; a meter is on a serial `bus`, or behind a converter at `host` and `port`" : "a meter is on a serial bus or behind a TCP converter, not both");
  if (d.host !== undefined && d.port === undefined) c.report("port", "missing required key; an M-Bus to TCP converter has no standard port: give its port");
  if (d.bus !== undefined) {
    if (d.port !== undefined) c.report("port", "a meter on a serial bus has no port; port applies to a TCP converter");
    if (d.baudRate !== undefined) c.report("baudRate", "the speed of a serial bus is the bus's own `baudRate` (under `buses`)");
  }
  if ((d.address === undefined) === (d.secondaryAddress === undefined)) {
    c.report(d.address === undefined ? "address" : "secondaryAddress", d.address === undefined ? "missing required key; a meter is read at its primary `address` or by its `secondaryAddress`" : "a meter is read by one address: its primary `address` or its `secondaryAddress`, not both");
  }
  // One record may be read twice (in W·h and, scaled, in kW·h); twice alike is a slip.
  const seen = new Map<string, number>();
  d.tags.forEach((t, i) => {
    if (t.record === undefined && t.quantity === undefined) return;
    const place = formatPlace(t);
    const alike = `${place}|${tagType(t)}|${t.scale}|${t.offset}|${t.unit?.code ?? ""}`;
    const first = seen.get(alike);
    if (first !== undefined) c.report(["tags", i, t.record !== undefined ? "record" : "quantity"], `${place} is read by tags[${first}] "${d.tags[first]!.name}" already, alike`);
    else seen.set(alike, i);
  });
  if (d.host !== undefined && (d.address === undefined) !== (d.secondaryAddress === undefined)) checkRates(d, d.baudRate ?? MBUS_LINE.baudRate, [], c);
}

/** The shortest rate of a device's tags, and where it is written. */
function fastest(d: MbusDevice): { readonly rate: number; readonly at: (string | number)[] } {
  let rate = Infinity;
  let at: (string | number)[] = ["rate"];
  d.tags.forEach((t, i) => {
    if (t.rate < rate) {
      rate = t.rate;
      at = t.rate === d.rate ? ["rate"] : ["tags", i, "rate"];
    }
  });
  return { rate, at };
}

/** The rates of a device against its readout's worst time at `baudRate`, paths under `prefix` (the device's, from the checker's root); false when refused. */
function checkRates(d: MbusDevice, baudRate: number, prefix: readonly (string | number)[], c: Checker): boolean {
  const worst = worstReadTime(baudRate, d.telegrams, d.secondaryAddress !== undefined);
  const { rate, at } = fastest(d);
  if (rate >= worst) return true;
  const least = Math.ceil(worst / 1000) * 1000;
  c.report([...prefix, ...at], `a readout of this meter can take up to ${(worst / 1000).toFixed(2)} s at ${baudRate} baud (EN 13757-2: ${d.secondaryAddress !== undefined ? "its selection" : "SND_NKE"} and ${d.telegrams} telegram${d.telegrams === 1 ? "" : "s"} of up to 261 characters of 11 bits, each answer up to 330 bit times + 50 ms after its request): expected a rate of at least ${formatDuration(least)}, got ${formatDuration(rate)}`);
  return false;
}

/** The meters of one serial bus: each one's rate against its readout time, two meters at one address, and the bus's load. */
function checkBus(bus: BusConfig, busName: string, members: readonly BusMember[], c: Checker): void {
  const addresses = new Map<string, number>();
  let load = 0;
  let each = true;
  for (const { device, index } of members) {
    const d = device as MbusDevice;
    if (d.address === undefined && d.secondaryAddress === undefined) continue;
    each = checkRates(d, bus.baudRate, ["devices", index], c) && each;
    const key = d.address !== undefined ? `primary address ${d.address}` : `secondary address ${formatSecondary(d.secondaryAddress!)}`;
    const first = addresses.get(key);
    if (first !== undefined) c.report(["devices", index, d.address !== undefined ? "address" : "secondaryAddress"], `devices[${first}] is at ${key} on bus "${busName}" already: two meters at one address answer at once and garble each other`);
    else addresses.set(key, index);
    const worst = worstReadTime(bus.baudRate, d.telegrams, d.secondaryAddress !== undefined);
    for (const rate of new Set(d.tags.map((t) => t.rate))) load += worst / rate;
  }
  // A meter too fast for the bus on its own is told so above; the bus's load is about the rest.
  if (load > 1 && each) {
    c.report(c.given(["buses", busName, "baudRate"]) ? ["buses", busName, "baudRate"] : ["buses", busName], `the meters on this bus can need ${(load * 100).toFixed(0)} % of its time at ${bus.baudRate} baud (each readout at the longest EN 13757-2 allows, at its rate): slow their rates, or split them over buses`);
  }
}

export const MBUS_SYNTAX: DeviceSyntax = {
  deviceKeys,
  tagKeys,
  busKey: "bus",
  valueType,
  checkTag,
  checkDevice,
  checkBus,
  lineDefaults: MBUS_LINE,
  defaultRate: "1m",
};

// ---- the poll groups' view ----------------------------------------------------------------

const NOT_WRITABLE: Encoded = { ok: false, statusCode: StatusCodes.BadNotWritable };
const BUILTIN: Readonly<Record<TagType, BuiltinType>> = { number: BuiltinType.Double, text: BuiltinType.String, time: BuiltinType.DateTime };

/** A tag's record in a readout, found by its place or its selector; its value as the tag's type reads it. */
class RecordCodec implements TagCodec {
  readonly area = "telegram";
  readonly width = 1;
  readonly partial = false;
  readonly builtinType: BuiltinType;
  readonly path: ValuePath;
  readonly unitOf?: (data: BlockData) => UneceUnit | undefined;

  constructor(
    private readonly find: (r: MbusReading) => MbusRecord | undefined,
    private readonly type: TagType,
    private readonly scale: number,
    private readonly offset: number,
    unitFromMeter: boolean,
  ) {
    this.builtinType = BUILTIN[type];
    this.path = type === "text" ? ValuePath.Object : ValuePath.Checked;
    if (unitFromMeter) this.unitOf = (data) => this.find(data as MbusReading)?.unit;
  }

  decodeNumber(data: BlockData): number {
    const v = this.find(data as MbusReading)?.value;
    if (this.type === "number") return typeof v === "number" ? v * this.scale + this.offset : NaN;
    return v !== undefined && typeof v === "object" && "epoch" in v ? v.epoch : NaN;
  }

  /** undefined (the tag goes Bad_ConfigurationError, its last value kept) when the readout has no such record or no value of the tag's type in it. */
  decodeRaw(data: BlockData): RawValue | undefined {
    const v = this.find(data as MbusReading)?.value;
    if (this.type !== "text") {
      const n = this.decodeNumber(data);
      return n === n ? n : undefined;
    }
    if (typeof v === "string") return v;
    if (typeof v === "number") return String(v);
    if (v instanceof Uint8Array) return hex(Uint8Array.from(v).reverse());
    return undefined;
  }

  encode(_value: Variant): Encoded {
    return NOT_WRITABLE;
  }

  merge(_current: BlockData, written: Uint16Array | Uint8Array): Uint16Array | Uint8Array {
    return written;
  }
}

export function mbusTag(tag: TagConfig): TagPlan {
  const t = tag as MbusTag;
  const index = t.record;
  const selector = index === undefined ? selectorOf(t) : undefined;
  const find = index !== undefined ? (r: MbusReading) => r.records[index] : (r: MbusReading) => r.select(selector!);
  const type = tagType(t);
  return { codec: new RecordCodec(find, type, t.scale, t.offset, type === "number" && t.unit === undefined), start: 0 };
}

/** A device's meter on its link (BlockRequest.station). */
export function mbusStation(device: DeviceConfig): MbusStation {
  const d = device as MbusDevice;
  const key = d.secondaryAddress !== undefined ? `secondary address ${formatSecondary(d.secondaryAddress)}` : `address ${d.address ?? 0}`;
  return {
    ...(d.secondaryAddress !== undefined ? { secondary: d.secondaryAddress } : { primary: d.address ?? 0 }),
    telegrams: d.telegrams,
    retries: d.retries,
    ...(d.timeout === undefined ? {} : { timeout: d.timeout }),
    key,
  };
}

export const MBUS_PROTOCOL: DriverProtocol = {
  syntax: MBUS_SYNTAX,
  tag: mbusTag,
  station: mbusStation,
  // One readout holds every record: one read a cycle, whatever the tags.
  readLimits: () => ({ maxGap: 0, maxCount: { telegram: 1 } }),
  formatAddress: (t) => formatPlace(t as MbusTag),
};

