// Poll groups on a fake clock and a fake driver: statuses from first poll to failure and back,
// backoff and demotion, exception 02 splitting, other exceptions, writes.
import { afterEach, describe, expect, it } from "vitest";
import { type DeviceConfig } from "../../src/config/device-map.js";
import { mapSchema } from "../helpers/map.js";
import { validateYaml } from "../../src/config/load.js";
import { FakeClock } from "../../src/sampling/clock.js";
import { DevicePoller } from "../../src/devices/device-poller.js";
import { PollGroup, PolledTag, type PollTarget } from "../../src/devices/poll-group.js";
import { MODBUS_PROTOCOL, modbusDrivers } from "../../drivers/modbus/definition.js";
import { ValueCache } from "../../src/values/value-cache.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import type { Slicer } from "../../src/sampling/slices.js";
import { BuiltinType, VariantArrayType, type DataValue } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { DriverError } from "../../src/devices/driver.js";
import { FakeDriver, flush, ValueLog } from "./fake-driver.js";
import { testSlicer, WorkClock } from "../helpers/slicer.js";

const {
  Good, BadCommunicationError, BadNoCommunication, BadConfigurationError, BadDeviceFailure, BadWaitingForInitialData, BadOutOfRange,
  BadResourceUnavailable, BadNotSupported,
} = StatusCodes;

function device(tags: string, extra = ""): DeviceConfig {
  const yaml = `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: h\n    retryBackoff: 1s\n    maxBackoff: 4s\n    demoteAfter: 3\n${extra}    tags:\n${tags}`;
  const r = validateYaml(mapSchema, yaml, "devices.yaml");
  if (!r.ok) throw new Error(r.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`).join("\n"));
  return r.value.devices[0]!;
}

let clock: FakeClock;
let scheduler: DeadlineScheduler;
let driver: FakeDriver;
let sink: ValueLog;
let values: ValueCache;
let poller: DevicePoller | undefined;

/** A poller of `config` whose values go to a value cache that `sink` watches. */
function start(config: DeviceConfig): DevicePoller {
  clock = new FakeClock(0);
  scheduler = new DeadlineScheduler(clock);
  driver ??= new FakeDriver();
  values = new ValueCache();
  sink = new ValueLog(values);
  const slots = config.tags.map((t) => values.acquire(t.name, { builtinType: MODBUS_PROTOCOL.tag(t, config).codec.builtinType, rate: t.rate }));
  config.tags.forEach((t, i) => sink.watch(slots[i]!, t.name));
  poller = new DevicePoller({ config, protocol: MODBUS_PROTOCOL, driver, clock, values, slots, slicer: testSlicer(clock) });
  poller.start(scheduler);
  return poller;
}

/** A tag of the device by name: what the poller's write takes. */
function at(p: DevicePoller, name: string): PolledTag {
  return p.tag(name)!;
}

async function step(ms: number): Promise<void> {
  clock.advance(ms);
  await flush();
}

afterEach(() => {
  if (poller) poller.stop(scheduler);
  scheduler?.stop();
  poller = undefined;
  driver = undefined as unknown as FakeDriver;
});

const TAGS = `      - { name: a, address: holding:0 }
      - { name: b, address: holding:1, type: int16, scale: 0.1 }
      - { name: c, address: holding:4, type: float32 }
      - { name: d, address: coil:3 }
`;

describe("polling", () => {
  it("reads each group's coalesced blocks and hands on Good values with the answer's time", async () => {
    driver = new FakeDriver();
    driver.memory.holding.set([7, 0xfff6, 0, 0, 0x3fc0, 0x0000]);
    driver.memory.coil[3] = 1;
    const p = start(device(TAGS));
    expect(p.tags.every((t) => values.statusOf(t.slot) === BadWaitingForInitialData)).toBe(true);
    expect(p.requestsPerCycle).toBe(2);
    await step(0);
    expect(driver.log).toEqual(["coil:3+1", "holding:0+6"]);
    expect(sink.last("a")).toEqual({ value: { dataType: BuiltinType.UInt16, arrayType: VariantArrayType.Scalar, value: 7 }, sourceTimestamp: clock.wallNow() });
    expect(sink.last("b")?.value?.value).toBeCloseTo(-1, 10);
    expect(sink.last("c")?.value?.value).toBe(1.5);
    expect(sink.last("d")?.value?.value).toBe(true);
    expect(p.state).toBe("ok");
    expect(p.requests).toBe(2);
    await step(1000);
    expect(driver.log).toHaveLength(4);
  });

  it("polls each rate as its own group on its own deadlines", async () => {
    const p = start(device(`      - { name: fast, address: holding:0, rate: 250ms }\n      - { name: slow, address: holding:1 }\n`));
    expect(p.groups.map((g) => g.interval)).toEqual([250, 1000]);
    await step(0);
    await step(250);
    await step(250);
    await step(250);
    await step(250);
    expect(driver.log.filter((l) => l === "holding:0+1")).toHaveLength(5);
    expect(driver.log.filter((l) => l === "holding:1+1")).toHaveLength(2);
  });
});

describe("a device that stops answering", () => {
  it("never read: BadNoCommunication; read before: BadCommunicationError with the last value and its timestamp", async () => {
    driver = new FakeDriver();
    driver.down = true;
    start(device(TAGS));
    await step(0);
    expect(sink.last("a")).toEqual({ statusCode: BadNoCommunication });
    driver.down = false;
    driver.memory.holding[0] = 42;
    await step(1000);
    const good = sink.last("a")!;
    expect(good.value?.value).toBe(42);
    driver.down = true;
    sink.take();
    await step(1000);
    expect(sink.last("a")).toEqual({ value: good.value, statusCode: BadCommunicationError, sourceTimestamp: good.sourceTimestamp });
  });

  it("stops the cycle at the first failure and hands on only changes of status", async () => {
    driver = new FakeDriver();
    start(device(TAGS));
    await step(0);
    driver.down = true;
    driver.log.length = 0;
    sink.take();
    await step(1000);
    expect(driver.log).toEqual(["coil:3+1"]);
    expect(sink.take().map((u) => u.tag).sort()).toEqual(["a", "b", "c", "d"]);
    await step(1000);
    await step(2000);
    expect(sink.take()).toEqual([]);
  });

  it("backs off 1 s, 2 s, 4 s (maxBackoff), is demoted after 3 failed cycles and comes back on the first answer", async () => {
    driver = new FakeDriver();
    driver.down = true;
    const p = start(device(`      - { name: a, address: holding:0, rate: 100ms }\n`));
    const attemptsAt: number[] = [];
    const count = () => p.errors;
    let seen = 0;
    for (let t = 0; t <= 12_000; t += 100) {
      await step(t === 0 ? 0 : 100);
      if (count() > seen) attemptsAt.push(clock.now());
      seen = count();
    }
    // Attempts at 0, then after 1 s, 2 s, 4 s, 4 s: slots are 100 ms apart.
    expect(attemptsAt).toEqual([0, 1000, 3000, 7000, 11_000]);
    expect(p.state).toBe("demoted");
    expect(p.consecutiveFailures).toBe(5);
    expect(p.groups[0]!.backedOff).toBeGreaterThan(100);
    driver.down = false;
    driver.memory.holding[0] = 5;
    await step(4000);
    expect(p.state).toBe("ok");
    expect(p.consecutiveFailures).toBe(0);
    expect(sink.last("a")).toMatchObject({ value: { value: 5 } });
    const before = driver.log.length;
    await step(100);
    expect(driver.log.length).toBe(before + 1);
  });
});

describe("exception 02 (illegal data address)", () => {
  it("splits the block until the bad tag is found; that tag alone goes BadConfigurationError", async () => {
    driver = new FakeDriver();
    driver.memory.holding.set([1, 2, 3, 4]);
    driver.illegal.holding.add(2);
    const p = start(device(`      - { name: a, address: holding:0 }\n      - { name: b, address: holding:1 }\n      - { name: c, address: holding:2 }\n      - { name: d, address: holding:3 }\n`));
    await step(0);
    expect(sink.last("a")?.value?.value).toBe(1);
    expect(sink.last("b")?.value?.value).toBe(2);
    expect(sink.last("c")).toEqual({ statusCode: BadConfigurationError });
    expect(sink.last("d")?.value?.value).toBe(4);
    expect(driver.log).toEqual(["holding:0+4", "holding:0+2", "holding:2+2", "holding:2+1", "holding:3+1"]);
    expect(p.state).toBe("ok");
    expect(p.lastError).toContain('tag "c"');
    driver.log.length = 0;
    await step(1000);
    expect(driver.log).toEqual(["holding:0+2", "holding:3+1"]);
  });

  it("a gap that holds an illegal address ends up between two blocks, no tag Bad", async () => {
    driver = new FakeDriver();
    driver.illegal.holding.add(3);
    start(device(`      - { name: a, address: holding:0 }\n      - { name: b, address: holding:6 }\n`));
    await step(0);
    expect(sink.updates.every((u) => u.value.statusCode === undefined)).toBe(true);
    driver.log.length = 0;
    await step(1000);
    expect(driver.log).toEqual(["holding:0+1", "holding:6+1"]);
  });
});

describe("other exceptions", () => {
  it("04 makes that block's tags BadDeviceFailure, keeping values; the device stays up", async () => {
    driver = new FakeDriver();
    driver.memory.holding[100] = 9;
    const p = start(device(`      - { name: a, address: holding:0 }\n      - { name: b, address: holding:100 }\n`));
    await step(0);
    driver.failing.add(100);
    await step(1000);
    expect(sink.last("b")).toMatchObject({ statusCode: BadDeviceFailure, value: { value: 9 } });
    expect(sink.last("a")?.statusCode).toBeUndefined();
    expect(p.state).toBe("ok");
  });
});

describe("a device that refuses every request of a cycle", () => {
  const TWO_BLOCKS = `      - { name: a, address: holding:0, rate: 100ms }\n      - { name: b, address: holding:100, rate: 100ms }\n`;

  it("04 to every block: failing with its StatusCode, backs off, is demoted like a silent one, and comes back", async () => {
    driver = new FakeDriver();
    driver.memory.holding[0] = 7;
    const p = start(device(TWO_BLOCKS));
    await step(0);
    expect(p.state).toBe("ok");
    const changes: string[] = [];
    p.onStateChange = (d, previous) => void changes.push(`${previous}->${d.state}: ${d.lastError}`);
    driver.failing.add(0).add(100);
    const attemptsAt: number[] = [];
    let seen = p.errors;
    for (let t = 0; t < 8000; t += 100) {
      await step(100);
      if (p.errors > seen) attemptsAt.push(clock.now());
      seen = p.errors;
    }
    // Every block of each attempt refused; attempts 1 s, 2 s, 4 s apart as for a silent device.
    expect(attemptsAt).toEqual([100, 1100, 3100, 7100]);
    expect(p.errors).toBe(8);
    expect(p.state).toBe("demoted");
    expect(changes).toEqual(["ok->failing: exception 04: slave device failure", "failing->demoted: exception 04: slave device failure"]);
    expect(sink.last("a")).toMatchObject({ statusCode: BadDeviceFailure, value: { value: 7 } });
    expect(sink.last("b")).toMatchObject({ statusCode: BadDeviceFailure, value: { value: 0 } });
    driver.failing.clear();
    await step(4000);
    expect(p.state).toBe("ok");
    expect(sink.last("a")?.statusCode).toBeUndefined();
    expect(changes.at(-1)).toMatch(/^demoted->ok/);
  });

  it("busy after the driver's retries counts as the device's too; one block answering keeps it up", async () => {
    driver = new FakeDriver();
    const p = start(device(TWO_BLOCKS));
    await step(0);
    const busy = new DriverError("busy", BadResourceUnavailable, "exception 06: busy", true);
    driver.refusals.set(100, busy);
    await step(100);
    expect(p.state).toBe("ok");
    expect(sink.last("b")?.statusCode).toBe(BadResourceUnavailable);
    driver.refusals.set(0, busy);
    await step(100);
    expect(p.state).toBe("failing");
    expect(sink.last("a")?.statusCode).toBe(BadResourceUnavailable);
  });

  it("a refusal of the request (unsupported, bad value) to every block is the tags' fault: the device stays up", async () => {
    driver = new FakeDriver();
    const p = start(device(TWO_BLOCKS));
    driver.refusals.set(0, new DriverError("unsupported", BadNotSupported, "exception 01: illegal function", false));
    driver.refusals.set(100, new DriverError("badValue", BadOutOfRange, "exception 03: illegal data value", false));
    for (let i = 0; i < 5; i++) await step(i === 0 ? 0 : 100);
    expect(p.state).toBe("ok");
    expect(p.errors).toBe(10);
    expect([sink.last("a")?.statusCode, sink.last("b")?.statusCode]).toEqual([BadNotSupported, BadOutOfRange]);
  });
});

describe("writes", () => {
  const RW = `      - { name: sp, address: holding:10, type: uint16, scale: 0.5, range: [0, 100], access: readwrite }
      - { name: f, address: holding:20, type: float32, access: readwrite }
      - { name: flag, address: holding:30.2, type: bit, access: readwrite }
      - { name: pump, address: coil:1, access: readwrite }
      - { name: ro, address: holding:40 }
`;
  const d = (type: BuiltinType, value: unknown) => ({ dataType: type, arrayType: VariantArrayType.Scalar, value });

  it("convert back to raw, range-check, and read the tag back", async () => {
    driver = new FakeDriver();
    const p = start(device(RW));
    expect(await p.write(at(p, "sp"), d(BuiltinType.Double, 21.5))).toBe(Good);
    expect(driver.memory.holding[10]).toBe(43);
    expect(sink.last("sp")?.value?.value).toBe(21.5);
    expect(await p.write(at(p, "sp"), d(BuiltinType.Double, 100.5))).toBe(BadOutOfRange);
    expect(await p.write(at(p, "pump"), d(BuiltinType.Boolean, true))).toBe(Good);
    expect(driver.memory.coil[1]).toBe(1);
    expect(await p.write(at(p, "ro"), d(BuiltinType.UInt16, 1))).toBe(StatusCodes.BadNotWritable);
    expect(driver.log.filter((l) => l.startsWith("write"))).toEqual(["write holding:10=[43]", "write coil:1=[1]"]);
  });

  it("a bit is a read-modify-write of its register", async () => {
    driver = new FakeDriver();
    driver.memory.holding[30] = 0b1000_0001;
    const p = start(device(RW));
    expect(await p.write(at(p, "flag"), d(BuiltinType.Boolean, true))).toBe(Good);
    expect(driver.memory.holding[30]).toBe(0b1000_0101);
    expect(await p.write(at(p, "flag"), d(BuiltinType.Boolean, false))).toBe(Good);
    expect(driver.memory.holding[30]).toBe(0b1000_0001);
  });

  it("forceSingleRegisterWrite is the link's: the device's unit id is in its options, the poller hands on the whole value", async () => {
    // The FC6 requests themselves: test/drivers/modbus-serial-peer.test.ts.
    driver = new FakeDriver();
    const config = device(RW, "    forceSingleRegisterWrite: true\n");
    expect(modbusDrivers()["modbus-tcp"].linkOptions([config], { buses: {}, devices: [config] }).forceSingleRegisterWrite).toEqual([1]);
    const p = start(config);
    expect(await p.write(at(p, "f"), d(BuiltinType.Float, 1.5))).toBe(Good);
    expect(driver.log.filter((l) => l.startsWith("write"))).toEqual(["write holding:20=[16320,0]"]);
  });

  it("a device that does not answer gives the driver's StatusCode", async () => {
    driver = new FakeDriver();
    const p = start(device(RW));
    driver.down = true;
    expect(await p.write(at(p, "sp"), d(BuiltinType.Double, 1))).toBe(BadCommunicationError);
    expect(p.errors).toBeGreaterThan(0);
  });
});

describe("stop", () => {
  it("cancels the groups: no request and no update afterwards", async () => {
    driver = new FakeDriver();
    const p = start(device(TAGS));
    await step(0);
    p.stop(scheduler);
    const requests = driver.log.length;
    sink.take();
    await step(5000);
    expect(driver.log.length).toBe(requests);
    expect(sink.take()).toEqual([]);
    expect(scheduler.size).toBe(0);
  });
});

describe("a block of thousands of tags", () => {
  it("is delivered into the cache in slices, with turns of the event loop between them", async () => {
    const one = device("      - { name: t, address: holding:0 }\n");
    const template = one.tags[0]!;
    const n = 10_000;
    const cache = new ValueCache();
    const tags = Array.from({ length: n }, (_, i) => {
      const config = { ...template, name: `t${i}`, address: { ...template.address, offset: i } };
      return new PolledTag(config, MODBUS_PROTOCOL.tag(config, one), cache.acquire(config.name, { builtinType: BuiltinType.UInt16, rate: config.rate }));
    });
    const memory = Uint16Array.from({ length: n }, (_, i) => i);
    const target: PollTarget = {
      name: "in-process",
      values: cache,
      limits: { maxGap: 0, maxCount: {} },
      stopped: false,
      // Each look at the clock takes 0.05 ms of its time: a slice is twenty looks, 64 tags apart.
      slicer: testSlicer(new WorkClock(0.05)),
      wallNow: () => 1_000,
      mayAttempt: () => true,
      recordLateness: () => undefined,
      read: async (block) => memory.subarray(block.start, block.start + block.count),
      answered: () => undefined,
      cycleDone: () => undefined,
      failed: (err) => {
        throw err;
      },
      noteConfigError: () => undefined,
    };
    const group = new PollGroup(target, 10, tags);
    expect(group.blocks.length).toBe(1);
    const delivered = () => tags.filter((t) => cache.hasValue(t.slot)).length;
    // Queued before the poll's first slice: runs between two slices, so it sees some but not all.
    const between = new Promise<number>((resolve) => setImmediate(() => resolve(delivered())));
    const poll = group.sample(0, 0);
    expect(poll).toBeInstanceOf(Promise);
    const seen = await between;
    expect(seen).toBeGreaterThan(0);
    expect(seen).toBeLessThan(n);
    await poll;
    expect(delivered()).toBe(n);
    expect(cache.get(tags[n - 1]!.slot).value?.value).toBe(n - 1);
  });

  it("goes before the slices of other work (a Publish): those wait until the poll's values are all in", async () => {
    const { group, tags, cache, slicer } = bigGroup(10_000);
    const delivered = () => tags.filter((t) => cache.hasValue(t.slot)).length;
    // Another job's next slice, asked for before the poll: without the delivery it would run next turn.
    const sliceSaw = new Promise<number>((resolve) => slicer.later(() => resolve(delivered()), undefined));
    const poll = group.sample(0, 0);
    expect(poll).toBeInstanceOf(Promise);
    expect(await sliceSaw).toBe(tags.length);
    await poll;
    // Once the poll is done, a slice goes on at the next turn again.
    let ran = false;
    slicer.later(() => (ran = true), undefined);
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toBe(true);
  });
});

/** A group of `n` tags of one in-process block, as the bench's counters driver has them. */
function bigGroup(n: number): { group: PollGroup; tags: PolledTag[]; cache: ValueCache; slicer: Slicer } {
  // Each look at the clock takes 0.05 ms of its time: a slice is twenty looks, 64 tags apart.
  const slicer = testSlicer(new WorkClock(0.05));
  const one = device("      - { name: t, address: holding:0 }\n");
  const template = one.tags[0]!;
  const cache = new ValueCache();
  const tags = Array.from({ length: n }, (_, i) => {
    const config = { ...template, name: `t${i}`, address: { ...template.address, offset: i } };
    return new PolledTag(config, MODBUS_PROTOCOL.tag(config, one), cache.acquire(config.name, { builtinType: BuiltinType.UInt16, rate: config.rate }));
  });
  const memory = Uint16Array.from({ length: n }, (_, i) => i);
  const target: PollTarget = {
    name: "in-process",
    values: cache,
    limits: { maxGap: 0, maxCount: {} },
    stopped: false,
    slicer,
    wallNow: () => 1_000,
    mayAttempt: () => true,
    recordLateness: () => undefined,
    read: async (block) => memory.subarray(block.start, block.start + block.count),
    answered: () => undefined,
    cycleDone: () => undefined,
    failed: (err) => {
      throw err;
    },
    noteConfigError: () => undefined,
  };
  return { group: new PollGroup(target, 10, tags), tags, cache, slicer };
}
