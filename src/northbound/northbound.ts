// The northbound as the server sees it: an edge node made from `northbound.sparkplug`, started
// and stopped with the gateway, replaced when a SIGHUP brings a changed section, and told when
// the device map changes. Without the section nothing is made: no MQTT client, no store, no
// observer on the value cache, no diagnostics nodes, and the edge node's modules (MQTT session,
// Sparkplug codec, store-and-forward) are not even loaded.
import { join } from "node:path";
import type { DeviceNamespace } from "../address-space/device-namespace.js";
import type { DeviceConfig, DeviceMap } from "../config/device-map.js";
import type { DeviceRuntime } from "../devices/device-runtime.js";
import type { ValueCache } from "../values/value-cache.js";
import type { NorthboundConfig, SparkplugConfig } from "../config/northbound-config.js";
import { NorthboundDiagnostics } from "./diagnostics.js";
import type { EdgeNode, EdgeNodeLog } from "./edge-node.js";
import type { Slicer } from "../sampling/slices.js";

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
}

export class Northbound {
  private edge: EdgeNode | undefined;
  private diagnostics: NorthboundDiagnostics | undefined;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: NorthboundOptions) {}

  /** The running edge node, if one is configured. */
  get edgeNode(): EdgeNode | undefined {
    return this.edge;
  }

  /** Starts, stops or replaces the edge node for `config`; calls run one after the other. */
  apply(config: NorthboundConfig | undefined): Promise<void> {
    const next = this.chain.then(() => this.applyNow(config?.sparkplug));
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

  private async applyNow(config: SparkplugConfig | undefined): Promise<void> {
    if (this.edge !== undefined && config !== undefined && JSON.stringify(this.edge.config) === JSON.stringify(config)) return;
    if (this.edge !== undefined) {
      const old = this.edge;
      this.edge = undefined;
      this.diagnostics?.follow(() => undefined);
      await old.stop();
    }
    if (config === undefined) {
      this.diagnostics?.stop();
      return;
    }
    const { EdgeNode } = await import("./edge-node.js");
    const edge = new EdgeNode({
      config,
      storeFile: config.storeAndForward.database ?? join(this.o.dataDir, "northbound.db"),
      values: this.o.values,
      devices: this.o.devices,
      deviceConfigs: () => this.deviceConfigs(),
      deviceState: (name) => this.o.runtime.poller(name)?.state,
      log: this.o.log,
      nodeMetricsInterval: this.o.nodeMetricsInterval,
      slicer: this.o.slicer,
    });
    this.edge = edge;
    this.diagnostics ??= new NorthboundDiagnostics(this.o.devices.ns);
    this.diagnostics.follow(() => edge.status());
    edge.start();
  }

  /** The devices being polled, as the map in use describes them, in map order. */
  private deviceConfigs(): readonly DeviceConfig[] {
    const map = this.o.deviceMap();
    const runtime = this.o.runtime;
    if (map === undefined) return runtime.pollers().map((p) => p.config);
    return map.devices.filter((d) => d.enabled && runtime.poller(d.name) !== undefined);
  }
}
