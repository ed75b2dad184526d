// Which of a device's tag nodes a reload keeps (device-namespace.ts syncSteps): a node whose
// attributes would show the same stays, with its NodeId, handles and monitored items; the
// others are replaced (removed and added again) or go.
import type { DeviceConfig, TagConfig } from "../config/device-map.js";
import type { DriverProtocol } from "../devices/registry.js";

/** What of a tag's node decides whether it is kept: its data type, its tag's config, and whether its device gives its unit. */
export interface KeptNode {
  readonly builtinType: number;
  readonly config: TagConfig;
  readonly codec: { readonly unitOf?: unknown };
}

/** A reload's sync of one device: the old nodes by tag name, and which of them stay or are replaced. */
export interface SyncPlan<V extends KeptNode> {
  /** The device's nodes not yet matched to a tag of the new config (what is left goes). */
  readonly old: Map<string, V>;
  /** Whether the device's writeRoles are those of before the reload. */
  readonly sameRoles: boolean;
  /** By index of the new config's tags. */
  readonly kept: (V | undefined)[];
  readonly replaced: (V | undefined)[];
}

/** Tags [from, to) of the new config matched to the old nodes: kept as they are, or replaced. */
export function classifyTags<V extends KeptNode>(plan: SyncPlan<V>, config: DeviceConfig, protocol: DriverProtocol, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    const t = config.tags[i]!;
    const existing = plan.old.get(t.name);
    if (!existing) continue;
    plan.old.delete(t.name);
    if (plan.sameRoles && sameNode(existing, t, config, protocol)) plan.kept[i] = existing;
    else plan.replaced[i] = existing;
  }
}

/**
 * Whether a reload keeps a tag's node, its device's writeRoles unchanged: the attributes it shows
 * stay the same (data type, unit, range, access, history, description, rate). The address, byte
 * order and scale factors are not among them: a tag moved to another address keeps its node.
 */
function sameNode(v: KeptNode, t: TagConfig, device: DeviceConfig, protocol: DriverProtocol): boolean {
  const o = v.config;
  const codec = protocol.tag(t, device).codec;
  return (
    v.builtinType === codec.builtinType &&
    (v.codec.unitOf === undefined) === (codec.unitOf === undefined) &&
    o.unit?.code === t.unit?.code &&
    o.range?.[0] === t.range?.[0] &&
    o.range?.[1] === t.range?.[1] &&
    o.access === t.access &&
    o.history === t.history &&
    o.description === t.description &&
    o.rate === t.rate
  );
}
