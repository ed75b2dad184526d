// The device namespace, ns=1 `urn:fieldgate:devices` (DESIGN: Address space): Objects/Devices/
// <device>/<tag> as `ns=1;s=<device>.<tag>`, built on MemoryNamespace from the device map, with
// the analog properties of Part 8 (§5.3.2 AnalogItemType: EURange, EngineeringUnits from the
// UNECE table, §5.6.3), per-device diagnostics under `<device>/Diagnostics`, writes forwarded to
// the device, and every sample of a historized tag handed to the HistorySink.
//
// NodeIds: device and tag names never hold "/", so the nodes the gateway adds itself use it
// (`boiler/Diagnostics/Requests`, `boiler.temperature/EURange`) and cannot clash with a tag.
// The Devices folder and the System object are numeric (ns=1;i=1, i=2): no device name can
// take them. A reload keeps the variable of every tag whose node would not change, so clients'
// handles and monitored items on it survive; the others are removed and added again.
import { BuiltinType, VariantArrayType, numericNodeId, type DataValue, type NodeId, type Variant } from "../ua/builtins.js";
import { DataTypeIds, ObjectIds, ReferenceTypeIds, VariableTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { EUInformationCodec, RangeCodec } from "../ua/generated/types.js";
import { UNECE_NAMESPACE_URI } from "../ua/generated/units.js";
import { isScaled, tagNodeIdText, tagType, type DeviceConfig, type TagConfig } from "../config/device-map.js";
import type { HistorySink } from "../history/sink.js";
import type { DevicePoller, PolledTag, TagSink } from "../sampling/poll-group.js";
import { compileTag } from "../sampling/tag-codec.js";
import { MemoryNamespace, type MemoryVariable, type WriteHandler } from "./memory-namespace.js";
import type { NamespaceRegistry } from "./namespace-registry.js";
import { AccessLevel } from "./ua-node.js";

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

/** The tag a variable writes to: set when a poller takes the variable over. */
interface TagBinding {
  poller: DevicePoller;
  tag: PolledTag;
}

/** Part 4 §5.10.4: a device write completes when the device has taken the value. */
const writeToDevice: WriteHandler = (_ctx, variable, value) => {
  const binding = variable.context as TagBinding | undefined;
  if (!binding || !value.value) return StatusCodes.BadCommunicationError;
  return binding.poller.write(binding.tag, value.value);
};

const DIAGNOSTICS = [
  ["Connected", BuiltinType.Boolean, "The device answers."],
  ["State", BuiltinType.String, "waiting (not polled yet), ok, failing (retrying with backoff) or demoted (probed now and then)."],
  ["LastError", BuiltinType.String, "The last failure, empty when there was none."],
  ["Requests", BuiltinType.UInt64, "Requests sent to the device."],
  ["Errors", BuiltinType.UInt64, "Requests that failed."],
  ["RoundTripTime", BuiltinType.Double, "Milliseconds from request to answer of the last answered read, queueing on a shared link included."],
  ["ConsecutiveFailures", BuiltinType.UInt32, "Poll cycles failed in a row."],
  ["RequestsPerCycle", BuiltinType.UInt32, "Read requests one poll of every group makes after coalescing."],
  ["SkippedCycles", BuiltinType.UInt64, "Poll slots not run: late, still busy, or backing off."],
] as const;

type DiagnosticName = (typeof DIAGNOSTICS)[number][0];

interface TagNode {
  readonly variable: MemoryVariable;
  /** What the node was built from; a reload keeps the node while this stays the same. */
  readonly key: string;
}

interface DeviceNodes {
  readonly object: NodeId;
  readonly tags: Map<string, TagNode>;
  readonly diagnostics: Record<DiagnosticName, MemoryVariable>;
}

function scalar(dataType: BuiltinType, value: unknown): Variant {
  return { dataType, arrayType: VariantArrayType.Scalar, value };
}

const WAITING: DataValue = Object.freeze({ statusCode: StatusCodes.BadWaitingForInitialData });

export class DeviceNamespace implements TagSink {
  readonly ns: MemoryNamespace;
  readonly devicesFolder: NodeId;
  /** Called after nodes were added or removed (reload); the events layer turns it into a GeneralModelChangeEvent. */
  onModelChange: ((change: ModelChange) => void) | undefined;
  /** Where samples of `history: true` tags go; set before the first device is added. */
  history: HistorySink | undefined;
  private readonly devices = new Map<string, DeviceNodes>();

  /** Registers `urn:fieldgate:devices` (call it before any other namespace to get index 1). */
  constructor(registry: NamespaceRegistry, options: { history?: HistorySink } = {}) {
    this.ns = new MemoryNamespace(registry.register(DEVICE_NAMESPACE_URI), registry);
    registry.register(DEVICE_NAMESPACE_URI, this.ns);
    this.history = options.history;
    this.devicesFolder = this.ns.addFolder({
      nodeId: numericNodeId(DEVICES_FOLDER_ID, this.ns.namespaceIndex),
      browseName: "Devices",
      description: "The devices of the device map, one object each.",
      parent: numericNodeId(ObjectIds.ObjectsFolder),
    }).nodeId;
  }

  get namespaceIndex(): number {
    return this.ns.namespaceIndex;
  }

  deviceNames(): string[] {
    return [...this.devices.keys()];
  }

  /** The variable of a tag, or undefined. */
  variable(device: string, tag: string): MemoryVariable | undefined {
    return this.devices.get(device)?.tags.get(tag)?.variable;
  }

  /**
   * Creates the device's nodes, or brings existing ones in line with `config` (reload).
   * Returns the variable of each tag by name, for the poller's handles.
   */
  syncDevice(config: DeviceConfig): Map<string, MemoryVariable> {
    const added: NodeId[] = [];
    const removed: NodeId[] = [];
    let nodes = this.devices.get(config.name);
    if (!nodes) {
      nodes = this.addDeviceNodes(config);
      added.push(nodes.object);
    } else {
      const object = this.ns.getNode(nodes.object)!;
      object.description = config.description === undefined ? undefined : { text: config.description };
    }
    const wanted = new Set(config.tags.map((t) => t.name));
    for (const [name, node] of nodes.tags) {
      if (wanted.has(name)) continue;
      removed.push(...this.ns.removeNode(node.variable.nodeId));
      nodes.tags.delete(name);
    }
    const handles = new Map<string, MemoryVariable>();
    for (const t of config.tags) {
      const key = nodeKey(config, t);
      const existing = nodes.tags.get(t.name);
      if (existing && existing.key === key) {
        handles.set(t.name, existing.variable);
        continue;
      }
      if (existing) removed.push(...this.ns.removeNode(existing.variable.nodeId));
      const variable = this.addTag(config, t, nodes.object);
      nodes.tags.set(t.name, { variable, key });
      handles.set(t.name, variable);
      added.push(variable.nodeId);
    }
    if (added.length > 0 || removed.length > 0) this.onModelChange?.({ added, removed });
    return handles;
  }

  removeDevice(name: string): void {
    const nodes = this.devices.get(name);
    if (!nodes) return;
    this.devices.delete(name);
    const removed = this.ns.removeNode(nodes.object);
    this.onModelChange?.({ added: [], removed });
  }

  /** Points the device's variables at a poller: writes go to it from now on. */
  bind(poller: DevicePoller): void {
    const nodes = this.devices.get(poller.name);
    if (!nodes) return;
    for (const tag of poller.tags) {
      const node = nodes.tags.get(tag.name);
      if (!node) continue;
      const v = node.variable;
      v.context = { poller, tag } satisfies TagBinding;
      tag.handle = v;
      // A node kept over a reload keeps showing its value: a Bad status keeps it too.
      const current = v.value;
      if (current.value !== undefined && current.value.dataType !== BuiltinType.Null) {
        tag.last = current.value;
        tag.lastTime = current.sourceTimestamp ?? 0;
        tag.status = current.statusCode ?? StatusCodes.Good;
      }
    }
    poller.onChange = (p) => this.showDiagnostics(p);
  }

  /** TagSink: a new value or status from the poller (the hot path: no copies). */
  update(tag: PolledTag, value: DataValue): void {
    const variable = tag.handle as MemoryVariable;
    this.ns.setValue(variable, value);
    if (tag.history) this.history?.record(variable.nodeId, value);
  }

  /** Sets the diagnostics nodes that changed. */
  showDiagnostics(p: DevicePoller): void {
    const nodes = this.devices.get(p.name);
    if (!nodes) return;
    let skipped = 0;
    for (const g of p.groups) skipped += g.backedOff + (g.scheduled ? g.scheduled.skipped + g.scheduled.overruns : 0);
    const d = nodes.diagnostics;
    this.setDiagnostic(d.Connected, BuiltinType.Boolean, p.state === "ok");
    this.setDiagnostic(d.State, BuiltinType.String, p.state);
    this.setDiagnostic(d.LastError, BuiltinType.String, p.lastError);
    this.setDiagnostic(d.Requests, BuiltinType.UInt64, BigInt(p.requests));
    this.setDiagnostic(d.Errors, BuiltinType.UInt64, BigInt(p.errors));
    this.setDiagnostic(d.RoundTripTime, BuiltinType.Double, p.lastRoundTrip);
    this.setDiagnostic(d.ConsecutiveFailures, BuiltinType.UInt32, p.consecutiveFailures);
    this.setDiagnostic(d.RequestsPerCycle, BuiltinType.UInt32, p.requestsPerCycle);
    this.setDiagnostic(d.SkippedCycles, BuiltinType.UInt64, BigInt(skipped));
  }

  private setDiagnostic(v: MemoryVariable, type: BuiltinType, value: unknown): void {
    if (v.value.value?.value === value && v.value.statusCode === undefined) return;
    this.ns.setValue(v, { value: scalar(type, value), sourceTimestamp: Date.now() });
  }

  private addDeviceNodes(config: DeviceConfig): DeviceNodes {
    const ns = this.ns;
    const object = ns.addObject({
      nodeId: config.name,
      browseName: config.name,
      description: config.description,
      parent: this.devicesFolder,
    }).nodeId;
    const folder = ns.addObject({
      nodeId: `${config.name}/Diagnostics`,
      browseName: "Diagnostics",
      description: "How polling this device goes.",
      parent: object,
      referenceType: numericNodeId(ReferenceTypeIds.HasComponent),
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
    const nodes: DeviceNodes = { object, tags: new Map(), diagnostics };
    this.devices.set(config.name, nodes);
    return nodes;
  }

  private addTag(device: DeviceConfig, t: TagConfig, parent: NodeId): MemoryVariable {
    const ns = this.ns;
    const codec = compileTag(t, device.byteOrder);
    const numeric = tagType(t) !== "bool" && tagType(t) !== "bit" && tagType(t) !== "string";
    const typeDefinition = !numeric
      ? VariableTypeIds.BaseDataVariableType
      : t.range
        ? VariableTypeIds.AnalogItemType
        : t.unit
          ? VariableTypeIds.BaseAnalogType
          : VariableTypeIds.BaseDataVariableType;
    const access =
      AccessLevel.CurrentRead | (t.access === "readwrite" ? AccessLevel.CurrentWrite : 0) | (t.history ? AccessLevel.HistoryRead : 0);
    const id = tagNodeIdText(device.name, t.name);
    const variable = ns.addVariable({
      nodeId: id,
      browseName: t.name,
      description: t.description ?? describeTag(t),
      parent,
      dataType: codec.builtinType,
      typeDefinition: numericNodeId(typeDefinition),
      accessLevel: access,
      writeRoles: device.writeRoles,
      // Polled every `rate`: monitored items at that rate are fed by setValue, not sampled again.
      feedInterval: t.rate ?? device.rate,
      historizing: t.history,
      value: WAITING,
      onWrite: t.access === "readwrite" ? writeToDevice : undefined,
    });
    if (t.range) {
      ns.addProperty(variable.nodeId, {
        nodeId: `${id}/EURange`,
        browseName: { namespaceIndex: 0, name: "EURange" },
        dataType: DataTypeIds.Range,
        value: scalar(BuiltinType.ExtensionObject, { typeId: numericNodeId(RangeCodec.binaryEncodingId), body: { low: t.range[0], high: t.range[1] } }),
      });
    }
    if (t.unit) {
      const u = t.unit;
      ns.addProperty(variable.nodeId, {
        nodeId: `${id}/EngineeringUnits`,
        browseName: { namespaceIndex: 0, name: "EngineeringUnits" },
        dataType: DataTypeIds.EUInformation,
        value: scalar(BuiltinType.ExtensionObject, {
          typeId: numericNodeId(EUInformationCodec.binaryEncodingId),
          body: {
            namespaceUri: UNECE_NAMESPACE_URI,
            unitId: u.unitId,
            displayName: { locale: "en", text: u.displayName },
            description: { locale: "en", text: u.description },
          },
        }),
      });
    }
    if (t.history) this.history?.declare(variable.nodeId);
    return variable;
  }
}

/**
 * The attributes a tag's node shows: same key, same node. The address, byte order and scale
 * factors are not among them: a tag moved to another register keeps its node.
 */
function nodeKey(device: DeviceConfig, t: TagConfig): string {
  const codec = compileTag(t, device.byteOrder);
  return JSON.stringify([codec.builtinType, t.unit?.code, t.range, t.access, t.history, t.description, device.writeRoles, t.rate ?? device.rate]);
}

function describeTag(t: TagConfig): string {
  const a = t.address;
  const where = `${a.area}:${a.offset}${a.bit === undefined ? "" : `.${a.bit}`}`;
  return `${tagType(t)} at ${where}${isScaled(t) ? `, raw * ${t.scale} + ${t.offset}` : ""}`;
}
