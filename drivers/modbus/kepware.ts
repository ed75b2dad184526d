// Modbus tags as Kepware's Modbus drivers write them in a tag CSV (src/config/kepware.ts reads and
// writes the rest of the row). Addresses are Modicon numbers, 1-based: 000001 coils, 100001
// discrete inputs, 300001 input registers, 400001 holding registers (5 digits, 40001, too); a
// bit of a register is 400001.0 to 400001.15; a string is 400001.20H (20 bytes, high byte first)
// or 400001.20L (low byte first). Data types: Boolean, Word, Short, DWord, Long, Float, Double,
// LLong, QWord, String and Default (the address's own type) convert; BCD, LBCD, Char, Byte, Date
// and arrays have no equivalent here, and such rows are listed, not converted. Word order of 32-
// and 64-bit values is a device property in Kepware (Data Encoding), not in the CSV: the import
// takes it as an option.
import type { DeviceConfig, TagConfig } from "../../src/config/device-map.js";
import type { KepwareAddressing, KepwareDevice, KepwareDeviceOptions, KepwarePlace } from "../../src/config/kepware.js";
import { BYTE_ORDERS, type ByteOrder, type WordType } from "../../src/devices/tag-codec.js";
import { formatAddress, isBitArea, parseAddress, tagType, type ModbusAddress, type ModbusDevice, type ModbusTag } from "./protocol.js";

const TYPE_OF: Readonly<Record<string, WordType | "default">> = {
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

const KEPWARE_TYPE: Readonly<Record<WordType, string>> = {
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

interface KepwareAddress {
  readonly address: ModbusAddress;
  /** A string's length in bytes and byte order (400001.20H). */
  readonly stringBytes?: number;
  readonly lowByteFirst?: boolean;
}

/** 400001, 40001, 400001.3 and 400001.20H; what is wrong otherwise. */
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
  if (isBitArea(base.value.area)) return `"${text}": only registers have bits`;
  return { address: { ...base.value, bit } };
}

function importPlace(address: string, dataType: string, note: (message: string) => void): KepwarePlace | string {
  const key = dataType.toLowerCase();
  if (/array/.test(key)) return `data type ${dataType}: arrays have no equivalent here (one tag per value)`;
  const noEq = NO_EQUIVALENT[key];
  if (noEq !== undefined) return `data type ${dataType}: ${noEq}`;
  const mapped = TYPE_OF[key === "" ? "default" : key];
  if (mapped === undefined) return `data type "${dataType}" is not one of Kepware's (Boolean, Word, Short, DWord, Long, Float, Double, LLong, QWord, String, ...)`;
  const addr = kepwareAddress(address, mapped === "string");
  if (typeof addr === "string") return addr;
  const a = addr.address;
  const bits = isBitArea(a.area);
  let type: WordType;
  if (mapped === "default") type = a.bit !== undefined ? "bit" : bits ? "bool" : "uint16";
  else if (mapped === "bool" && a.bit !== undefined) type = "bit";
  else type = mapped;
  if (bits && type !== "bool") return `data type ${dataType} at ${address}: a ${a.area === "coil" ? "coil" : "discrete input"} holds one bit (Boolean)`;
  if (!bits && mapped === "bool" && a.bit === undefined) return `Boolean at ${address}: name the bit of the register (${address}.0 to .15)`;
  if (a.bit !== undefined && type !== "bit") return `data type ${dataType} at ${address}: a bit address needs Boolean`;
  const keys: Record<string, unknown> = { address: formatAddress(a) };
  if (type !== tagType({ type: undefined, address: a })) keys.type = type;
  if (addr.stringBytes !== undefined) {
    const length = Math.ceil(addr.stringBytes / 2);
    keys.length = length;
    if (addr.lowByteFirst) keys.byteOrder = "BADC";
    if (addr.stringBytes % 2 === 1) note(`a string of ${addr.stringBytes} bytes is read as ${length} registers (${length * 2} bytes)`);
  }
  const writable = a.area === "coil" || a.area === "holding";
  return {
    keys,
    type: { name: type, numeric: type !== "bool" && type !== "bit" && type !== "string" },
    ...(writable ? {} : { readOnly: `Client Access R/W on ${a.area === "input" ? "an input register" : "a discrete input"}: Modbus cannot write it, imported read-only` }),
  };
}

/** A tag's address in Kepware's decimal form (6 digits, 1-based). */
function exportPlace(tag: TagConfig, device: DeviceConfig): { readonly address: string; readonly dataType: string } {
  const t = tag as ModbusTag;
  const a = t.address;
  const base = `${MODICON_PREFIX[a.area]}${String(a.offset + 1).padStart(5, "0")}`;
  const type = tagType(t);
  let address = a.bit === undefined ? base : `${base}.${a.bit}`;
  if (type === "string") {
    const order = t.byteOrder ?? (device as ModbusDevice).byteOrder;
    address = `${base}.${(t.length ?? 1) * 2}${order === "BADC" || order === "DCBA" ? "L" : "H"}`;
  }
  return { address, dataType: KEPWARE_TYPE[type] };
}

function importDevice(driver: string, o: KepwareDeviceOptions): KepwareDevice | string {
  const byteOrder = o.byteOrder?.toUpperCase();
  if (byteOrder !== undefined && !(BYTE_ORDERS as readonly string[]).includes(byteOrder)) return `--byte-order: expected one of ${BYTE_ORDERS.join(", ")}, got "${o.byteOrder}"`;
  const rtu = driver === "modbus-rtu" || driver === "modbus-ascii";
  const keys: Record<string, unknown> = {};
  if (driver === "modbus-tcp" || driver === "modbus-rtu-over-tcp") keys.host = o.host ?? "127.0.0.1";
  if (rtu) keys.bus = "rs485-1";
  if (o.port !== undefined) keys.port = Number(o.port);
  if (o.station !== undefined) keys.unitId = Number(o.station);
  if (byteOrder !== undefined) keys.byteOrder = byteOrder as ByteOrder;
  return {
    keys,
    sections: rtu ? { buses: { "rs485-1": { port: "/dev/ttyUSB0" } } } : {},
    advice: [
      "Kepware's CSV holds the tags only: check the device's address, port, unit id and, for 32- and 64-bit",
      "values, byteOrder (Kepware's Data Encoding settings; ABCD is Modbus's own order), then",
      "    fieldgate validate --devices THIS_FILE",
      ...(rtu ? [`The serial bus (rs485-1 on /dev/ttyUSB0, ${driver === "modbus-ascii" ? "9600 7E1" : "9600 8E1"}) is a placeholder: set its port and line settings.`] : []),
    ],
  };
}

function exportNotes(device: DeviceConfig): string[] {
  const order = (device as ModbusDevice).byteOrder;
  return order !== "ABCD" ? [`its byteOrder ${order} is a device setting in Kepware (Data Encoding), not in the CSV`] : [];
}

/** How Kepware's Modbus drivers write Modbus tags. */
export const MODBUS_KEPWARE: KepwareAddressing = { importPlace, exportPlace, importDevice, exportNotes };
