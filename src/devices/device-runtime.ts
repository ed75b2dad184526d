// Runs a device map: one driver per link (the driver registry says which devices share one),
// one DevicePoller per enabled device on the process's scheduler, a value cache slot per tag,
// and the nodes of the device namespace through DeviceNodes. `apply` takes a new map and
// changes only what differs, so a reload (SIGHUP) leaves the other devices polling.
//
// A device whose settings or link changed is stopped and started again with the new ones; its
// tags keep their cache slots (and so their values and subscribers) where the tag still exists,
// and its unchanged tag nodes stay (device-namespace.ts). Slots of tags that are gone are released.
import { tagNodeIdText, type DeviceConfig, type DeviceMap } from "../config/device-map.js";
import type { Clock } from "../sampling/clock.js";
import { LatenessHistogram } from "../sampling/lateness.js";
import type { DeadlineScheduler } from "../sampling/scheduler.js";
import type { ValueCache } from "../values/value-cache.js";
import { DevicePoller, type StateChangeListener } from "./device-poller.js";
import { PolledTag, type TaskTimer } from "./poll-group.js";
import { RELOAD_TAGS_PER_SLICE, sliceGate, TAGS_PER_SLICE } from "../sampling/slices.js";
import type { Driver } from "./driver.js";
import type { DriverProtocol, DriverRegistry, RegisteredDriver } from "./registry.js";
import { sameConfig } from "./same-config.js";
import { deviceChanges, wholeDevice, type ApplyReport } from "./map-changes.js";

export { sameConfig } from "./same-config.js";
export type { ApplyReport } from "./map-changes.js";

/** The device namespace as the runtime sees it. */
export interface DeviceNodes {
  /**
   * Creates or updates the device's nodes; `slots` are its tags' cache slots, in the order of
   * config.tags, and `protocol` its driver's, which makes its tags' codecs. A device of more
   * than `perSlice` tags is synced in slices (then a promise).
   */
  syncDevice(config: DeviceConfig, protocol: DriverProtocol, slots: readonly number[], perSlice?: number): void | Promise<void>;
  /** Removes the device's nodes (in slices for a device of many tags: then a promise). */
  removeDevice(name: string): void | Promise<void>;
  /** The device's writes and diagnostics go to this poller from now on. */
  bind(poller: DevicePoller): void;
  /**
   * The device's tags as the nodes keep them, once synced, in the order of config.tags, when
   * the nodes are PolledTags themselves (the device namespace's tag variables): the poller
   * takes them instead of a second record per tag.
   */
  tagsOf?(device: string): readonly PolledTag[] | undefined;
}

export interface RuntimeLog {
  info(message: string): void;
  warn(message: string): void;
}

export interface DeviceRuntimeOptions {
  readonly scheduler: DeadlineScheduler;
  readonly clock: Clock;
  readonly nodes: DeviceNodes;
  readonly values: ValueCache;
  readonly drivers: DriverRegistry;
  readonly log?: RuntimeLog;
  /** Where the time each poll's delivery holds the loop goes (the loop trace). */
  readonly trace?: TaskTimer;
  /** Given to every poller started (DevicePoller.onStateChange): the server logs outages with it. */
  readonly onStateChange?: StateChangeListener;
}


interface Running {
  /** With `options`: equal (sameConfig) means nothing to do on reload. */
  readonly config: DeviceConfig;
  readonly options: unknown;
  readonly linkKey: string;
  readonly poller: DevicePoller;
}

interface Link {
  readonly driver: Driver;
  users: number;
}

/** A device's link as apply works it out: its driver, key and merged options. */
interface DeviceLink {
  readonly driver: RegisteredDriver;
  readonly key: string;
  readonly options: unknown;
}

const SILENT: RuntimeLog = { info: () => undefined, warn: () => undefined };

/**
 * The cache key of a tag: the text of its default NodeId (`<device>.<tag>`), unique since the
 * map refuses two tags on one NodeId; the device namespace gives the NodeId this very string
 * (one string a tag, not two). Other keys of the cache hold ":" (`ns2:...`), which names never do.
 */
export function tagSlotKey(device: string, tag: string): string {
  return tagNodeIdText(device, tag);
}

export class DeviceRuntime {
  /** Lateness of every device poll slot against its deadline (the System object shows it). */
  readonly pollLateness = new LatenessHistogram();
  private readonly o: DeviceRuntimeOptions;
  private readonly log: RuntimeLog;
  private readonly running = new Map<string, Running>();
  private readonly links = new Map<string, Link>();
  private chain: Promise<unknown> = Promise.resolve();
  private applying = 0;
  private stopped = false;

  constructor(options: DeviceRuntimeOptions) {
    this.o = options;
    this.log = options.log ?? SILENT;
  }

  /** The running pollers, in map order. */
  pollers(): DevicePoller[] {
    return [...this.running.values()].map((r) => r.poller);
  }

  poller(name: string): DevicePoller | undefined {
    return this.running.get(name)?.poller;
  }

  /** The driver a running device is polled through. */
  driverOf(name: string): Driver | undefined {
    return this.running.get(name)?.poller.driver;
  }

  /** A device's link in its driver's words (running or not), for the status page. */
  describeLink(device: DeviceConfig): string {
    return this.o.drivers.has(device.driver) ? this.o.drivers.get(device.driver).describeLink(device) : device.driver;
  }

  /**
   * Brings the running devices in line with `map`; calls run one after the other. With none
   * running, the devices start before apply returns (its promise settles once the links no
   * device uses are closed).
   */
  apply(map: DeviceMap): Promise<ApplyReport> {
    const run = () => this.applyNow(map);
    const result = this.applying === 0 ? run() : this.chain.then(run, run);
    this.applying++;
    this.chain = result.then(
      () => void this.applying--,
      () => void this.applying--,
    );
    return result;
  }

  /** Stops every poller and closes the links. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.chain.catch(() => undefined);
    for (const r of this.running.values()) r.poller.stop(this.o.scheduler);
    this.running.clear();
    const closing: Promise<void>[] = [];
    for (const link of this.links.values()) closing.push(link.driver.close().catch(() => undefined));
    this.links.clear();
    await Promise.all(closing);
  }

  private async applyNow(map: DeviceMap): Promise<ApplyReport> {
    if (this.stopped) throw new Error("device runtime stopped");
    const report: ApplyReport = { added: [], removed: [], changed: [], unchanged: [], details: [] };
    const wanted = map.devices.filter((d) => d.enabled);
    const links = this.linksOf(wanted, map);
    const next = new Map(wanted.map((d) => [d.name, d] as const));
    /** Slots of stopped devices: released unless a started device took them again. */
    const dropped: number[] = [];
    // Devices of up to TAGS_PER_SLICE tags each are stopped and started synchronously: without a
    // turn of the loop between them, a map of ten such devices was one task of ~90 ms on a reload
    // (10 x 1,000 tags; the loop's longest gap between two 1 ms timers). Only on a reload: with
    // none running, the devices start before apply returns (its contract above).
    const reload = this.running.size > 0;
    // On a reload, also a device's own start goes in smaller slices (slices.ts RELOAD_TAGS_PER_SLICE).
    const perSlice = reload ? RELOAD_TAGS_PER_SLICE : TAGS_PER_SLICE;
    let sinceTurn = 0;
    // A promise only when it gives a turn: otherwise the start goes on in this task.
    const turnBefore = (tags: number): Promise<void> | undefined => {
      const full = reload && sinceTurn > 0 && sinceTurn + tags > perSlice;
      sinceTurn = full ? tags : sinceTurn + tags;
      return full ? sliceGate().next() : undefined;
    };

    for (const [name, r] of [...this.running]) {
      const d = next.get(name);
      const link = links.get(name);
      if (d && link && link.key === r.linkKey && sameConfig(link.options, r.options) && (await sameDevice(d, r.config))) {
        report.unchanged.push(name);
        continue;
      }
      // Said before the device stops: it polls on while its tags are compared.
      report.details.push(d ? await deviceChanges(r.config, d) : wholeDevice(r.config, "removed"));
      const turn = turnBefore(r.poller.tags.length);
      if (turn !== undefined) await turn;
      this.stopDevice(r);
      for (const t of r.poller.tags) dropped.push(t.slot);
      if (!d) {
        const removing = this.o.nodes.removeDevice(name);
        if (removing !== undefined) await removing;
        report.removed.push(name);
      } else {
        report.changed.push(name);
      }
    }
    let starting = 0;
    for (const d of wanted) if (!this.running.has(d.name)) starting += d.tags.length;
    this.o.values.reserve(starting);
    for (const d of wanted) {
      if (this.running.has(d.name)) continue;
      if (!report.changed.includes(d.name)) {
        report.added.push(d.name);
        report.details.push(wholeDevice(d, "added"));
      }
      const turn = turnBefore(d.tags.length);
      if (turn !== undefined) await turn;
      const started = this.startDevice(d, links.get(d.name)!, perSlice);
      if (started !== undefined) await started;
      if (this.stopped) throw new Error("device runtime stopped");
    }
    if (dropped.length > 0) {
      const live = new Set<number>();
      for (const r of this.running.values()) for (const t of r.poller.tags) live.add(t.slot);
      for (let i = 0; i < dropped.length; i++) {
        if (i > 0 && i % perSlice === 0) await sliceGate().next();
        const slot = dropped[i]!;
        if (!live.has(slot)) this.o.values.release(slot);
      }
    }
    await this.closeUnused();
    return report;
  }

  /**
   * Starts one device: its tags' cache slots, nodes and poller. A device of more than `perSlice`
   * tags is started in slices with a turn of the event loop between them (a promise); a smaller
   * one is started before this returns.
   */
  private startDevice(config: DeviceConfig, link: DeviceLink, perSlice: number): void | Promise<void> {
    const n = config.tags.length;
    const slots: number[] = new Array(n);
    const protocol = link.driver.protocol;
    if (n <= perSlice) {
      this.acquireSlots(config, protocol, slots, 0, n);
      const synced = this.o.nodes.syncDevice(config, protocol, slots, perSlice);
      if (synced !== undefined) return synced.then(() => this.runDevice(config, link, slots, this.nodeTags(config, slots) ?? this.makeTags(config, protocol, slots, new Array(n), 0, n)));
      this.runDevice(config, link, slots, this.nodeTags(config, slots) ?? this.makeTags(config, protocol, slots, new Array(n), 0, n));
      return;
    }
    return (async () => {
      for (let i = 0; i < n; i += perSlice) {
        if (i > 0) await sliceGate().next();
        this.acquireSlots(config, protocol, slots, i, Math.min(n, i + perSlice));
      }
      await this.o.nodes.syncDevice(config, protocol, slots, perSlice);
      let made = this.nodeTags(config, slots);
      if (made === undefined) {
        const tags: PolledTag[] = new Array(n);
        for (let i = 0; i < n; i += perSlice) {
          await sliceGate().next();
          this.makeTags(config, protocol, slots, tags, i, Math.min(n, i + perSlice));
        }
        made = tags;
      }
      if (!this.stopped) this.runDevice(config, link, slots, made);
    })();
  }

  /** The nodes' own tag records when they are PolledTags on the slots just acquired (DeviceNodes.tagsOf). */
  private nodeTags(config: DeviceConfig, slots: readonly number[]): readonly PolledTag[] | undefined {
    const tags = this.o.nodes.tagsOf?.(config.name);
    if (tags === undefined || tags.length !== slots.length) return undefined;
    for (let i = 0; i < tags.length; i++) if (tags[i]!.slot !== slots[i] || tags[i]!.config !== config.tags[i]) return undefined;
    return tags;
  }

  private acquireSlots(config: DeviceConfig, protocol: DriverProtocol, slots: number[], from: number, to: number): void {
    const values = this.o.values;
    for (let i = from; i < to; i++) {
      const t = config.tags[i]!;
      slots[i] = values.acquire(tagSlotKey(config.name, t.name), { builtinType: protocol.tag(t, config).codec.builtinType, rate: t.rate });
    }
  }

  private makeTags(config: DeviceConfig, protocol: DriverProtocol, slots: readonly number[], tags: PolledTag[], from: number, to: number): PolledTag[] {
    for (let i = from; i < to; i++) tags[i] = new PolledTag(config.tags[i]!, protocol.tag(config.tags[i]!, config), slots[i]!);
    return tags;
  }

  private runDevice(config: DeviceConfig, link: DeviceLink, slots: readonly number[], tags: readonly PolledTag[]): void {
    const driver = this.acquireLink(link.key, link.driver, link.options);
    const poller = new DevicePoller({ config, protocol: link.driver.protocol, driver, clock: this.o.clock, values: this.o.values, slots, tags, lateness: this.pollLateness, trace: this.o.trace });
    poller.onStateChange = this.o.onStateChange;
    this.o.nodes.bind(poller);
    this.running.set(config.name, { config, options: link.options, linkKey: link.key, poller });
    poller.start(this.o.scheduler);
  }

  private stopDevice(r: Running): void {
    r.poller.stop(this.o.scheduler);
    this.running.delete(r.config.name);
    const link = this.links.get(r.linkKey);
    if (link) link.users--;
  }

  private acquireLink(key: string, driver: RegisteredDriver, options: unknown): Driver {
    let link = this.links.get(key);
    if (!link) {
      link = { driver: driver.open(options, { log: this.log }), users: 0 };
      this.links.set(key, link);
    }
    link.users++;
    return link.driver;
  }

  private async closeUnused(): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const [key, link] of this.links) {
      if (link.users > 0) continue;
      this.links.delete(key);
      closing.push(link.driver.close().catch(() => undefined));
    }
    await Promise.all(closing);
  }

  /** The link of every wanted device: its driver, its key, and the options merged over the devices that share it. */
  private linksOf(devices: readonly DeviceConfig[], map: DeviceMap): Map<string, DeviceLink> {
    const byKey = new Map<string, { driver: RegisteredDriver; devices: DeviceConfig[] }>();
    const keyOf = new Map<string, string>();
    for (const d of devices) {
      const driver = this.o.drivers.get(d.driver);
      const key = driver.linkKey(d, map);
      keyOf.set(d.name, key);
      let group = byKey.get(key);
      if (!group) byKey.set(key, (group = { driver, devices: [] }));
      group.devices.push(d);
    }
    const options = new Map<string, unknown>();
    for (const [key, g] of byKey) options.set(key, g.driver.linkOptions(g.devices, map));
    const out = new Map<string, DeviceLink>();
    for (const d of devices) {
      const key = keyOf.get(d.name)!;
      out.set(d.name, { driver: byKey.get(key)!.driver, key, options: options.get(key) });
    }
    return out;
  }
}

/**
 * sameConfig of two devices, their tags compared TAGS_PER_SLICE at a time with a turn of the
 * event loop between (16,384 tags take ~17 ms); a device of fewer tags at once.
 */
function sameDevice(a: DeviceConfig, b: DeviceConfig): boolean | Promise<boolean> {
  const { tags: ta, ...ra } = a;
  const { tags: tb, ...rb } = b;
  if (ta.length !== tb.length || !sameConfig(ra, rb)) return false;
  if (ta.length <= TAGS_PER_SLICE) return sameConfig(ta, tb);
  return (async () => {
    for (let i = 0; i < ta.length; i++) {
      if (i > 0 && i % TAGS_PER_SLICE === 0) await sliceGate().next();
      if (!sameConfig(ta[i], tb[i])) return false;
    }
    return true;
  })();
}
