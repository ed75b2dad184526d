// The Modbus drivers: Modbus TCP, RTU or ASCII on a serial line, RTU through a TCP gateway.
// One Driver per physical link; every unit id on that link shares its one serialized queue.
// Function codes 1-6, 15, 16; exception codes map to StatusCodes as pdu.ts documents.
import { ModbusLink } from "./link.js";
import { resolveLinkOptions } from "./options.js";
import type { ModbusLinkOptions } from "./options.js";

export { ModbusLink } from "./link.js";
export { exceptionStatus, crc16, ModbusError } from "./pdu.js";
export { modbusLinkKey, resolveLinkOptions } from "./options.js";
export type { ModbusLinkHealth, ModbusLinkKind, ModbusLinkOptions, ModbusUnitHealth, ResolvedLinkOptions } from "./options.js";

/**
 * Creates the driver of one link. Nothing is opened until `connect()` or the first request;
 * after a failure the link reopens on a later request, with backoff. Throws RangeError for
 * options that cannot work (no host/path, timeout missing).
 */
export function openModbusLink(options: ModbusLinkOptions): ModbusLink {
  return new ModbusLink(resolveLinkOptions(options));
}
