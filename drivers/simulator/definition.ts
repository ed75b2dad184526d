// `driver: simulator` (src/devices/registry.ts): the built-in Modbus TCP slave on 127.0.0.1,
// polled through the real Modbus TCP link, so that the simulator's values take the path a
// plant's do. Devices that give the same `port` share one slave and one link; the slave starts
// with the link's first connect and stops when the link closes (no device uses it any more).
import type { BlockData, BlockRequest, Driver, DriverHealth } from "../../src/devices/driver.js";
import { DriverError } from "../../src/devices/driver.js";
import type { DriverDefinition, DriverEnvironment } from "../../src/devices/registry.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { MODBUS_PROTOCOL, mergeLinkSettings, type ModbusOpener } from "../modbus/definition.js";
import type { ModbusDevice } from "../modbus/protocol.js";
import { openModbusLink } from "../modbus/index.js";
import type { ModbusLinkOptions } from "../modbus/options.js";
import { startSimulator } from "./index.js";

export const SIMULATOR_HOST = "127.0.0.1";

export interface SimulatorLinkOptions {
  /** Where the slave listens; 0 picks a free port. */
  readonly port: number;
  /** The Modbus link's settings, less its endpoint (taken from the slave once it listens). */
  readonly link: Omit<ModbusLinkOptions, "kind" | "host" | "port">;
}

/** A started slave as the link needs it. */
export interface RunningSimulator {
  readonly port: number;
  close(): Promise<void>;
}

export type SimulatorStarter = (options: { readonly host: string; readonly port: number }) => Promise<RunningSimulator>;

const NOT_STARTED: DriverHealth = Object.freeze({ connected: false, requests: 0, errors: 0, lastError: undefined, lastRoundTrip: undefined });

/** The slave and the Modbus link to it, as one Driver. */
export class SimulatorLink implements Driver {
  private started: Promise<RunningSimulator> | undefined;
  private link: Driver | undefined;
  private closed = false;
  /** The port the slave listens on, once started. */
  port: number | undefined;

  constructor(
    private readonly options: SimulatorLinkOptions,
    private readonly env: DriverEnvironment,
    private readonly start: SimulatorStarter,
    private readonly open: ModbusOpener,
  ) {}

  async connect(): Promise<void> {
    await (await this.ready()).connect();
  }

  async readBlock(request: BlockRequest): Promise<BlockData> {
    return (await this.ready()).readBlock(request);
  }

  async write(station: unknown, area: string, start: number, values: Uint16Array | Uint8Array): Promise<void> {
    return (await this.ready()).write(station, area, start, values);
  }

  get connected(): boolean {
    return this.link?.connected ?? false;
  }

  health(): DriverHealth {
    return this.link?.health() ?? NOT_STARTED;
  }

  async close(): Promise<void> {
    this.closed = true;
    const link = this.link;
    this.link = undefined;
    await link?.close();
    const started = this.started;
    this.started = undefined;
    if (started) await started.then((s) => s.close()).catch(() => undefined);
  }

  /** The link, once the slave listens: started on first use. */
  private async ready(): Promise<Driver> {
    if (this.closed) throw new DriverError("closed", StatusCodes.BadCommunicationError, "simulator stopped", false);
    if (this.started === undefined) {
      const port = this.options.port;
      this.started = this.start({ host: SIMULATOR_HOST, port });
      this.started.then(
        (s) => this.env.log.info(`simulator listening on ${SIMULATOR_HOST}:${s.port}`),
        (err: unknown) => this.env.log.warn(`simulator on port ${port} did not start: ${err instanceof Error ? err.message : String(err)}`),
      );
    }
    let sim: RunningSimulator;
    try {
      sim = await this.started;
    } catch (err) {
      // A slave that could not listen leaves its devices failing, retried with their backoff.
      this.started = undefined;
      throw new DriverError("refused", StatusCodes.BadCommunicationError, `simulator did not start: ${err instanceof Error ? err.message : String(err)}`, true);
    }
    if (this.closed) throw new DriverError("closed", StatusCodes.BadCommunicationError, "simulator stopped", false);
    this.port = sim.port;
    return (this.link ??= this.open({ kind: "tcp", host: SIMULATOR_HOST, port: sim.port, ...this.options.link }));
  }
}

/**
 * The simulator driver: slaves started by `start` (default: the built-in one) and links opened
 * by `open` (default: the real Modbus link).
 */
export function simulatorDriver(start: SimulatorStarter = startSimulator, open: ModbusOpener = openModbusLink): DriverDefinition<SimulatorLinkOptions> {
  return {
    protocol: MODBUS_PROTOCOL,
    linkKey: (d) => String((d as ModbusDevice).port ?? 0),
    linkOptions: (devices) => ({ port: (devices[0] as ModbusDevice).port ?? 0, link: mergeLinkSettings(devices) }),
    open: (options, env) => new SimulatorLink(options, env, start, open),
    describeLink: (d) => `built-in, unit ${(d as ModbusDevice).unitId}`,
  };
}
