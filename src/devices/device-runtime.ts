// Runs a device map: one driver per link (the driver registry says which devices share one),
// one DevicePoller per enabled device on the process's scheduler, a value cache slot per tag,
// and the nodes of the device namespace through DeviceNodes. `apply` takes a new map and
// changes only what differs, so a reload (SIGHUP) leaves the other devices polling.
//
// A device whose settings or link changed is stopped and started again with the new ones; its
// tags keep their cache slots (and so their values and subscribers) where the tag still exists,
// and its unchanged tag nodes stay (device-namespace.ts). Slots of tags that are gone are released.
import { tagNodeIdText, type DeviceConfig, type DeviceMap, type TagConfig } from "../config/device-map.js";
import type { Clock } from "../sampling/clock.js";
import { LatenessHistogram } from "../sampling/lateness.js";
import type { DeadlineScheduler } from "../sampling/scheduler.js";
import type { ValueCache } from "../values/value-cache.js";
import { DevicePoller, type StateChangeListener } from "./device-poller.js";
import { PolledTag } from "./poll-group.js";
import type { SlicedTask, Slicer } from "../sampling/slices.js";
import type { Driver } from "./driver.js";
import type { DriverProtocol, DriverRegistry, RegisteredDriver } from "./registry.js";
import { readDeviceOnce, type DeviceReading } from "./read-once.js";
import { sameConfig } from "../config/same-config.js";
import { deviceChanges, wholeDevice, type ApplyReport } from "./map-changes.js";

export { sameConfig } from "../config/same-config.js";
export type { ApplyReport } from "./map-changes.js";

/** The device namespace as the runtime sees it. */
export interface DeviceNodes {
  /**
   * Creates or updates the device's nodes, in the slices of `task`; `slots` are its tags' cache
   * slots, in the order of config.tags, and `protocol` its driver's, which makes its tags' codecs.
   */
  syncDevice(config: DeviceConfig, protocol: DriverProtocol, slots: readonly number[], task: SlicedTask): Promise<void>;
  /** Removes the device's nodes, in the slices of `task`. */
  removeDevice(name: string, task: SlicedTask): Promise<void>;
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
  /** Where a start or reload, and each poll's delivery of many values, runs its slices. */
  readonly slicer: Slicer;
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

/** The loop trace's names of a first start's and a reload's slices. */
const START_LABEL = "device map start (a slice)";
const RELOAD_LABEL = "device map reload (a slice)";

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
   * Brings the running devices in line with `map`, in the slicer's slices; calls run one after
   * the other. The promise settles once every device of the map runs and the links no device
   * uses are closed.
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

  /**
   * The tags of `config` (a device of `map`, which need not be applied) read once (read-once.ts),
   * for a person checking a map. Through the running link when the device's link is up (a serial
   * bus or a gateway is opened once: the read queues behind the polls), else through one opened
   * for the read and closed after it.
   */
  async readOnce(config: DeviceConfig, map: DeviceMap): Promise<DeviceReading> {
    if (this.stopped) throw new Error("device runtime stopped");
    const driver = this.o.drivers.get(config.driver);
    const key = driver.linkKey(config, map);
    const running = this.links.get(key);
    const o = { clock: this.o.clock, protocol: driver.protocol, slicer: this.o.slicer };
    if (running !== undefined) return readDeviceOnce(config, running.driver, o);
    const sharing = map.devices.filter((d) => d.enabled && d.driver === config.driver && driver.linkKey(d, map) === key);
    const link = driver.open(driver.linkOptions(sharing.length > 0 ? sharing : [config], map), { log: this.log });
    try {
      return await readDeviceOnce(config, link, o);
    } finally {
      await link.close().catch(() => undefined);
    }
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
    const task = this.o.slicer.task(this.running.size > 0 ? RELOAD_LABEL : START_LABEL);
    try {
      return await this.applyIn(map, task);
    } finally {
      task.done();
    }
  }

  /**
   * First what differs, compared while every device polls on; then the devices gone from the map
   * are stopped and their nodes removed; then the map's devices in its order, a changed one
   * stopped right before it starts again, so that its tags (and their monitored items) miss only
   * its own restart, not the whole reload's. The steps are functions of their own, each small:
   * V8 compiles an async function whole, on the loop (runtime-flags.ts).
   */
  private async applyIn(map: DeviceMap, task: SlicedTask): Promise<ApplyReport> {
    const report: ApplyReport = { added: [], removed: [], changed: [], unchanged: [], details: [] };
    const wanted = map.devices.filter((d) => d.enabled);
    const links = this.linksOf(wanted, map);
    const next = new Map(wanted.map((d) => [d.name, d] as const));
    const restart = new Set<string>();
    const gone: Running[] = [];
    for (const r of [...this.running.values()]) await this.compare(r, next.get(r.config.name), links, restart, gone, report, task);
    for (const r of gone) await this.remove(r, report, task);
    let starting = 0;
    for (const d of wanted) if (!this.running.has(d.name) || restart.has(d.name)) starting += d.tags.length;
    this.o.values.reserve(starting);
    for (const d of wanted) {
      const r = this.running.get(d.name);
      if (r === undefined || restart.has(d.name)) await this.restart(d, r, links.get(d.name)!, report, task);
    }
    await this.closeUnused();
    return report;
  }

  /** Whether a running device stays as it is, is restarted with `d` or goes (`d` undefined): into the report and `restart` or `gone`. */
  private async compare(r: Running, d: DeviceConfig | undefined, links: Map<string, DeviceLink>, restart: Set<string>, gone: Running[], report: ApplyReport, task: SlicedTask): Promise<void> {
    await task.yield();
    const name = r.config.name;
    const link = links.get(name);
    if (d && link && link.key === r.linkKey && sameConfig(link.options, r.options) && (await sameDevice(d, r.config, task))) {
      report.unchanged.push(name);
      return;
    }
    report.details.push(d ? await deviceChanges(r.config, d, task) : wholeDevice(r.config, "removed"));
    if (d) restart.add(name);
    else gone.push(r);
  }

  /** Stops a device gone from the map, removes its nodes and releases its slots. */
  private async remove(r: Running, report: ApplyReport, task: SlicedTask): Promise<void> {
    const before = await this.slotsOf(r, task);
    this.stopDevice(r);
    await this.o.nodes.removeDevice(r.config.name, task);
    await this.release(before, undefined, task);
    report.removed.push(r.config.name);
  }

  /** Starts `d`: a new device, or `r` stopped right before and its slots that `d` no longer holds released. */
  private async restart(d: DeviceConfig, r: Running | undefined, link: DeviceLink, report: ApplyReport, task: SlicedTask): Promise<void> {
    // Its slots before its nodes are synced: the poller's tags may be the nodes' own list.
    const before = r === undefined ? undefined : await this.slotsOf(r, task);
    await task.yield();
    if (r !== undefined) {
      report.changed.push(d.name);
      this.stopDevice(r);
    } else {
      report.added.push(d.name);
      report.details.push(wholeDevice(d, "added"));
    }
    const slots = await this.startDevice(d, link, task);
    if (this.stopped) throw new Error("device runtime stopped");
    if (before !== undefined) await this.release(before, slots, task);
  }

  /** The cache slots of a running device's tags. */
  private async slotsOf(r: Running, task: SlicedTask): Promise<number[]> {
    const tags = r.poller.tags;
    const slots: number[] = new Array(tags.length);
    await task.loop(tags.length, (from) => copySlots(tags, slots, from, task));
    return slots;
  }

  /** Releases the cache slots `before` (of a device stopped) that `kept` (its slots now) does not hold. */
  private async release(before: readonly number[], kept: readonly number[] | undefined, task: SlicedTask): Promise<void> {
    const live = new Set<number>();
    if (kept !== undefined) await task.loop(kept.length, (from) => addSlots(live, kept, from, task));
    await task.loop(before.length, (from) => releaseSlots(this.o.values, before, live, from, task));
  }

  /**
   * Starts one device in the slices of `task`: its tags' cache slots, nodes and poller; returns
   * its slots.
   */
  private async startDevice(config: DeviceConfig, link: DeviceLink, task: SlicedTask): Promise<number[]> {
    const n = config.tags.length;
    const slots: number[] = new Array(n);
    const protocol = link.driver.protocol;
    await task.loop(n, (from) => this.acquireSlots(config, protocol, slots, from, task));
    await this.o.nodes.syncDevice(config, protocol, slots, task);
    let made = this.nodeTags(config, slots);
    if (made === undefined) {
      const tags: PolledTag[] = new Array(n);
      await task.loop(n, (from) => this.makeTags(config, protocol, slots, tags, from, task));
      made = tags;
    }
    await task.yield();
    if (!this.stopped) this.runDevice(config, link, slots, made);
    return slots;
  }

  /** The nodes' own tag records when they are PolledTags on the slots just acquired (DeviceNodes.tagsOf). */
  private nodeTags(config: DeviceConfig, slots: readonly number[]): readonly PolledTag[] | undefined {
    const tags = this.o.nodes.tagsOf?.(config.name);
    if (tags === undefined || tags.length !== slots.length) return undefined;
    for (let i = 0; i < tags.length; i++) if (tags[i]!.slot !== slots[i] || tags[i]!.config !== config.tags[i]) return undefined;
    return tags;
  }

  /** Slots of tags from `from` on, until the slice is spent; returns where it stopped. */
  private acquireSlots(config: DeviceConfig, protocol: DriverProtocol, slots: number[], from: number, task: SlicedTask): number {
    const values = this.o.values;
    const n = config.tags.length;
    let i = from;
    while (i < n) {
      const t = config.tags[i]!;
      slots[i] = values.acquire(tagSlotKey(config.name, t.name), { builtinType: protocol.tag(t, config).codec.builtinType, rate: t.rate });
      i++;
      if ((i & 15) === 0 && task.over()) break;
    }
    return i;
  }

  /** Poll records of tags from `from` on, until the slice is spent; returns where it stopped. */
  private makeTags(config: DeviceConfig, protocol: DriverProtocol, slots: readonly number[], tags: PolledTag[], from: number, task: SlicedTask): number {
    const n = config.tags.length;
    let i = from;
    while (i < n) {
      tags[i] = new PolledTag(config.tags[i]!, protocol.tag(config.tags[i]!, config), slots[i]!);
      i++;
      if ((i & 15) === 0 && task.over()) break;
    }
    return i;
  }

  private runDevice(config: DeviceConfig, link: DeviceLink, slots: readonly number[], tags: readonly PolledTag[]): void {
    const driver = this.acquireLink(link.key, link.driver, link.options);
    const poller = new DevicePoller({ config, protocol: link.driver.protocol, driver, clock: this.o.clock, values: this.o.values, slots, tags, lateness: this.pollLateness, slicer: this.o.slicer });
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

/** sameConfig of two devices, their tags compared in the slices of `task`. */
async function sameDevice(a: DeviceConfig, b: DeviceConfig, task: SlicedTask): Promise<boolean> {
  const { tags: ta, ...ra } = a;
  const { tags: tb, ...rb } = b;
  if (ta.length !== tb.length || !sameConfig(ra, rb)) return false;
  let same = true;
  await task.loop(ta.length, (from) => {
    const at = sameTags(ta, tb, from, task);
    if (at < 0) same = false;
    return at < 0 ? ta.length : at;
  });
  return same;
}

/** Whether tags from `from` on are the same, until the slice is spent: where it stopped, or -1 at a difference. */
function sameTags(ta: readonly TagConfig[], tb: readonly TagConfig[], from: number, task: SlicedTask): number {
  let i = from;
  while (i < ta.length) {
    if (!sameConfig(ta[i], tb[i])) return -1;
    i++;
    if ((i & 15) === 0 && task.over()) break;
  }
  return i;
}

/** Slots from `from` on into `live`, until the slice is spent; returns where it stopped. */
function addSlots(live: Set<number>, slots: readonly number[], from: number, task: SlicedTask): number {
  let i = from;
  while (i < slots.length) {
    live.add(slots[i]!);
    i++;
    if ((i & 63) === 0 && task.over()) break;
  }
  return i;
}

/** Slots of tags from `from` on into `out`, until the slice is spent; returns where it stopped. */
function copySlots(tags: readonly PolledTag[], out: number[], from: number, task: SlicedTask): number {
  let i = from;
  while (i < tags.length) {
    out[i] = tags[i]!.slot;
    i++;
    if ((i & 63) === 0 && task.over()) break;
  }
  return i;
}

/** Releases the slots from `from` on that are not `live`, until the slice is spent; returns where it stopped. */
function releaseSlots(values: ValueCache, slots: readonly number[], live: ReadonlySet<number>, from: number, task: SlicedTask): number {
  let i = from;
  while (i < slots.length) {
    const slot = slots[i]!;
    if (!live.has(slot)) values.release(slot);
    i++;
    if ((i & 15) === 0 && task.over()) break;
  }
  return i;
}
