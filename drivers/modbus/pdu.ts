// Modbus application protocol (Modbus Application Protocol Specification V1.1b3, "MBAP spec"
// below) and the serial-line CRC (Modbus over Serial Line V1.02, "serial spec"): request
// encoding, expected response sizes, response decoding, exception mapping. No I/O here.
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { DriverError, type DriverErrorKind } from "../../src/devices/driver.js";

export const enum FunctionCode {
  ReadCoils = 1,
  ReadDiscreteInputs = 2,
  ReadHoldingRegisters = 3,
  ReadInputRegisters = 4,
  WriteSingleCoil = 5,
  WriteSingleRegister = 6,
  WriteMultipleCoils = 15,
  WriteMultipleRegisters = 16,
}

/** Quantity limits per request (MBAP spec §6.1-6.4, §6.11, §6.12). */
export const MAX_READ_BITS = 2000;
export const MAX_READ_REGISTERS = 125;
export const MAX_WRITE_BITS = 1968;
export const MAX_WRITE_REGISTERS = 123;

/** A PDU is at most 253 bytes (MBAP spec §4.1): an RTU ADU 256, a TCP ADU 260. */
export const MAX_PDU = 253;

/** Modbus exception codes (MBAP spec §7). */
export const enum ExceptionCode {
  IllegalFunction = 0x01,
  IllegalDataAddress = 0x02,
  IllegalDataValue = 0x03,
  ServerDeviceFailure = 0x04,
  Acknowledge = 0x05,
  ServerDeviceBusy = 0x06,
  MemoryParityError = 0x08,
  GatewayPathUnavailable = 0x0a,
  GatewayTargetFailedToRespond = 0x0b,
}

/** 05 Acknowledge and 06 Busy both mean "ask again later"; the link retries them with backoff. */
export function isBusyException(code: number): boolean {
  return code === ExceptionCode.ServerDeviceBusy || code === ExceptionCode.Acknowledge;
}

/** 0A/0B come from a gateway that could not reach the slave: a communication failure. */
export function isGatewayException(code: number): boolean {
  return code === ExceptionCode.GatewayPathUnavailable || code === ExceptionCode.GatewayTargetFailedToRespond;
}

/**
 * The StatusCode a Modbus exception gives the affected values. Choices from the Part 4 §7.34 /
 * Part 8 §6.3 StatusCode descriptions:
 * - 01 Illegal Function → BadNotSupported ("the requested operation is not supported"): the
 *   device does not implement this function code; retrying cannot help (configuration may, e.g.
 *   forceSingleRegisterWrite for devices without FC16).
 * - 02 Illegal Data Address → BadConfigurationError: the map names an address the device lacks.
 * - 03 Illegal Data Value → BadOutOfRange ("the value was out of range"): a value or quantity the
 *   device refuses (a written value, or more registers than it serves per request).
 * - 04 Server Device Failure, 08 Memory Parity Error → BadDeviceFailure.
 * - 05/06 (Acknowledge/Busy) still failing after the link's bounded retries →
 *   BadResourceUnavailable, retryable: the device is alive but cannot serve now.
 * - 0A/0B gateway failures → BadCommunicationError, retryable (counted as communication errors).
 * - anything else → BadDeviceFailure (the device answered, but not usefully).
 */
export function exceptionStatus(code: number): { statusCode: number; retryable: boolean } {
  switch (code) {
    case ExceptionCode.IllegalFunction:
      return { statusCode: StatusCodes.BadNotSupported, retryable: false };
    case ExceptionCode.IllegalDataAddress:
      return { statusCode: StatusCodes.BadConfigurationError, retryable: false };
    case ExceptionCode.IllegalDataValue:
      return { statusCode: StatusCodes.BadOutOfRange, retryable: false };
    case ExceptionCode.Acknowledge:
    case ExceptionCode.ServerDeviceBusy:
      return { statusCode: StatusCodes.BadResourceUnavailable, retryable: true };
    case ExceptionCode.GatewayPathUnavailable:
    case ExceptionCode.GatewayTargetFailedToRespond:
      return { statusCode: StatusCodes.BadCommunicationError, retryable: true };
    default:
      return { statusCode: StatusCodes.BadDeviceFailure, retryable: false };
  }
}

/** The names of MBAP spec §7's exception codes, as one word each ("SERVER DEVICE FAILURE"). */
const EXCEPTION_NAMES: Readonly<Record<number, string>> = {
  1: "IllegalFunction",
  2: "IllegalDataAddress",
  3: "IllegalDataValue",
  4: "ServerDeviceFailure",
  5: "Acknowledge",
  6: "ServerDeviceBusy",
  8: "MemoryParityError",
  10: "GatewayPathUnavailable",
  11: "GatewayTargetDeviceFailedToRespond",
};

/** "ServerDeviceFailure (exception 04)": what the log and LastError call an exception. */
export function exceptionName(code: number): string {
  return `${EXCEPTION_NAMES[code] ?? "an exception the specification does not define"} (exception ${code.toString(16).toUpperCase().padStart(2, "0")})`;
}

/**
 * What the poll groups make of an exception (src/devices/driver.ts DriverErrorKind). 01, 02 and
 * 03 describe the request (MBAP spec §7: a function, an address, a value the server will not
 * take): the tags' own fault, however often it comes. 04, 08 and codes the specification does
 * not define describe the server, and 05/06 still there after the link's retries say it cannot
 * serve now: the device's fault (isDeviceFault), which fails it when nothing else of a cycle answers.
 */
function exceptionKind(code: number): DriverErrorKind {
  switch (code) {
    case ExceptionCode.IllegalFunction:
      return "unsupported";
    case ExceptionCode.IllegalDataAddress:
      return "badAddress";
    case ExceptionCode.IllegalDataValue:
      return "badValue";
    case ExceptionCode.Acknowledge:
    case ExceptionCode.ServerDeviceBusy:
      return "busy";
    case ExceptionCode.GatewayPathUnavailable:
    case ExceptionCode.GatewayTargetFailedToRespond:
      return "unreachable";
    default:
      return "deviceFailure";
  }
}

/** A failure of a Modbus request; `exceptionCode` when the device answered with an exception. */
export class ModbusError extends DriverError {
  readonly exceptionCode: number | undefined;
  constructor(kind: DriverErrorKind, statusCode: number, message: string, retryable: boolean, exceptionCode?: number) {
    super(kind, statusCode, message, retryable);
    this.name = "ModbusError";
    this.exceptionCode = exceptionCode;
  }
}

export function exceptionError(unitId: number, fc: number, code: number, what: string): ModbusError {
  const { statusCode, retryable } = exceptionStatus(code);
  return new ModbusError(exceptionKind(code), statusCode, `unit ${unitId}: ${exceptionName(code)} to FC${fc} ${what}`, retryable, code);
}

// CRC-16/MODBUS (serial spec §6.2.2): reflected polynomial 0xA001, initial value 0xFFFF,
// transmitted low byte first. Table-driven: one lookup per byte.
const CRC_TABLE = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  let c = i;
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xa001 : c >>> 1;
  CRC_TABLE[i] = c;
}

/** CRC over buf[start, end). */
export function crc16(buf: Uint8Array, start: number, end: number): number {
  let crc = 0xffff;
  for (let i = start; i < end; i++) crc = (crc >>> 8) ^ CRC_TABLE[(crc ^ buf[i]!) & 0xff]!;
  return crc;
}

/**
 * Writes the request PDU for `fc` at `buf[off]` and returns its length. `values`/`index` give
 * the data for writes: FC5/FC6 write values[index] at `address` (the caller passes the address
 * of that one item), FC15/FC16 write values[0..count).
 */
export function encodeRequestPdu(
  buf: Buffer,
  off: number,
  fc: number,
  address: number,
  count: number,
  values: ArrayLike<number> | null,
  index: number,
): number {
  buf[off] = fc;
  buf.writeUInt16BE(address, off + 1);
  switch (fc) {
    case FunctionCode.WriteSingleCoil:
      // §6.5: ON is 0xFF00, OFF 0x0000; any other value is refused with exception 03.
      buf.writeUInt16BE(values![index] ? 0xff00 : 0x0000, off + 3);
      return 5;
    case FunctionCode.WriteSingleRegister:
      buf.writeUInt16BE(values![index]! & 0xffff, off + 3);
      return 5;
    case FunctionCode.WriteMultipleCoils: {
      const bytes = (count + 7) >>> 3;
      buf.writeUInt16BE(count, off + 3);
      buf[off + 5] = bytes;
      buf.fill(0, off + 6, off + 6 + bytes);
      // §6.11: the first coil is the least significant bit of the first data byte.
      for (let i = 0; i < count; i++) if (values![i]) buf[off + 6 + (i >>> 3)]! |= 1 << (i & 7);
      return 6 + bytes;
    }
    case FunctionCode.WriteMultipleRegisters:
      buf.writeUInt16BE(count, off + 3);
      buf[off + 5] = count * 2;
      for (let i = 0; i < count; i++) buf.writeUInt16BE(values![i]! & 0xffff, off + 6 + 2 * i);
      return 6 + 2 * count;
    default:
      // FC1-4: address and quantity.
      buf.writeUInt16BE(count, off + 3);
      return 5;
  }
}

/** Length of the normal (non-exception) response PDU to `fc` with `count` items. */
export function responsePduLength(fc: number, count: number): number {
  switch (fc) {
    case FunctionCode.ReadCoils:
    case FunctionCode.ReadDiscreteInputs:
      return 2 + ((count + 7) >>> 3);
    case FunctionCode.ReadHoldingRegisters:
    case FunctionCode.ReadInputRegisters:
      return 2 + 2 * count;
    default:
      // FC5/6 echo address and value, FC15/16 echo address and quantity.
      return 5;
  }
}

export function isReadFunction(fc: number): boolean {
  return fc <= FunctionCode.ReadInputRegisters;
}

/**
 * Checks a normal response PDU at buf[off, off+len) against the request. Returns undefined when
 * it fits, else what is wrong. Reads must carry the expected byte count; writes must echo the
 * request (FC5/6 echo address and value, FC15/16 address and quantity: MBAP spec §6.5/6.6/6.11/6.12).
 */
export function checkResponsePdu(
  buf: Uint8Array,
  off: number,
  len: number,
  fc: number,
  address: number,
  count: number,
  values: ArrayLike<number> | null,
  index: number,
): string | undefined {
  const expected = responsePduLength(fc, count);
  if (len !== expected) return `response PDU of ${len} bytes, expected ${expected}`;
  if (isReadFunction(fc)) {
    if (buf[off + 1] !== expected - 2) return `byte count ${buf[off + 1]}, expected ${expected - 2}`;
    return undefined;
  }
  const echoAddress = (buf[off + 1]! << 8) | buf[off + 2]!;
  const echoValue = (buf[off + 3]! << 8) | buf[off + 4]!;
  let want: number;
  if (fc === FunctionCode.WriteSingleCoil) want = values![index] ? 0xff00 : 0;
  else if (fc === FunctionCode.WriteSingleRegister) want = values![index]! & 0xffff;
  else want = count;
  if (echoAddress !== address || echoValue !== want) {
    return `echo ${echoAddress}/${echoValue}, expected ${address}/${want}`;
  }
  return undefined;
}

/** Decodes a checked read response's data into a fresh array the caller keeps. */
export function decodeReadData(buf: Uint8Array, off: number, fc: number, count: number): Uint16Array | Uint8Array {
  const data = off + 2;
  if (fc === FunctionCode.ReadHoldingRegisters || fc === FunctionCode.ReadInputRegisters) {
    const out = new Uint16Array(count);
    for (let i = 0; i < count; i++) out[i] = (buf[data + 2 * i]! << 8) | buf[data + 2 * i + 1]!;
    return out;
  }
  const out = new Uint8Array(count);
  for (let i = 0; i < count; i++) out[i] = (buf[data + (i >>> 3)]! >>> (i & 7)) & 1;
  return out;
}
