// One alarm Condition (Part 9 §5.5 ConditionType, §5.7 AcknowledgeableConditionType, §5.8
// AlarmConditionType) and its state: Enabled, Active, Acked, Confirmed, Retain, Severity,
// Message, Comment. Each change of state is reported as an event of the condition's type
// carrying all of its fields (Part 9 §4.5: a Condition's events are its state changes), with a
// new EventId; Acknowledge, Confirm and AddComment name the EventId they answer.
//
// Conditions are not nodes (Part 9 §5.5.2 lets a server keep them out of the address space):
// their ConditionId is a NodeId of the device namespace that only events and the Call service
// know; the methods are called with it as ObjectId and the type's Method as MethodId, which
// node-opcua's and the .NET stack's clients do when the condition cannot be browsed.
import { BuiltinType, NULL_NODE_ID, numericNodeId, type LocalizedText, type NodeId } from "../ua/builtins.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { newEventId, nodeIdVariant, scalar, text, UaEvent } from "../events/event.js";

/** Where a condition's events go and who is told of its state. */
export interface ConditionHost {
  /** Raises the condition's event through its notifiers (nothing when nobody listens). */
  report(condition: AlarmCondition, event: UaEvent): void;
  /** Whether anyone would see the event: building it is skipped otherwise. */
  wanted(condition: AlarmCondition): boolean;
}

export interface ConditionInit {
  readonly conditionId: NodeId;
  /** An AlarmConditionType subtype of namespace 0 (DiscreteAlarmType, ExclusiveLimitAlarmType, ...). */
  readonly typeId: number;
  readonly conditionName: string;
  readonly conditionClassId: number;
  readonly conditionClassName: string;
  readonly sourceNode: NodeId;
  readonly sourceName: string;
  /** AlarmConditionType.InputNode (Part 9 §5.8.2): the Variable the alarm watches. */
  readonly inputNode: NodeId;
  /** The notifiers its events are reported through (the source's object up to the Server). */
  readonly notifiers: readonly NodeId[];
}

/** How many EventIds of the unacknowledged (unconfirmed) state an Acknowledge (Confirm) may name. */
const KEPT_EVENT_IDS = 16;

export class AlarmCondition {
  readonly conditionId: NodeId;
  readonly typeId: number;
  readonly init: ConditionInit;
  enabled = true;
  active = false;
  acked = true;
  confirmed = true;
  severity = 1;
  lastSeverity = 1;
  message: LocalizedText = { locale: "en", text: "" };
  comment: LocalizedText = {};
  clientUserId = "";
  /** Extra fields a subtype fills (ExclusiveLimitAlarmType's LimitState, limits). */
  readonly extra = new Map<string, ReturnType<typeof scalar>>();
  private enabledAt = Date.now();
  private activeAt = Date.now();
  private ackedAt = Date.now();
  private confirmedAt = Date.now();
  private severityAt = Date.now();
  private commentAt = Date.now();
  private time = Date.now();
  /** EventIds reported since the condition last went unacknowledged / unconfirmed. */
  private ackable: Buffer[] = [];
  private confirmable: Buffer[] = [];
  lastEventId: Buffer | undefined = undefined;

  constructor(
    private readonly host: ConditionHost,
    init: ConditionInit,
  ) {
    this.init = init;
    this.conditionId = init.conditionId;
    this.typeId = init.typeId;
  }

  /** Part 9 §5.5.2 Retain: the condition is of interest (active, or waiting for an ack or a confirm). */
  get retain(): boolean {
    return this.enabled && (this.active || !this.acked || !this.confirmed);
  }

  /**
   * The alarm's input changed: active or not, with the severity and message of the new state.
   * Going active asks for an Acknowledge and a Confirm again (Part 9 §5.7.2, §5.7.4).
   */
  setActive(active: boolean, severity: number, message: string): void {
    const now = Date.now();
    if (active === this.active && severity === this.severity && message === this.message.text) return;
    if (active && !this.active) {
      this.acked = false;
      this.confirmed = false;
      this.ackedAt = now;
      this.confirmedAt = now;
      this.ackable = [];
      this.confirmable = [];
    }
    if (active !== this.active) this.activeAt = now;
    if (severity !== this.severity) {
      this.lastSeverity = this.severity;
      this.severityAt = now;
    }
    this.active = active;
    this.severity = severity;
    this.message = { locale: "en", text: message };
    this.changed(now);
  }

  /** Part 9 §5.7.3 Acknowledge. */
  acknowledge(eventId: Buffer, comment: LocalizedText, user: string): number {
    if (!this.enabled) return StatusCodes.BadConditionDisabled;
    if (!this.knows(this.ackable, eventId)) return this.acked ? StatusCodes.BadConditionBranchAlreadyAcked : StatusCodes.BadEventIdUnknown;
    if (this.acked) return StatusCodes.BadConditionBranchAlreadyAcked;
    const now = Date.now();
    this.acked = true;
    this.ackedAt = now;
    this.setComment(comment, user, now);
    this.changed(now);
    return StatusCodes.Good;
  }

  /** Part 9 §5.7.4 Confirm. */
  confirm(eventId: Buffer, comment: LocalizedText, user: string): number {
    if (!this.enabled) return StatusCodes.BadConditionDisabled;
    if (!this.knows(this.confirmable, eventId)) return this.confirmed ? StatusCodes.BadConditionBranchAlreadyConfirmed : StatusCodes.BadEventIdUnknown;
    if (this.confirmed) return StatusCodes.BadConditionBranchAlreadyConfirmed;
    const now = Date.now();
    this.confirmed = true;
    this.confirmedAt = now;
    this.setComment(comment, user, now);
    this.changed(now);
    return StatusCodes.Good;
  }

  /** Part 9 §5.5.6 AddComment: on any event of the condition. */
  addComment(eventId: Buffer, comment: LocalizedText, user: string): number {
    if (!this.enabled) return StatusCodes.BadConditionDisabled;
    if (!this.knows(this.ackable, eventId) && !this.knows(this.confirmable, eventId) && !(this.lastEventId?.equals(eventId) ?? false)) return StatusCodes.BadEventIdUnknown;
    const now = Date.now();
    this.setComment(comment, user, now);
    this.changed(now);
    return StatusCodes.Good;
  }

  /** Part 9 §5.5.4 Enable / §5.5.5 Disable. */
  setEnabled(enabled: boolean, user: string): number {
    if (enabled === this.enabled) return enabled ? StatusCodes.BadConditionAlreadyEnabled : StatusCodes.BadConditionAlreadyDisabled;
    const now = Date.now();
    this.enabled = enabled;
    this.enabledAt = now;
    this.clientUserId = user;
    this.changed(now);
    return StatusCodes.Good;
  }

  private setComment(comment: LocalizedText, user: string, now: number): void {
    this.comment = comment;
    this.commentAt = now;
    this.clientUserId = user;
  }

  private knows(list: readonly Buffer[], eventId: Buffer): boolean {
    for (const id of list) if (id.equals(eventId)) return true;
    return false;
  }

  private changed(now: number): void {
    this.time = now;
    // The EventId of each state change, even unseen: an Acknowledge may name any of them.
    const event = this.host.wanted(this) ? this.event() : undefined;
    const id = event?.eventId ?? newEventId();
    this.lastEventId = id;
    if (!this.acked) this.ackable = remember(this.ackable, id);
    if (!this.confirmed) this.confirmable = remember(this.confirmable, id);
    if (event !== undefined) this.host.report(this, event);
  }

  /**
   * The condition's current state as an event of its type (Part 9 §5.5.2, §5.7.2, §5.8.2):
   * with a new EventId, or with the last one for a ConditionRefresh (Part 9 §5.5.7: the refresh
   * repeats the last event of each retained condition).
   */
  event(refresh = false): UaEvent {
    const i = this.init;
    const e = new UaEvent(this.typeId, { sourceNode: i.sourceNode, sourceName: i.sourceName, message: this.message, severity: this.severity, time: this.time });
    if (refresh && this.lastEventId !== undefined) e.set("EventId", scalar(BuiltinType.ByteString, this.lastEventId));
    e.conditionId = this.conditionId;
    e.set("ConditionClassId", nodeIdVariant(numericNodeId(i.conditionClassId)));
    e.set("ConditionClassName", text(i.conditionClassName));
    e.set("ConditionName", scalar(BuiltinType.String, i.conditionName));
    e.set("BranchId", nodeIdVariant(NULL_NODE_ID));
    e.set("Retain", scalar(BuiltinType.Boolean, this.retain));
    twoState(e, "EnabledState", this.enabled, "Enabled", "Disabled", this.enabledAt);
    e.set("Quality", scalar(BuiltinType.StatusCode, StatusCodes.Good));
    e.set("Quality/SourceTimestamp", scalar(BuiltinType.DateTime, this.time));
    e.set("LastSeverity", scalar(BuiltinType.UInt16, this.lastSeverity));
    e.set("LastSeverity/SourceTimestamp", scalar(BuiltinType.DateTime, this.severityAt));
    e.set("Comment", scalar(BuiltinType.LocalizedText, this.comment));
    e.set("Comment/SourceTimestamp", scalar(BuiltinType.DateTime, this.commentAt));
    e.set("ClientUserId", scalar(BuiltinType.String, this.clientUserId));
    twoState(e, "AckedState", this.acked, "Acknowledged", "Unacknowledged", this.ackedAt);
    twoState(e, "ConfirmedState", this.confirmed, "Confirmed", "Unconfirmed", this.confirmedAt);
    twoState(e, "ActiveState", this.active, "Active", "Inactive", this.activeAt);
    e.set("InputNode", nodeIdVariant(i.inputNode));
    e.set("SuppressedOrShelved", scalar(BuiltinType.Boolean, false));
    for (const [k, v] of this.extra) e.set(k, v);
    return e;
  }
}

function twoState(e: UaEvent, name: string, on: boolean, trueText: string, falseText: string, at: number): void {
  e.set(name, text(on ? trueText : falseText));
  e.set(`${name}/Id`, scalar(BuiltinType.Boolean, on));
  e.set(`${name}/TransitionTime`, scalar(BuiltinType.DateTime, at));
  e.set(`${name}/TrueState`, text(trueText));
  e.set(`${name}/FalseState`, text(falseText));
}

function remember(list: Buffer[], id: Buffer): Buffer[] {
  const next = list.length >= KEPT_EVENT_IDS ? list.slice(1) : list;
  next.push(id);
  return next;
}
