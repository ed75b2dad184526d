// One event as the server raises it (Part 3 §6.4, Part 5 §6.4.2 BaseEventType): its EventType
// and its fields by browse path from the type ("Severity", "AckedState/Id"), as Variants.
// Events are not nodes: a select clause of an event monitored item picks fields by the same
// browse paths (Part 4 §7.22.3), so the record is a map of them and nothing more.
//
// An event is built only when someone listens (EventBus.wants): sources ask before they make one.
import { randomBytes } from "node:crypto";
import {
  BuiltinType,
  NULL_VARIANT,
  VariantArrayType,
  numericNodeId,
  type LocalizedText,
  type NodeId,
  type Variant,
} from "../ua/builtins.js";

/** A Variant of one built-in type, scalar. */
export function scalar(dataType: BuiltinType, value: unknown): Variant {
  return { dataType, arrayType: VariantArrayType.Scalar, value };
}

export function text(t: string | LocalizedText): Variant {
  return scalar(BuiltinType.LocalizedText, typeof t === "string" ? { locale: "en", text: t } : t);
}

export function nodeIdVariant(id: NodeId): Variant {
  return scalar(BuiltinType.NodeId, id);
}

// EventIds (Part 5 §6.4.2: unique, opaque to the client): a random prefix per process and a
// counter, so two runs of the gateway never repeat one and making one costs no entropy.
const EVENT_ID_PREFIX = randomBytes(8);
let eventCounter = 0;

export function newEventId(): Buffer {
  const id = Buffer.allocUnsafe(16);
  EVENT_ID_PREFIX.copy(id, 0);
  eventCounter = (eventCounter + 1) % 2 ** 48;
  id.writeUIntBE(eventCounter, 10, 6);
  id.writeUInt16BE(0, 8);
  return id;
}

export interface EventBase {
  /** The node the event is about (Part 5 §6.4.2 SourceNode). */
  readonly sourceNode: NodeId;
  readonly sourceName: string;
  readonly message: string | LocalizedText;
  /** 1 (lowest) to 1000 (highest), Part 5 §6.4.2. */
  readonly severity: number;
  /** When it happened, ms since 1970; default now. */
  readonly time?: number;
}

export class UaEvent {
  readonly fields = new Map<string, Variant>();
  /** The Condition's NodeId (Part 9 §5.5.2: selected with attribute NodeId and an empty path on ConditionType). */
  conditionId: NodeId | undefined = undefined;

  constructor(
    /** The EventType, a namespace 0 ObjectType below BaseEventType. */
    readonly typeId: number,
    base: EventBase,
    /** AuditEventType and its subtypes: shown to admin sessions only. */
    readonly audit = false,
  ) {
    const now = Date.now();
    const time = base.time ?? now;
    this.set("EventId", scalar(BuiltinType.ByteString, newEventId()));
    this.set("EventType", nodeIdVariant(numericNodeId(typeId)));
    this.set("SourceNode", nodeIdVariant(base.sourceNode));
    this.set("SourceName", scalar(BuiltinType.String, base.sourceName));
    this.set("Time", scalar(BuiltinType.DateTime, time));
    this.set("ReceiveTime", scalar(BuiltinType.DateTime, now));
    this.set("Message", text(base.message));
    this.set("Severity", scalar(BuiltinType.UInt16, Math.max(1, Math.min(1000, Math.round(base.severity)))));
  }

  get eventId(): Buffer {
    return this.fields.get("EventId")!.value as Buffer;
  }

  /** Sets a field by its browse path from the EventType ("AckedState/Id"). */
  set(path: string, value: Variant): this {
    this.fields.set(path, value);
    return this;
  }

  /** The field, or the null Variant when the event has none (Part 4 §7.22.3). */
  get(path: string): Variant {
    return this.fields.get(path) ?? NULL_VARIANT;
  }
}
