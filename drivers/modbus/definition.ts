// The Modbus drivers as the device runtime sees them (src/devices/registry.ts): Modbus itself
// (protocol.ts: addresses, keys, limits), which devices of the map share one link, and the
// link's options from their settings. RTU and ASCII are the two framings of a serial line
// (Modbus over serial line V1.02 §2.5): the same PDU, ASCII's bus defaulting to 7 data bits.
//
// Devices behind one endpoint share one link and so one serialized queue: every unit id on a
// serial bus, every device behind one host:port (a TCP-to-RTU gateway). The shared link serves
// them all: the longest time-out and inter-request delay of their settings, the shortest
// reconnect delays of their retry settings, and FC6 one register at a time for the unit ids
// whose device says forceSingleRegisterWrite.
import type { DeviceConfig, DeviceMap } from "../../src/config/device-map.js";
import type { Driver } from "../../src/devices/driver.js";
import type { DriverDefinition, DriverProtocol } from "../../src/devices/registry.js";
import { openModbusLink } from "./index.js";
import { MODBUS_KEPWARE } from "./kepware.js";
import type { ModbusLinkOptions } from "./options.js";
import { formatAddress, MODBUS_LIMITS, MODBUS_SYNTAX, modbusReadLimits, modbusTag, type ModbusDevice, type ModbusLimits, type ModbusTag } from "./protocol.js";

/** Modbus with the request limits `limits` (default the protocol's; an in-process device has none). */
export function modbusProtocol(limits: ModbusLimits = MODBUS_LIMITS): DriverProtocol {
  return {
    syntax: MODBUS_SYNTAX,
    tag: modbusTag,
    station: (d) => (d as ModbusDevice).unitId,
    readLimits: (d) => modbusReadLimits(d, limits),
    formatAddress: (t) => formatAddress((t as ModbusTag).address),
    kepware: MODBUS_KEPWARE,
  };
}

/** The protocol of every driver that speaks Modbus to a device. */
export const MODBUS_PROTOCOL = modbusProtocol();

/** Modbus ASCII's: Modbus's keys, its serial bus defaulting to the 7 data bits of ASCII mode (serial spec §2.5.2.1: 7E1). */
const MODBUS_ASCII_PROTOCOL: DriverProtocol = { ...MODBUS_PROTOCOL, syntax: { ...MODBUS_SYNTAX, lineDefaults: { dataBits: 7 } } };

/** How a definition opens a link: the real one, or a test's. */
export type ModbusOpener = (options: ModbusLinkOptions) => Driver;

/** The settings of a shared link, merged from its devices' the same way for every kind. */
export function mergeLinkSettings(devices: readonly DeviceConfig[]): Pick<ModbusLinkOptions, "timeout" | "interRequestDelay" | "reconnectDelay" | "maxReconnectDelay" | "forceSingleRegisterWrite"> {
  let timeout = 0;
  let delay: number | undefined;
  let reconnectDelay = Infinity;
  let maxReconnectDelay = Infinity;
  const single: number[] = [];
  for (const d of devices as readonly ModbusDevice[]) {
    timeout = Math.max(timeout, d.timeout);
    if (d.interRequestDelay !== undefined) delay = Math.max(delay ?? 0, d.interRequestDelay);
    reconnectDelay = Math.min(reconnectDelay, d.retryBackoff);
    maxReconnectDelay = Math.min(maxReconnectDelay, d.maxBackoff);
    if (d.forceSingleRegisterWrite && !single.includes(d.unitId)) single.push(d.unitId);
  }
  return {
    timeout,
    interRequestDelay: delay,
    reconnectDelay,
    maxReconnectDelay,
    ...(single.length > 0 ? { forceSingleRegisterWrite: single.sort((a, b) => a - b) } : {}),
  };
}

function tcpDriver(kind: "tcp" | "rtu-over-tcp", open: ModbusOpener): DriverDefinition<ModbusLinkOptions> {
  return {
    protocol: MODBUS_PROTOCOL,
    linkKey: (d) => `${(d as ModbusDevice).host}:${(d as ModbusDevice).port ?? 502}`,
    linkOptions: (devices) => {
      const first = devices[0] as ModbusDevice;
      return { kind, host: first.host, port: first.port ?? 502, ...mergeLinkSettings(devices) };
    },
    open,
    describeLink: (d) => `${(d as ModbusDevice).host ?? ""}:${(d as ModbusDevice).port ?? 502} unit ${(d as ModbusDevice).unitId}`,
  };
}

function serialDriver(kind: "rtu" | "ascii", open: ModbusOpener): DriverDefinition<ModbusLinkOptions> {
  return {
    protocol: kind === "ascii" ? MODBUS_ASCII_PROTOCOL : MODBUS_PROTOCOL,
    linkKey: (d, map) => map.buses[(d as ModbusDevice).bus!]!.port,
    describeLink: (d) => `bus ${(d as ModbusDevice).bus ?? ""} unit ${(d as ModbusDevice).unitId}`,
    linkOptions: (devices, map: DeviceMap) => {
      const bus = map.buses[(devices[0] as ModbusDevice).bus!]!;
      return {
        kind,
        path: bus.port,
        baudRate: bus.baudRate,
        parity: bus.parity,
        dataBits: bus.dataBits,
        stopBits: bus.stopBits,
        ...mergeLinkSettings(devices),
        // The bus's own delay; 0 lets the link keep the 3.5-character gap an RTU line needs.
        interRequestDelay: bus.interRequestDelay > 0 ? bus.interRequestDelay : undefined,
      };
    },
    open,
  };
}

/** The Modbus drivers of the device map, opened by `open` (default: the real link), in the order messages list them. */
export function modbusDrivers(open: ModbusOpener = openModbusLink): Record<"modbus-tcp" | "modbus-rtu" | "modbus-rtu-over-tcp" | "modbus-ascii", DriverDefinition<ModbusLinkOptions>> {
  return {
    "modbus-tcp": tcpDriver("tcp", open),
    "modbus-rtu": serialDriver("rtu", open),
    "modbus-rtu-over-tcp": tcpDriver("rtu-over-tcp", open),
    "modbus-ascii": serialDriver("ascii", open),
  };
}
