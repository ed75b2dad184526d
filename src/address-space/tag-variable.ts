// A device tag as an OPC UA Variable (Part 3 §5.6; Part 8 §5.3.2 for the analog ones): the
// compact record the device namespace (device-namespace.ts) adds for each tag of the map, which
// is at once the poller's PolledTag, the node Read and Browse find, and the reference its device
// object lists. What every tag variable of one device shares is its TagDevice.
import {
  BuiltinType,
  VariantArrayType,
  numericNodeId,
  stringNodeId,
  type DataValue,
  type LocalizedText,
  type NodeId,
  type QualifiedName,
  type Variant,
} from "../ua/builtins.js";
import { ReferenceTypeIds, VariableTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { EUInformationCodec } from "../ua/generated/types.js";
import { UNECE_NAMESPACE_URI, type UneceUnit } from "../ua/units.js";
import { isScaled, type DeviceConfig, type TagConfig } from "../config/device-map.js";
import type { TagWriter } from "../devices/device-poller.js";
import { PolledTag } from "../devices/poll-group.js";
import type { DriverProtocol } from "../devices/registry.js";
import type { ValueCache } from "../values/value-cache.js";
import type { MemoryVariable, WriteHandler } from "./memory-namespace.js";
import { NodeClassMask, type NodeReference, type NodeSummary, type ValueSource } from "./node-manager.js";
import { AccessLevel } from "./ua-node.js";

/** What the tag variables of one device share: its object, its settings, its driver, its writer. */
export interface TagDevice {
  readonly object: NodeId;
  readonly namespaceIndex: number;
  /** The device's settings the tag variables show (writeRoles, rate); the last synced. */
  config: DeviceConfig;
  /** Its driver's: makes its tags' codecs, says where they are. */
  protocol: DriverProtocol;
  /** writeRoles as MemoryVariable.writeRoleMask bits. */
  writeRoleMask: number;
  /** Where the device's writes go (its poller, once bound). */
  writer: TagWriter | undefined;
  readonly values: ValueCache;
}

/** Part 4 §5.10.4: a device write completes when the device has taken the value. */
const writeToDevice: WriteHandler = (_ctx, variable, value) => {
  if (!(variable instanceof TagVariable)) return StatusCodes.BadNodeIdUnknown;
  const writer = variable.device.writer;
  if (!writer || !value.value) return StatusCodes.BadCommunicationError;
  // The variable is the poller's tag itself (TagVariable extends PolledTag).
  return writer.write(variable, value.value);
};

export function scalar(dataType: BuiltinType, value: unknown): Variant {
  return { dataType, arrayType: VariantArrayType.Scalar, value };
}

// NodeIds every tag variable shows, one frozen object each instead of one per tag.
const frozenId = (n: number): NodeId => Object.freeze(numericNodeId(n));
const BUILTIN_IDS: readonly NodeId[] = Array.from({ length: BuiltinType.DiagnosticInfo + 1 }, (_, i) => frozenId(i));
const BASE_DATA_VARIABLE = frozenId(VariableTypeIds.BaseDataVariableType);
const ANALOG_ITEM = frozenId(VariableTypeIds.AnalogItemType);
const BASE_ANALOG = frozenId(VariableTypeIds.BaseAnalogType);
export const HAS_COMPONENT = frozenId(ReferenceTypeIds.HasComponent);
const HAS_TYPE_DEFINITION = frozenId(ReferenceTypeIds.HasTypeDefinition);

/**
 * A tag's variable: the MemoryVariable the namespace, subscriptions and history see, as a
 * compact record (DESIGN: a gateway of 10,000 tags on a 512 MB board). It is also the tag's
 * PolledTag (the poller polls these very records: one object a tag, not two) and the forward
 * HasComponent reference its device object lists (referenceTypeId, isForward, targetId below:
 * no reference object a tag). Past the PolledTag's fields it keeps two: its NodeId's text (the
 * string its namespace and the value cache are keyed by; a NodeId object is made when one is
 * asked for: Read finds the node by the request's NodeId and never asks) and its device's
 * shared record. Every other attribute is derived from the config when asked (Read of an
 * attribute, Browse, a write's checks); its references and Browse summary are made per call,
 * except for a tag with properties, whose references are kept (STORED_REFERENCES).
 */
export class TagVariable extends PolledTag implements MemoryVariable, NodeReference {
  constructor(
    /** The NodeId's string identifier (default NodeIds), or the NodeId itself (a tagNodeId option's). */
    private readonly id: string | NodeId,
    config: TagConfig,
    readonly device: TagDevice,
    slot: number,
  ) {
    super(config, device.protocol.tag(config, device.config), slot);
  }

  get nodeId(): NodeId {
    const id = this.id;
    return typeof id === "string" ? stringNodeId(id, this.device.namespaceIndex) : id;
  }

  /** BuiltinType of the published value (tag-codec: Double when scaled). */
  get builtinType(): BuiltinType {
    return this.codec.builtinType;
  }

  /** The tag's current value, from the value cache. */
  get value(): DataValue {
    return this.device.values.get(this.slot);
  }
  set value(_dv: DataValue) {
    // Tag values come from the device: a client's write goes to onWrite, never here.
    throw new Error(`the value of device tag ${String(this.nodeId.value)} is set by its poll group`);
  }

  /** The owner's free slot of MemoryVariable: the variable is its own poll record. */
  get context(): unknown {
    return this;
  }

  get summaryCache(): NodeSummary | undefined {
    return undefined;
  }
  set summaryCache(_s: NodeSummary | undefined) {
    // Not kept: 8 bytes a tag for a Browse that makes its summary again in well under a µs.
  }

  get source(): ValueSource {
    return { values: this.device.values, slot: this.slot };
  }

  // The device object's forward HasComponent reference to this tag (NodeReference).
  get referenceTypeId(): NodeId {
    return HAS_COMPONENT;
  }
  get isForward(): boolean {
    return true;
  }
  get targetId(): NodeId {
    return this.nodeId;
  }

  get nodeClass(): NodeClassMask {
    return NodeClassMask.Variable;
  }
  get browseName(): QualifiedName {
    return { namespaceIndex: this.device.namespaceIndex, name: this.config.name };
  }
  get displayName(): LocalizedText {
    return { text: this.config.name };
  }
  get description(): LocalizedText {
    return { text: this.config.description ?? describeTag(this.config, this.device.protocol) };
  }
  get references(): NodeReference[] {
    return STORED_REFERENCES.get(this) ?? this.ownReferences();
  }
  /** HasTypeDefinition and the inverse HasComponent to its device. */
  ownReferences(): NodeReference[] {
    return [
      { referenceTypeId: HAS_TYPE_DEFINITION, isForward: true, targetId: this.typeDefinition },
      { referenceTypeId: HAS_COMPONENT, isForward: false, targetId: this.device.object },
    ];
  }
  /** Part 8 §5.3.2: AnalogItemType when the tag has an EURange, BaseAnalogType with only a unit (the map's or its device's). */
  get typeDefinition(): NodeId {
    if (!isNumeric(this.builtinType)) return BASE_DATA_VARIABLE;
    return this.config.range ? ANALOG_ITEM : hasUnit(this) ? BASE_ANALOG : BASE_DATA_VARIABLE;
  }
  get dataType(): NodeId {
    return BUILTIN_IDS[this.builtinType]!;
  }
  get valueRank(): number {
    return -1;
  }
  get arrayDimensions(): undefined {
    return undefined;
  }
  get accessLevel(): number {
    const t = this.config;
    return AccessLevel.CurrentRead | (t.access === "readwrite" ? AccessLevel.CurrentWrite : 0) | (t.history ? AccessLevel.HistoryRead : 0);
  }
  get minimumSamplingInterval(): number {
    return this.feedInterval;
  }
  get historizing(): boolean {
    return this.config.history;
  }
  get expectedType(): number {
    return this.builtinType;
  }
  get writeRoleMask(): number {
    return this.device.writeRoleMask;
  }
  get onWrite(): WriteHandler | undefined {
    return this.config.access === "readwrite" ? writeToDevice : undefined;
  }
  /** Polled every `rate`: monitored items at that rate are fed by the poll, not sampled again. */
  get feedInterval(): number {
    return this.config.rate;
  }
}

/**
 * The references of tags that have more than their own two (the HasProperty ones of EURange and
 * EngineeringUnits): MemoryNamespace.addReference appends to the list `references` returns, so
 * such a tag's list must be one that stays. Filled by addTag before it adds the properties.
 */
export const STORED_REFERENCES = new WeakMap<TagVariable, NodeReference[]>();

/** Whether the tag shows EngineeringUnits: the map names its unit, or its device's answers give it (TagCodec.unitOf). */
export function hasUnit(t: PolledTag): boolean {
  return t.config.unit !== undefined || t.codec.unitOf !== undefined;
}

/** EngineeringUnits' value (Part 8 §5.6.3: EUInformation with the UNECE namespace and UnitId). */
export function euInformation(u: UneceUnit): Variant {
  return scalar(BuiltinType.ExtensionObject, {
    typeId: numericNodeId(EUInformationCodec.binaryEncodingId),
    body: {
      namespaceUri: UNECE_NAMESPACE_URI,
      unitId: u.unitId,
      displayName: { locale: "en", text: u.displayName },
      description: { locale: "en", text: u.description },
    },
  });
}

/** Numbers (not bool, bit or string tags) have analog properties (Part 8 §5.3.2). */
function isNumeric(builtinType: BuiltinType): boolean {
  return builtinType !== BuiltinType.Boolean && builtinType !== BuiltinType.String;
}

/** The Description of a tag without one, in its driver's words: "uint16 at holding:100", "float32 at input:2, raw * 0.1 + 0". */
function describeTag(t: TagConfig, protocol: DriverProtocol): string {
  return `${protocol.syntax.valueType(t).name} at ${protocol.formatAddress(t)}${isScaled(t) ? `, raw * ${t.scale} + ${t.offset}` : ""}`;
}
