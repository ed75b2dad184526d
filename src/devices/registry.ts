// The driver registry (DESIGN: Devices): each driver of drivers/ registers a definition under
// the names the device map's `driver:` key takes. A definition says which devices share one
// link (one serialized queue: a serial bus, one TCP-to-RTU gateway), how the settings of those
// devices make the link's options, how to open it, and the protocol's request limits. The
// device runtime asks only these questions, so it holds no driver's details.
import type { DeviceConfig, DeviceMap } from "../config/device-map.js";
import type { Driver } from "./driver.js";

/** Most registers and bits one read request may ask for (a device's own settings may lower them). */
export interface DriverLimits {
  readonly maxRegisters: number;
  readonly maxBits: number;
}

/** What a driver may use of the gateway while it runs. */
export interface DriverEnvironment {
  readonly log: { info(message: string): void; warn(message: string): void };
}

export interface DriverDefinition<Options> {
  /** Devices with the same key share one link. */
  linkKey(device: DeviceConfig, map: DeviceMap): string;
  /**
   * The options of the one link of `devices` (all with the same key), merged from their
   * settings. Plain data: a reload compares it to decide whether the link must be reopened.
   */
  linkOptions(devices: readonly DeviceConfig[], map: DeviceMap): Options;
  /** Makes the link's driver; nothing is opened before its connect() or first request. */
  open(options: Options, env: DriverEnvironment): Driver;
  readonly limits: DriverLimits;
}

/** A definition with its options type hidden: the registry only passes them from linkOptions to open. */
export interface RegisteredDriver {
  readonly name: string;
  linkKey(device: DeviceConfig, map: DeviceMap): string;
  linkOptions(devices: readonly DeviceConfig[], map: DeviceMap): unknown;
  open(options: unknown, env: DriverEnvironment): Driver;
  readonly limits: DriverLimits;
}

export class DriverRegistry {
  private readonly drivers = new Map<string, RegisteredDriver>();

  register<O>(name: string, definition: DriverDefinition<O>): this {
    this.drivers.set(name, {
      name,
      linkKey: (d, m) => `${name}:${definition.linkKey(d, m)}`,
      linkOptions: (ds, m) => definition.linkOptions(ds, m),
      // Options only ever come from this definition's own linkOptions.
      open: (o, env) => definition.open(o as O, env),
      limits: definition.limits,
    });
    return this;
  }

  /** The driver registered as `name`; a map naming another was refused by validation already. */
  get(name: string): RegisteredDriver {
    const d = this.drivers.get(name);
    if (d === undefined) throw new Error(`no driver "${name}" in this gateway (it has ${[...this.drivers.keys()].join(", ")})`);
    return d;
  }

  has(name: string): boolean {
    return this.drivers.has(name);
  }
}
