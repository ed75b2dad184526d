// The schema of the device map (config/devices.yaml): serial buses, devices and their tags, and
// the checks that span entries (a bus that does not exist, two tags on one NodeId, overlapping
// writable tags). The keys are the ones users and docs rely on (issue 4): add keys, never rename.
//
// Decisions where the issue is silent:
// - Names: a device or tag name may hold letters, digits, "_", "-" and "." (tags are often
//   written "motor1.speed"); "/" is reserved for the nodes the gateway adds itself
//   (`<device>/Diagnostics/...`, `<tag>/EURange`), so they never clash with a tag's NodeId.
// - `driver: simulator` starts the built-in Modbus TCP slave on 127.0.0.1 and polls it through
//   the real modbus-tcp driver; `port` is where the simulator listens (default 0: any free port,
//   so a default config never clashes with anything).
// - `type` defaults to bool on coils and discrete inputs, uint16 on registers. `bool` on a
//   register is "register != 0"; `bit` is one bit of a register (holding:100.3).
// - Writes are allowed only on coils and holding registers; who may write is `writeRoles`
//   (anonymous sessions are viewers, so the default keeps anonymous clients read-only).
import { join } from "node:path";
import { unitByCode, unitByDisplayName, unitDisplayNames, type UneceUnit } from "../ua/generated/units.js";
import { ConfigError, loadFile, validateFile, type ConfigIssue } from "./load.js";
import {
  array,
  boolean,
  custom,
  duration,
  enumOf,
  integer,
  number,
  object,
  optional,
  record,
  string,
  text,
  formatDuration,
  MAX_HOST,
  MAX_PATH,
  type Checker,
  type Infer,
  type ObjectValue,
  type ParseResult,
} from "./schema.js";
import { suggest, type ValidationResult } from "./validate.js";
import { validateFileCached, type CacheOptions } from "./validated-cache.js";

export const DRIVERS = ["modbus-tcp", "modbus-rtu", "modbus-rtu-over-tcp", "simulator"] as const;
export const DATA_TYPES = ["bool", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64", "string", "bit"] as const;
export const BYTE_ORDERS = ["ABCD", "CDAB", "BADC", "DCBA"] as const;
export const AREAS = ["coil", "discrete", "input", "holding"] as const;

export type DriverName = (typeof DRIVERS)[number];
export type DataType = (typeof DATA_TYPES)[number];
export type ByteOrder = (typeof BYTE_ORDERS)[number];
export type Area = (typeof AREAS)[number];

/** A Modbus address, 0-based. `bit` only for `bit` tags (holding:100.3). */
export interface ModbusAddress {
  readonly area: Area;
  readonly offset: number;
  readonly bit?: number;
}

/** Modbus protocol limits (Modbus Application Protocol V1.1b3 §6.1-6.4): per read request. */
export const MAX_REGISTERS_PER_READ = 125;
export const MAX_BITS_PER_READ = 2000;
const MAX_STRING_REGISTERS = 125;

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
/** Longest description of a device or tag: a paragraph. */
const MAX_DESCRIPTION = 1024;
const NAME_TEXT = 'a name of letters, digits, "_", "-" and "." (no spaces or "/"), such as boiler or motor1.speed';

// ---- addresses ------------------------------------------------------------------------------

const MODICON: ReadonlyArray<readonly [number, Area]> = [
  [0, "coil"],
  [1, "discrete"],
  [3, "input"],
  [4, "holding"],
];

function modicon(digits: string): ParseResult<ModbusAddress> {
  // 5 digits: 0xxxx coils, 1xxxx discrete inputs, 3xxxx input registers, 4xxxx holding
  // registers, 1-based (40001 is holding:0); 6 digits extend the offset to 65536.
  const wide = digits.length === 6;
  if (digits.length !== 5 && !wide) return { ok: false, message: "" };
  const prefix = Number(digits[0]);
  const area = MODICON.find(([p]) => p === prefix)?.[1];
  const n = Number(digits.slice(1));
  if (area === undefined) return { ok: false, message: `${digits[0]}xxxx is not a Modbus area (0 coil, 1 discrete, 3 input, 4 holding)` };
  if (n < 1 || n > (wide ? 65536 : 9999)) {
    return { ok: false, message: `Modicon addresses count from 1 (${prefix}0001); write ${area}:0 for a 0-based address` };
  }
  return { ok: true, value: { area, offset: n - 1 } };
}

export function parseAddress(raw: unknown): ParseResult<ModbusAddress> {
  if (typeof raw === "string") {
    const plain = plainAddress(raw);
    if (plain !== undefined) return { ok: true, value: plain };
  }
  let text: string;
  if (typeof raw === "number") {
    if (!Number.isInteger(raw)) return { ok: false, message: 'quote a bit address, e.g. "40101.3", or write holding:100.3' };
    if (raw < 1) return { ok: false, message: "Modicon addresses count from 1 (40001 is holding:0)" };
    // A YAML number loses leading zeros: 1..9999 are the coils 00001..09999.
    text = raw <= 9999 ? String(raw).padStart(5, "0") : String(raw);
  } else if (typeof raw === "string") {
    text = raw.trim();
  } else {
    return { ok: false, message: "" };
  }
  let bit: number | undefined;
  const dot = /^(.*)\.(\d{1,2})$/.exec(text);
  if (dot) {
    text = dot[1]!;
    bit = Number(dot[2]);
    if (bit > 15) return { ok: false, message: `a register has bits 0 to 15, got .${bit}` };
  }
  let result: ParseResult<ModbusAddress>;
  const m = /^(coil|discrete|input|holding):(\d+)$/.exec(text);
  if (m) {
    const offset = Number(m[2]);
    if (offset > 65535) return { ok: false, message: `the offset must be 0 to 65535, got ${offset}` };
    // The constant, not the matched copy: 10,000 tags share one "holding".
    result = { ok: true, value: { area: AREAS[AREAS.indexOf(m[1] as Area)]!, offset } };
  } else if (/^\d+$/.test(text)) {
    result = modicon(text);
  } else {
    const area = /^([A-Za-z]+):/.exec(text)?.[1];
    const near = area ? suggest(area, AREAS) : undefined;
    return { ok: false, message: near && near !== area ? `did you mean "${near}:"?` : "" };
  }
  if (!result.ok || bit === undefined) return result;
  if (result.value.area === "coil" || result.value.area === "discrete") return { ok: false, message: "only registers have bits; a coil is one bit already" };
  return { ok: true, value: { ...result.value, bit } };
}

/**
 * "holding:100" and the like without regular expressions or substrings: the form of nearly every
 * tag, read 10,000 times on a start. Anything else (spaces, bits, Modicon numbers, mistakes)
 * is undefined and goes through parseAddress's full rules.
 */
function plainAddress(text: string): ModbusAddress | undefined {
  const colon = text.indexOf(":");
  if (colon < 0 || colon === text.length - 1 || text.length - colon > 6) return undefined;
  let area: Area | undefined;
  for (const a of AREAS) if (a.length === colon && text.startsWith(a)) area = a;
  if (area === undefined) return undefined;
  let offset = 0;
  for (let i = colon + 1; i < text.length; i++) {
    const d = text.charCodeAt(i) - 0x30;
    if (d < 0 || d > 9) return undefined;
    offset = offset * 10 + d;
  }
  return offset <= 65535 ? { area, offset } : undefined;
}

export function formatAddress(a: ModbusAddress): string {
  return `${a.area}:${a.offset}${a.bit === undefined ? "" : `.${a.bit}`}`;
}

const address = custom<ModbusAddress>({
  expected: 'a Modbus address like holding:100, input:0, coil:5, holding:100.3 or 40101',
  description: "coil | discrete | input | holding, 0-based (holding:100); a bit of a register as holding:100.3; Modicon 40101 (1-based) is accepted too.",
  jsonSchema: { anyOf: [{ type: "string", pattern: "^\\s*((coil|discrete|input|holding):\\d+|\\d{5,6})(\\.\\d{1,2})?\\s*$" }, { type: "integer", minimum: 1 }] },
  parse: parseAddress,
});

// ---- units ----------------------------------------------------------------------------------

/** Spellings people type for a few common units, to suggest the UNECE display name. */
const UNIT_ALIASES: Readonly<Record<string, string>> = {
  degc: "°C", "deg c": "°C", celsius: "°C", degf: "°F", "deg f": "°F", rpm: "r/min", "m3/h": "m³/h", m3: "m³", m2: "m²", kwh: "kW·h", wh: "W·h",
  "l/h": "l/h", percent: "%", pct: "%", sec: "s", hz: "Hz", kpa: "kPa", mbar: "mbar", psi: "psi",
};

/** The UNECE unit of a common spelling ("degC", "kWh", "m3/h"), for imports from other tools. */
export function unitByAlias(name: string): UneceUnit | undefined {
  const alias = UNIT_ALIASES[name.trim().toLowerCase()];
  return alias === undefined ? undefined : unitByDisplayName(alias);
}

export function parseUnit(raw: unknown): ParseResult<UneceUnit> {
  if (typeof raw !== "string" || raw.trim() === "") return { ok: false, message: "" };
  const name = raw.trim();
  const unit = unitByDisplayName(name) ?? unitByCode(name);
  if (unit) return { ok: true, value: unit };
  const alias = UNIT_ALIASES[name.toLowerCase()];
  const near = alias && unitByDisplayName(alias) ? alias : suggest(name, unitDisplayNames());
  return { ok: false, message: `not in the UNECE unit table${near ? `; did you mean "${near}"?` : ""}` };
}

const unit = custom<UneceUnit>({
  expected: 'a UNECE unit such as "°C", "bar", "kW", "m³/h", "%" (or its code, e.g. CEL)',
  description: "Engineering unit (EngineeringUnits), by its UNECE display name or common code.",
  jsonSchema: { type: "string", minLength: 1 },
  parse: parseUnit,
});

// ---- schema ---------------------------------------------------------------------------------

const rate = (description: string, def?: string) =>
  duration({ description, min: "10ms", max: "24h", ...(def === undefined ? {} : { default: def }) });

const bus = object(
  {
    port: text({ description: "Serial device, e.g. /dev/ttyUSB0 or /dev/ttyAMA0.", minLength: 1, maxLength: MAX_PATH }),
    baudRate: integer({ description: "Bits per second.", default: 9600, min: 300, max: 4_000_000 }),
    parity: enumOf(["none", "even", "odd"] as const, { description: "Parity (Modbus RTU's default is even).", default: "even" }),
    dataBits: enumOf([7, 8] as const, { description: "Data bits per character.", default: 8 }),
    stopBits: enumOf([1, 2] as const, { description: "Stop bits per character.", default: 1 }),
    interRequestDelay: duration({ description: "Quiet time between two requests on this bus, for slow slaves.", default: 0, max: "10s" }),
  },
  { description: "A serial line (RS-485/RS-232) shared by the Modbus RTU devices on it: one request at a time." },
);

/** The limits of a tag's limit alarm, highest first (Part 9 §5.8.18 LimitAlarmType). */
const LIMIT_KEYS = ["highHigh", "high", "low", "lowLow"] as const;

const limitAlarms = object(
  {
    highHigh: optional(number({ description: "Above this the alarm is in HighHigh (severity 800)." })),
    high: optional(number({ description: "Above this (and not above highHigh) the alarm is in High (severity 500)." })),
    low: optional(number({ description: "Below this (and not below lowLow) the alarm is in Low (severity 500)." })),
    lowLow: optional(number({ description: "Below this the alarm is in LowLow (severity 800)." })),
  },
  {
    description: "A limit alarm on the engineering value (an ExclusiveLimitAlarmType condition ns=1;s=<device>.<tag>/LimitAlarm): give one limit or more.",
    check: checkLimits,
  },
);

function checkLimits(a: { readonly [K in (typeof LIMIT_KEYS)[number]]?: number }, c: Checker): void {
  const given = LIMIT_KEYS.filter((k) => a[k] !== undefined);
  if (given.length === 0) {
    c.report([], `expected at least one of ${LIMIT_KEYS.join(", ")}`);
    return;
  }
  // Exclusive limits are ordered: highHigh > high > low > lowLow (each pair that is given).
  for (let i = 1; i < given.length; i++) {
    const above = given[i - 1]!;
    const below = given[i]!;
    if (!(a[above]! > a[below]!)) c.report(below, `expected ${below} below ${above} (${a[above]}), got ${a[below]}`);
  }
}

const tagShape = {
  name: string({ description: "Tag name; the variable is ns=1;s=<device>.<name>.", pattern: NAME, patternText: NAME_TEXT }),
  address,
  type: optional(enumOf(DATA_TYPES, { description: "Data type; default bool on coils and discrete inputs, uint16 on registers." })),
  length: optional(integer({ description: "Registers of a string tag (2 characters each).", min: 1, max: MAX_STRING_REGISTERS })),
  byteOrder: optional(enumOf(BYTE_ORDERS, { description: "Byte order of multi-register values; default the device's." })),
  scale: number({ description: "Engineering value = raw * scale + offset.", default: 1 }),
  offset: number({ description: "Engineering value = raw * scale + offset.", default: 0 }),
  unit: optional(unit),
  range: optional(
    array(number(), { description: "EURange [low, high] of the engineering value; writes outside it are refused.", minItems: 2, maxItems: 2 }),
  ),
  rate: optional(rate("Poll rate; default the device's. Tags of one device and rate form one poll group.")),
  access: enumOf(["read", "readwrite"] as const, { description: "readwrite lets clients write the tag (coils and holding registers).", default: "read" }),
  history: boolean({ description: "Keep this tag's samples in the history database.", default: false }),
  alarms: optional(limitAlarms),
  description: optional(text({ description: "Shown to clients as the variable's Description.", maxLength: MAX_DESCRIPTION, lines: true })),
};
/** A tag as written; validation resolves its rate (TagConfig). */
type WrittenTag = ObjectValue<typeof tagShape>;
/** A tag as the gateway uses it: the rate is always there, the device's when the tag gives none. */
export type TagConfig = Omit<WrittenTag, "rate"> & { readonly rate: number };
const tag = object(tagShape, { description: "One value of the device, published as an OPC UA variable.", check: checkTag });

const WRITE_ROLES = ["viewer", "operator", "admin"] as const;

const deviceShape = {
  name: string({ description: "Device name; becomes Objects/Devices/<name> and the prefix of its NodeIds.", pattern: NAME, patternText: NAME_TEXT }),
  driver: enumOf(DRIVERS, { description: "How the device is reached." }),
  host: optional(text({ description: "Address of the device or of the TCP-to-RTU gateway (modbus-tcp, modbus-rtu-over-tcp).", minLength: 1, maxLength: MAX_HOST })),
  port: optional(integer({ description: "TCP port (default 502); for the simulator, the port it listens on (default 0: any free port).", min: 0, max: 65535 })),
  bus: optional(string({ description: "Name of the serial bus under `buses` (modbus-rtu).", minLength: 1 })),
  unitId: integer({ description: "Modbus unit id (slave address): 1-247 on a serial bus, 0-255 over TCP.", default: 1, min: 0, max: 255 }),
  timeout: duration({ description: "How long to wait for an answer.", default: "1s", min: "10ms", max: "60s" }),
  byteOrder: enumOf(BYTE_ORDERS, { description: "Default byte order of the device's multi-register values.", default: "ABCD" }),
  rate: rate("Default poll rate of the device's tags.", "1s"),
  maxGap: integer({ description: "Unused registers (or bits) one block read may span to join two tags.", default: 10, min: 0, max: 2000 }),
  maxRegistersPerRead: integer({ description: "Most registers in one read request (125 is Modbus's limit; some slaves accept less).", default: MAX_REGISTERS_PER_READ, min: 1, max: MAX_REGISTERS_PER_READ }),
  maxBitsPerRead: integer({ description: "Most coils or discrete inputs in one read request (2000 is Modbus's limit).", default: MAX_BITS_PER_READ, min: 1, max: MAX_BITS_PER_READ }),
  forceSingleRegisterWrite: boolean({ description: "Write registers one at a time with FC6, for slaves without FC16.", default: false }),
  interRequestDelay: optional(duration({ description: "Quiet time between two requests (modbus-tcp, modbus-rtu-over-tcp).", max: "10s" })),
  retryBackoff: duration({ description: "First wait before retrying a device that stopped answering; doubles up to maxBackoff.", default: "1s", min: "10ms", max: "1h" }),
  maxBackoff: duration({ description: "Longest wait between retries of a silent device.", default: "30s", min: "10ms", max: "24h" }),
  demoteAfter: integer({ description: "Failed poll cycles after which the device is demoted: skipped, and only probed now and then.", default: 3, min: 1, max: 1000 }),
  writeRoles: array(enumOf(WRITE_ROLES), { description: "Roles that may write readwrite tags (anonymous sessions are viewers).", default: ["operator", "admin"], uniqueItems: true }),
  enabled: boolean({ description: "false keeps the device in the map without polling it or publishing it.", default: true }),
  description: optional(text({ description: "Shown to clients as the device object's Description.", maxLength: MAX_DESCRIPTION, lines: true })),
  tags: array(tag, { description: "The values to poll.", minItems: 1 }),
};
type WrittenDevice = ObjectValue<typeof deviceShape>;
export type DeviceConfig = Omit<WrittenDevice, "tags"> & { readonly tags: readonly TagConfig[] };
const device = object(deviceShape, { description: "One Modbus slave (a PLC, meter, drive, ...).", check: checkDevice, resolve: resolveRates });

/** The rate of every tag is resolved once, here: poll groups and nodes read `tag.rate` as it is. */
function resolveRates(d: WrittenDevice): DeviceConfig {
  for (const t of d.tags) if (t.rate === undefined) (t as { rate?: number }).rate = d.rate;
  return d as DeviceConfig;
}

const mapShape = {
  buses: record(bus, {
    description: "Serial lines by name; modbus-rtu devices name theirs with `bus:`.",
    default: {},
    keyPattern: /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/,
    keyText: "a bus name of letters, digits, \"_\", \"-\" and \".\"",
  }),
  devices: array(device, { description: "The devices to poll.", default: [] }),
};
export type DeviceMap = ObjectValue<typeof mapShape>;
export type BusConfig = Infer<typeof bus>;
export const deviceMapSchema = object(mapShape, { description: "fieldgate device map.", check: checkMap });

// ---- derived facts ----------------------------------------------------------------------------

/** The tag's effective data type (the default follows the area). */
export function tagType(t: Pick<TagConfig, "type" | "address">): DataType {
  return t.type ?? (t.address.area === "coil" || t.address.area === "discrete" ? "bool" : "uint16");
}

/** Registers (or bits, for coils and discrete inputs) a tag occupies. */
export function tagWidth(t: Pick<TagConfig, "type" | "address" | "length">): number {
  if (t.address.area === "coil" || t.address.area === "discrete") return 1;
  switch (tagType(t)) {
    case "int32":
    case "uint32":
    case "float32":
      return 2;
    case "int64":
    case "uint64":
    case "float64":
      return 4;
    case "string":
      return t.length ?? 1;
    default:
      return 1;
  }
}

/** Whether the engineering value differs from the raw one (scaled values are Doubles). */
export function isScaled(t: Pick<TagConfig, "scale" | "offset">): boolean {
  return t.scale !== 1 || t.offset !== 0;
}

export function tagNodeIdText(deviceName: string, tagName: string): string {
  return `${deviceName}.${tagName}`;
}

// ---- checks -----------------------------------------------------------------------------------

function checkTag(t: WrittenTag, c: Checker): void {
  const type = tagType(t);
  const area = t.address.area;
  const bits = area === "coil" || area === "discrete";
  if (bits && type !== "bool") c.report("type", `a ${area} holds one bit: expected bool, got ${type}`);
  if (type === "bit" && t.address.bit === undefined) c.report("address", 'a bit tag names its bit: expected an address like holding:100.3');
  if (type !== "bit" && t.address.bit !== undefined) c.report(c.given("type") ? "type" : "address", `${formatAddress(t.address)} is one bit of a register: expected type bit, got ${type}`);
  if (type === "string" && t.length === undefined) c.report("type", "a string tag needs `length` (registers, 2 characters each)");
  if (type !== "string" && t.length !== undefined) c.report("length", `length applies to string tags only, this one is ${type}`);
  if (t.address.offset + tagWidth(t) - 1 > 65535) {
    c.report("address", `${type} at ${formatAddress(t.address)} needs ${tagWidth(t)} registers and runs past the last address, 65535`);
  }
  if (t.access === "readwrite" && (area === "discrete" || area === "input")) {
    c.report("access", `${area === "input" ? "input registers" : "discrete inputs"} are read-only in Modbus: expected read, or a ${area === "input" ? "holding" : "coil"} address`);
  }
  const numeric = type !== "bool" && type !== "bit" && type !== "string";
  if (!numeric) {
    for (const key of ["unit", "range", "alarms"] as const) if (t[key] !== undefined) c.report(key, `${key} applies to numeric tags, this one is ${type}`);
    if (isScaled(t)) c.report(c.given("scale") ? "scale" : "offset", `scaling applies to numeric tags, this one is ${type}`);
  }
  if (t.scale === 0) c.report("scale", "expected a scale other than 0 (every raw value would read 0 + offset)");
  if (t.range !== undefined && !(t.range[0]! < t.range[1]!)) c.report("range", `expected [low, high] with low < high, got [${t.range.join(", ")}]`);
}

function checkDevice(d: WrittenDevice, c: Checker): void {
  const tcp = d.driver === "modbus-tcp" || d.driver === "modbus-rtu-over-tcp";
  if (tcp && d.host === undefined) c.report("host", `missing required key; ${d.driver} needs the host to connect to`);
  if (!tcp && d.host !== undefined) c.report("host", `host applies to modbus-tcp and modbus-rtu-over-tcp, this device is ${d.driver}`);
  if (d.driver === "modbus-rtu") {
    if (d.bus === undefined) c.report("bus", "missing required key; a modbus-rtu device names its serial bus (see `buses`)");
    if (d.port !== undefined) c.report("port", "a modbus-rtu device is reached through its bus; port applies to TCP drivers");
    if (d.interRequestDelay !== undefined) c.report("interRequestDelay", "on a serial bus, set interRequestDelay on the bus");
  } else if (d.bus !== undefined) {
    c.report("bus", `bus applies to modbus-rtu devices, this one is ${d.driver}`);
  }
  if ((d.driver === "modbus-rtu" || d.driver === "modbus-rtu-over-tcp") && (d.unitId < 1 || d.unitId > 247)) {
    c.report("unitId", `expected a unit id between 1 and 247 on a serial line (0 is broadcast, which never answers), got ${d.unitId}`);
  }
  if (d.retryBackoff > d.maxBackoff) {
    c.report("retryBackoff", `expected at most maxBackoff (${formatDuration(d.maxBackoff)}), got ${formatDuration(d.retryBackoff)}`);
  }
  d.tags.forEach((t, i) => {
    const bits = t.address.area === "coil" || t.address.area === "discrete";
    const max = bits ? d.maxBitsPerRead : d.maxRegistersPerRead;
    if (tagWidth(t) > max) {
      c.report(["tags", i, t.length !== undefined ? "length" : "type"], `the tag needs ${tagWidth(t)} registers but the device reads at most ${max} per request (maxRegistersPerRead)`);
    }
  });
  const seen = new Map<string, number>();
  d.tags.forEach((t, i) => {
    const first = seen.get(t.name);
    if (first !== undefined) c.report(["tags", i, "name"], `two tags named "${t.name}" would share NodeId ns=1;s=${tagNodeIdText(d.name, t.name)} (first at tags[${first}])`);
    else seen.set(t.name, i);
  });
  checkOverlappingWrites(d, c);
}

/** Bits of one area touched by a writable tag: [first, last] in bit units (register*16 + bit). */
function writtenBits(t: WrittenTag): readonly [number, number] {
  const a = t.address;
  if (a.area === "coil") return [a.offset, a.offset];
  if (a.bit !== undefined) return [a.offset * 16 + a.bit, a.offset * 16 + a.bit];
  return [a.offset * 16, (a.offset + tagWidth(t)) * 16 - 1];
}

/**
 * Two readwrite tags over the same register (or coil, or bit) would let one client's write
 * clobber another's value; the map is refused rather than guessing which tag owns it.
 */
function checkOverlappingWrites(d: WrittenDevice, c: Checker): void {
  const writable: number[] = [];
  for (let i = 0; i < d.tags.length; i++) if (d.tags[i]!.access === "readwrite") writable.push(i);
  if (writable.length < 2 || !anyOverlap(d.tags, writable)) return;
  for (let x = 0; x < writable.length; x++) {
    for (let y = 0; y < x; y++) {
      const a = d.tags[writable[x]!]!;
      const b = d.tags[writable[y]!]!;
      if (a.address.area !== b.address.area) continue;
      const [a0, a1] = writtenBits(a);
      const [b0, b1] = writtenBits(b);
      if (a0 <= b1 && b0 <= a1) {
        c.report(["tags", writable[x]!, "address"], `writable tags overlap: ${formatAddress(a.address)} (${tagType(a)}) writes what tags[${writable[y]}] "${b.name}" at ${formatAddress(b.address)} writes`);
        break;
      }
    }
  }
}

/** Whether two of the tags (by index) overlap at all: sorted by start, O(n log n); the pairwise search above only runs when they do. */
function anyOverlap(tags: readonly WrittenTag[], indices: readonly number[]): boolean {
  const spans = indices.map((i) => {
    const [lo, hi] = writtenBits(tags[i]!);
    return [AREAS.indexOf(tags[i]!.address.area), lo, hi] as const;
  });
  spans.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  for (let k = 1; k < spans.length; k++) {
    const [area, lo] = spans[k]!;
    const prev = spans[k - 1]!;
    if (area === prev[0] && lo <= prev[2]) return true;
  }
  return false;
}

function checkMap(m: DeviceMap, c: Checker): void {
  const busNames = Object.keys(m.buses);
  const ports = new Map<string, string>();
  for (const name of busNames) {
    const port = m.buses[name]!.port;
    const first = ports.get(port);
    // Two buses on one serial device would open it twice and interleave their frames.
    if (first !== undefined) c.report(["buses", name, "port"], `${port} is already the port of bus "${first}"; put the devices of both on one bus`);
    else ports.set(port, name);
  }
  const devices = new Map<string, number>();
  /** Every NodeId the map makes (devices and tags), to catch "a.b" + "c" against "a" + "b.c". */
  const nodeIds = new Map<string, string>();
  // Without a "." in any name, NodeIds can only clash through duplicate names, which the
  // devices' own checks and the device check below report: 10,000 NodeId strings saved.
  const dotted = m.devices.some((d) => d.name.includes(".") || d.tags.some((t) => t.name.includes(".")));
  m.devices.forEach((d, i) => {
    if (d.bus !== undefined && !Object.hasOwn(m.buses, d.bus)) {
      const near = suggest(d.bus, busNames);
      const known = busNames.length === 0 ? "no buses are defined under `buses`" : `defined buses: ${busNames.join(", ")}`;
      c.report(["devices", i, "bus"], `no bus named "${d.bus}"; ${near ? `did you mean "${near}"?` : known}`);
    }
    const first = devices.get(d.name);
    if (first !== undefined) {
      c.report(["devices", i, "name"], `two devices named "${d.name}" (first at devices[${first}]); device names must be unique`);
      return;
    }
    devices.set(d.name, i);
    const claim = (id: string, at: readonly (string | number)[], what: string) => {
      const owner = nodeIds.get(id);
      if (owner !== undefined) c.report(at, `NodeId ns=1;s=${id} of ${what} is already the NodeId of ${owner}`);
      else nodeIds.set(id, what);
    };
    if (!dotted) return;
    claim(d.name, ["devices", i, "name"], `device "${d.name}"`);
    d.tags.forEach((t, j) => {
      claim(tagNodeIdText(d.name, t.name), ["devices", i, "tags", j, "name"], `tag "${t.name}" of device "${d.name}"`);
    });
  });
}

// ---- loading ----------------------------------------------------------------------------------

/**
 * Reads and validates a device map, or throws ConfigError with every issue. With `cacheDir`
 * (the gateway's <dataDir>/cache), a valid map is kept there and an unchanged one is read back
 * from it on the next start (validated-cache.ts); `cache.defer` may put off writing it.
 */
export function loadDeviceMap(file: string, cacheDir?: string, cache?: CacheOptions): DeviceMap {
  if (cacheDir === undefined) return loadFile(deviceMapSchema, file);
  const result = validateDeviceMap(file, cacheDir, cache);
  if (!result.ok) throw new ConfigError(result.issues);
  return result.value;
}

/** The file in `cacheDir` that keeps the last valid device map. */
export function deviceMapCacheFile(cacheDir: string): string {
  return join(cacheDir, "device-map.json");
}

/** validateFile for a device map, with the cache of loadDeviceMap when `cacheDir` is given. */
export function validateDeviceMap(file: string, cacheDir?: string, cache?: CacheOptions): ValidationResult<DeviceMap> {
  return cacheDir === undefined ? validateFile(deviceMapSchema, file) : validateFileCached(deviceMapSchema, file, deviceMapCacheFile(cacheDir), cache);
}

/** Every issue of a device map file; none when it is valid. */
export function validateDeviceMapFile(file: string): ConfigIssue[] {
  return [...validateFile(deviceMapSchema, file).issues];
}
