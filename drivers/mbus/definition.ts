// The M-Bus driver as the device runtime sees it (src/devices/registry.ts): the protocol
// (protocol.ts), which meters share one link (those of one serial bus, those behind one TCP
// converter), the link's options from the map, the search for the meters on a link
// (DriverDefinition.discover, scan.ts) and `fieldgate mbus scan` (cli.ts, loaded when run).
import type { DeviceConfig } from "../../src/config/device-map.js";
import type { DriverCommand, DriverDefinition } from "../../src/devices/registry.js";
import { discoverMeters, linkOptionsFor, openMbusLink } from "./discover.js";
import type { MbusLink, MbusLinkOptions } from "./link.js";
import { MBUS_LINE, MBUS_PROTOCOL, mbusStation, type MbusDevice } from "./protocol.js";

export type MbusOpener = (options: MbusLinkOptions) => MbusLink;

export function mbusDriver(open: MbusOpener = openMbusLink): DriverDefinition<MbusLinkOptions> {
  return {
    protocol: MBUS_PROTOCOL,
    linkKey: (d, map) => {
      const m = d as MbusDevice;
      return m.bus !== undefined ? map.buses[m.bus]!.port : `${m.host}:${m.port}`;
    },
    linkOptions: (devices, map) => {
      const ds = devices as readonly MbusDevice[];
      const first = ds[0]!;
      // Devices on one link share it: the shortest reconnect delays of their retry settings.
      const more = {
        reconnectDelay: Math.min(...ds.map((d) => d.retryBackoff)),
        maxReconnectDelay: Math.min(...ds.map((d) => d.maxBackoff)),
      };
      if (first.bus !== undefined) return linkOptionsFor({ kind: "bus", name: first.bus, bus: map.buses[first.bus]! }, more);
      // Behind one converter, the slowest speed any of its meters names sets the waits.
      const busBaudRate = Math.min(...ds.map((d) => d.baudRate ?? MBUS_LINE.baudRate));
      return linkOptionsFor({ kind: "tcp", host: first.host!, port: first.port! }, { ...more, busBaudRate });
    },
    open: (options) => open(options),
    describeLink: (d: DeviceConfig) => {
      const m = d as MbusDevice;
      return `${m.bus !== undefined ? `bus ${m.bus}` : `${m.host ?? ""}:${m.port ?? ""}`} ${mbusStation(d).key}`;
    },
    discover: (target, options) => discoverMeters(target, options),
  };
}

export const MBUS_COMMAND: DriverCommand = {
  name: "mbus",
  usage: `  fieldgate mbus scan (--bus DEVICE | --host H --port N) [--baud N] [--parity even|none|odd]
                 [--primary] [--secondary] [--from N] [--to N] [--timeout MS] [--bus-name NAME] [--out FILE]
                                            find the M-Bus meters on a serial line or behind a TCP
                                            converter and print their device entries (YAML)`,
  run: async (args, context) => (await import("./cli.js")).mbusCommand(args, context),
};
