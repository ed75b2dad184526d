// The device namespace, ns=1 `urn:fieldgate:devices` (DESIGN: Address space): Objects/Devices/
// <device>/<tag> as `ns=1;s=<device>.<tag>`, built on MemoryNamespace from the device map, with
// the analog properties of Part 8 (§5.3.2 AnalogItemType: EURange, EngineeringUnits from the
// UNECE table, §5.6.3), per-device diagnostics under `<device>/Diagnostics`, writes forwarded to
// the device's poller. A tag's value lives in the value cache (src/values): its variable reads
// it there, monitored items subscribe to its slot, and a historized tag's slot feeds the history.
//
// NodeIds: device and tag names never hold "/", so the nodes the gateway adds itself use it
// (`boiler/Diagnostics/Requests`, `boiler.temperature/EURange`) and cannot clash with a tag.
// The Devices folder and the System object are numeric (ns=1;i=1, i=2): no device name can
// take them. A reload keeps the variable of every tag whose node would not change, so clients'
// handles and monitored items on it survive; the others are removed and added again.
import { BuiltinType, numericNodeId, stringNodeId, type DataValue, type NodeId } from "../ua/builtins.js";
import { DataTypeIds, ObjectIds, VariableTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { RangeCodec } from "../ua/generated/types.js";
import type { UneceUnit } from "../ua/generated/units.js";
import { tagNodeIdText, type DeviceConfig, type TagConfig } from "../config/device-map.js";
import { HistoryFeed } from "../history/feed.js";
import type { HistorySink } from "../history/sink.js";
import type { DevicePoller, TagWriter } from "../devices/device-poller.js";
import type { DeviceNodes as RuntimeNodes } from "../devices/device-runtime.js";
import { PolledTag } from "../devices/poll-group.js";
import type { DriverProtocol } from "../devices/registry.js";
import type { ValueCache } from "../values/value-cache.js";
import type { SlicedTask } from "../sampling/slices.js";
import { MemoryNamespace, type MemoryVariable, type WriteHandler } from "./memory-namespace.js";
import type { NamespaceRegistry } from "./namespace-registry.js";
import type { NodeReference, ValueSource } from "./node-manager.js";
import { AccessLevel } from "./ua-node.js";
import { classifyTags, type SyncPlan } from "./tag-reload.js";
import { HAS_COMPONENT, STORED_REFERENCES, TagVariable, euInformation, hasUnit, scalar, type TagDevice } from "./tag-variable.js";

export const DEVICE_NAMESPACE_URI = "urn:fieldgate:devices";
/** Objects/Devices. */
export const DEVICES_FOLDER_ID = 1;
/** Objects/System (system-object.ts). */
export const SYSTEM_OBJECT_ID = 2;

/** What the device namespace tells when nodes come and go (Part 3 §9.32 GeneralModelChangeEvent). */
export interface ModelChange {
  readonly added: readonly NodeId[];
  readonly removed: readonly NodeId[];
}

const DIAGNOSTICS = [
  ["Connected", BuiltinType.Boolean, "The device answers."],
  ["State", BuiltinType.String, "waiting (not polled yet), ok, failing (retrying with backoff) or demoted (probed now and then)."],
  ["LastError", BuiltinType.String, "The last failure, empty when there was none."],
  ["Requests", BuiltinType.UInt64, "Requests sent to the device."],
  ["Errors", BuiltinType.UInt64, "Requests that failed."],
  ["MismatchedReplies", BuiltinType.UInt64, "Replies on the device's link, while its request waited, that answered another request: another transaction, device or function."],
  ["RoundTripTime", BuiltinType.Double, "Milliseconds from request to answer of the last answered read, queueing on a shared link included."],
  ["ConsecutiveFailures", BuiltinType.UInt32, "Poll cycles failed in a row."],
  ["RequestsPerCycle", BuiltinType.UInt32, "Read requests one poll of every group makes after coalescing."],
  ["SkippedCycles", BuiltinType.UInt64, "Poll slots not run: late, still busy, or backing off."],
] as const;

type DiagnosticName = (typeof DIAGNOSTICS)[number][0];

/** A tag as its alarms see it: its variable, its config and its value cache slot. */
export interface TagView {
  readonly nodeId: NodeId;
  readonly config: TagConfig;
  readonly slot: number;
}

/** One device's nodes: what its tag variables share, and its own. */
interface DeviceNodes extends TagDevice {
  readonly tags: TagVariable[];
  readonly diagnostics: Record<DiagnosticName, MemoryVariable>;
  /** When the Diagnostics nodes were last set (wall clock, ms). */
  shownAt: number;
}

const WAITING: DataValue = Object.freeze({ statusCode: StatusCodes.BadWaitingForInitialData });
const NO_UNIT: DataValue = Object.freeze({ statusCode: StatusCodes.BadConfigurationError });
/** ms between two updates of a device's Diagnostics nodes while its state stays the same. */
const DIAGNOSTICS_INTERVAL = 1000;
const ROLE_BITS = { viewer: 1, operator: 2, admin: 4 } as const;

/**
 * EventNotifier SubscribeToEvents (Part 3 §8.59): the Devices folder and each device report the
 * events of their devices (src/events/event-bus.ts). The notifier hierarchy is not shown as
 * HasNotifier references: a browser would list every device twice under Devices.
 */
const SUBSCRIBE_TO_EVENTS = 1;

function roleMask(roles: readonly (keyof typeof ROLE_BITS)[]): number {
  let m = 0;
  for (const r of roles) m |= ROLE_BITS[r];
  return m;
}

/** Where the namespace and its nodes are, for the device map's namespace and others (the bench namespace). */
export interface DeviceNamespaceOptions {
  /** The value cache the tags' values live in. */
  readonly values: ValueCache;
  /** Where samples of `history: true` tags go. */
  readonly history?: HistorySink;
  /** Called after nodes were added or removed (reload): the events layer turns it into a GeneralModelChangeEvent. */
  readonly onModelChange?: (change: ModelChange) => void;
  /** Default urn:fieldgate:devices. */
  readonly uri?: string;
  /** The folder under Objects that holds the devices; default Devices at i=1. */
  readonly folder?: { readonly nodeId: NodeId | string; readonly browseName: string; readonly description: string };
  /** A tag's NodeId; default ns=<index>;s=<device>.<tag>. */
  readonly tagNodeId?: (device: string, tag: TagConfig, namespaceIndex: number) => NodeId;
}

export class DeviceNamespace implements RuntimeNodes {
  readonly ns: MemoryNamespace;
  readonly devicesFolder: NodeId;
  readonly values: ValueCache;
  /** Called after nodes were added or removed (reload); the events layer turns it into a GeneralModelChangeEvent. */
  onModelChange: ((change: ModelChange) => void) | undefined;
  /** Called when a device's poller reports a change of its state: the device's alarm follows it (src/alarms). */
  onDeviceState: ((device: DevicePoller) => void) | undefined;
  /** Called when a device leaves the map. */
  onDeviceRemoved: ((name: string) => void) | undefined;
  /** Called after a device's tags were made or brought in line with a (re)loaded map: tag alarms follow them (src/alarms). */
  onTagsSynced: ((device: string, object: NodeId, tags: readonly TagView[]) => void) | undefined;
  /** Where samples of `history: true` tags go; set before the first device is added. */
  history: HistorySink | undefined;
  private readonly devices = new Map<string, DeviceNodes>();
  private readonly tagNodeId: (device: string, tag: TagConfig, namespaceIndex: number) => NodeId;
  /** Whether tagNodeId is the caller's (then NodeIds are its own, not the cache keys). */
  private readonly customNodeIds: boolean;
  /** The history feeds of historized tags (few: kept here, not a field of every tag). */
  private readonly feeds = new Map<TagVariable, HistoryFeed>();

  /** Registers its namespace (urn:fieldgate:devices first of all, to get index 1). */
  constructor(registry: NamespaceRegistry, options: DeviceNamespaceOptions) {
    const uri = options.uri ?? DEVICE_NAMESPACE_URI;
    this.values = options.values;
    this.ns = new MemoryNamespace(registry.register(uri), registry, { values: options.values });
    registry.register(uri, this.ns);
    this.history = options.history;
    this.onModelChange = options.onModelChange;
    this.tagNodeId = options.tagNodeId ?? ((device, tag, ns) => stringNodeId(tagNodeIdText(device, tag.name), ns));
    this.customNodeIds = options.tagNodeId !== undefined;
    const folder = options.folder;
    this.devicesFolder = this.ns.addFolder({
      nodeId: folder?.nodeId ?? numericNodeId(DEVICES_FOLDER_ID, this.ns.namespaceIndex),
      browseName: folder?.browseName ?? "Devices",
      description: folder?.description ?? "The devices of the device map, one object each.",
      parent: numericNodeId(ObjectIds.ObjectsFolder),
      eventNotifier: SUBSCRIBE_TO_EVENTS,
    }).nodeId;
  }

  get namespaceIndex(): number {
    return this.ns.namespaceIndex;
  }

  deviceNames(): string[] {
    return [...this.devices.keys()];
  }

  /** The device's tag variables (the poller's PolledTags), in the order of its config's tags. */
  tagsOf(device: string): readonly PolledTag[] | undefined {
    return this.devices.get(device)?.tags;
  }

  /** The variable of a tag, or undefined. */
  variable(device: string, tag: string): MemoryVariable | undefined {
    return this.devices.get(device)?.tags.find((v) => v.config.name === tag);
  }

  /**
   * Creates the device's nodes, or brings existing ones in line with `config` (reload), in the
   * slices of `task`. `slots` are the tags' value cache slots, in the order of config.tags;
   * `protocol` is the device's driver's, which makes its tags' codecs and describes them.
   */
  async syncDevice(config: DeviceConfig, protocol: DriverProtocol, slots: readonly number[], task: SlicedTask): Promise<void> {
    const added: NodeId[] = [];
    const removed: NodeId[] = [];
    const n = config.tags.length;
    const existing = this.devices.get(config.name);
    if (!existing) {
      const nodes = this.addDeviceNodes(config, protocol);
      added.push(nodes.object);
      await task.loop(n, (from) => this.addTags(nodes, config, slots, from, added, task));
      this.onTagsSynced?.(config.name, nodes.object, nodes.tags);
      if (added.length > 0) this.onModelChange?.({ added, removed });
      return;
    }
    const nodes = existing;
    const object = this.ns.getNode(nodes.object)!;
    object.description = config.description === undefined ? undefined : { text: config.description };
    const before = nodes.config;
    const old = new Map<string, TagVariable>();
    await task.loop(nodes.tags.length, (from) => byName(nodes.tags, old, from, task));
    nodes.config = config;
    nodes.protocol = protocol;
    nodes.writeRoleMask = roleMask(config.writeRoles);
    // First which nodes stay, which are replaced and which go. Nodes that go are removed first;
    // a replaced node is removed and added again with its NodeId in the same slice, so that
    // between two turns no NodeId of the new map is missing (a Read, or a monitored item re-bound
    // after the reload, would find nothing and fall back to BadNodeIdUnknown or to sampling by
    // read()).
    const plan: SyncPlan<TagVariable> = { old, sameRoles: roleMask(before.writeRoles) === nodes.writeRoleMask, kept: new Array(n), replaced: new Array(n) };
    await task.loop(n, (from) => classifyPart(plan, config, protocol, from, task));
    const gone = [...old.values()];
    await task.loop(gone.length, (from) => this.removeGone(gone, from, removed, task));
    nodes.tags.length = 0;
    await task.loop(n, (from) => this.syncTags(nodes, plan, config, slots, from, added, removed, task));
    this.onTagsSynced?.(config.name, nodes.object, nodes.tags);
    if (added.length > 0 || removed.length > 0) this.onModelChange?.({ added, removed });
  }

  /** New nodes for tags from `from` on of a device that had none, until the slice is spent; returns where it stopped. */
  private addTags(nodes: DeviceNodes, config: DeviceConfig, slots: readonly number[], from: number, added: NodeId[], task: SlicedTask): number {
    const n = config.tags.length;
    let i = from;
    while (i < n) {
      added.push(this.addTag(nodes, config.tags[i]!, slots[i]!).nodeId);
      i++;
      if ((i & 7) === 0 && task.over()) break;
    }
    return i;
  }

  /** Nodes of tags gone from the map, from `from` on, TAGS_PER_REMOVAL a pass, until the slice is spent; returns where it stopped. */
  private removeGone(gone: readonly TagVariable[], from: number, removed: NodeId[], task: SlicedTask): number {
    let i = from;
    while (i < gone.length) {
      const to = Math.min(gone.length, i + TAGS_PER_REMOVAL);
      this.removeTags(gone.slice(i, to), removed);
      i = to;
      if (task.over()) break;
    }
    return i;
  }

  /**
   * Tags of a reload from `from` on, TAGS_PER_REMOVAL at a time, until the slice is spent:
   * replaced nodes removed, kept ones retargeted, new ones added. Returns where it stopped.
   */
  private syncTags(nodes: DeviceNodes, plan: SyncPlan<TagVariable>, config: DeviceConfig, slots: readonly number[], from: number, added: NodeId[], removed: NodeId[], task: SlicedTask): number {
    const n = config.tags.length;
    let at = from;
    while (at < n) {
      const to = Math.min(n, at + TAGS_PER_REMOVAL);
      const part: TagVariable[] = [];
      for (let i = at; i < to; i++) if (plan.replaced[i] !== undefined) part.push(plan.replaced[i]!);
      if (part.length > 0) this.removeTags(part, removed);
      for (let i = at; i < to; i++) {
        const t = config.tags[i]!;
        const existing = plan.kept[i];
        if (existing) {
          // The tag's address or scaling may have moved: the node shows the new config.
          existing.retarget(t, nodes.protocol.tag(t, config), slots[i]!);
          nodes.tags.push(existing);
          continue;
        }
        added.push(this.addTag(nodes, t, slots[i]!).nodeId);
      }
      at = to;
      if (task.over()) break;
    }
    return at;
  }

  private removeTags(part: readonly TagVariable[], removed: NodeId[]): void {
    for (const v of part) this.unfeed(v);
    for (const id of this.ns.removeNodes(part.map((v) => v.nodeId))) removed.push(id);
  }

  /**
   * Removes a device's nodes in the slices of `task`: its object lets go of its tags at once (so
   * that removing them does not scan its references again each time), then the tags, then the
   * object with the rest.
   */
  async removeDevice(name: string, task: SlicedTask): Promise<void> {
    const nodes = this.devices.get(name);
    if (!nodes) return;
    this.devices.delete(name);
    const removed: NodeId[] = [];
    const tags = nodes.tags;
    const object = this.ns.getNode(nodes.object);
    if (object !== undefined) await task.loop(1, () => (dropTagReferences(object.references), 1));
    await task.loop(tags.length, (from) => this.removeGone(tags, from, removed, task));
    await task.yield();
    for (const id of this.ns.removeNode(nodes.object)) removed.push(id);
    this.onDeviceRemoved?.(name);
    this.onModelChange?.({ added: [], removed });
  }

  /** Points the device's variables at a poller: writes and diagnostics go to it from now on. */
  bind(poller: DevicePoller): void {
    const nodes = this.devices.get(poller.name);
    if (!nodes) return;
    nodes.writer = poller;
    poller.onChange = (p, stateChanged) => this.showDiagnostics(p, stateChanged);
    poller.onUnit = (tag, unit) => this.showUnit(tag, unit);
  }

  /**
   * A tag's EngineeringUnits as its device's answer gave them (TagCodec.unitOf), for a tag whose
   * map names no unit: the EUInformation, or Bad_ConfigurationError (Part 4 §7.34) when the answer
   * names none the UNECE table has.
   */
  private showUnit(tag: PolledTag, unit: UneceUnit | undefined): void {
    if (!(tag instanceof TagVariable) || tag.config.unit !== undefined) return;
    const v = this.ns.variable(`${tagNodeIdText(tag.device.config.name, tag.config.name)}/EngineeringUnits`);
    if (v === undefined) return;
    this.ns.setValue(v, unit === undefined ? NO_UNIT : { value: euInformation(unit), sourceTimestamp: Date.now() });
  }

  /**
   * Sets the diagnostics nodes that changed: at once when the device's state did, else at most
   * once a second (a device polled at 100 Hz would otherwise make nine DataValues per cycle
   * that nobody needs that often).
   */
  showDiagnostics(p: DevicePoller, stateChanged = true): void {
    const nodes = this.devices.get(p.name);
    if (!nodes) return;
    if (stateChanged) this.onDeviceState?.(p);
    const now = p.wallNow();
    if (!stateChanged && now - nodes.shownAt < DIAGNOSTICS_INTERVAL) return;
    nodes.shownAt = now;
    const skipped = p.skippedCycles;
    const d = nodes.diagnostics;
    this.setDiagnostic(d.Connected, BuiltinType.Boolean, p.state === "ok");
    this.setDiagnostic(d.State, BuiltinType.String, p.state);
    this.setDiagnostic(d.LastError, BuiltinType.String, p.lastError);
    this.setDiagnostic(d.Requests, BuiltinType.UInt64, BigInt(p.requests));
    this.setDiagnostic(d.Errors, BuiltinType.UInt64, BigInt(p.errors));
    this.setDiagnostic(d.MismatchedReplies, BuiltinType.UInt64, BigInt(p.mismatchedReplies));
    this.setDiagnostic(d.RoundTripTime, BuiltinType.Double, p.lastRoundTrip);
    this.setDiagnostic(d.ConsecutiveFailures, BuiltinType.UInt32, p.consecutiveFailures);
    this.setDiagnostic(d.RequestsPerCycle, BuiltinType.UInt32, p.requestsPerCycle);
    this.setDiagnostic(d.SkippedCycles, BuiltinType.UInt64, BigInt(skipped));
  }

  private setDiagnostic(v: MemoryVariable, type: BuiltinType, value: unknown): void {
    if (v.value.value?.value === value && v.value.statusCode === undefined) return;
    this.ns.setValue(v, { value: scalar(type, value), sourceTimestamp: Date.now() });
  }

  private addDeviceNodes(config: DeviceConfig, protocol: DriverProtocol): DeviceNodes {
    const ns = this.ns;
    const object = ns.addObject({
      nodeId: config.name,
      browseName: config.name,
      description: config.description,
      parent: this.devicesFolder,
      eventNotifier: SUBSCRIBE_TO_EVENTS,
    }).nodeId;

    const folder = ns.addObject({
      nodeId: `${config.name}/Diagnostics`,
      browseName: "Diagnostics",
      description: "How polling this device goes.",
      parent: object,
      referenceType: HAS_COMPONENT,
    }).nodeId;
    const diagnostics = {} as Record<DiagnosticName, MemoryVariable>;
    for (const [name, type, description] of DIAGNOSTICS) {
      diagnostics[name] = ns.addVariable({
        nodeId: `${config.name}/Diagnostics/${name}`,
        browseName: name,
        description,
        parent: folder,
        dataType: type,
        value: WAITING,
      });
    }
    const nodes: DeviceNodes = { object, namespaceIndex: ns.namespaceIndex, config, protocol, writeRoleMask: roleMask(config.writeRoles), tags: [], diagnostics, writer: undefined, shownAt: -Infinity, values: this.values };
    this.devices.set(config.name, nodes);
    return nodes;
  }

  private addTag(device: DeviceNodes, t: TagConfig, slot: number): TagVariable {
    const ns = this.ns;
    // Properties keep string ids whatever the tag's NodeId: "/" is the gateway's own.
    const id = tagNodeIdText(device.config.name, t.name);
    const variable = new TagVariable(this.nodeIdOf(device.config.name, t, slot), t, device, slot);
    ns.adoptNode(variable, device.object, HAS_COMPONENT, variable);
    const unit = hasUnit(variable);
    if (t.range || unit) STORED_REFERENCES.set(variable, variable.ownReferences());
    device.tags.push(variable);
    if (t.range) {
      ns.addProperty(variable.nodeId, {
        nodeId: `${id}/EURange`,
        browseName: { namespaceIndex: 0, name: "EURange" },
        dataType: DataTypeIds.Range,
        value: scalar(BuiltinType.ExtensionObject, { typeId: numericNodeId(RangeCodec.binaryEncodingId), body: { low: t.range[0], high: t.range[1] } }),
      });
    }
    if (unit) {
      // A unit the device's answers give shows BadWaitingForInitialData until the first answer.
      ns.addProperty(variable.nodeId, {
        nodeId: `${id}/EngineeringUnits`,
        browseName: { namespaceIndex: 0, name: "EngineeringUnits" },
        dataType: DataTypeIds.EUInformation,
        value: t.unit ? euInformation(t.unit) : WAITING,
      });
    }
    if (t.history && this.history) {
      this.history.declare(variable.nodeId);
      const feed = new HistoryFeed(this.history, variable.nodeId, this.values, slot);
      this.feeds.set(variable, feed);
      this.values.subscribe(slot, feed);
    }
    return variable;
  }

  /**
   * A tag's NodeId. The default one's text is the tag's value cache key (device-runtime.ts
   * tagSlotKey): the NodeId takes that string, so a tag keeps one copy of it, not two.
   */
  private nodeIdOf(device: string, t: TagConfig, slot: number): string | NodeId {
    if (this.customNodeIds) return this.tagNodeId(device, t, this.ns.namespaceIndex);
    const key = this.values.keyOf(slot);
    const name = t.name;
    const shared = key !== undefined && key.length === device.length + 1 + name.length && key.charCodeAt(device.length) === 46 && key.startsWith(device) && key.endsWith(name);
    return shared ? key : tagNodeIdText(device, name);
  }

  private unfeed(v: TagVariable): void {
    const feed = this.feeds.get(v);
    if (feed === undefined) return;
    this.feeds.delete(v);
    this.values.unsubscribe(feed.slot, feed);
  }
}

/** Tags passed to one removal of nodes: MemoryNamespace.removeNodes scans the references of their device object once a call. */
const TAGS_PER_REMOVAL = 32;

/** Tags from `from` on into `old` by name, until the slice is spent; returns where it stopped. */
function byName(tags: readonly TagVariable[], old: Map<string, TagVariable>, from: number, task: SlicedTask): number {
  let i = from;
  while (i < tags.length) {
    const v = tags[i]!;
    old.set(v.config.name, v);
    i++;
    if ((i & 63) === 0 && task.over()) break;
  }
  return i;
}

/** classifyTags from `from` on, until the slice is spent; returns where it stopped. */
function classifyPart(plan: SyncPlan<TagVariable>, config: DeviceConfig, protocol: DriverProtocol, from: number, task: SlicedTask): number {
  const n = config.tags.length;
  let i = from;
  while (i < n) {
    const to = Math.min(n, i + 16);
    classifyTags(plan, config, protocol, i, to);
    i = to;
    if (task.over()) break;
  }
  return i;
}

/** Drops a device object's references to its tag variables (the object is going), in place. */
function dropTagReferences(refs: NodeReference[]): void {
  let keep = 0;
  for (let i = 0; i < refs.length; i++) {
    const r = refs[i]!;
    if (!(r instanceof TagVariable)) refs[keep++] = r;
  }
  refs.length = keep;
}
