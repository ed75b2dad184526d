// The events the server raises about itself (Part 5 §6.4): SystemStatusChangeEvent when it
// starts and stops (§6.4.31), GeneralModelChangeEvent when a device-map reload adds, removes or
// replaces nodes (Part 3 §9.32, Part 5 §6.4.33; BaseModelChangeEvent when it changes very many),
// and the AuditEvents of the Auditing facet (Part 5 §6.4.3 - §6.4.27; audit.ts builds them), and
// DeviceFailureEventType when a file on the gateway's storage is found damaged and moved aside
// (§6.4.29). Each source asks whether anyone listens
// before it builds an event: without event monitored items the server spends nothing here.
import type { ModelChange } from "../address-space/device-namespace.js";
import { BuiltinType, VariantArrayType, numericNodeId, type NodeId } from "../ua/builtins.js";
import type { ServerState } from "../ua/generated/enums.js";
import { ObjectIds, ObjectTypeIds } from "../ua/generated/node-ids.js";
import type { ExtensionObject } from "../ua/builtins.js";
import { nodeIdKey } from "../ua/node-id.js";
import type { SubscriptionEngine } from "../subscriptions/engine.js";
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import { AuditEvents } from "./audit.js";
import { EventBus } from "./event-bus.js";
import { EventItems } from "./event-items.js";
import { scalar, UaEvent } from "./event.js";
import { describeDamaged, type DamagedFile } from "../storage/damaged.js";

/** Part 5 §6.4.2: 601-800 is medium-high; what was in the file is not readable by the gateway any more. */
const SEVERITY_DAMAGED = 700;

export const SERVER_OBJECT: NodeId = Object.freeze(numericNodeId(ObjectIds.Server));
const SERVER_ONLY: readonly NodeId[] = Object.freeze([SERVER_OBJECT]);

/** ModelChangeStructureDataType verbs (Part 3 §9.32.4). */
export const enum ModelChangeVerb {
  NodeAdded = 1,
  NodeDeleted = 2,
  ReferenceAdded = 4,
  ReferenceDeleted = 8,
  DataTypeChanged = 16,
}

/**
 * Nodes named one by one in a reload's GeneralModelChangeEvent. A reload that changes more is
 * told as a BaseModelChangeEvent without the list (Part 3 §9.32.7: a Server may use either type;
 * a Client then assumes any Node may have changed), so that a reload of a large map neither keeps
 * a record per node nor builds and sends them all in one event.
 */
export const MAX_MODEL_CHANGES = 4096;

export interface ServerEventsOptions {
  readonly registry: NamespaceRegistry;
  readonly subscriptions: SubscriptionEngine;
  /** The server's ApplicationUri (AuditEventType.ServerId). */
  readonly serverUri: string;
}

export class ServerEvents {
  readonly bus = new EventBus();
  readonly items: EventItems;
  readonly audit: AuditEvents;
  private readonly registry: NamespaceRegistry;
  /** Node changes of the reload under way, by node: the verbs OR-ed (a replaced tag is deleted and added). */
  private readonly changes = new Map<string | number, { affected: NodeId; affectedType: NodeId | undefined; verb: number }>();
  /** The reload under way changed more than MAX_MODEL_CHANGES nodes: its event has no list. */
  private changesOverflowed = false;

  constructor(o: ServerEventsOptions) {
    this.registry = o.registry;
    this.items = new EventItems(o.subscriptions, o.registry, this.bus);
    this.audit = new AuditEvents(this.bus, o.serverUri);
  }

  /** Hands an event to the items on its notifiers (the Server is always one). */
  raise(event: UaEvent, notifiers: readonly NodeId[] = SERVER_ONLY): void {
    this.bus.raise(event, notifiers);
  }

  wants(notifiers: readonly NodeId[] = SERVER_ONLY): boolean {
    return this.bus.wants(notifiers);
  }

  /**
   * Answers waiting Publish requests of subscriptions with events queued, now instead of at their
   * next publishing cycle (shutdown). Returns how many were answered.
   */
  deliverNow(engine: SubscriptionEngine): number {
    let n = 0;
    for (const sub of engine.subscriptions.values()) {
      const owner = sub.owner;
      if (sub.events === undefined || !sub.events.hasNotifications || owner === undefined || !owner.hasRequest()) continue;
      sub.publish(owner.take());
      n++;
    }
    return n;
  }

  /** Part 5 §6.4.31: the server's state changed (Running at start, Shutdown at stop). */
  systemStatus(state: ServerState, message: string): void {
    if (!this.wants()) return;
    const e = new UaEvent(ObjectTypeIds.SystemStatusChangeEventType, { sourceNode: SERVER_OBJECT, sourceName: "Server", message, severity: 500 });
    e.set("SystemState", scalar(BuiltinType.Int32, state));
    this.raise(e);
  }

  /**
   * Part 5 §6.4.29 DeviceFailureEventType, a SystemEvent (Part 3 §9.3: raised by the Server for
   * something that occurs within it or the system it represents) for a failure in a device of the
   * underlying system, here the storage the gateway keeps its files on: a damaged file was
   * moved aside and a new one started (storage/damaged.ts). The Server object is the source: the
   * files are the gateway's own, not a device's of the map. The type is declared abstract in the
   * NodeSet, as SystemStatusChangeEventType above is; no concrete subtype says "storage".
   */
  damagedFile(d: DamagedFile): void {
    if (!this.wants()) return;
    this.raise(new UaEvent(ObjectTypeIds.DeviceFailureEventType, { sourceNode: SERVER_OBJECT, sourceName: "Server", message: describeDamaged(d), severity: SEVERITY_DAMAGED, time: d.at }));
  }

  /**
   * DeviceNamespace.onModelChange: nodes added and removed by one device's sync. Collected until
   * the reload is done (flushModelChanges), so that one event names every change of it.
   */
  noteModelChange(change: ModelChange): void {
    if (!this.wants() || this.changesOverflowed) return;
    if (this.changes.size + change.removed.length + change.added.length > MAX_MODEL_CHANGES) {
      this.changesOverflowed = true;
      this.changes.clear();
      return;
    }
    for (const id of change.removed) this.note(id, undefined, ModelChangeVerb.NodeDeleted);
    for (const id of change.added) this.note(id, this.typeOf(id), ModelChangeVerb.NodeAdded);
  }

  private note(affected: NodeId, affectedType: NodeId | undefined, verb: number): void {
    const key = nodeIdKey(affected);
    const c = this.changes.get(key);
    if (c === undefined) this.changes.set(key, { affected, affectedType, verb });
    else {
      c.verb |= verb;
      c.affectedType ??= affectedType;
    }
  }

  private typeOf(id: NodeId): NodeId | undefined {
    return this.registry.managerFor(id)?.summary(id)?.typeDefinition;
  }

  /**
   * Raises one GeneralModelChangeEvent (Part 5 §6.4.33) with the changes collected since the
   * last flush: NodeAdded, NodeDeleted, or both for a node replaced under the same NodeId; a
   * BaseModelChangeEvent for more than MAX_MODEL_CHANGES of them.
   */
  flushModelChanges(): void {
    if (this.changesOverflowed) {
      this.changesOverflowed = false;
      if (!this.wants()) return;
      this.raise(
        new UaEvent(ObjectTypeIds.BaseModelChangeEventType, {
          sourceNode: SERVER_OBJECT,
          sourceName: "Server",
          message: `The address space changed: more than ${MAX_MODEL_CHANGES} node(s) added or removed.`,
          severity: 100,
        }),
      );
      return;
    }
    if (this.changes.size === 0) return;
    const list: ExtensionObject[] = [];
    const typeId = numericNodeId(ObjectIds.ModelChangeStructureDataType_Encoding_DefaultBinary);
    for (const c of this.changes.values()) {
      list.push({ typeId, body: { affected: c.affected, affectedType: c.affectedType ?? numericNodeId(0), verb: c.verb } });
    }
    this.changes.clear();
    const e = new UaEvent(ObjectTypeIds.GeneralModelChangeEventType, {
      sourceNode: SERVER_OBJECT,
      sourceName: "Server",
      message: `The address space changed: ${list.length} node(s) added or removed.`,
      severity: 100,
    });
    e.set("Changes", { dataType: BuiltinType.ExtensionObject, arrayType: VariantArrayType.Array, value: list });
    this.raise(e);
  }

}
