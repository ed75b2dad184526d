// The bench namespace (ids, types, counting samples), the diagnostics namespace, the scheduler
// totals they read, and the subscription keys of gateway.yaml.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AttributeIds as UaAttributeIds, ClientSession, MonitoringMode, OPCUAClient, TimestampsToReturn, type DataValue } from "node-opcua-client";
import { counterId, counterNodeId } from "../../src/testing/bench-namespace.js";
import { gatewaySchema } from "../../src/config/gateway-config.js";
import { loadGatewayConfig, validateYaml } from "../../src/config/load.js";
import { FakeClock } from "../../src/sampling/clock.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";
import { FieldgateServer } from "../../src/server/server.js";
import { DIAGNOSTICS_NAMESPACE_URI } from "../../src/subscriptions/diagnostics.js";
import { BuiltinType, numericNodeId } from "../../src/ua/builtins.js";
import { AttributeIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { Fixture, COUNTER } from "./fixture.js";
import { newClient, waitFor } from "./helpers.js";

function issues(yaml: string): string[] {
  return validateYaml(gatewaySchema, yaml, "gateway.yaml").issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`);
}

describe("gateway.yaml subscription keys", () => {
  it("takes limits and the bench namespace, and refuses inconsistent ones where they are written", () => {
    expect(issues("server:\n  benchNamespace: 100\nlimits:\n  minSamplingInterval: 1ms\n  maxPublishRequestsPerSession: 4\n")).toEqual([]);
    expect(issues("server:\n  benchNamespace: 100\ndevices: ./devices.yaml\n")).toEqual([
      "2:19 server.benchNamespace: expected 0 when a device map is given (devices): the bench namespace is for benchmark configs without devices",
    ]);
    expect(issues("limits:\n  minPublishingInterval: 2h\n")).toEqual(['2:26 limits.minPublishingInterval: expected a duration between 1ms and 1h (like 500ms, 10s, 5m, 1h), got "2h"']);
    expect(issues("limits:\n  maxPublishingInterval: 5ms\n")).toEqual([
      "2:26 limits.maxPublishingInterval: expected at least minPublishingInterval (10ms), got 5ms",
    ]);
    expect(issues("limits:\n  maxSubscriptionsPerSession: 600\n")).toEqual([
      "2:31 limits.maxSubscriptionsPerSession: expected at most maxSubscriptions (500), got 600",
    ]);
    expect(issues("limits:\n  maxKeepAliveCount: 6000\n")).toEqual([
      "2:22 limits.maxKeepAliveCount: expected maxLifetimeCount (15000) to be at least 3 times maxKeepAliveCount (6000)",
    ]);
  });
});

describe("bench namespace ids", () => {
  it("numbers counters 1..1000 then after the BenchmarkValues", async () => {
    expect([1, 1000, 1001, 16384].map(counterId)).toEqual([1, 1000, 1101, 16484]);
    const f = await Fixture.start({}, 1200);
    expect(f.bench.counterOf(counterNodeId(1101 - 100))).toBe(1001);
    expect(f.bench.counterOf(numericNodeId(1050, 1))).toBe(0); // a BenchmarkValue
    expect(f.bench.counterOf(counterNodeId(1200))).toBe(1200);
    expect(f.bench.counterOf(counterNodeId(1301))).toBe(0);
  });

  it("counts its polls, not reads: polled every 10 ms from the start, as a device is", async () => {
    const f = await Fixture.start();
    const read = () => {
      const out: DataValue[] = [];
      f.registry.managerAt(1)!.read({ sessionId: "", role: "viewer", now: 0 }, [{ nodeId: COUNTER(1), attributeId: AttributeIds.Value }], out as never);
      return out[0] as unknown as { value?: { dataType: number; value: unknown }; statusCode?: number };
    };
    expect(read().statusCode).toBe(StatusCodes.BadWaitingForInitialData);
    // Polls at 0, 10, ..., 50 ms.
    await f.now();
    await f.advance(50);
    expect(read().value).toMatchObject({ dataType: BuiltinType.UInt64, value: 6n });
    expect(read().value).toMatchObject({ value: 6n });
    expect(f.bench.count(1)).toBe(6);
  });
});

describe("scheduler totals", () => {
  it("keep counting after a group is cancelled, and expose the lateness histogram", () => {
    const clock = new FakeClock(0);
    const s = new DeadlineScheduler(clock);
    const g = s.every(10, { sample: () => undefined });
    clock.advance(20); // slots 0, 10, 20
    clock.stall(25); // slot 30 skipped, 40 runs 5 ms late
    s.cancel(g);
    expect(s.totals).toEqual({ samples: 4, skipped: 1, overruns: 0 });
    const h = s.latenessHistogram();
    expect(h[0]).toBe(3);
    expect(h[50]).toBe(1);
    expect(s.latencyQuantile(0.99)).toBe(5);
    s.stop();
  });
});

describe("a gateway with the bench namespace", { timeout: 30_000 }, () => {
  let dir: string;
  let server: FieldgateServer;
  let client: OPCUAClient;
  let session: ClientSession;
  let diagNs = -1;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "fieldgate-bench-ns-"));
    const file = join(dir, "gateway.yaml");
    writeFileSync(file, "server:\n  host: 127.0.0.1\n  port: 0\n  benchNamespace: 20\n  testNamespace: false\ndataDir: ./data\nsecurity:\n  securityPolicies: [None]\n");
    server = new FieldgateServer(loadGatewayConfig(file));
    await server.start();
    client = newClient("fieldgate-bench-ns");
    await client.connect(`opc.tcp://127.0.0.1:${server.port}`);
    session = await client.createSession();
  });

  afterAll(async () => {
    await session?.close();
    await client?.disconnect();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("puts the bench namespace at index 1 and diagnostics after it", async () => {
    const ns = (await session.read({ nodeId: "i=2255", attributeId: UaAttributeIds.Value })).value.value as string[];
    expect(ns.indexOf("urn:fieldgate:bench")).toBe(1);
    diagNs = ns.indexOf(DIAGNOSTICS_NAMESPACE_URI);
    expect(diagNs).toBeGreaterThan(1);
    const names = await session.read([
      { nodeId: "ns=1;i=1", attributeId: UaAttributeIds.BrowseName },
      { nodeId: "ns=1;i=1001", attributeId: UaAttributeIds.BrowseName },
      { nodeId: "ns=1;i=1100", attributeId: UaAttributeIds.BrowseName },
    ]);
    expect(names.map((n) => (n.value.value as { name: string }).name)).toEqual(["Counter1", "BenchmarkValue1001", "BenchmarkValue1100"]);
    const w = await session.write({ nodeId: "ns=1;i=1001", attributeId: UaAttributeIds.Value, value: { value: { dataType: "Int32", value: 17 } } });
    expect(w.name).toBe("Good");
    expect((await session.read({ nodeId: "ns=1;i=1001", attributeId: UaAttributeIds.Value })).value.value).toBe(17);
  });

  it("counts each sample of a counter at 10 ms, seen by node-opcua through a subscription", async () => {
    const sub = await session.createSubscription2({ requestedPublishingInterval: 100, requestedMaxKeepAliveCount: 10, requestedLifetimeCount: 100, publishingEnabled: true, maxNotificationsPerPublish: 0, priority: 1 });
    const last = new Map<number, bigint>();
    for (let k = 1; k <= 20; k++) {
      const item = await sub.monitor({ nodeId: `ns=1;i=${k}`, attributeId: UaAttributeIds.Value }, { samplingInterval: 10, queueSize: 1, discardOldest: true }, TimestampsToReturn.Both, MonitoringMode.Reporting);
      item.on("changed", (dv: DataValue) => {
        const v = dv.value.value as [number, number] | bigint;
        // node-opcua gives UInt64 as [high, low]
        last.set(k, typeof v === "bigint" ? v : BigInt(v[0]) * 2n ** 32n + BigInt(v[1]));
      });
    }
    await waitFor(() => last.size === 20 && [...last.values()].every((v) => v >= 20n), "every counter to pass 20 samples");
    const diag = await session.read([
      { nodeId: `ns=${diagNs};s=Subscriptions.MonitoredItems`, attributeId: UaAttributeIds.Value },
      { nodeId: `ns=${diagNs};s=Sampling.Samples`, attributeId: UaAttributeIds.Value },
    ]);
    expect(diag.map((d) => d.statusCode.name)).toEqual(["Good", "Good"]);
    await sub.terminate();
  });

  it("shows the event-loop delay, GC pauses, late slots and poll groups in the diagnostics namespace", async () => {
    // node-opcua gives UInt64 as [high, low].
    const u64 = (v: unknown) => (v as [number, number])[0] * 2 ** 32 + (v as [number, number])[1];
    // The namespace refreshes once a second: wait for a refresh that saw the bench devices poll.
    const read = async (names: string[]) =>
      (await session.read(names.map((n) => ({ nodeId: `ns=${diagNs};s=${n}`, attributeId: UaAttributeIds.Value })))).map((d) => d.value.value as unknown);
    // A garbage collection the trace must count (the gateway runs in this process).
    setFlagsFromString("--expose-gc");
    (runInNewContext("gc") as () => void)();
    const deadline = Date.now() + 10_000;
    while (((await read(["Sampling.PollGroups"]))[0] as string[] | null)?.length !== 2 || u64((await read(["Sampling.GcPauses"]))[0]) === 0) {
      if (Date.now() > deadline) throw new Error("timed out waiting for the poll groups to show");
      await new Promise((r) => setTimeout(r, 100));
    }
    const [p99, max, gcs, gcHistogram, stalls, recent, groups, skipped, items] = await read([
      "Sampling.EventLoopDelayP99",
      "Sampling.EventLoopDelayMax",
      "Sampling.GcPauses",
      "Sampling.GcPauseHistogram",
      "Sampling.Stalls",
      "Sampling.RecentStalls",
      "Sampling.PollGroups",
      "Subscriptions.SkippedSamples",
      "Subscriptions.ItemsMissingSamples",
    ]);
    expect(typeof p99).toBe("number");
    expect(max as number).toBeGreaterThanOrEqual(p99 as number);
    expect(max as number).toBeGreaterThan(0);
    expect(u64(gcs)).toBeGreaterThan(0);
    // Every pause counted is in one bucket of the histogram (both refreshed together).
    expect(Array.from(gcHistogram as Uint32Array).reduce((a, b) => a + b, 0)).toBe(u64(gcs));
    // Each stall counted is one listed, up to the last 32.
    expect(((recent as string[] | null) ?? []).length).toBe(Math.min(32, u64(stalls)));
    for (const line of (recent as string[] | null) ?? []) expect(line).toMatch(/ ran \d+\.\d ms late; the loop was busy with /);
    // Counters and Values, both polled every 10 ms (the fastest sampling interval granted).
    expect((groups as string[]).map((g) => g.split(":")[0])).toEqual(["Counters @10 ms", "Values @10 ms"]);
    expect((groups as string[])[0]).toMatch(/^Counters @10 ms: \d+ slots run, \d+ skipped late, \d+ skipped busy, 0 backing off$/);
    // Every item missing samples is counted, and what they missed adds up to at least one each.
    expect(u64(skipped)).toBeGreaterThanOrEqual(items as number);
  });
});
