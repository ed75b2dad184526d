// A gateway's own alarm: one communication-failure condition per device (Part 9 §5.8.20
// DiscreteAlarmType, of the SystemConditionClass, Part 9 §5.9), active while the device's poller
// is failing or demoted (devices/device-poller.ts DevicePoller.state) and inactive once it
// answers again. Its source is the device's object, its InputNode the device's
// Diagnostics/Connected variable; its events go through the device's object, the Devices folder
// and the Server (the notifiers of event-bus.ts). Severity: 500 while the device is being
// retried, 700 once it is demoted (polled now and then only), 100 when communication is back.
//
// Tag limit alarms are in limit-alarms.ts.
//
// Following the poller costs a Map lookup and a comparison per report of a state change (a
// failed attempt, an answer after failures); an event is built only when the state differs and
// someone listens.
import type { DeviceNamespace } from "../address-space/device-namespace.js";
import type { DevicePoller, DeviceState } from "../devices/device-poller.js";
import { stringNodeId, numericNodeId } from "../ua/builtins.js";
import { ObjectIds, ObjectTypeIds } from "../ua/generated/node-ids.js";
import type { Alarms } from "./alarms.js";
import type { AlarmCondition } from "./condition.js";
import { TagLimitAlarms } from "./limit-alarms.js";

export const COMMUNICATION_FAILURE = "CommunicationFailure";
const SEVERITY_FAILING = 500;
const SEVERITY_DEMOTED = 700;
const SEVERITY_NORMAL = 100;

interface Tracked {
  readonly condition: AlarmCondition;
  state: DeviceState;
}

export class DeviceAlarms {
  private readonly devices = new Map<string, Tracked>();
  /** The limit alarms of the tags that have `alarms:` in the device map. */
  readonly limits: TagLimitAlarms;

  constructor(
    private readonly alarms: Alarms,
    private readonly ns: DeviceNamespace,
  ) {
    this.limits = new TagLimitAlarms(alarms, ns.values, ns.namespaceIndex, ns.devicesFolder);
    ns.onDeviceState = (p) => this.follow(p);
    ns.onDeviceRemoved = (name) => this.removed(name);
    ns.onTagsSynced = (device, object, tags) => this.limits.sync(device, object, tags);
  }

  /** The communication-failure condition of a device, once its poller has reported. */
  condition(device: string): AlarmCondition | undefined {
    return this.devices.get(device)?.condition;
  }

  private follow(p: DevicePoller): void {
    let t = this.devices.get(p.name);
    if (t === undefined) {
      t = { condition: this.create(p.name), state: "waiting" };
      this.devices.set(p.name, t);
    }
    const state = p.state;
    if (state === t.state) return;
    t.state = state;
    const c = t.condition;
    switch (state) {
      case "failing":
        c.setActive(true, SEVERITY_FAILING, `${p.name}: no answer, retrying (${p.lastError || "no reply"})`);
        break;
      case "demoted":
        c.setActive(true, SEVERITY_DEMOTED, `${p.name}: no answer after ${p.consecutiveFailures} attempts, polled now and then (${p.lastError || "no reply"})`);
        break;
      case "ok":
        if (c.active) c.setActive(false, SEVERITY_NORMAL, `${p.name}: communication restored`);
        break;
      default:
        // waiting: a device started again (reload) keeps its alarm until it answers or fails.
        break;
    }
  }

  private create(name: string): AlarmCondition {
    const nsIndex = this.ns.namespaceIndex;
    const object = stringNodeId(name, nsIndex);
    return this.alarms.add({
      conditionId: stringNodeId(`${name}/${COMMUNICATION_FAILURE}`, nsIndex),
      typeId: ObjectTypeIds.DiscreteAlarmType,
      conditionName: COMMUNICATION_FAILURE,
      conditionClassId: ObjectTypeIds.SystemConditionClassType,
      conditionClassName: "System",
      sourceNode: object,
      sourceName: name,
      inputNode: stringNodeId(`${name}/Diagnostics/Connected`, nsIndex),
      notifiers: [object, this.ns.devicesFolder, numericNodeId(ObjectIds.Server)],
    });
  }

  private removed(name: string): void {
    this.limits.deviceRemoved(name);
    const t = this.devices.get(name);
    if (t === undefined) return;
    this.devices.delete(name);
    this.alarms.remove(t.condition);
  }
}
