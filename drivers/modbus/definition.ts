// The Modbus drivers as the device runtime sees them (src/devices/registry.ts): which devices
// of the map share one link, the link's options from their settings, and Modbus's request
// limits (Modbus Application Protocol V1.1b3 §6.1-6.4: 125 registers, 2000 bits per read).
//
// Devices behind one endpoint share one link and so one serialized queue: every unit id on a
// serial bus, every device behind one host:port (a TCP-to-RTU gateway). The shared link serves
// them all: the longest time-out and inter-request delay of their settings, the shortest
// reconnect delays of their retry settings, and FC6 one register at a time for the unit ids
// whose device says forceSingleRegisterWrite.
import type { DeviceConfig, DeviceMap } from "../../src/config/device-map.js";
import type { Driver } from "../../src/devices/driver.js";
import type { DriverDefinition } from "../../src/devices/registry.js";
import { openModbusLink } from "./index.js";
import type { ModbusLinkKind, ModbusLinkOptions } from "./options.js";

export const MODBUS_LIMITS = { maxRegisters: 125, maxBits: 2000 } as const;

/** How a definition opens a link: the real one, or a test's. */
export type ModbusOpener = (options: ModbusLinkOptions) => Driver;

/** The settings of a shared link, merged from its devices' the same way for every kind. */
export function mergeLinkSettings(devices: readonly DeviceConfig[]): Pick<ModbusLinkOptions, "timeout" | "interRequestDelay" | "reconnectDelay" | "maxReconnectDelay" | "forceSingleRegisterWrite"> {
  let timeout = 0;
  let delay: number | undefined;
  let reconnectDelay = Infinity;
  let maxReconnectDelay = Infinity;
  const single: number[] = [];
  for (const d of devices) {
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

function tcpDriver(kind: Exclude<ModbusLinkKind, "rtu">, open: ModbusOpener): DriverDefinition<ModbusLinkOptions> {
  return {
    linkKey: (d) => `${d.host}:${d.port ?? 502}`,
    linkOptions: (devices) => ({ kind, host: devices[0]!.host, port: devices[0]!.port ?? 502, ...mergeLinkSettings(devices) }),
    open,
    limits: MODBUS_LIMITS,
  };
}

function rtuDriver(open: ModbusOpener): DriverDefinition<ModbusLinkOptions> {
  return {
    linkKey: (d, map) => map.buses[d.bus!]!.port,
    linkOptions: (devices, map: DeviceMap) => {
      const bus = map.buses[devices[0]!.bus!]!;
      return {
        kind: "rtu",
        path: bus.port,
        baudRate: bus.baudRate,
        parity: bus.parity,
        dataBits: bus.dataBits,
        stopBits: bus.stopBits,
        ...mergeLinkSettings(devices),
        // The bus's own delay; 0 lets the link keep the 3.5-character gap the line needs.
        interRequestDelay: bus.interRequestDelay > 0 ? bus.interRequestDelay : undefined,
      };
    },
    open,
    limits: MODBUS_LIMITS,
  };
}

/** The three Modbus drivers of the device map, opened by `open` (default: the real link). */
export function modbusDrivers(open: ModbusOpener = openModbusLink): Record<"modbus-tcp" | "modbus-rtu" | "modbus-rtu-over-tcp", DriverDefinition<ModbusLinkOptions>> {
  return {
    "modbus-tcp": tcpDriver("tcp", open),
    "modbus-rtu-over-tcp": tcpDriver("rtu-over-tcp", open),
    "modbus-rtu": rtuDriver(open),
  };
}
