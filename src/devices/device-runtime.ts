// Runs a device map: one driver per link (a TCP connection to host:port, a serial bus), one
// DevicePoller per enabled device on the process's scheduler, the built-in simulator slaves the
// map asks for, and the nodes of the device namespace through DeviceNodes. `apply` takes a new
// map and changes only what differs, so a reload (SIGHUP) leaves the other devices polling.
//
// Links: devices reached through the same endpoint (a serial bus, a host:port such as one
// TCP-to-RTU gateway, a simulator) share one driver, so one serialized queue (DESIGN, Devices).
// A device whose settings or link changed is stopped and started again with the new ones; its
// unchanged tag nodes stay (device-namespace.ts).
import type { BusConfig, DeviceConfig, DeviceMap } from "../config/device-map.js";
import type { Clock } from "../sampling/clock.js";
import type { Driver } from "./driver.js";
import { LatenessHistogram } from "../sampling/lateness.js";
import { DevicePoller, type TagSink } from "./poll-group.js";
import type { DeadlineScheduler } from "../sampling/scheduler.js";

/** The options of drivers/modbus's openModbusLink (issue 4 part B). */
export interface ModbusLinkOptions {
  readonly kind: "tcp" | "rtu" | "rtu-over-tcp";
  readonly host?: string;
  readonly port?: number;
  readonly path?: string;
  readonly baudRate?: number;
  readonly parity?: "none" | "even" | "odd";
  readonly dataBits?: 7 | 8;
  readonly stopBits?: 1 | 2;
  /** ms */
  readonly timeout: number;
  /** ms */
  readonly interRequestDelay?: number;
  readonly forceSingleRegisterWrite?: boolean;
  /** First reconnect delay, ms, doubling up to maxReconnectDelay. */
  readonly reconnectDelay?: number;
  readonly maxReconnectDelay?: number;
}

export type LinkOpener = (options: ModbusLinkOptions) => Driver;

export interface RunningSimulator {
  readonly port: number;
  close(): Promise<void>;
}

/** Starts a built-in simulator slave on 127.0.0.1 (drivers/simulator). */
export type SimulatorStarter = (options: { readonly host: string; readonly port: number }) => Promise<RunningSimulator>;

/** The device namespace as the runtime sees it. */
export interface DeviceNodes extends TagSink {
  /** Creates or updates the device's nodes; returns each tag's handle, in the order of config.tags. */
  syncDevice(config: DeviceConfig): readonly unknown[];
  removeDevice(name: string): void;
  /** Hands the device's variables to the poller (writes, diagnostics, carried values). */
  bind(poller: DevicePoller): void;
}

export interface RuntimeLog {
  info(message: string): void;
  warn(message: string): void;
}

export interface DeviceRuntimeOptions {
  readonly scheduler: DeadlineScheduler;
  readonly clock: Clock;
  readonly nodes: DeviceNodes;
  readonly openLink: LinkOpener;
  readonly startSimulator?: SimulatorStarter;
  readonly log?: RuntimeLog;
}

/** What an apply changed, by device name. */
export interface ApplyReport {
  readonly added: string[];
  readonly removed: string[];
  readonly changed: string[];
  readonly unchanged: string[];
}

interface Running {
  /** With `link`: equal (sameConfig) means nothing to do on reload. */
  readonly config: DeviceConfig;
  readonly link: ModbusLinkOptions;
  readonly linkKey: string;
  readonly poller: DevicePoller;
}

interface Link {
  readonly driver: Driver;
  users: number;
}

interface Simulator {
  readonly started: Promise<RunningSimulator>;
  users: number;
}

export const SIMULATOR_HOST = "127.0.0.1";

export class DeviceRuntime {
  /** Lateness of every device poll slot against its deadline (the System object shows it). */
  readonly pollLateness = new LatenessHistogram();
  private readonly o: DeviceRuntimeOptions;
  private readonly running = new Map<string, Running>();
  private readonly links = new Map<string, Link>();
  private readonly simulators = new Map<number, Simulator>();
  private chain: Promise<unknown> = Promise.resolve();
  private stopped = false;

  constructor(options: DeviceRuntimeOptions) {
    this.o = options;
  }

  /** The running pollers, in map order. */
  pollers(): DevicePoller[] {
    return [...this.running.values()].map((r) => r.poller);
  }

  poller(name: string): DevicePoller | undefined {
    return this.running.get(name)?.poller;
  }

  /** Port a simulator configured with `port` (0: any) listens on, once started. */
  async simulatorPort(configured = 0): Promise<number | undefined> {
    return (await this.simulators.get(configured)?.started)?.port;
  }

  /** Brings the running devices in line with `map`; calls run one after the other. */
  apply(map: DeviceMap): Promise<ApplyReport> {
    const run = () => this.applyNow(map);
    const result = this.chain.then(run, run);
    this.chain = result.catch(() => undefined);
    return result;
  }

  /** Stops every poller, closes the links and the simulators. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.chain.catch(() => undefined);
    for (const r of this.running.values()) r.poller.stop(this.o.scheduler);
    this.running.clear();
    const closing: Promise<void>[] = [];
    for (const link of this.links.values()) closing.push(link.driver.close().catch(() => undefined));
    this.links.clear();
    for (const sim of this.simulators.values()) closing.push(sim.started.then((s) => s.close()).catch(() => undefined));
    this.simulators.clear();
    await Promise.all(closing);
  }

  private async applyNow(map: DeviceMap): Promise<ApplyReport> {
    if (this.stopped) throw new Error("device runtime stopped");
    const report: ApplyReport = { added: [], removed: [], changed: [], unchanged: [] };
    const wanted = map.devices.filter((d) => d.enabled);
    // Simulators first: a simulator device's link is the port its slave got.
    const simPorts = new Set(wanted.filter((d) => d.driver === "simulator").map((d) => d.port ?? 0));
    for (const port of simPorts) this.acquireSimulator(port);
    const links = await this.linkOptionsOf(wanted, map);
    const next = new Map(wanted.map((d) => [d.name, d] as const));

    for (const [name, r] of this.running) {
      const d = next.get(name);
      if (d && sameConfig(d, r.config) && sameConfig(links.get(name)!, r.link)) {
        report.unchanged.push(name);
        continue;
      }
      this.stopDevice(r);
      if (!d) {
        this.o.nodes.removeDevice(name);
        report.removed.push(name);
      } else {
        report.changed.push(name);
      }
    }
    for (const d of wanted) {
      if (this.running.has(d.name)) continue;
      if (!report.changed.includes(d.name)) report.added.push(d.name);
      this.startDevice(d, links.get(d.name)!);
    }
    // Simulators no device uses any more: the acquire above counted this map's users.
    for (const port of simPorts) this.releaseSimulator(port);
    await this.closeUnused();
    return report;
  }

  private startDevice(config: DeviceConfig, link: ModbusLinkOptions): void {
    const linkKey = JSON.stringify(link);
    const handles = this.o.nodes.syncDevice(config);
    const driver = this.acquireLink(linkKey, link);
    const poller = new DevicePoller({ config, driver, clock: this.o.clock, sink: this.o.nodes, handles, lateness: this.pollLateness });
    this.o.nodes.bind(poller);
    if (config.driver === "simulator") this.acquireSimulator(config.port ?? 0);
    this.running.set(config.name, { config, link, linkKey, poller });
    poller.start(this.o.scheduler);
  }

  private stopDevice(r: Running): void {
    r.poller.stop(this.o.scheduler);
    this.running.delete(r.config.name);
    const link = this.links.get(r.linkKey);
    if (link) link.users--;
    if (r.config.driver === "simulator") this.releaseSimulator(r.config.port ?? 0);
  }

  private acquireLink(key: string, options: ModbusLinkOptions): Driver {
    let link = this.links.get(key);
    if (!link) {
      link = { driver: this.o.openLink(options), users: 0 };
      this.links.set(key, link);
    }
    link.users++;
    return link.driver;
  }

  private acquireSimulator(port: number): void {
    let sim = this.simulators.get(port);
    if (!sim) {
      const start = this.o.startSimulator;
      if (!start) throw new Error("the device map uses the simulator, but this gateway was built without it");
      sim = { started: start({ host: SIMULATOR_HOST, port }), users: 0 };
      // A failed start shows as the device not answering; the log says why.
      sim.started.then(
        (s) => this.o.log?.info(`simulator listening on ${SIMULATOR_HOST}:${s.port}`),
        (err: unknown) => this.o.log?.warn(`simulator on port ${port} did not start: ${err instanceof Error ? err.message : String(err)}`),
      );
      this.simulators.set(port, sim);
    }
    sim.users++;
  }

  private releaseSimulator(port: number): void {
    const sim = this.simulators.get(port);
    if (sim) sim.users--;
  }

  private async closeUnused(): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const [key, link] of this.links) {
      if (link.users > 0) continue;
      this.links.delete(key);
      closing.push(link.driver.close().catch(() => undefined));
    }
    for (const [port, sim] of this.simulators) {
      if (sim.users > 0) continue;
      this.simulators.delete(port);
      closing.push(sim.started.then((s) => s.close()).catch(() => undefined));
    }
    await Promise.all(closing);
  }

  /**
   * The link of every wanted device. Devices that reach the same endpoint (host:port, serial
   * port, simulator) share one link whose options serve them all: the longest time-out and
   * inter-request delay, the shortest reconnect delays of their retry settings.
   */
  private async linkOptionsOf(devices: readonly DeviceConfig[], map: DeviceMap): Promise<Map<string, ModbusLinkOptions>> {
    const byEndpoint = new Map<string, DeviceConfig[]>();
    const endpointOf = new Map<string, string>();
    for (const d of devices) {
      const key =
        d.driver === "modbus-rtu" ? `rtu:${map.buses[d.bus!]!.port}` : d.driver === "simulator" ? `sim:${d.port ?? 0}` : `${d.driver}:${d.host}:${d.port ?? 502}`;
      endpointOf.set(d.name, key);
      let list = byEndpoint.get(key);
      if (!list) byEndpoint.set(key, (list = []));
      list.push(d);
    }
    const options = new Map<string, ModbusLinkOptions>();
    for (const [key, list] of byEndpoint) options.set(key, await this.linkFor(list, map));
    const out = new Map<string, ModbusLinkOptions>();
    for (const d of devices) out.set(d.name, options.get(endpointOf.get(d.name)!)!);
    return out;
  }

  private async linkFor(devices: readonly DeviceConfig[], map: DeviceMap): Promise<ModbusLinkOptions> {
    const d = devices[0]!;
    let timeout = 0;
    let delay: number | undefined;
    let reconnectDelay = Infinity;
    let maxReconnectDelay = Infinity;
    for (const x of devices) {
      timeout = Math.max(timeout, x.timeout);
      if (x.interRequestDelay !== undefined) delay = Math.max(delay ?? 0, x.interRequestDelay);
      reconnectDelay = Math.min(reconnectDelay, x.retryBackoff);
      maxReconnectDelay = Math.min(maxReconnectDelay, x.maxBackoff);
    }
    const common = { timeout, reconnectDelay, maxReconnectDelay };
    switch (d.driver) {
      case "simulator": {
        const sim = await this.simulators.get(d.port ?? 0)!.started.catch(() => undefined);
        // A simulator that failed to start leaves its devices on a port nothing listens on.
        return { kind: "tcp", host: SIMULATOR_HOST, port: sim?.port ?? (d.port || 1), ...common, interRequestDelay: delay };
      }
      case "modbus-tcp":
      case "modbus-rtu-over-tcp":
        return { kind: d.driver === "modbus-tcp" ? "tcp" : "rtu-over-tcp", host: d.host, port: d.port ?? 502, ...common, interRequestDelay: delay };
      case "modbus-rtu": {
        const bus: BusConfig = map.buses[d.bus!]!;
        return {
          kind: "rtu",
          path: bus.port,
          baudRate: bus.baudRate,
          parity: bus.parity,
          dataBits: bus.dataBits,
          stopBits: bus.stopBits,
          ...common,
          // 0 lets the driver keep the 3.5-character gap the line needs.
          interRequestDelay: bus.interRequestDelay > 0 ? bus.interRequestDelay : undefined,
        };
      }
    }
  }
}

/**
 * Deep equality of validated config values (plain objects, arrays, primitives), with an absent
 * key equal to one set to undefined. Compared rather than kept as JSON: a device of 1,000 tags
 * would keep a 100 KB signature string alive for the next reload.
 */
export function sameConfig(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameConfig(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  for (const k in x) if (!sameConfig(x[k], y[k])) return false;
  for (const k in y) if (!(k in x) && y[k] !== undefined) return false;
  return true;
}
