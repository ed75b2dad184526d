// The links the M-Bus driver opens, from a bus of the map or a TCP converter, and the search for
// the meters on one (scan.ts) with their device entries: what the driver's definition, its
// `discover` and `fieldgate mbus scan` (cli.ts) share.
import type { DiscoveredDevice, DiscoveryOptions, DiscoveryTarget } from "../../src/devices/discovery.js";
import { MbusLink, type MbusLinkOptions } from "./link.js";
import { MBUS_LINE } from "./protocol.js";
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
