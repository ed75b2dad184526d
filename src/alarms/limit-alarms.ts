// Limit alarms on tag values (Part 9 §5.8.19.3 ExclusiveLimitAlarmType): a tag of the device map
// with `alarms: { high: 90, highHigh: 95 }` gets one condition, `<device>.<tag>/LimitAlarm`,
// whose LimitState is HighHigh, High, Low or LowLow while the engineering value is beyond that
// limit (strictly: a value equal to a limit is not beyond it) and that is inactive otherwise,
// LimitState's fields then null (Part 9 §5.8.19.3). Its source and InputNode are the tag's
// variable; its events go through the device's object, the Devices folder and the Server.
//
// Only tags with alarms pay anything: each has one subscriber on its value cache slot, which
// compares the number with the limits and does nothing more unless the state changes. Values
// that are not Good leave the state as it is (the communication alarm says why they are bad).
import type { TagView } from "../address-space/device-namespace.js";
import type { TagConfig } from "../config/device-map.js";
import { BuiltinType, NULL_VARIANT, numericNodeId, stringNodeId, type DataValue, type NodeId, type StatusCode } from "../ua/builtins.js";
import { ObjectIds, ObjectTypeIds } from "../ua/generated/node-ids.js";
import { nodeIdVariant, scalar, text } from "../events/event.js";
import type { ValueCache } from "../values/value-cache.js";
import type { SlotSubscriber } from "../values/value-sink.js";
import type { Alarms } from "./alarms.js";
import type { AlarmCondition } from "./condition.js";

export const LIMIT_ALARM = "LimitAlarm";

type Limits = NonNullable<TagConfig["alarms"]>;

const enum Limit {
  None = 0,
  HighHigh = 1,
  High = 2,
  Low = 3,
  LowLow = 4,
}

/** Per state: its name, the ExclusiveLimitStateMachineType state object (CurrentState/Id), severity. */
const STATES: readonly (readonly [string, number, number])[] = [
  ["", 0, 100],
  ["HighHigh", ObjectIds.ExclusiveLimitStateMachineType_HighHigh, 800],
  ["High", ObjectIds.ExclusiveLimitStateMachineType_High, 500],
  ["Low", ObjectIds.ExclusiveLimitStateMachineType_Low, 500],
  ["LowLow", ObjectIds.ExclusiveLimitStateMachineType_LowLow, 800],
];

const LIMIT_FIELDS = [
  ["HighHighLimit", "highHigh"],
  ["HighLimit", "high"],
  ["LowLimit", "low"],
  ["LowLowLimit", "lowLow"],
] as const;

/** The state of `v` against `limits`: the highest limit it is above, or the lowest it is below. */
export function limitState(limits: Limits, v: number): Limit {
  if (limits.highHigh !== undefined && v > limits.highHigh) return Limit.HighHigh;
  if (limits.high !== undefined && v > limits.high) return Limit.High;
  if (limits.lowLow !== undefined && v < limits.lowLow) return Limit.LowLow;
  if (limits.low !== undefined && v < limits.low) return Limit.Low;
  return Limit.None;
}

function isGood(status: StatusCode): boolean {
  return status >>> 30 === 0;
}

function sameLimits(a: Limits, b: Limits): boolean {
  return a.highHigh === b.highHigh && a.high === b.high && a.low === b.low && a.lowLow === b.lowLow;
}

/** One tag's limit alarm: a subscriber of its slot. */
class LimitWatch implements SlotSubscriber {
  state = Limit.None;

  constructor(
    readonly condition: AlarmCondition,
    readonly name: string,
    public limits: Limits,
    public slot: number,
  ) {
    this.showLimits();
  }

  offerNumber(_type: BuiltinType, value: number, status: StatusCode): void {
    if (isGood(status)) this.evaluate(value);
  }

  offerDataValue(value: DataValue): void {
    if (!isGood(value.statusCode ?? 0)) return;
    const v = value.value?.value;
    if (typeof v === "number") this.evaluate(v);
    else if (typeof v === "bigint") this.evaluate(Number(v));
  }

  /** A reload may move the tag to another slot; the reconcile in TagLimitAlarms follows it. */
  sourceChanged(): void {}

  /** The limits as the condition's fields (Part 9 §5.8.18: the ones not configured are absent). */
  showLimits(): void {
    const extra = this.condition.extra;
    for (const [field, key] of LIMIT_FIELDS) {
      const limit = this.limits[key];
      if (limit === undefined) extra.delete(field);
      else extra.set(field, scalar(BuiltinType.Double, limit));
    }
  }

  evaluate(v: number): void {
    const next = limitState(this.limits, v);
    if (next === this.state) return;
    this.state = next;
    const [name, stateId, severity] = STATES[next]!;
    const extra = this.condition.extra;
    if (next === Limit.None) {
      // Inactive: LimitState is not available (Part 9 §5.8.19.3).
      extra.set("LimitState/CurrentState", NULL_VARIANT);
      extra.set("LimitState/CurrentState/Id", NULL_VARIANT);
      this.condition.setActive(false, severity, `${this.name}: back within its limits (${v})`);
      return;
    }
    extra.set("LimitState/CurrentState", text(name));
    extra.set("LimitState/CurrentState/Id", nodeIdVariant(numericNodeId(stateId)));
    const key = LIMIT_FIELDS[next - 1]![1];
    const beyond = next === Limit.HighHigh || next === Limit.High ? "above" : "below";
    this.condition.setActive(true, severity, `${this.name}: ${name}, ${v} ${beyond} ${this.limits[key]}`);
  }
}

export class TagLimitAlarms {
  /** By device, then by tag name. */
  private readonly devices = new Map<string, Map<string, LimitWatch>>();

  constructor(
    private readonly alarms: Alarms,
    private readonly values: ValueCache,
    private readonly namespaceIndex: number,
    private readonly devicesFolder: NodeId,
  ) {}

  /** The limit alarm of a tag, if it has one. */
  condition(device: string, tag: string): AlarmCondition | undefined {
    return this.devices.get(device)?.get(tag)?.condition;
  }

  /**
   * A device's tags after a (re)load: alarms made for new `alarms:` keys, dropped for removed
   * ones, limits and slots followed for kept ones. A scan of the tags, once per load.
   */
  sync(device: string, object: NodeId, tags: readonly TagView[]): void {
    const before = this.devices.get(device);
    let after: Map<string, LimitWatch> | undefined;
    for (const t of tags) {
      const limits = t.config.alarms;
      if (limits === undefined) continue;
      after ??= new Map();
      const name = t.config.name;
      let w = before?.get(name);
      if (w !== undefined) {
        before!.delete(name);
        if (w.slot !== t.slot) {
          this.values.unsubscribe(w.slot, w);
          w.slot = t.slot;
          this.values.subscribe(t.slot, w);
        }
        if (!sameLimits(w.limits, limits)) {
          w.limits = limits;
          w.showLimits();
          this.evaluateNow(w);
        }
      } else {
        w = new LimitWatch(this.create(device, object, t), `${device}.${name}`, limits, t.slot);
        this.values.subscribe(t.slot, w);
        this.evaluateNow(w);
      }
      after.set(name, w);
    }
    if (before !== undefined) for (const gone of before.values()) this.drop(gone);
    if (after === undefined) this.devices.delete(device);
    else this.devices.set(device, after);
  }

  deviceRemoved(device: string): void {
    const watches = this.devices.get(device);
    if (watches === undefined) return;
    this.devices.delete(device);
    for (const w of watches.values()) this.drop(w);
  }

  /** Judges the value the slot has now (a new alarm, new limits). */
  private evaluateNow(w: LimitWatch): void {
    if (this.values.isLive(w.slot)) w.offerDataValue(this.values.get(w.slot));
  }

  private drop(w: LimitWatch): void {
    this.values.unsubscribe(w.slot, w);
    this.alarms.remove(w.condition);
  }

  private create(device: string, object: NodeId, t: TagView): AlarmCondition {
    const name = `${device}.${t.config.name}`;
    return this.alarms.add({
      conditionId: stringNodeId(`${name}/${LIMIT_ALARM}`, this.namespaceIndex),
      typeId: ObjectTypeIds.ExclusiveLimitAlarmType,
      conditionName: LIMIT_ALARM,
      conditionClassId: ObjectTypeIds.ProcessConditionClassType,
      conditionClassName: "Process",
      sourceNode: t.nodeId,
      sourceName: name,
      inputNode: t.nodeId,
      notifiers: [object, this.devicesFolder, numericNodeId(ObjectIds.Server)],
    });
  }
}
