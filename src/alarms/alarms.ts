// The conditions of the gateway and their Methods (Part 9): Acknowledge and Confirm of
// AcknowledgeableConditionType (§5.7.3, §5.7.4), Enable, Disable and AddComment of ConditionType
// (§5.5.4 - §5.5.6), and ConditionRefresh / ConditionRefresh2 (§5.5.7, §5.5.8), which send a
// subscription's event items the current state of every retained condition between a
// RefreshStartEvent and a RefreshEndEvent (Part 9 §5.11.2, §5.11.3). The refresh events reach
// every item whatever its where clause: a client waits for the end marker.
//
// Condition methods are called with the ConditionId as ObjectId (the conditions are not nodes,
// condition.ts); ConditionRefresh with the ConditionType (Part 9 §5.5.7), and, for clients that
// look for it there, with the Server object too.
import type { MethodHandler, MethodTable, Role } from "../address-space/methods.js";
import { textOf } from "../address-space/methods.js";
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import { numericNodeId, type LocalizedText, type NodeId } from "../ua/builtins.js";
import { MonitoringMode } from "../ua/generated/enums.js";
import { MethodIds, ObjectIds, ObjectTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { nodeIdKey } from "../ua/node-id.js";
import type { SubscriptionEngine } from "../subscriptions/engine.js";
import { UaEvent } from "../events/event.js";
import type { EventItem } from "../events/event-item.js";
import type { ServerEvents } from "../events/server-events.js";
import { AlarmCondition, type ConditionHost, type ConditionInit } from "./condition.js";

/** Who may acknowledge, confirm, comment, enable and disable: those who may operate the plant. */
const OPERATORS: readonly Role[] = ["operator", "admin"];
const SERVER = numericNodeId(ObjectIds.Server);

function userOf(userId: string): string {
  return userId.startsWith("user:") || userId.startsWith("cert:") ? userId.slice(5) : userId;
}

export class Alarms implements ConditionHost {
  private readonly conditions = new Map<string | number, AlarmCondition>();

  constructor(
    private readonly events: ServerEvents,
    private readonly engine: SubscriptionEngine,
    private readonly registry: NamespaceRegistry,
  ) {}

  // ---- ConditionHost ------------------------------------------------------------------------

  report(c: AlarmCondition, event: UaEvent): void {
    this.events.raise(event, c.init.notifiers);
  }

  wanted(c: AlarmCondition): boolean {
    return this.events.wants(c.init.notifiers);
  }

  // ---- conditions ---------------------------------------------------------------------------

  add(init: ConditionInit): AlarmCondition {
    const c = new AlarmCondition(this, init);
    this.conditions.set(nodeIdKey(init.conditionId), c);
    return c;
  }

  get(conditionId: NodeId): AlarmCondition | undefined {
    return this.conditions.get(nodeIdKey(conditionId));
  }

  /** The condition goes away (its device left the map): a last event with Retain false if it was retained. */
  remove(c: AlarmCondition): void {
    if (!this.conditions.delete(nodeIdKey(c.conditionId))) return;
    if (c.retain && this.wanted(c)) {
      c.enabled = false;
      this.report(c, c.event());
    }
  }

  get size(): number {
    return this.conditions.size;
  }

  retained(): AlarmCondition[] {
    return [...this.conditions.values()].filter((c) => c.retain);
  }

  // ---- ConditionRefresh ---------------------------------------------------------------------

  /** Part 9 §5.5.7: the retained conditions' states to `items`, between the refresh markers. */
  refresh(items: readonly EventItem[]): void {
    const start = this.marker(ObjectTypeIds.RefreshStartEventType, "ConditionRefresh started.");
    const end = this.marker(ObjectTypeIds.RefreshEndEventType, "ConditionRefresh finished.");
    const retained = this.retained();
    for (const item of items) {
      if (item.mode === MonitoringMode.Disabled) continue;
      item.push(item.filter.fieldsOf(start));
      for (const c of retained) {
        if (!c.init.notifiers.some((n) => nodeIdKey(n) === item.notifierKey)) continue;
        const e = c.event(true);
        if (item.filter.passes(e)) item.push(item.filter.fieldsOf(e));
      }
      item.push(item.filter.fieldsOf(end));
    }
  }

  private marker(typeId: number, message: string): UaEvent {
    return new UaEvent(typeId, { sourceNode: SERVER, sourceName: "Server", message, severity: 1 });
  }

  // ---- methods ------------------------------------------------------------------------------

  registerMethods(methods: MethodTable): void {
    const conditionType = nodeIdKey(numericNodeId(ObjectTypeIds.ConditionType));
    const serverKey = nodeIdKey(SERVER);
    const onCondition = (id: NodeId): number => {
      if (this.get(id) !== undefined) return StatusCodes.Good;
      // Part 9 §5.7.3: not on the type itself.
      return this.registry.managerFor(id)?.summary(id) !== undefined ? StatusCodes.BadNodeIdInvalid : StatusCodes.BadNodeIdUnknown;
    };
    const onRefreshObject = (id: NodeId): number => {
      const key = nodeIdKey(id);
      if (key === conditionType || key === serverKey) return StatusCodes.Good;
      return this.registry.managerFor(id)?.summary(id) !== undefined ? StatusCodes.BadMethodInvalid : StatusCodes.BadNodeIdUnknown;
    };
    // (EventId, Comment) methods: the InputArguments check made both a ByteString and a LocalizedText.
    const withCondition =
      (fn: (c: AlarmCondition, eventId: Buffer, user: string, comment: LocalizedText) => number): MethodHandler =>
      ({ objectId, caller, inputArguments }) => {
        const c = this.get(objectId)!;
        const eventId = inputArguments[0].value;
        if (!Buffer.isBuffer(eventId)) return { statusCode: StatusCodes.BadEventIdUnknown };
        return { statusCode: fn(c, eventId, userOf(caller.userId), textOf(inputArguments[1])) };
      };

    methods.register({
      methodId: numericNodeId(MethodIds.AcknowledgeableConditionType_Acknowledge),
      objectStatus: onCondition,
      roles: OPERATORS,
      handler: withCondition((c, id, user, comment) => c.acknowledge(id, comment, user)),
    });
    methods.register({
      methodId: numericNodeId(MethodIds.AcknowledgeableConditionType_Confirm),
      objectStatus: onCondition,
      roles: OPERATORS,
      handler: withCondition((c, id, user, comment) => c.confirm(id, comment, user)),
    });
    methods.register({
      methodId: numericNodeId(MethodIds.ConditionType_AddComment),
      objectStatus: onCondition,
      roles: OPERATORS,
      handler: withCondition((c, id, user, comment) => c.addComment(id, comment, user)),
    });
    for (const [methodId, enabled] of [
      [MethodIds.ConditionType_Enable, true],
      [MethodIds.ConditionType_Disable, false],
    ] as const) {
      methods.register({
        methodId: numericNodeId(methodId),
        objectStatus: onCondition,
        roles: OPERATORS,
        handler: ({ objectId, caller }) => ({ statusCode: this.get(objectId)!.setEnabled(enabled, userOf(caller.userId)) }),
      });
    }
    methods.register({
      methodId: numericNodeId(MethodIds.ConditionType_ConditionRefresh),
      objectStatus: onRefreshObject,
      handler: ({ caller, inputArguments }) => {
        const sub = this.engine.ownedBy(caller.session, inputArguments[0].value);
        if (typeof sub === "number") return { statusCode: sub === StatusCodes.BadUserAccessDenied ? StatusCodes.BadSubscriptionIdInvalid : sub };
        this.refresh([...(this.events.items.of(sub)?.items.values() ?? [])]);
        return { statusCode: StatusCodes.Good };
      },
    });
    methods.register({
      methodId: numericNodeId(MethodIds.ConditionType_ConditionRefresh2),
      objectStatus: onRefreshObject,
      handler: ({ caller, inputArguments }) => {
        const sub = this.engine.ownedBy(caller.session, inputArguments[0].value);
        if (typeof sub === "number") return { statusCode: sub === StatusCodes.BadUserAccessDenied ? StatusCodes.BadSubscriptionIdInvalid : sub };
        const item = this.events.items.item(sub, inputArguments[1].value as number);
        if (item === undefined) return { statusCode: StatusCodes.BadMonitoredItemIdInvalid };
        this.refresh([item]);
        return { statusCode: StatusCodes.Good };
      },
    });
  }
}
