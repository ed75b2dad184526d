// The device namespace and the runtime that feeds it, on a fake clock and fake drivers: nodes
// and their attributes, values and statuses, history, writes through the namespace, diagnostics,
// shared links, and apply() of a changed map (nodes kept, replaced, added, removed).
import { afterEach, describe, expect, it } from "vitest";
import { DEVICE_NAMESPACE_URI, DeviceNamespace, type ModelChange } from "../../src/address-space/device-namespace.js";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import type { RequestContext } from "../../src/address-space/node-manager.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { type DeviceMap } from "../../src/config/device-map.js";
import { mapSchema } from "../helpers/map.js";
import { validateYaml } from "../../src/config/load.js";
import type { HistorySink } from "../../src/history/sink.js";
import { FakeClock } from "../../src/sampling/clock.js";
import { DeviceRuntime } from "../../src/devices/device-runtime.js";
import { describeApply } from "../../src/devices/map-changes.js";
import { ValueCache } from "../../src/values/value-cache.js";
import type { SimulatorLink } from "../../drivers/simulator/definition.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { BuiltinType, IdType, VariantArrayType, numericNodeId, stringNodeId, type DataValue, type NodeId } from "../../src/ua/builtins.js";
import { AttributeIds, ObjectIds, ReferenceTypeIds, VariableTypeIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { nodeIdEquals } from "../../src/ua/node-id.js";
import { fakeDrivers, flush, type FakeLink } from "./fake-driver.js";
import { testSlicer, WorkClock } from "../helpers/slicer.js";

const viewer: RequestContext = { sessionId: "v", role: "viewer", now: 0 };
const operator: RequestContext = { sessionId: "o", role: "operator", now: 0 };

function parse(yaml: string): DeviceMap {
  const r = validateYaml(mapSchema, yaml, "devices.yaml");
  if (!r.ok) throw new Error(r.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`).join("\n"));
  return r.value;
}

const BOILER = `  - name: boiler
    driver: modbus-tcp
    host: 10.0.0.5
    tags:
      - { name: temperature, address: holding:100, type: float32, byteOrder: CDAB, scale: 0.1, unit: "°C", range: [0, 150], history: true }
      - { name: setpoint, address: holding:200, unit: "°C", access: readwrite }
      - { name: running, address: coil:0 }
`;
const METER = `  - name: meter
    driver: modbus-tcp
    host: 10.0.0.5
    unitId: 2
    rate: 500ms
    tags:
      - { name: energy, address: input:0, type: uint32 }
`;

class History implements HistorySink {
  declared: string[] = [];
  records: { id: string; value: DataValue }[] = [];
  declare(nodeId: NodeId): void {
    this.declared.push(String(nodeId.value));
  }
  record(nodeId: NodeId, value: DataValue): void {
    this.records.push({ id: String(nodeId.value), value });
  }
}

let clock: FakeClock;
let scheduler: DeadlineScheduler;
let runtime: DeviceRuntime | undefined;

/** `work`: a clock the runtime's slices are measured on, moving as the work looks at it (a FakeClock's never ends a slice). */
function setup(work?: WorkClock) {
  clock = new FakeClock(0);
  scheduler = new DeadlineScheduler(clock);
  const registry = new NamespaceRegistry();
  new Ns0Manager(registry, { applicationUri: "urn:x", buildInfo: { buildDate: 0 } });
  const values = new ValueCache();
  const devices = new DeviceNamespace(registry, { values });
  const history = new History();
  devices.history = history;
  const changes: ModelChange[] = [];
  devices.onModelChange = (c) => changes.push(c);
  const links: FakeLink[] = [];
  runtime = new DeviceRuntime({ scheduler, clock, nodes: devices, values, drivers: fakeDrivers(links), slicer: testSlicer(work ?? clock) });
  const ns = devices.ns;
  const s = (text: string) => stringNodeId(text, ns.namespaceIndex);
  const read = (nodeId: NodeId, attributeId = AttributeIds.Value, ctx = viewer): DataValue => {
    const out: DataValue[] = [];
    ns.read(ctx, [{ nodeId, attributeId }], out);
    return out[0]!;
  };
  const write = async (nodeId: NodeId, dataType: BuiltinType, value: unknown, ctx = operator): Promise<number> => {
    const out: number[] = [];
    await ns.write(ctx, [{ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType, arrayType: VariantArrayType.Scalar, value } } }], out);
    return out[0]!;
  };
  return { registry, devices, values, ns, history, changes, links, s, read, write };
}

async function step(ms: number): Promise<void> {
  clock.advance(ms);
  await flush();
}

afterEach(async () => {
  await runtime?.stop();
  scheduler?.stop();
  runtime = undefined;
});

describe("nodes", () => {
  it("registers urn:fieldgate:devices and hangs Devices (ns=1;i=1) under Objects", () => {
    const { registry, ns } = setup();
    expect(registry.indexOf(DEVICE_NAMESPACE_URI)).toBe(1);
    const objects = registry.managerAt(0)!.references(numericNodeId(ObjectIds.ObjectsFolder))!;
    expect(objects.some((r) => nodeIdEquals(r.targetId, numericNodeId(1, 1)))).toBe(true);
    expect(ns.summary(numericNodeId(1, 1))!.browseName).toEqual({ namespaceIndex: 1, name: "Devices" });
  });

  it("makes each tag a variable ns=1;s=<device>.<tag> with its type, access, history and analog properties", async () => {
    const { ns, s, read } = setup();
    await runtime!.apply(parse(`devices:\n${BOILER}`));
    const t = ns.variable(s("boiler.temperature"))!;
    expect(t.dataType).toEqual(numericNodeId(BuiltinType.Double));
    expect(t.typeDefinition).toEqual(numericNodeId(VariableTypeIds.AnalogItemType));
    expect(t.accessLevel).toBe(AccessLevel.CurrentRead | AccessLevel.HistoryRead);
    expect(t.historizing).toBe(true);
    expect(t.minimumSamplingInterval).toBe(1000);
    expect(read(t.nodeId)).toEqual({ statusCode: StatusCodes.BadWaitingForInitialData });
    const refs = ns.references(t.nodeId)!.filter((r) => r.isForward && r.referenceTypeId.value === ReferenceTypeIds.HasProperty);
    const props = refs.map((r) => ns.summary(r.targetId)!.browseName);
    expect(props).toEqual([{ namespaceIndex: 0, name: "EURange" }, { namespaceIndex: 0, name: "EngineeringUnits" }]);
    const range = read(s("boiler.temperature/EURange")).value!;
    expect(range.dataType).toBe(BuiltinType.ExtensionObject);
    expect((range.value as { body: unknown }).body).toEqual({ low: 0, high: 150 });
    const eu = (read(s("boiler.temperature/EngineeringUnits")).value!.value as { body: unknown }).body;
    expect(eu).toEqual({
      namespaceUri: "http://www.opcfoundation.org/UA/units/un/cefact",
      unitId: 4408652,
      displayName: { locale: "en", text: "°C" },
      description: { locale: "en", text: "degree Celsius" },
    });
    const sp = ns.variable(s("boiler.setpoint"))!;
    expect(sp.dataType).toEqual(numericNodeId(BuiltinType.UInt16));
    expect(sp.typeDefinition).toEqual(numericNodeId(VariableTypeIds.BaseAnalogType));
    expect(sp.accessLevel).toBe(AccessLevel.CurrentRead | AccessLevel.CurrentWrite);
    expect(read(sp.nodeId, AttributeIds.UserAccessLevel, viewer).value!.value).toBe(AccessLevel.CurrentRead);
    const running = ns.variable(s("boiler.running"))!;
    expect(running.typeDefinition).toEqual(numericNodeId(VariableTypeIds.BaseDataVariableType));
    expect(ns.summary(s("boiler/Diagnostics/Requests"))).toBeDefined();
  });

  it("publishes polled values, hands historized samples to the sink, and shows diagnostics", async () => {
    const { s, read, history, links } = setup();
    await runtime!.apply(parse(`devices:\n${BOILER}`));
    const d = links[0]!.driver;
    d.memory.holding.set([0x0000, 0x4348], 100); // CDAB: 200.0 raw -> 20.0 °C
    d.memory.holding[200] = 55;
    await step(0);
    expect(read(s("boiler.temperature")).value!.value).toBeCloseTo(20, 10);
    expect(read(s("boiler.setpoint")).value!.value).toBe(55);
    expect(history.declared).toEqual(["boiler.temperature"]);
    expect(history.records.map((r) => r.id)).toEqual(["boiler.temperature"]);
    expect(read(s("boiler/Diagnostics/State")).value!.value).toBe("ok");
    expect(read(s("boiler/Diagnostics/Connected")).value!.value).toBe(true);
    expect(read(s("boiler/Diagnostics/Requests")).value!.value).toBe(3n);
    expect(read(s("boiler/Diagnostics/RequestsPerCycle")).value!.value).toBe(3);
    d.down = true;
    await step(1000);
    expect(read(s("boiler.temperature"))).toMatchObject({ statusCode: StatusCodes.BadCommunicationError, value: { value: expect.closeTo(20, 10) } });
    expect(history.records.at(-1)!.value.statusCode).toBe(StatusCodes.BadCommunicationError);
    expect(read(s("boiler/Diagnostics/State")).value!.value).toBe("failing");
    expect(read(s("boiler/Diagnostics/LastError")).value!.value).toMatch(/time-out/);
  });

  it("writes go to the device for the roles the map allows", async () => {
    const { s, write, links } = setup();
    await runtime!.apply(parse(`devices:\n${BOILER}`));
    expect(await write(s("boiler.setpoint"), BuiltinType.UInt16, 42, viewer)).toBe(StatusCodes.BadUserAccessDenied);
    expect(await write(s("boiler.setpoint"), BuiltinType.UInt16, 42)).toBe(StatusCodes.Good);
    expect(links[0]!.driver.memory.holding[200]).toBe(42);
    expect(await write(s("boiler.setpoint"), BuiltinType.Double, 42)).toBe(StatusCodes.BadTypeMismatch);
    expect(await write(s("boiler.temperature"), BuiltinType.Double, 1)).toBe(StatusCodes.BadNotWritable);
  });
});

describe("the runtime", () => {
  it("gives devices on one host:port one link with the longest time-out", async () => {
    const { links } = setup();
    await runtime!.apply(parse(`devices:\n${BOILER}${METER.replace("rate: 500ms", "rate: 500ms\n    timeout: 3s")}`));
    expect(links).toHaveLength(1);
    expect(links[0]!.options).toMatchObject({ kind: "tcp", host: "10.0.0.5", port: 502, timeout: 3000 });
    await step(0);
    expect(links[0]!.driver.log.sort()).toEqual(["coil:0+1", "holding:100+2", "holding:200+1", "input:0+2"]);
  });

  it("apply() keeps what did not change and rebuilds what did; model changes name the nodes", async () => {
    const { ns, s, changes, links, devices } = setup();
    await runtime!.apply(parse(`devices:\n${BOILER}${METER}`));
    await step(0);
    const meterPoller = runtime!.poller("meter");
    const temperature = ns.variable(s("boiler.temperature"));
    const setpoint = ns.variable(s("boiler.setpoint"));
    changes.length = 0;
    // boiler: setpoint's range changes (new node), running goes, level comes; meter untouched.
    const next = BOILER.replace('unit: "°C", access: readwrite', 'unit: "°C", range: [0, 90], access: readwrite')
      .replace("      - { name: running, address: coil:0 }\n", "      - { name: level, address: input:9 }\n");
    const report = await runtime!.apply(parse(`devices:\n${next}${METER}`));
    expect(report).toMatchObject({ added: [], removed: [], changed: ["boiler"], unchanged: ["meter"] });
    expect(describeApply(report)).toEqual({
      summary: "changed boiler; 1 unchanged",
      devices: ["boiler: 1 tag added (level), 1 removed (running), 1 changed (setpoint)"],
    });
    expect(runtime!.poller("meter")).toBe(meterPoller);
    expect(ns.variable(s("boiler.temperature"))).toBe(temperature);
    expect(ns.variable(s("boiler.setpoint"))).not.toBe(setpoint);
    expect(ns.variable(s("boiler.running"))).toBeUndefined();
    expect(ns.variable(s("boiler.level"))).toBeDefined();
    const removed = changes.flatMap((c) => c.removed.map((id) => id.value)).sort();
    const added = changes.flatMap((c) => c.added.map((id) => id.value)).sort();
    expect(removed).toEqual(["boiler.running", "boiler.setpoint", "boiler.setpoint/EngineeringUnits"]);
    expect(added).toEqual(["boiler.level", "boiler.setpoint"]);
    // The kept variable keeps its value until the new poller reads it again.
    expect(ns.variable(s("boiler.temperature"))!.value.statusCode).toBeUndefined();
    expect(links).toHaveLength(1);

    await runtime!.apply(parse(`devices:\n${METER}`));
    expect(devices.deviceNames()).toEqual(["meter"]);
    expect(ns.getNode(s("boiler"))).toBeUndefined();
    expect(ns.getNode(s("boiler/Diagnostics/Requests"))).toBeUndefined();
    expect(links[0]!.driver.closed).toBe(false);
    await runtime!.apply(parse("devices: []\n"));
    expect(links[0]!.driver.closed).toBe(true);
    expect(scheduler.size).toBe(0);
  });

  it("a reload that replaces every tag of a device in slices never leaves a NodeId of the map missing between turns", async () => {
    const { ns, s } = setup(new WorkClock(0.01));
    const N = 3000;
    const map = (rate: string) =>
      parse(`devices:\n  - name: big\n    driver: modbus-tcp\n    host: 10.0.0.9\n    rate: ${rate}\n    tags:\n${Array.from({ length: N }, (_, t) => `      - { name: t${t}, address: "holding:${t}" }`).join("\n")}\n`);
    await runtime!.apply(map("1s"));
    const before = ns.variable(s("big.t0"));
    // Another rate: every tag's node is replaced (its MinimumSamplingInterval changes), in
    // slices. Between the slices (every turn of the event loop), read every NodeId.
    let done = false;
    let turns = 0;
    let missing = 0;
    const applied = runtime!.apply(map("2s")).then(() => void (done = true));
    while (!done) {
      await new Promise((r) => setImmediate(r));
      turns++;
      for (let t = 0; t < N; t++) if (ns.variable(s(`big.t${t}`)) === undefined) missing++;
    }
    await applied;
    expect(turns).toBeGreaterThan(2);
    expect(missing).toBe(0);
    expect(ns.variable(s("big.t0"))).not.toBe(before);
    expect(ns.variable(s(`big.t${N - 1}`))?.minimumSamplingInterval).toBe(2000);
  });

  it("a first start and a reload of a device of 1,000 tags both go in slices, with turns of the loop between them", async () => {
    const { devices } = setup(new WorkClock(0.1));
    const N = 1000;
    const map = (rate: string) =>
      parse(`devices:\n  - name: big\n    driver: modbus-tcp\n    host: 10.0.0.9\n    rate: ${rate}\n    tags:\n${Array.from({ length: N }, (_, t) => `      - { name: t${t}, address: "holding:${t}" }`).join("\n")}\n`);
    const turnsOf = async (applying: Promise<unknown>): Promise<number> => {
      let done = false;
      let turns = 0;
      const applied = applying.then(() => void (done = true));
      while (!done) {
        await new Promise((r) => setImmediate(r));
        turns++;
      }
      await applied;
      return turns;
    };
    const first = runtime!.apply(map("1s"));
    // Not started before apply returned: its first slice ran out before the device's nodes.
    expect(devices.tagsOf("big")?.length ?? 0).toBeLessThan(N);
    expect(await turnsOf(first)).toBeGreaterThan(2);
    expect(devices.tagsOf("big")).toHaveLength(N);
    expect(await turnsOf(runtime!.apply(map("2s")))).toBeGreaterThan(2);
    expect(devices.tagsOf("big")?.[N - 1]?.config.rate).toBe(2000);
  });

  it("a disabled device is neither polled nor published", async () => {
    const { ns, s, links } = setup();
    await runtime!.apply(parse(`devices:\n${METER.replace("unitId: 2", "unitId: 2\n    enabled: false")}`));
    expect(ns.getNode(s("meter"))).toBeUndefined();
    expect(links).toHaveLength(0);
  });

  it("starts one simulator for the simulator devices and stops it when none is left", async () => {
    const { links } = setup();
    let started = 0;
    let closed = 0;
    await runtime!.stop();
    const { devices, values } = setup();
    await runtime!.stop();
    runtime = new DeviceRuntime({
      scheduler,
      clock,
      nodes: devices,
      values,
      slicer: testSlicer(clock),
      drivers: fakeDrivers(links, async ({ host, port }) => {
        started++;
        expect([host, port]).toEqual(["127.0.0.1", 0]);
        return { port: 40123, close: async () => void closed++ };
      }),
    });
    const sim = (name: string, unit: number) => `  - name: ${name}\n    driver: simulator\n    unitId: ${unit}\n    tags: [{ name: r, address: input:0 }]\n`;
    await runtime.apply(parse(`devices:\n${sim("a", 1)}${sim("b", 2)}`));
    // The slave starts with the link's first connect: the first poll.
    await step(0);
    expect(started).toBe(1);
    expect(links).toHaveLength(1);
    expect(links[0]!.options).toMatchObject({ kind: "tcp", host: "127.0.0.1", port: 40123 });
    expect((runtime.driverOf("a") as SimulatorLink).port).toBe(40123);
    await runtime.apply(parse(`devices:\n${sim("a", 1)}`));
    expect(closed).toBe(0);
    await runtime.apply(parse("devices: []\n"));
    expect(closed).toBe(1);
  });
});

describe("NodeIds", () => {
  it("are strings of the device map's names; the folders the gateway adds are numeric", async () => {
    const { ns, s } = setup();
    await runtime!.apply(parse(`devices:\n${BOILER}`));
    expect(ns.getNode(s("boiler"))!.nodeId.idType).toBe(IdType.String);
    expect(ns.references(s("boiler"))!.some((r) => !r.isForward && nodeIdEquals(r.targetId, numericNodeId(1, 1)))).toBe(true);
  });
});
