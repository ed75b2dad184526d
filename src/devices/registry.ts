// The driver registry (DESIGN: Devices): each driver of drivers/ registers a definition under
// the name the device map's `driver:` key takes. A definition says what its devices and tags are
// (its protocol: the map's keys for them, where each tag is read and how it decodes, the limits
// of a read), which devices share one link (one serialized queue: a serial bus, one TCP-to-RTU
// gateway), how the settings of those devices make the link's options, and how to open it. The
// validator, the device runtime, the device namespace and the page ask only these questions, so
// none of them holds a driver's details.
import type { DeviceConfig, DeviceMap, DeviceSyntax, TagConfig } from "../config/device-map.js";
import type { KepwareAddressing, KepwareDrivers } from "../config/kepware.js";
import type { BlockLimits } from "./block-plan.js";
import type { DiscoveredDevice, DiscoveryOptions, DiscoveryTarget } from "./discovery.js";
import type { Driver } from "./driver.js";
import type { TagCodec } from "./tag-codec.js";

/** Where a tag is read and how it decodes, as its driver's protocol makes it. */
export interface TagPlan {
  readonly codec: TagCodec;
  /** Its first unit in its codec's area. */
  readonly start: number;
}

/**
 * What a protocol's devices and tags are, shared by its drivers (one protocol over TCP, over a
 * serial bus, ...). The device runtime makes each tag's codec with it before the first poll.
 */
export interface DriverProtocol {
  /** The keys its devices and tags add to the device map's, with their checks. */
  readonly syntax: DeviceSyntax;
  /** A validated tag's codec and start (every tag of a map its syntax validated). */
  tag(tag: TagConfig, device: DeviceConfig): TagPlan;
  /** The device's address on its link, as its driver takes it (BlockRequest.station). */
  station(device: DeviceConfig): unknown;
  /**
   * How the device's reads are planned: the most units one read of each area may ask for (the
   * protocol's limit, lowered by the device's own settings), in the order a cycle reads them,
   * and the unused units a read may span to join two tags.
   */
  readLimits(device: DeviceConfig): BlockLimits;
  /** Where a tag is, in the map's own words (its address as written): messages, a tag's default Description. */
  formatAddress(tag: TagConfig): string;
  /** How Kepware writes the protocol's tags, where Kepware has a driver for it (`fieldgate import kepware`, `export csv`). */
  readonly kepware?: KepwareAddressing;
}

/** What a driver may use of the gateway while it runs. */
export interface DriverEnvironment {
  readonly log: { info(message: string): void; warn(message: string): void };
}

export interface DriverDefinition<Options> {
  readonly protocol: DriverProtocol;
  /** Devices with the same key share one link. */
  linkKey(device: DeviceConfig, map: DeviceMap): string;
  /**
   * The options of the one link of `devices` (all with the same key), merged from their
   * settings. Plain data: a reload compares it to decide whether the link must be reopened.
   */
  linkOptions(devices: readonly DeviceConfig[], map: DeviceMap): Options;
  /** Makes the link's driver; nothing is opened before its connect() or first request. */
  open(options: Options, env: DriverEnvironment): Driver;
  /** The device's link in words, for the status page ("bus rs485-1 unit 3", "10.0.0.5:502 unit 1"). */
  describeLink(device: DeviceConfig): string;
  /** A driver the gateway uses itself (the bench namespace's): a device map cannot name it. */
  readonly internal?: boolean;
  /**
   * Finds the devices on a link (a serial bus, a TCP endpoint) and gives each one's entry for
   * the map, ready to paste; for drivers whose devices can be found (discovery.ts). Rejects with
   * an Error that says why when the link cannot be opened or the target is not one it can search.
   */
  discover?(target: DiscoveryTarget, options: DiscoveryOptions): Promise<DiscoveredDevice[]>;
}

/** A command a driver adds to the CLI, `fieldgate <name> ...`; its module is loaded when it runs. */
export interface DriverCommand {
  readonly name: string;
  /** Its lines of `fieldgate help`, indented like the others ("  fieldgate <name> ..."). */
  readonly usage: string;
  /** Runs it with the words after its name; resolves with the exit code. */
  run(args: readonly string[], context: CommandContext): Promise<number>;
}

/** What a driver's command may use of the CLI. */
export interface CommandContext {
  /** The gateway's drivers (to validate what a command writes against the map's schema). */
  readonly drivers: DriverRegistry;
  /** Standard output, standard error (text as given, no newline added). */
  out(text: string): void;
  err(text: string): void;
}

/** A definition with its options type hidden: the registry only passes them from linkOptions to open. */
export interface RegisteredDriver extends Omit<DriverDefinition<unknown>, "open"> {
  readonly name: string;
  open(options: unknown, env: DriverEnvironment): Driver;
}

export class DriverRegistry implements KepwareDrivers {
  private readonly drivers = new Map<string, RegisteredDriver>();
  private readonly commands = new Map<string, DriverCommand>();
  /** The names a device map may use, in the order registered (MapDrivers.names: a new array for each one added). */
  names: readonly string[] = [];

  register<O>(name: string, definition: DriverDefinition<O>): this {
    if (this.drivers.has(name)) throw new Error(`a driver named "${name}" is registered already`);
    this.drivers.set(name, {
      ...definition,
      name,
      linkKey: (d, m) => `${name}:${definition.linkKey(d, m)}`,
      // Options only ever come from this definition's own linkOptions.
      open: (o, env) => definition.open(o as O, env),
    });
    if (definition.internal !== true) this.names = [...this.names, name];
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

  /** MapDrivers.syntaxOf. */
  syntaxOf(name: string): DeviceSyntax {
    return this.get(name).protocol.syntax;
  }

  /** Adds a CLI command (`fieldgate <name>`); the CLI's own commands' names are refused by it. */
  command(command: DriverCommand): this {
    if (this.commands.has(command.name)) throw new Error(`a command named "${command.name}" is registered already`);
    this.commands.set(command.name, command);
    return this;
  }

  /** The command a driver added under `name`, if any. */
  commandNamed(name: string): DriverCommand | undefined {
    return this.commands.get(name);
  }

  /** The commands drivers added, in the order added. */
  commandList(): DriverCommand[] {
    return [...this.commands.values()];
  }

  /** KepwareDrivers.kepwareOf: undefined for a driver whose protocol Kepware has no form for. */
  kepwareOf(name: string): KepwareAddressing | undefined {
    return this.drivers.get(name)?.protocol.kepware;
  }
}
