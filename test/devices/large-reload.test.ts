// A reload of a large map keeps serving (DESIGN: the event loop is a shared resource): 20,000
// tags in 20 devices, every other device changed (one tag renamed), reloaded while a monitored
// item of an unchanged tag of a changed device, and one of an unchanged device, are fed by their
// polls. The runtime's slices are measured on a WorkClock (every look at it takes the same
// time), so the slices, the turns of the loop and the polls between them are counted, the same
// on every machine.
import { afterEach, describe, expect, it } from "vitest";
import { builtinDrivers } from "../../drivers/builtin.js";
import { DeviceNamespace } from "../../src/address-space/device-namespace.js";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import { Ns0Manager } from "../../src/address-space/ns0-manager.js";
import type { DeviceConfig, DeviceMap } from "../../src/config/device-map.js";
import { DeviceRuntime } from "../../src/devices/device-runtime.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { SubscriptionEngine } from "../../src/subscriptions/engine.js";
import { createMonitoredItems } from "../../src/subscriptions/items.js";
import type { MonitoredItem } from "../../src/subscriptions/monitored-item.js";
import { benchDeviceMap } from "../../src/testing/bench-namespace.js";
import { stringNodeId } from "../../src/ua/builtins.js";
import { MonitoringMode, TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { AttributeIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { ValueCache } from "../../src/values/value-cache.js";
import { testSlicer, WorkClock } from "../helpers/slicer.js";

const DEVICES = 20;
const TAGS = 1000;
/** The poll rate of every tag, ms of the WorkClock. */
const RATE = 10;

/** DEVICES bench devices of TAGS counters each; `renamed`: the last tag of every even device is named anew. */
function bigMap(renamed: boolean): DeviceMap {
  const counters = benchDeviceMap(DEVICES * TAGS, RATE, builtinDrivers()).devices[0]!;
  const devices: DeviceConfig[] = [];
  for (let d = 0; d < DEVICES; d++) {
    const tags = counters.tags.slice(d * TAGS, (d + 1) * TAGS).map((t, i) => (renamed && d % 2 === 0 && i === TAGS - 1 ? { ...t, name: `${t.name}-renamed` } : t));
    devices.push({ ...counters, name: `d${d}`, tags });
  }
  return { buses: {}, devices };
}

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

describe("a reload of a large map", () => {
  it("gives the loop many turns, and unchanged tags' monitored items keep getting values through it", async () => {
    // Each look at the clock takes 0.01 ms: a slice of the test budget is a hundred looks.
    const clock = new WorkClock(0.01);
    const scheduler = new DeadlineScheduler(clock);
    const slicer = testSlicer(clock, scheduler);
    const registry = new NamespaceRegistry();
    new Ns0Manager(registry, { applicationUri: "urn:x", buildInfo: { buildDate: 0 } });
    const values = new ValueCache();
    const devices = new DeviceNamespace(registry, { values });
    const runtime = new DeviceRuntime({ scheduler, clock, nodes: devices, values, drivers: builtinDrivers(), slicer });
    const engine = new SubscriptionEngine({ registry, scheduler, clock, slicer, limits: { minSamplingInterval: RATE, maxMonitoredItemsQueueSize: 100_000 } });
    stop = async () => {
      engine.stop();
      await runtime.stop();
      scheduler.stop();
    };
    /** Turns of the event loop, each taking 0.05 ms of the WorkClock and firing the timers that came due meanwhile (the polls). */
    const turnsUntil = async (done: () => boolean): Promise<number> => {
      let turns = 0;
      while (!done()) {
        await new Promise((resolve) => setImmediate(resolve));
        clock.pass(0.05);
        turns++;
      }
      return turns;
    };
    let started = false;
    void runtime.apply(bigMap(false)).then(() => void (started = true));
    await turnsUntil(() => started);

    const session = { sessionId: stringNodeId("s", 0), userId: "" };
    const sub = engine.createSubscription(session, { publishingInterval: 1000, maxKeepAliveCount: 10, lifetimeCount: 1_000_000, maxNotificationsPerPublish: 0, priority: 0 }, true).subscriptionId;
    const monitor = (tag: string): MonitoredItem => {
      const [r] = createMonitoredItems(engine, session, sub, TimestampsToReturn.Both, [
        {
          itemToMonitor: { nodeId: stringNodeId(tag, devices.namespaceIndex), attributeId: AttributeIds.Value, dataEncoding: { namespaceIndex: 0, name: "" } },
          monitoringMode: MonitoringMode.Reporting,
          requestedParameters: { clientHandle: 1, samplingInterval: RATE, queueSize: 100_000, discardOldest: true },
        },
      ]);
      expect(r!.statusCode).toBe(StatusCodes.Good);
      return engine.subscriptions.get(sub)!.items.get(r!.monitoredItemId)!;
    };
    // The last device is changed (even) and restarted last; the one before it stays as it was.
    const inChanged = monitor(`d${DEVICES - 2}.Counter${(DEVICES - 2) * TAGS + 1}`);
    const inUnchanged = monitor(`d${DEVICES - 1}.Counter${(DEVICES - 1) * TAGS + 1}`);
    expect(inChanged.fed && inUnchanged.fed).toBe(true);
    await turnsUntil(() => inChanged.count > 2 && inUnchanged.count > 2);

    const before = { changed: inChanged.count, unchanged: inUnchanged.count, t: clock.t };
    let reloaded = false;
    const report = runtime.apply(bigMap(true)).then((r) => {
      reloaded = true;
      return r;
    });
    const turns = await turnsUntil(() => reloaded);
    const { changed, unchanged } = await report;
    expect(changed).toEqual(Array.from({ length: DEVICES / 2 }, (_, i) => `d${2 * i}`));
    expect(unchanged).toHaveLength(DEVICES / 2);

    // The reload went in many slices, with the loop's turns between them.
    expect(turns).toBeGreaterThan(50);
    // Polls due meanwhile, by the WorkClock: both items got a value from nearly every one (a slot
    // can be skipped when a slice runs past it; the changed device's item misses those of its own
    // device's restart). Were every changed device stopped before any started again, the changed
    // device's item would miss the polls of the others' starts too: half of them here.
    const due = Math.floor((clock.t - before.t) / RATE);
    expect(due).toBeGreaterThan(10);
    expect(inUnchanged.count - before.unchanged).toBeGreaterThan(due * 0.8);
    expect(inChanged.count - before.changed).toBeGreaterThan(due * 0.8);
  });
});
