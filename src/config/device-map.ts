// The schema of the device map (config/devices.yaml): serial buses, devices and their tags, and
// the checks that span entries (a bus that does not exist, two tags on one NodeId). A device's
// keys are the common ones below and its driver's (DeviceSyntax): how it is reached, where its
// tags' values are and how they read. The drivers a map may name come from the driver registry
// (MapDrivers), so this file names no protocol. The keys are the ones users and docs rely on:
// add keys, never rename.
//
// Decisions where the issue is silent:
// - Names: a device or tag name may hold letters, digits, "_", "-" and "." (tags are often
//   written "motor1.speed"); "/" is reserved for the nodes the gateway adds itself
//   (`<device>/Diagnostics/...`, `<tag>/EURange`), so they never clash with a tag's NodeId.
// - Who may write a readwrite tag is `writeRoles` (anonymous sessions are viewers, so the
//   default keeps anonymous clients read-only).
// - A serial line is hardware, not protocol: `buses` is common to the drivers whose devices
//   are on one (DeviceSyntax.busKey), which share it one request at a time. Its line settings
//   default to those of its devices' driver (DeviceSyntax.lineDefaults: a fieldbus has its own
//   customary speed and framing), else to 9600 baud 8E1; a bus whose devices' drivers default
//   differently must give the settings they differ in.
import { join } from "node:path";
import { unitByCode, unitByDisplayName, unitDisplayNames, type UneceUnit } from "../ua/units.js";
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
  variant,
  formatDuration,
  MAX_PATH,
  type Checker,
  type Infer,
  type ObjectValue,
  type ParseResult,
  type Schema,
  type Shape,
} from "./schema.js";
import { suggest, type ValidationResult } from "./validate.js";
import { validateFileCached, type CacheOptions } from "./validated-cache.js";

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
/** Longest description of a device or tag: a paragraph. */
const MAX_DESCRIPTION = 1024;
const NAME_TEXT = 'a name of letters, digits, "_", "-" and "." (no spaces or "/"), such as boiler or motor1.speed';

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

const rate = (description: string, def?: string | number) =>
  duration({ description, min: "10ms", max: "24h", ...(def === undefined ? {} : { default: def }) });

/** The line settings of a bus that neither the map nor its devices' drivers give. */
export const LINE_DEFAULTS: LineSettings = { baudRate: 9600, parity: "even", dataBits: 8, stopBits: 1 };
const LINE_KEYS = ["baudRate", "parity", "dataBits", "stopBits"] as const;

const bus = object(
  {
    port: text({ description: "Serial device, e.g. /dev/ttyUSB0 or /dev/ttyAMA0.", minLength: 1, maxLength: MAX_PATH }),
    baudRate: optional(integer({ description: "Bits per second; default that of its devices' driver (9600 where it names none).", min: 300, max: 4_000_000 })),
    parity: optional(enumOf(["none", "even", "odd"] as const, { description: "Parity; default that of its devices' driver (even where it names none)." })),
    dataBits: optional(enumOf([7, 8] as const, { description: "Data bits per character; default that of its devices' driver (8 where it names none)." })),
    stopBits: optional(enumOf([1, 2] as const, { description: "Stop bits per character; default that of its devices' driver (1 where it names none)." })),
    interRequestDelay: duration({ description: "Quiet time between two requests on this bus, for slow devices.", default: 0, max: "10s" }),
  },
  { description: "A serial line (RS-485/RS-232, or a level converter's) shared by the devices on it: one request at a time." },
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

const tagName = string({ description: "Tag name; the variable is ns=1;s=<device>.<name>.", pattern: NAME, patternText: NAME_TEXT });

/** A tag's keys of every driver, after its name and its driver's keys. */
const tagShape = {
  scale: number({ description: "Engineering value = raw * scale + offset.", default: 1 }),
  offset: number({ description: "Engineering value = raw * scale + offset.", default: 0 }),
  unit: optional(unit),
  range: optional(
    array(number(), { description: "EURange [low, high] of the engineering value; writes outside it are refused.", minItems: 2, maxItems: 2 }),
  ),
  rate: optional(rate("Poll rate; default the device's. Tags of one device and rate form one poll group.")),
  access: enumOf(["read", "readwrite"] as const, { description: "readwrite lets clients write the tag (where its driver can write it).", default: "read" }),
  history: boolean({ description: "Keep this tag's samples in the history database.", default: false }),
  alarms: optional(limitAlarms),
  description: optional(text({ description: "Shown to clients as the variable's Description.", maxLength: MAX_DESCRIPTION, lines: true })),
};
/** A tag as written; validation resolves its rate (TagConfig). Its driver's keys are there too, by DeviceSyntax.tagKeys. */
type WrittenTag = ObjectValue<typeof tagShape & { name: typeof tagName }>;
/** A tag as the gateway uses it: the rate is always there, the device's when the tag gives none. */
export type TagConfig = Omit<WrittenTag, "rate"> & { readonly rate: number };

const WRITE_ROLES = ["viewer", "operator", "admin"] as const;

const deviceName = string({ description: "Device name; becomes Objects/Devices/<name> and the prefix of its NodeIds.", pattern: NAME, patternText: NAME_TEXT });
const DRIVER_TEXT = "How the device is reached.";

/** A device's keys of every driver, after its name, driver and its driver's keys (tags last). */
const DEVICE_RATE_TEXT = "Default poll rate of the device's tags.";
const deviceShape = {
  rate: rate(DEVICE_RATE_TEXT, "1s"),
  retryBackoff: duration({ description: "First wait before retrying a device that stopped answering; doubles up to maxBackoff.", default: "1s", min: "10ms", max: "1h" }),
  maxBackoff: duration({ description: "Longest wait between retries of a silent device.", default: "30s", min: "10ms", max: "24h" }),
  demoteAfter: integer({ description: "Failed poll cycles after which the device is demoted: skipped, and only probed now and then.", default: 3, min: 1, max: 1000 }),
  writeRoles: array(enumOf(WRITE_ROLES), { description: "Roles that may write readwrite tags (anonymous sessions are viewers).", default: ["operator", "admin"], uniqueItems: true }),
  enabled: boolean({ description: "false keeps the device in the map without polling it or publishing it.", default: true }),
  description: optional(text({ description: "Shown to clients as the device object's Description.", maxLength: MAX_DESCRIPTION, lines: true })),
};
type WrittenDevice = ObjectValue<typeof deviceShape & { name: typeof deviceName }> & { readonly driver: string; readonly tags: readonly WrittenTag[] };
/** A device as the gateway uses it. Its driver's keys are there too (DeviceSyntax.deviceKeys): its driver reads them. */
export type DeviceConfig = Omit<WrittenDevice, "tags"> & { readonly tags: readonly TagConfig[] };

const DEVICE_TEXT = "One device of a fieldbus (a PLC, meter, drive, ...).";

/** The rate of every tag is resolved once, here: poll groups and nodes read `tag.rate` as it is. */
function resolveRates(d: WrittenDevice): DeviceConfig {
  for (const t of d.tags) if (t.rate === undefined) (t as { rate?: number }).rate = d.rate;
  return d as DeviceConfig;
}

/** The line settings of a serial bus. */
export interface LineSettings {
  readonly baudRate: number;
  readonly parity: "none" | "even" | "odd";
  readonly dataBits: 7 | 8;
  readonly stopBits: 1 | 2;
}
/** A bus as the gateway uses it: its line settings resolved (as written, else its devices' driver's, else LINE_DEFAULTS). */
export type BusConfig = Omit<Infer<typeof bus>, keyof LineSettings> & LineSettings;
export interface DeviceMap {
  readonly buses: Readonly<Record<string, BusConfig>>;
  readonly devices: readonly DeviceConfig[];
}
export type DeviceMapSchema = Schema<DeviceMap>;

// ---- drivers ----------------------------------------------------------------------------------

/** A tag's value type as messages name it, and whether it is a number. */
export interface ValueType {
  /** "uint16", "string", ...: the name the driver's `type` key (or its default) gives it. */
  readonly name: string;
  /** unit, range, alarms and scaling apply to numbers only. */
  readonly numeric: boolean;
}

/**
 * What the device map knows of a driver (DESIGN: Config, "a driver declares its own address
 * syntax and options"): the keys its devices and tags add to the common ones, and its checks
 * across them, with the validator's file:line:column messages. A driver's definition gives it
 * (drivers/); the validator and the JSON Schema take it from the driver registry (MapDrivers).
 */
export interface DeviceSyntax {
  /** Keys of a device besides the common ones: its link, its address on it, its settings. */
  readonly deviceKeys: Shape;
  /** Keys of a tag besides the common ones: where its value is and how it reads (an address, a record selector, a type). */
  readonly tagKeys: Shape;
  /** The device key that names its serial line, a key of the map's `buses` (checked to exist). */
  readonly busKey?: string;
  /** The value type of a tag whose keys all validated. */
  valueType(tag: TagConfig): ValueType;
  /** Checks across a tag's keys, beside the common ones; only for a tag whose keys all validated. */
  checkTag?(tag: TagConfig, c: Checker): void;
  /** Checks across a device's keys and its tags, beside the common ones. */
  checkDevice?(device: DeviceConfig, c: Checker): void;
  /**
   * Checks across the devices of this syntax on one serial bus, with the bus's resolved line
   * settings (what a device's keys alone cannot tell: the time a request takes at the bus's
   * speed, several devices at one address). Paths are from the map's root (["devices", 3, "rate"]).
   */
  checkBus?(bus: BusConfig, busName: string, members: readonly BusMember[], c: Checker): void;
  /** The line settings a bus of this syntax's devices takes where the map gives none. */
  readonly lineDefaults?: Partial<LineSettings>;
  /** The device `rate` where the map gives none, as written in YAML ("1s", "15m"); default "1s". */
  readonly defaultRate?: string;
}

/** A device on a bus, with its index in the map's devices (for messages). */
export interface BusMember {
  readonly device: DeviceConfig;
  readonly index: number;
}

/** The drivers a map may name, as the validator needs them: the driver registry (src/devices/registry.ts) is one. */
export interface MapDrivers {
  /** Their names, in the order messages list them; a new array whenever one is added. */
  readonly names: readonly string[];
  syntaxOf(name: string): DeviceSyntax;
}

const SCHEMAS = new WeakMap<MapDrivers, { readonly names: readonly string[]; readonly schema: DeviceMapSchema }>();

/** The schema of a device map whose devices name the drivers of `drivers`; made once for each list of them. */
export function deviceMapSchema(drivers: MapDrivers): DeviceMapSchema {
  const names = drivers.names;
  const made = SCHEMAS.get(drivers);
  if (made !== undefined && made.names === names) return made.schema;
  const schema = makeMapSchema(drivers, names);
  SCHEMAS.set(drivers, { names, schema });
  return schema;
}

function makeMapSchema(drivers: MapDrivers, names: readonly string[]): DeviceMapSchema {
  const driver = enumOf(names, { description: DRIVER_TEXT });
  // Drivers of one syntax (one protocol over several links) share one device schema.
  const bySyntax = new Map<DeviceSyntax, Schema>();
  const variants = new Map<string, Schema>();
  for (const name of names) {
    const syntax = drivers.syntaxOf(name);
    let spec = bySyntax.get(syntax);
    if (spec === undefined) bySyntax.set(syntax, (spec = deviceSchema(syntax, driver)));
    variants.set(name, spec);
  }
  const common = object({ name: deviceName, driver, ...deviceShape }, { description: DEVICE_TEXT });
  const mapShape = {
    buses: record(bus, {
      description: "Serial lines by name; devices on one name theirs with `bus:`.",
      default: {},
      keyPattern: /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/,
      keyText: "a bus name of letters, digits, \"_\", \"-\" and \".\"",
    }),
    devices: array(variant<DeviceConfig>("driver", variants, common, { description: DEVICE_TEXT }), { description: "The devices to poll.", default: [] }),
  };
  return object(mapShape, {
    description: "fieldgate device map.",
    check: (m, c) => checkMap(m as unknown as DeviceMap, c, drivers),
    resolve: (m: unknown) => resolveBuses(m as DeviceMap, drivers),
  }) as unknown as DeviceMapSchema;
}

/** A driver's keys may add to the common ones, never replace one. */
function own(keys: Shape, common: Shape, what: string): Shape {
  for (const k of Object.keys(keys)) if (Object.hasOwn(common, k)) throw new Error(`device map: a driver's ${what} key "${k}" is one of the common keys`);
  return keys;
}

function deviceSchema(syntax: DeviceSyntax, driver: Schema): Schema {
  const tag = object(
    { name: tagName, ...own(syntax.tagKeys, { name: tagName, ...tagShape }, "tag"), ...tagShape },
    {
      description: "One value of the device, published as an OPC UA variable.",
      check: (t, c) => {
        syntax.checkTag?.(t as TagConfig, c);
        checkTag(t as TagConfig, c, syntax.valueType(t as TagConfig));
      },
    },
  );
  const keys = own(syntax.deviceKeys, { name: deviceName, driver, tags: tag, ...deviceShape }, "device");
  const shape = syntax.defaultRate === undefined ? deviceShape : { ...deviceShape, rate: rate(DEVICE_RATE_TEXT, syntax.defaultRate) };
  return object(
    { name: deviceName, driver, ...keys, ...shape, tags: array(tag, { description: "The values to poll.", minItems: 1 }) },
    {
      description: DEVICE_TEXT,
      check: (d, c) => {
        syntax.checkDevice?.(d as unknown as DeviceConfig, c);
        checkDevice(d as unknown as WrittenDevice, c);
      },
      resolve: (d: unknown) => resolveRates(d as WrittenDevice),
    },
  );
}

// ---- derived facts ----------------------------------------------------------------------------

/** Whether the engineering value differs from the raw one (scaled values are Doubles). */
export function isScaled(t: Pick<TagConfig, "scale" | "offset">): boolean {
  return t.scale !== 1 || t.offset !== 0;
}

export function tagNodeIdText(deviceName: string, tagName: string): string {
  return `${deviceName}.${tagName}`;
}

// ---- checks -----------------------------------------------------------------------------------

function checkTag(t: TagConfig, c: Checker, type: ValueType): void {
  if (!type.numeric) {
    for (const key of ["unit", "range", "alarms"] as const) if (t[key] !== undefined) c.report(key, `${key} applies to numeric tags, this one is ${type.name}`);
    if (isScaled(t)) c.report(c.given("scale") ? "scale" : "offset", `scaling applies to numeric tags, this one is ${type.name}`);
  }
  if (t.scale === 0) c.report("scale", "expected a scale other than 0 (every raw value would read 0 + offset)");
  if (t.range !== undefined && !(t.range[0]! < t.range[1]!)) c.report("range", `expected [low, high] with low < high, got [${t.range.join(", ")}]`);
}

function checkDevice(d: WrittenDevice, c: Checker): void {
  if (d.retryBackoff > d.maxBackoff) {
    c.report("retryBackoff", `expected at most maxBackoff (${formatDuration(d.maxBackoff)}), got ${formatDuration(d.retryBackoff)}`);
  }
  const seen = new Map<string, number>();
  d.tags.forEach((t, i) => {
    const first = seen.get(t.name);
    if (first !== undefined) c.report(["tags", i, "name"], `two tags named "${t.name}" would share NodeId ns=1;s=${tagNodeIdText(d.name, t.name)} (first at tags[${first}])`);
    else seen.set(t.name, i);
  });
}

function checkMap(m: DeviceMap, c: Checker, drivers: MapDrivers): void {
  const busNames = Object.keys(m.buses);
  const ports = new Map<string, string>();
  for (const name of busNames) {
    const port = m.buses[name]!.port;
    const first = ports.get(port);
    // Two buses on one serial device would open it twice and interleave their frames.
    if (first !== undefined) c.report(["buses", name, "port"], `${port} is already the port of bus "${first}"; put the devices of both on one bus`);
    else ports.set(port, name);
  }
  // One driver a bus: the link of a bus is its driver's, and two drivers would each open the port.
  for (const [name, members] of busMembers(m, drivers)) {
    const driver = members[0]!.device.driver;
    const other = members.find((x) => x.device.driver !== driver);
    if (other !== undefined) {
      c.report(["devices", other.index, "driver"], `bus "${name}" carries ${driver} devices (devices[${members[0]!.index}]); a serial bus speaks one protocol: put the ${other.device.driver} devices on a bus of their own`);
      continue;
    }
    const syntax = drivers.syntaxOf(driver);
    syntax.checkBus?.(resolvedBus(m.buses[name]!, syntax), name, members, c);
  }
  const devices = new Map<string, number>();
  /** Every NodeId the map makes (devices and tags), to catch "a.b" + "c" against "a" + "b.c". */
  const nodeIds = new Map<string, string>();
  // Without a "." in any name, NodeIds can only clash through duplicate names, which the
  // devices' own checks and the device check below report: 10,000 NodeId strings saved.
  const dotted = m.devices.some((d) => d.name.includes(".") || d.tags.some((t) => t.name.includes(".")));
  m.devices.forEach((d, i) => {
    const busKey = drivers.syntaxOf(d.driver).busKey;
    const onBus = busKey === undefined ? undefined : (d as unknown as Record<string, unknown>)[busKey];
    if (typeof onBus === "string" && !Object.hasOwn(m.buses, onBus)) {
      const near = suggest(onBus, busNames);
      const known = busNames.length === 0 ? "no buses are defined under `buses`" : `defined buses: ${busNames.join(", ")}`;
      c.report(["devices", i, busKey!], `no bus named "${onBus}"; ${near ? `did you mean "${near}"?` : known}`);
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

/** The devices on each bus the map defines, by bus name, in map order (a device's bus is its syntax's busKey). */
function busMembers(m: DeviceMap, drivers: MapDrivers): Map<string, BusMember[]> {
  const out = new Map<string, BusMember[]>();
  m.devices.forEach((device, index) => {
    const busKey = drivers.syntaxOf(device.driver).busKey;
    const name = busKey === undefined ? undefined : (device as unknown as Record<string, unknown>)[busKey];
    if (typeof name !== "string" || !Object.hasOwn(m.buses, name)) return;
    let list = out.get(name);
    if (list === undefined) out.set(name, (list = []));
    list.push({ device, index });
  });
  return out;
}

/** A bus with the line settings the map left out taken from `syntax` (its devices'), else LINE_DEFAULTS. */
function resolvedBus(bus: BusConfig, syntax: DeviceSyntax | undefined): BusConfig {
  const given = bus as Partial<LineSettings>;
  const out: Record<string, unknown> = { ...bus };
  for (const key of LINE_KEYS) out[key] = given[key] ?? syntax?.lineDefaults?.[key] ?? LINE_DEFAULTS[key];
  return out as unknown as BusConfig;
}

/** Fills every bus's line settings in place, once the map is valid (a bus without devices takes LINE_DEFAULTS). */
function resolveBuses(m: DeviceMap, drivers: MapDrivers): DeviceMap {
  const members = busMembers(m, drivers);
  const buses = m.buses as Record<string, BusConfig>;
  for (const name of Object.keys(buses)) {
    const first = members.get(name)?.[0];
    buses[name] = resolvedBus(buses[name]!, first === undefined ? undefined : drivers.syntaxOf(first.device.driver));
  }
  return m;
}

// ---- loading ----------------------------------------------------------------------------------

/**
 * Reads and validates a device map, or throws ConfigError with every issue. With `cacheDir`
 * (the gateway's <dataDir>/cache), a valid map is kept there and an unchanged one is read back
 * from it on the next start (validated-cache.ts); `cache.defer` may put off writing it.
 */
export function loadDeviceMap(file: string, drivers: MapDrivers, cacheDir?: string, cache?: CacheOptions): DeviceMap {
  if (cacheDir === undefined) return loadFile(deviceMapSchema(drivers), file);
  const result = validateDeviceMap(file, drivers, cacheDir, cache);
  if (!result.ok) throw new ConfigError(result.issues);
  return result.value;
}

/** The file in `cacheDir` that keeps the last valid device map. */
export function deviceMapCacheFile(cacheDir: string): string {
  return join(cacheDir, "device-map.json");
}

/** validateFile for a device map, with the cache of loadDeviceMap when `cacheDir` is given. */
export function validateDeviceMap(file: string, drivers: MapDrivers, cacheDir?: string, cache?: CacheOptions): ValidationResult<DeviceMap> {
  const schema = deviceMapSchema(drivers);
  return cacheDir === undefined ? validateFile(schema, file) : validateFileCached(schema, file, deviceMapCacheFile(cacheDir), cache);
}

/** Every issue of a device map file; none when it is valid. */
export function validateDeviceMapFile(file: string, drivers: MapDrivers): ConfigIssue[] {
  return [...validateFile(deviceMapSchema(drivers), file).issues];
}
