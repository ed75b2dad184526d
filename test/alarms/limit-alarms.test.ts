// TagLimitAlarms on a real value cache, its conditions recorded: the limits' boundaries, values
// that are not Good, and what a reload does to the subscribers of the tags' slots.
import { describe, expect, it } from "vitest";
import { TagLimitAlarms, limitState } from "../../src/alarms/limit-alarms.js";
import { AlarmCondition, type ConditionInit } from "../../src/alarms/condition.js";
import type { Alarms } from "../../src/alarms/alarms.js";
import type { TagView } from "../../src/address-space/device-namespace.js";
import type { TagConfig } from "../../src/config/device-map.js";
import { BuiltinType, numericNodeId, stringNodeId } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { ValueCache } from "../../src/values/value-cache.js";
import type { UaEvent } from "../../src/events/event.js";

function setup() {
  const values = new ValueCache();
  const events: UaEvent[] = [];
  const removed: AlarmCondition[] = [];
  const host = { report: (_c: AlarmCondition, e: UaEvent) => events.push(e), wanted: () => true };
  const alarms = {
    add: (init: ConditionInit) => new AlarmCondition(host, init),
    remove: (c: AlarmCondition) => removed.push(c),
  } as unknown as Alarms;
  const limits = new TagLimitAlarms(alarms, values, 1, numericNodeId(1, 1));
  const slot = values.acquire("plc.level", { builtinType: BuiltinType.Double, rate: 100 });
  const tag = (alarms: TagConfig["alarms"], s = slot): TagView => ({ nodeId: stringNodeId("plc.level", 1), slot: s, config: { name: "level", alarms } as TagConfig });
  const set = (v: number, status: number = StatusCodes.Good) => values.setNumber(slot, BuiltinType.Double, v, status, Date.now(), Date.now());
  const state = () => limits.condition("plc", "level");
  return { values, events, removed, limits, slot, tag, set, state };
}

describe("limit alarms", () => {
  it("a value equal to a limit is within it; the highest limit passed wins", () => {
    const l = { highHigh: 95, high: 90, low: 10, lowLow: 5 };
    expect([89, 90, 90.5, 95, 96, 10, 9, 5, 4.9].map((v) => limitState(l, v))).toEqual([0, 0, 2, 2, 1, 0, 3, 3, 4]);
    // With only high given, nothing below it alarms.
    expect([-1e9, 91].map((v) => limitState({ high: 90 }, v))).toEqual([0, 2]);
  });

  it("follows the value, keeps its state through values that are not Good, and reports each change once", () => {
    const t = setup();
    t.limits.sync("plc", numericNodeId(2, 1), [t.tag({ high: 90 })]);
    expect(t.values.subscriberCount(t.slot)).toBe(1);
    t.set(91);
    t.set(92);
    expect(t.state()!.active).toBe(true);
    expect(t.events).toHaveLength(1);
    expect(t.events[0]!.get("LimitState/CurrentState").value).toEqual({ locale: "en", text: "High" });
    // The device stopped answering: the value is Bad, the alarm stays as it was.
    t.set(0, StatusCodes.BadCommunicationError);
    expect(t.state()!.active).toBe(true);
    expect(t.events).toHaveLength(1);
    t.set(50);
    expect(t.state()!.active).toBe(false);
    expect(t.events).toHaveLength(2);
    expect(t.events[1]!.get("LimitState/CurrentState").value).toBeNull();
  });

  it("a reload moves the subscriber to the tag's new slot and drops the alarms it no longer has", () => {
    const t = setup();
    const object = numericNodeId(2, 1);
    t.limits.sync("plc", object, [t.tag({ low: 10 })]);
    const other = t.values.acquire("plc.other", { builtinType: BuiltinType.Double, rate: 100 });
    t.limits.sync("plc", object, [t.tag({ low: 10 }, other)]);
    expect(t.values.subscriberCount(t.slot)).toBe(0);
    expect(t.values.subscriberCount(other)).toBe(1);
    const condition = t.state()!;
    t.limits.sync("plc", object, [t.tag(undefined, other)]);
    expect(t.values.subscriberCount(other)).toBe(0);
    expect(t.removed).toEqual([condition]);
    expect(t.state()).toBeUndefined();
    // A device that leaves the map takes its alarms with it.
    t.limits.sync("plc", object, [t.tag({ high: 1 })]);
    t.limits.deviceRemoved("plc");
    expect(t.values.subscriberCount(t.slot)).toBe(0);
    expect(t.removed).toHaveLength(2);
  });
});
