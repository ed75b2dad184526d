// The M-Bus driver as the device runtime sees it (src/devices/registry.ts): the protocol
// (protocol.ts), which meters share one link (those of one serial bus, those behind one TCP
// converter), the link's options from the map, the search for the meters on a link
// (DriverDefinition.discover, scan.ts) and `fieldgate mbus scan` (cli.ts, loaded when run).
import type { DeviceConfig } from "../../src/config/device-map.js";
import type { DiscoveredDevice, DiscoveryOptions, DiscoveryTarget } from "../../src/devices/discovery.js";
import type { DriverCommand, DriverDefinition } from "../../src/devices/registry.js";
import { MbusLink, type MbusLinkOptions } from "./link.js";
import { MBUS_LINE, MBUS_PROTOCOL, mbusStation, type MbusDevice } from "./protocol.js";
import { deviceEntries, scanBus } from "./scan.js";

/**
 * What the link allows beside the standard's answer window (timing.ts): a USB level converter's
 * latency and the operating system's, or a TCP converter's network and buffering, ms.
 */
export const SERIAL_ALLOWANCE = 100;
export const TCP_ALLOWANCE = 1000;
/** Bounds a connect or a port's open, ms. */
const CONNECT_TIMEOUT = 3000;

/** The options of a link to a serial line or a TCP converter, with the defaults of the map's. */
export function linkOptionsFor(target: DiscoveryTarget, more: Partial<MbusLinkOptions> = {}): MbusLinkOptions {
  const common = { timeout: CONNECT_TIMEOUT, reconnectDelay: 1000, maxReconnectDelay: 30_000, queueLimit: 64 };
  if (target.kind === "bus") {
    const b = target.bus;
    return { serial: true, path: b.port, baudRate: b.baudRate, parity: b.parity, dataBits: b.dataBits, stopBits: b.stopBits, host: "", port: 0, busBaudRate: b.baudRate, allowance: SERIAL_ALLOWANCE, ...common, ...more };
  }
  return { serial: false, host: target.host, port: target.port, path: "", ...MBUS_LINE, busBaudRate: MBUS_LINE.baudRate, allowance: TCP_ALLOWANCE, ...common, ...more };
}

export function openMbusLink(options: MbusLinkOptions): MbusLink {
  return new MbusLink(options);
}

/** Searches a link for meters (primary and secondary), each with its device entry. */
export async function discoverMeters(target: DiscoveryTarget, options: DiscoveryOptions & { readonly primary?: boolean; readonly secondary?: boolean; readonly from?: number; readonly to?: number; readonly retries?: number; readonly busBaudRate?: number }): Promise<DiscoveredDevice[]> {
  const link = new MbusLink(linkOptionsFor(target, options.busBaudRate === undefined ? {} : { busBaudRate: options.busBaudRate }));
  try {
    await link.connect();
    const found = await scanBus(link, {
      primary: options.primary ?? true,
      secondary: options.secondary ?? true,
      ...(options.from === undefined ? {} : { from: options.from }),
      ...(options.to === undefined ? {} : { to: options.to }),
      ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
      ...(options.retries === undefined ? {} : { retries: options.retries }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.progress === undefined ? {} : { progress: options.progress }),
    });
    const where = target.kind === "bus" ? { bus: target.name } : { host: target.host, port: target.port, ...(options.busBaudRate === undefined ? {} : { baudRate: options.busBaudRate }) };
    return deviceEntries(found, where);
  } finally {
    await link.close();
  }
}

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
