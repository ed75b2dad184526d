// The northbound as the server sees it: an edge node made from `northbound.sparkplug`, started
// and stopped with the gateway, replaced when a SIGHUP brings a changed section, and told when
// the device map changes. Without the section nothing is made: no MQTT client, no store, no
// observer on the value cache, no diagnostics nodes, and the edge node's modules (MQTT session,
// Sparkplug codec, store-and-forward) are not even loaded.
//
// The edge node is an optional part (DESIGN: Damaged files): its store is checked before it is
// opened (PRAGMA quick_check on a worker: it reads the whole file, which may be the size of a
// long outage), a damaged one is moved aside with the count of the changes it held (counted as
// dropped), and a store that cannot be opened at all leaves the gateway without a northbound,
// said in the log and in `failure`, never a gateway that does not start.
import { join } from "node:path";
import type { DeviceNamespace } from "../address-space/device-namespace.js";
import type { DeviceConfig, DeviceMap } from "../config/device-map.js";
import type { DeviceRuntime } from "../devices/device-runtime.js";
import type { ValueCache } from "../values/value-cache.js";
import type { NorthboundConfig, SparkplugConfig } from "../config/northbound-config.js";
import { NorthboundDiagnostics } from "./diagnostics.js";
import type { EdgeNode, EdgeNodeLog } from "./edge-node.js";
import type { Slicer } from "../sampling/slices.js";
import { moveAside, type DamagedFile } from "../storage/damaged.js";
import { checkOffLoop, type OffLoopCheck } from "../storage/check-off-loop.js";
import { openOrMoveAside, type CheckVerdict } from "../storage/sqlite-check.js";
import { NORTHBOUND_FILE } from "./forward-store.js";

export interface NorthboundOptions {
  readonly values: ValueCache;
  readonly devices: DeviceNamespace;
  readonly runtime: DeviceRuntime;
  /** The device map in use (units, ranges, map order); undefined with the bench namespace. */
  readonly deviceMap: () => DeviceMap | undefined;
  readonly dataDir: string;
  readonly log: EdgeNodeLog;
  /** Interval of the node metrics (the System object's). */
  readonly nodeMetricsInterval?: number;
  /** The gateway's slicer: births, large DDATA and the store's work run in its slices. */
  readonly slicer: Slicer;
  /** A damaged store was moved aside and a new one started. */
  readonly onDamaged?: (d: DamagedFile) => void;
}

export class Northbound {
  private edge: EdgeNode | undefined;
  private diagnostics: NorthboundDiagnostics | undefined;
  private chain: Promise<unknown> = Promise.resolve();
  /** Counts apply() calls: a start still checking its store gives way to a newer one. */
  private generation = 0;
  private checking: OffLoopCheck | undefined;
  private failed: string | undefined;
  private section: SparkplugConfig | undefined;

  constructor(private readonly o: NorthboundOptions) {}

  /** Why the configured edge node is not running (its store could not be opened); undefined otherwise. */
  get failure(): string | undefined {
    return this.failed;
  }

  /** A `northbound.sparkplug` section is in use (its edge node running or starting, or failed). */
  get configured(): boolean {
    return this.section !== undefined;
  }

  /** The running edge node, if one is configured. */
  get edgeNode(): EdgeNode | undefined {
    return this.edge;
  }

  /** Starts, stops or replaces the edge node for `config`; calls run one after the other. */
  apply(config: NorthboundConfig | undefined): Promise<void> {
    const generation = ++this.generation;
    this.section = config?.sparkplug;
    // A stop (or a newer section) does not wait for the check of a store it will not open.
    void this.checking?.stop();
    const next = this.chain.then(() => this.applyNow(config?.sparkplug, generation));
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** The device map changed: devices born, dead or born again. */
  devicesChanged(): void {
    this.edge?.devicesChanged();
  }

  stop(): Promise<void> {
    return this.apply(undefined);
  }

  private async applyNow(config: SparkplugConfig | undefined, generation: number): Promise<void> {
    if (this.edge !== undefined && config !== undefined && JSON.stringify(this.edge.config) === JSON.stringify(config)) return;
    if (this.edge !== undefined) {
      const old = this.edge;
      this.edge = undefined;
      this.diagnostics?.follow(() => undefined);
      await old.stop();
    }
    this.failed = undefined;
    if (config === undefined) {
      this.diagnostics?.stop();
      return;
    }
    const storeFile = config.storeAndForward.database ?? join(this.o.dataDir, "northbound.db");
    const verdict = await this.check(storeFile, generation);
    if (generation !== this.generation) return;
    const note = (d: DamagedFile): void => this.o.onDamaged?.(d);
    let edge: EdgeNode;
    try {
      if (verdict !== undefined) note(moveAside(storeFile, NORTHBOUND_FILE, verdict.problem, { lost: verdict.lost }));
      const { EdgeNode } = await import("./edge-node.js");
      edge = openOrMoveAside(
        storeFile,
        NORTHBOUND_FILE,
        () =>
          new EdgeNode({
            config,
            storeFile,
            values: this.o.values,
            devices: this.o.devices,
            deviceConfigs: () => this.deviceConfigs(),
            deviceState: (name) => this.o.runtime.poller(name)?.state,
            log: this.o.log,
            nodeMetricsInterval: this.o.nodeMetricsInterval,
            slicer: this.o.slicer,
          }),
        note,
      );
    } catch (err) {
      this.failed = `store-and-forward database ${storeFile} could not be opened (${err instanceof Error ? err.message : String(err)})`;
      this.o.log.warn(`northbound: not started: ${this.failed}; the gateway runs without its Sparkplug edge node (storeAndForward.database names another file; a SIGHUP tries again)`);
      return;
    }
    // What the damaged store held cannot be replayed: dropped, as retention would have.
    if (verdict?.held !== undefined) edge.store.countDropped(verdict.held);
    this.edge = edge;
    this.diagnostics ??= new NorthboundDiagnostics(this.o.devices.ns);
    this.diagnostics.follow(() => edge.status());
    edge.start();
  }

  /**
   * The store's quick_check, on a worker; undefined when it is sound (or no file yet). A worker
   * that cannot run leaves the file to the open's own checks (what SQLite refuses is still moved).
   */
  private async check(file: string, generation: number): Promise<CheckVerdict | undefined> {
    const check = checkOffLoop(file, NORTHBOUND_FILE);
    this.checking = check;
    try {
      return await check.done;
    } catch (err) {
      // Ended by a newer apply() (a stop): nothing to say.
      if (generation === this.generation) this.o.log.warn(`northbound: ${file} was not checked (${err instanceof Error ? err.message : String(err)})`);
      return undefined;
    } finally {
      if (this.checking === check) this.checking = undefined;
    }
  }

  /** The devices being polled, as the map in use describes them, in map order. */
  private deviceConfigs(): readonly DeviceConfig[] {
    const map = this.o.deviceMap();
    const runtime = this.o.runtime;
    if (map === undefined) return runtime.pollers().map((p) => p.config);
    return map.devices.filter((d) => d.enabled && runtime.poller(d.name) !== undefined);
  }
}
