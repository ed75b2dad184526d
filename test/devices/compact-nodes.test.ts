// The compact records that hold 10,000 tags in little memory must answer like the plain nodes
// they replace: every attribute of a tag variable against a MemoryNamespace variable made with
// the options the device namespace used to give, references and Browse summaries, reloads that
// keep or replace nodes, the Variant kept for an unchanged value, and the fast path of Modbus
// address parsing against its full rules.
import { ValueCache } from "../../src/values/value-cache.js";
import type { DeviceConfig } from "../../src/config/device-map.js";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { DeviceNamespace } from "../../src/address-space/device-namespace.js";
import { MemoryNamespace } from "../../src/address-space/memory-namespace.js";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import type { RequestContext } from "../../src/address-space/node-manager.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import type { DeviceMap } from "../../src/config/device-map.js";
import { parseAddress } from "../../drivers/modbus/protocol.js";
import { mapSchema } from "../helpers/map.js";
import { validateYaml } from "../../src/config/load.js";
import { FakeClock } from "../../src/sampling/clock.js";
import { DeviceRuntime } from "../../src/devices/device-runtime.js";
import { DevicePoller } from "../../src/devices/device-poller.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { BuiltinType, numericNodeId, stringNodeId, type DataValue } from "../../src/ua/builtins.js";
import { AttributeIds, ObjectIds, ReferenceTypeIds, VariableTypeIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { nodeIdEquals } from "../../src/ua/node-id.js";
import { driversWith, FakeDriver, flush, ValueLog } from "./fake-driver.js";
import { testSlicer } from "../helpers/slicer.js";
import { MODBUS_PROTOCOL } from "../../drivers/modbus/definition.js";

const viewer: RequestContext = { sessionId: "v", role: "viewer", now: 0 };
const operator: RequestContext = { sessionId: "o", role: "operator", now: 0 };
const admin: RequestContext = { sessionId: "a", role: "admin", now: 0 };

function parse(yaml: string): DeviceMap {
  const r = validateYaml(mapSchema, yaml, "devices.yaml");
  if (!r.ok) throw new Error(r.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`).join("\n"));
  return r.value;
}

const PLC = (tags: string, extra = "") => `devices:
  - name: plc
    driver: modbus-tcp
    host: 10.0.0.5
    rate: 2s
    writeRoles: [admin]
${extra}    tags:
${tags}`;

const TAGS = `      - { name: level, address: input:1 }
      - { name: temperature, address: holding:100, type: float32, scale: 0.1, unit: "°C", range: [0, 150], history: true }
      - { name: setpoint, address: holding:200, unit: "°C", access: readwrite, rate: 500ms }
      - { name: running, address: coil:0, access: readwrite, description: The pump runs }
      - { name: alarm, address: holding:7.3, type: bit }
      - { name: label, address: holding:10, type: string, length: 4 }
`;

/** What each tag's variable was made with before the compact records (device-namespace.ts addTag). */
const EXPECTED = [
  { name: "level", dataType: BuiltinType.UInt16, type: VariableTypeIds.BaseDataVariableType, access: AccessLevel.CurrentRead, rate: 2000, history: false, description: "uint16 at input:1" },
  { name: "temperature", dataType: BuiltinType.Double, type: VariableTypeIds.AnalogItemType, access: AccessLevel.CurrentRead | AccessLevel.HistoryRead, rate: 2000, history: true, description: "float32 at holding:100, raw * 0.1 + 0" },
  { name: "setpoint", dataType: BuiltinType.UInt16, type: VariableTypeIds.BaseAnalogType, access: AccessLevel.CurrentRead | AccessLevel.CurrentWrite, rate: 500, history: false, description: "uint16 at holding:200" },
  { name: "running", dataType: BuiltinType.Boolean, type: VariableTypeIds.BaseDataVariableType, access: AccessLevel.CurrentRead | AccessLevel.CurrentWrite, rate: 2000, history: false, description: "The pump runs" },
  { name: "alarm", dataType: BuiltinType.Boolean, type: VariableTypeIds.BaseDataVariableType, access: AccessLevel.CurrentRead, rate: 2000, history: false, description: "bit at holding:7.3" },
  { name: "label", dataType: BuiltinType.String, type: VariableTypeIds.BaseDataVariableType, access: AccessLevel.CurrentRead, rate: 2000, history: false, description: "string at holding:10" },
];

let scheduler: DeadlineScheduler | undefined;
let runtime: DeviceRuntime | undefined;

function setup() {
  const clock = new FakeClock(0);
  scheduler = new DeadlineScheduler(clock);
  const registry = new NamespaceRegistry();
  new Ns0Manager(registry, { applicationUri: "urn:x", buildInfo: { buildDate: 0 } });
  const values = new ValueCache();
  const devices = new DeviceNamespace(registry, { values });
  const drivers: FakeDriver[] = [];
  runtime = new DeviceRuntime({
    scheduler,
    clock,
    nodes: devices,
    values,
    slicer: testSlicer(clock),
    drivers: driversWith(() => {
      const d = new FakeDriver();
      drivers.push(d);
      return d;
    }),
  });
  const ns = devices.ns;
  const read = (nodeId = stringNodeId("plc", 1), attributeId: number, ctx = viewer): DataValue => {
    const out: DataValue[] = [];
    ns.read(ctx, [{ nodeId, attributeId }], out);
    return out[0]!;
  };
  return { clock, registry, devices, ns, read, drivers };
}

afterEach(async () => {
  await runtime?.stop();
  scheduler?.stop();
  runtime = undefined;
});

describe("tag variables", () => {
  it("answer every attribute, for every role, as the MemoryVariable made with the same options", async () => {
    const { ns, read, registry } = setup();
    await runtime!.apply(parse(PLC(TAGS)));
    // The reference: a plain MemoryNamespace variable per tag, as addTag made them before.
    const ref = new MemoryNamespace(1, registry);
    const parent = ref.addObject({ nodeId: "plc", browseName: "plc" }).nodeId;
    for (const e of EXPECTED) {
      ref.addVariable({
        nodeId: `plc.${e.name}`,
        browseName: e.name,
        description: e.description,
        parent,
        dataType: e.dataType,
        typeDefinition: numericNodeId(e.type),
        accessLevel: e.access,
        writeRoles: ["admin"],
        feedInterval: e.rate,
        historizing: e.history,
        value: { statusCode: StatusCodes.BadWaitingForInitialData },
      });
    }
    for (const e of EXPECTED) {
      const id = stringNodeId(`plc.${e.name}`, 1);
      for (let attributeId = 1; attributeId <= AttributeIds.AccessLevelEx; attributeId++) {
        for (const ctx of [viewer, operator, admin]) {
          const want: DataValue[] = [];
          ref.read(ctx, [{ nodeId: id, attributeId }], want);
          expect(read(id, attributeId, ctx), `${e.name} attribute ${attributeId} as ${ctx.role}`).toEqual(want[0]);
        }
      }
      expect(ns.summary(id)).toEqual(ref.summary(id));
      const refs = ns.references(id)!.filter((r) => r.referenceTypeId.value !== ReferenceTypeIds.HasProperty);
      expect(refs).toEqual(ref.references(id));
      const v = ns.variable(id)!;
      expect([v.feedInterval, v.minimumSamplingInterval, v.historizing]).toEqual([e.rate, e.rate, e.history]);
    }
  });

  it("hang under their device: Browse of the device lists them, and removing the device removes them and its references", async () => {
    const { ns, devices } = setup();
    await runtime!.apply(parse(PLC(TAGS)));
    const children = ns.references(stringNodeId("plc", 1))!.filter((r) => r.isForward && r.referenceTypeId.value === ReferenceTypeIds.HasComponent);
    expect(children.map((r) => r.targetId.value)).toEqual(["plc/Diagnostics", ...EXPECTED.map((e) => `plc.${e.name}`)]);
    expect(ns.references(stringNodeId("plc.temperature", 1))!.filter((r) => r.referenceTypeId.value === ReferenceTypeIds.HasProperty)).toHaveLength(2);
    await runtime!.apply(parse("devices: []\n"));
    expect(devices.deviceNames()).toEqual([]);
    expect(ns.variable(stringNodeId("plc.level", 1))).toBeUndefined();
    expect(ns.getNode(stringNodeId("plc.temperature/EURange", 1))).toBeUndefined();
    const folder = ns.references(numericNodeId(1, 1))!;
    expect(folder.some((r) => r.isForward && r.targetId.value === "plc")).toBe(false);
    expect(folder.some((r) => !r.isForward && nodeIdEquals(r.targetId, numericNodeId(ObjectIds.ObjectsFolder)))).toBe(true);
  });

  it("a reload keeps a tag moved to another register (its description follows), and replaces one whose data type changes", async () => {
    const { ns, read } = setup();
    await runtime!.apply(parse(PLC(TAGS)));
    const level = ns.variable(stringNodeId("plc.level", 1));
    const setpoint = ns.variable(stringNodeId("plc.setpoint", 1));
    const next = TAGS.replace("address: input:1 }", "address: input:9 }").replace("address: holding:200, unit", "address: holding:200, type: int16, unit");
    const report = await runtime!.apply(parse(PLC(next)));
    expect(report.changed).toEqual(["plc"]);
    expect(ns.variable(stringNodeId("plc.level", 1))).toBe(level);
    expect(read(level!.nodeId, AttributeIds.Description).value!.value).toEqual({ text: "uint16 at input:9" });
    const replaced = ns.variable(stringNodeId("plc.setpoint", 1))!;
    expect(replaced).not.toBe(setpoint);
    expect(replaced.dataType).toEqual(numericNodeId(BuiltinType.Int16));
    // writeRoles changed: every node shows who may write, so none is kept.
    const roles = await runtime!.apply(parse(PLC(next).replace("writeRoles: [admin]", "writeRoles: [operator, admin]")));
    expect(roles.changed).toEqual(["plc"]);
    expect(ns.variable(stringNodeId("plc.level", 1))).not.toBe(level);
    expect(read(stringNodeId("plc.running", 1), AttributeIds.UserAccessLevel, operator).value!.value).toBe(AccessLevel.CurrentRead | AccessLevel.CurrentWrite);
  });
});

describe("polling", () => {
  it("keeps the Variant of an unchanged value and makes a new one when it changes; every sample gets a new DataValue; small values share theirs", async () => {
    const clock = new FakeClock(0);
    scheduler = new DeadlineScheduler(clock);
    const driver = new FakeDriver();
    const values = new ValueCache();
    const log = new ValueLog(values);
    /** A poller whose tags' values the log records. */
    const pollerOf = (config: DeviceConfig): DevicePoller => {
      const slots = config.tags.map((t) => values.acquire(`${config.name}/${t.name}/${values.size}`, { builtinType: MODBUS_PROTOCOL.tag(t, config).codec.builtinType, rate: t.rate }));
      slots.forEach((slot, i) => log.watch(slot, config.tags[i]!.name));
      return new DevicePoller({ config, protocol: MODBUS_PROTOCOL, driver, clock, values, slots, slicer: testSlicer(clock) });
    };
    const updates = () => log.updates.map((u) => u.value);
    const config = parse(PLC("      - { name: a, address: holding:0 }\n")).devices[0]!;
    const poller = pollerOf(config);
    driver.memory.holding[0] = 5;
    poller.start(scheduler);
    clock.advance(0);
    await flush();
    clock.advance(2000);
    await flush();
    driver.memory.holding[0] = 6;
    clock.advance(2000);
    await flush();
    poller.stop(scheduler);
    const u = updates();
    expect(u.map((v) => v.value!.value)).toEqual([5, 5, 6]);
    expect(u[1]!.value).toBe(u[0]!.value);
    expect(u[1]).not.toBe(u[0]);
    expect(u[1]!.sourceTimestamp! - u[0]!.sourceTimestamp!).toBe(2000);
    expect(u[2]!.value).not.toBe(u[1]!.value);
    const slot = poller.tags[0]!.slot;
    expect(values.get(slot)).toBe(u[2]);
    expect([values.statusOf(slot), values.get(slot).value, values.sourceTimestampOf(slot)]).toEqual([StatusCodes.Good, u[2]!.value, u[2]!.sourceTimestamp]);
    // Small whole numbers share one frozen Variant per type and value, across tags; others do not.
    const two = parse(PLC("      - { name: a, address: holding:0 }\n      - { name: b, address: holding:1 }\n      - { name: c, address: holding:2 }\n      - { name: d, address: holding:3 }\n")).devices[0]!;
    log.take();
    driver.memory.holding.set([7, 7, 300, 300]);
    const p2 = pollerOf(two);
    p2.start(scheduler);
    clock.advance(0);
    await flush();
    p2.stop(scheduler);
    const v = updates();
    expect(v.map((x) => x.value!.value)).toEqual([7, 7, 300, 300]);
    expect(v[1]!.value).toBe(v[0]!.value);
    expect(Object.isFrozen(v[0]!.value)).toBe(true);
    expect(v[3]!.value).not.toBe(v[2]!.value);
  });
});

describe("Modbus addresses", () => {
  it("the plain form's fast path gives what the full rules give (a leading space takes the full rules)", () => {
    const text = fc.tuple(
      fc.constantFrom("holding", "input", "coil", "discrete", "hold", "Holding", "coils", ""),
      fc.constantFrom(":", "::", ";", ""),
      fc.oneof(fc.nat({ max: 70000 }).map(String), fc.constantFrom("", "007", "1.3", "12x", "-1", "99999", "100000")),
    );
    fc.assert(
      fc.property(text, ([area, colon, n]) => {
        const s = `${area}${colon}${n}`;
        expect(parseAddress(s)).toEqual(parseAddress(` ${s}`));
      }),
      { numRuns: 2000, seed: 3 },
    );
  });
});
