// Finding the devices on a link (DriverDefinition.discover): a driver whose devices can be found
// (meters that answer a search on their bus) lists them with each one's entry for the device
// map, ready to paste. The CLI's driver commands and the status page's editor ask through
// discoverDevices, by driver name, so that neither knows how any protocol searches.
import type { BusConfig } from "../config/device-map.js";

/** Where to search: a serial line (with the name its entries give the bus) or a TCP endpoint. */
export type DiscoveryTarget =
  | { readonly kind: "bus"; readonly name: string; readonly bus: BusConfig }
  | { readonly kind: "tcp"; readonly host: string; readonly port: number };

export interface DiscoveryOptions {
  /** Ends the search early; what was found by then is given. */
  readonly signal?: AbortSignal;
  /** Progress for a person ("searching 1234FFFF"), as the search goes. */
  readonly progress?: (message: string) => void;
  /** How long to wait for each answer, ms; default the driver's for the link's speed. */
  readonly timeout?: number;
}

export interface DiscoveredDevice {
  /** The device's entry for the map's `devices`, its keys as written in YAML (tags included). */
  readonly entry: Readonly<Record<string, unknown>>;
  /** One line about it for a person: what it is and where it answered. */
  readonly summary: string;
}

/** The drivers as a search needs them: the driver registry (registry.ts) is one. */
export interface DiscoveringDrivers {
  readonly names: readonly string[];
  has(name: string): boolean;
  get(name: string): { readonly discover?: (target: DiscoveryTarget, options: DiscoveryOptions) => Promise<DiscoveredDevice[]> };
}

/** The drivers of `drivers` that can search a link, in registry order. */
export function discoveringDrivers(drivers: DiscoveringDrivers): string[] {
  return drivers.names.filter((n) => drivers.get(n).discover !== undefined);
}

/** Searches `target` with the driver named `driver`; rejects with an Error that says why it cannot. */
export function discoverDevices(drivers: DiscoveringDrivers, driver: string, target: DiscoveryTarget, options: DiscoveryOptions = {}): Promise<DiscoveredDevice[]> {
  if (!drivers.has(driver)) return Promise.reject(new Error(`no driver "${driver}" in this gateway`));
  const discover = drivers.get(driver).discover;
  if (discover === undefined) {
    const can = discoveringDrivers(drivers);
    return Promise.reject(new Error(`the ${driver} driver cannot search for devices${can.length > 0 ? ` (${can.join(", ")} can)` : ""}`));
  }
  return discover(target, options);
}
