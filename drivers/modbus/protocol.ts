// Modbus as the device map and the poll groups see it (definition.ts makes the DriverProtocol of
// src/devices/registry.ts from it): its four data areas, its addresses ("holding:100",
// "holding:100.3", Modicon 40101), the keys of its devices and tags with their checks, and its
// request limits (Modbus Application Protocol V1.1b3 §6.1-6.4: 125 registers, 2000 bits per
// read). The Modbus drivers (TCP, RTU, RTU over TCP), the simulator and the bench driver share
// it; their tags are read by the word codec (src/devices/tag-codec.ts).
//
// Decisions where the issue is silent:
// - `type` defaults to bool on coils and discrete inputs, uint16 on registers. `bool` on a
//   register is "register != 0"; `bit` is one bit of a register (holding:100.3).
// - Writes are allowed only on coils and holding registers.
import type { DeviceConfig, DeviceSyntax, TagConfig, ValueType } from "../../src/config/device-map.js";
import {
  boolean,
  custom,
  duration,
  enumOf,
  integer,
  optional,
  string,
  text,
  MAX_HOST,
  type Checker,
  type ObjectValue,
  type ParseResult,
} from "../../src/config/schema.js";
import { suggest } from "../../src/config/validate.js";
import type { BlockLimits } from "../../src/devices/block-plan.js";
import type { TagPlan } from "../../src/devices/registry.js";
import { BYTE_ORDERS, compileWordTag, MAX_STRING_WORDS, WORD_TYPES, wordWidth, type WordType } from "../../src/devices/tag-codec.js";

export const AREAS = ["coil", "discrete", "input", "holding"] as const;
export type Area = (typeof AREAS)[number];

/** A Modbus address, 0-based. `bit` only for `bit` tags (holding:100.3). */
export interface ModbusAddress {
  readonly area: Area;
  readonly offset: number;
  readonly bit?: number;
}

/** Most registers and bits one read request may ask for (a device's own settings may lower them). */
export interface ModbusLimits {
  readonly maxRegisters: number;
  readonly maxBits: number;
}

/** Modbus protocol limits (Modbus Application Protocol V1.1b3 §6.1-6.4): per read request. */
export const MODBUS_LIMITS: ModbusLimits = { maxRegisters: 125, maxBits: 2000 };

export function isBitArea(area: Area): boolean {
  return area === "coil" || area === "discrete";
}

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
  if (isBitArea(result.value.area)) return { ok: false, message: "only registers have bits; a coil is one bit already" };
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

// ---- the device map's keys --------------------------------------------------------------------

const address = custom<ModbusAddress>({
  expected: "a Modbus address like holding:100, input:0, coil:5, holding:100.3 or 40101",
  description: "coil | discrete | input | holding, 0-based (holding:100); a bit of a register as holding:100.3; Modicon 40101 (1-based) is accepted too.",
  jsonSchema: { anyOf: [{ type: "string", pattern: "^\\s*((coil|discrete|input|holding):\\d+|\\d{5,6})(\\.\\d{1,2})?\\s*$" }, { type: "integer", minimum: 1 }] },
  parse: parseAddress,
});

const tagKeys = {
  address,
  type: optional(enumOf(WORD_TYPES, { description: "Data type; default bool on coils and discrete inputs, uint16 on registers." })),
  length: optional(integer({ description: "Registers of a string tag (2 characters each).", min: 1, max: MAX_STRING_WORDS })),
  byteOrder: optional(enumOf(BYTE_ORDERS, { description: "Byte order of multi-register values; default the device's." })),
};

const deviceKeys = {
  host: optional(text({ description: "Address of the device or of the TCP-to-RTU gateway (modbus-tcp, modbus-rtu-over-tcp).", minLength: 1, maxLength: MAX_HOST })),
  port: optional(integer({ description: "TCP port (default 502); for the simulator, the port it listens on (default 0: any free port).", min: 0, max: 65535 })),
  bus: optional(string({ description: "Name of the serial bus under `buses` (modbus-rtu, modbus-ascii).", minLength: 1 })),
  unitId: integer({ description: "Modbus unit id (slave address): 1-247 on a serial bus, 0-255 over TCP.", default: 1, min: 0, max: 255 }),
  timeout: duration({ description: "How long to wait for an answer.", default: "1s", min: "10ms", max: "60s" }),
  byteOrder: enumOf(BYTE_ORDERS, { description: "Default byte order of the device's multi-register values.", default: "ABCD" }),
  maxGap: integer({ description: "Unused registers (or bits) one block read may span to join two tags.", default: 10, min: 0, max: 2000 }),
  maxRegistersPerRead: integer({ description: "Most registers in one read request (125 is Modbus's limit; some slaves accept less).", default: MODBUS_LIMITS.maxRegisters, min: 1, max: MODBUS_LIMITS.maxRegisters }),
  maxBitsPerRead: integer({ description: "Most coils or discrete inputs in one read request (2000 is Modbus's limit).", default: MODBUS_LIMITS.maxBits, min: 1, max: MODBUS_LIMITS.maxBits }),
  forceSingleRegisterWrite: boolean({ description: "Write registers one at a time with FC6, for slaves without FC16.", default: false }),
  interRequestDelay: optional(duration({ description: "Quiet time between two requests (modbus-tcp, modbus-rtu-over-tcp).", max: "10s" })),
};

/** A tag of a Modbus device, with the keys of its address. */
export type ModbusTag = TagConfig & ObjectValue<typeof tagKeys>;
/** A Modbus device, with the keys of its link and settings. */
export type ModbusDevice = Omit<DeviceConfig, "tags"> & ObjectValue<typeof deviceKeys> & { readonly tags: readonly ModbusTag[] };

/** The tag's effective data type (the default follows the area). */
export function tagType(t: Pick<ModbusTag, "type" | "address">): WordType {
  return t.type ?? (isBitArea(t.address.area) ? "bool" : "uint16");
}

/** Registers (or bits, for coils and discrete inputs) a tag occupies. */
export function tagWidth(t: Pick<ModbusTag, "type" | "address" | "length">): number {
  return isBitArea(t.address.area) ? 1 : wordWidth(tagType(t), t.length);
}

function valueType(tag: TagConfig): ValueType {
  const type = tagType(tag as ModbusTag);
  return { name: type, numeric: type !== "bool" && type !== "bit" && type !== "string" };
}

function checkTag(tag: TagConfig, c: Checker): void {
  const t = tag as ModbusTag;
  const type = tagType(t);
  const area = t.address.area;
  if (isBitArea(area) && type !== "bool") c.report("type", `a ${area} holds one bit: expected bool, got ${type}`);
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
}

function checkDevice(device: DeviceConfig, c: Checker): void {
  const d = device as ModbusDevice;
  const tcp = d.driver === "modbus-tcp" || d.driver === "modbus-rtu-over-tcp";
  if (tcp && d.host === undefined) c.report("host", `missing required key; ${d.driver} needs the host to connect to`);
  if (!tcp && d.host !== undefined) c.report("host", `host applies to modbus-tcp and modbus-rtu-over-tcp, this device is ${d.driver}`);
  const serial = d.driver === "modbus-rtu" || d.driver === "modbus-ascii";
  if (serial) {
    if (d.bus === undefined) c.report("bus", `missing required key; a ${d.driver} device names its serial bus (see \`buses\`)`);
    if (d.port !== undefined) c.report("port", `a ${d.driver} device is reached through its bus; port applies to TCP drivers`);
    if (d.interRequestDelay !== undefined) c.report("interRequestDelay", "on a serial bus, set interRequestDelay on the bus");
  } else if (d.bus !== undefined) {
    c.report("bus", `bus applies to modbus-rtu and modbus-ascii devices, this one is ${d.driver}`);
  }
  if ((serial || d.driver === "modbus-rtu-over-tcp") && (d.unitId < 1 || d.unitId > 247)) {
    c.report("unitId", `expected a unit id between 1 and 247 on a serial line (0 is broadcast, which never answers), got ${d.unitId}`);
  }
  d.tags.forEach((t, i) => {
    const max = isBitArea(t.address.area) ? d.maxBitsPerRead : d.maxRegistersPerRead;
    if (tagWidth(t) > max) {
      c.report(["tags", i, t.length !== undefined ? "length" : "type"], `the tag needs ${tagWidth(t)} registers but the device reads at most ${max} per request (maxRegistersPerRead)`);
    }
  });
  checkOverlappingWrites(d, c);
}

/** Bits of one area touched by a writable tag: [first, last] in bit units (register*16 + bit). */
function writtenBits(t: ModbusTag): readonly [number, number] {
  const a = t.address;
  if (a.area === "coil") return [a.offset, a.offset];
  if (a.bit !== undefined) return [a.offset * 16 + a.bit, a.offset * 16 + a.bit];
  return [a.offset * 16, (a.offset + tagWidth(t)) * 16 - 1];
}

/**
 * Two readwrite tags over the same register (or coil, or bit) would let one client's write
 * clobber another's value; the map is refused rather than guessing which tag owns it.
 */
function checkOverlappingWrites(d: ModbusDevice, c: Checker): void {
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
function anyOverlap(tags: readonly ModbusTag[], indices: readonly number[]): boolean {
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

/** How the device map writes Modbus devices and tags. */
export const MODBUS_SYNTAX: DeviceSyntax = { deviceKeys, tagKeys, busKey: "bus", valueType, checkTag, checkDevice };

// ---- the poll groups' view --------------------------------------------------------------------

/** A Modbus tag's place and codec: words of its register area, or one bit of its bit area. */
export function modbusTag(tag: TagConfig, device: DeviceConfig): TagPlan {
  const t = tag as ModbusTag;
  const a = t.address;
  const codec = compileWordTag({
    area: a.area,
    bits: isBitArea(a.area),
    type: tagType(t),
    bit: a.bit,
    length: t.length,
    byteOrder: t.byteOrder ?? (device as ModbusDevice).byteOrder,
    scale: t.scale,
    offset: t.offset,
    range: t.range,
  });
  return { codec, start: a.offset };
}

/** The areas' limits of one device: the protocol's, lowered by its own settings, in area order. */
export function modbusReadLimits(device: DeviceConfig, limits: ModbusLimits): BlockLimits {
  const d = device as ModbusDevice;
  const bits = Math.min(d.maxBitsPerRead, limits.maxBits);
  const registers = Math.min(d.maxRegistersPerRead, limits.maxRegisters);
  return { maxGap: d.maxGap, maxCount: { coil: bits, discrete: bits, input: registers, holding: registers } };
}
