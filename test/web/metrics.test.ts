// /metrics in the Prometheus text format (issue 15), read by a parser nobody here wrote
// (parse-prometheus-text-format, a port of prom2json's), and checked against the diagnostics
// nodes a node-opcua-client reads: each counter lies between a read of its node before the
// scrape and one after the node's next refresh; gauges that do not move are equal.
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AttributeIds, OPCUAClient, TimestampsToReturn, type ClientSession, type ClientSubscription } from "node-opcua-client";
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { basic, fetchPage, startWebGateway, type WebGateway } from "./helpers.js";

interface Family {
  name: string;
  help: string;
  type: string;
  metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string; sum?: string }[];
}

let g: WebGateway;
let client: OPCUAClient;
let session: ClientSession;
let subscription: ClientSubscription;
let diagNs: number;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-metrics-"));
  writeFileSync(
    join(dir, "devices.yaml"),
    "devices:\n  - name: sim\n    driver: simulator\n    rate: 200ms\n    tags:\n      - { name: ramp, address: input:0 }\n      - { name: temp, address: input:2, type: float32, history: true }\n",
  );
  g = await startWebGateway({ dir, extraYaml: "devices: ./devices.yaml\nhistory:\n  flushInterval: 200ms\n" });
  client = OPCUAClient.create({ endpointMustExist: false, connectionStrategy: { maxRetry: 0 } });
  await client.connect(g.opcUrl);
  session = await client.createSession();
  const ns = (await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value as string[];
  diagNs = ns.indexOf("urn:fieldgate:diagnostics");
  subscription = await session.createSubscription2({ requestedPublishingInterval: 100, requestedMaxKeepAliveCount: 10, requestedLifetimeCount: 100, publishingEnabled: true });
  for (const tag of ["ramp", "temp"]) {
    await subscription.monitor({ nodeId: `ns=1;s=sim.${tag}`, attributeId: AttributeIds.Value }, { samplingInterval: 200, queueSize: 1, discardOldest: true }, TimestampsToReturn.Both);
  }
  // Some polls, notifications and history first.
  await new Promise((r) => setTimeout(r, 1500));
}, 40_000);

afterAll(async () => {
  await subscription?.terminate();
  await session?.close();
  await client?.disconnect();
  await g?.stop();
});

async function scrape(): Promise<Map<string, Family>> {
  const r = await fetchPage(g, "/metrics", { headers: { authorization: basic("viewer") } });
  expect(r.status).toBe(200);
  expect(r.headers["content-type"]).toBe("text/plain; version=0.0.4; charset=utf-8");
  const families = parsePrometheusTextFormat(r.body) as Family[];
  return new Map(families.map((f) => [f.name, f]));
}

async function readNumbers(nodeIds: string[]): Promise<number[]> {
  const dvs = await session.read(nodeIds.map((nodeId) => ({ nodeId, attributeId: AttributeIds.Value })));
  return dvs.map((dv, i) => {
    expect(dv.statusCode.name, nodeIds[i]).toBe("Good");
    return uaNumber(dv.value.value);
  });
}

/** node-opcua gives a UInt64 as [high, low] 32-bit halves. */
function uaNumber(v: unknown): number {
  return Array.isArray(v) ? Number(v[0]) * 2 ** 32 + Number(v[1]) : Number(v);
}

/** System/HistoryStored, 0 until the System object's first sample (it samples every 10 s). */
async function historyStored(): Promise<number> {
  const dv = await session.read({ nodeId: "ns=1;s=System/HistoryStored", attributeId: AttributeIds.Value });
  return dv.statusCode.name === "Good" ? uaNumber(dv.value.value) : 0;
}

function value(f: Map<string, Family>, name: string, labels?: Record<string, string>): number {
  const fam = f.get(name);
  expect(fam, name).toBeDefined();
  const m = fam!.metrics.find((x) => labels === undefined || Object.entries(labels).every(([k, v]) => x.labels?.[k] === v));
  expect(m, `${name} ${JSON.stringify(labels)}`).toBeDefined();
  return Number(m!.value);
}

describe("/metrics", () => {
  it("names, types and units follow Prometheus's conventions", async () => {
    const f = await scrape();
    for (const fam of f.values()) {
      expect(fam.name).toMatch(/^(fieldgate|process|nodejs)_[a-z0-9_]+$/);
      expect(fam.help.length, fam.name).toBeGreaterThan(10);
      if (fam.type === "COUNTER") expect(fam.name, "counters end in _total").toMatch(/_total$/);
      else expect(fam.name, `${fam.type} ${fam.name}`).not.toMatch(/_total$/);
      // Base units only: seconds and bytes, never ms or KiB.
      expect(fam.name).not.toMatch(/_(ms|milliseconds|kb|kib|mb|mib)(_|$)/);
    }
    expect(f.get("process_resident_memory_bytes")!.type).toBe("GAUGE");
    expect(value(f, "process_resident_memory_bytes")).toBeGreaterThan(10e6);
    expect(value(f, "process_cpu_seconds_total")).toBeGreaterThan(0);
    expect(value(f, "fieldgate_build_info", { version: "0.1.0" })).toBe(1);
    expect(value(f, "fieldgate_device_up", { device: "sim" })).toBe(1);
    expect(value(f, "fieldgate_device_state", { device: "sim", state: "ok" })).toBe(1);
    expect(value(f, "fieldgate_device_state", { device: "sim", state: "failing" })).toBe(0);
    expect(value(f, "fieldgate_device_round_trip_seconds", { device: "sim" })).toBeLessThan(1);
    // The default transport.memoryLimit (32 MiB) in 64 KiB buffers.
    expect(value(f, "fieldgate_buffer_pool_buffers")).toBe(512);
    expect(value(f, "fieldgate_buffer_pool_buffer_size_bytes")).toBe(65536);
    expect(value(f, "fieldgate_buffer_pool_buffers_in_use")).toBeLessThanOrEqual(512);
  });

  it("the poll lateness histogram is a histogram: cumulative buckets in seconds, +Inf equal to the count", async () => {
    const f = await scrape();
    const h = f.get("fieldgate_poll_lateness_seconds")!;
    expect(h.type).toBe("HISTOGRAM");
    const m = h.metrics[0]!;
    // (An object's integer-like keys, "1", come first: put them in order of their bounds.)
    const les = Object.keys(m.buckets!).sort((a, b) => (a === "+Inf" ? Infinity : Number(a)) - (b === "+Inf" ? Infinity : Number(b)));
    expect(les).toEqual(["0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "+Inf"]);
    const counts = les.map((le) => Number(m.buckets![le]));
    for (let i = 1; i < counts.length; i++) expect(counts[i]).toBeGreaterThanOrEqual(counts[i - 1]!);
    expect(counts.at(-1)).toBe(Number(m.count));
    // Two tags at 200 ms for over a second: some polls.
    expect(Number(m.count)).toBeGreaterThan(3);
    expect(Number(m.sum)).toBeGreaterThanOrEqual(0);
  });

  it("agrees with the diagnostics nodes", async () => {
    const d = (name: string) => `ns=${diagNs};s=${name}`;
    const counters = [
      ["fieldgate_opcua_notifications_total", d("Subscriptions.Notifications")],
      ["fieldgate_opcua_notification_messages_total", d("Subscriptions.NotificationMessages")],
      ["fieldgate_opcua_keep_alives_total", d("Subscriptions.KeepAlives")],
      ["fieldgate_scheduler_slots_total", d("Sampling.Samples")],
      ["fieldgate_scheduler_skipped_slots_total", d("Sampling.SkippedSlots")],
      ["fieldgate_opcua_queue_overflows_total", d("Subscriptions.QueueOverflows")],
      ["fieldgate_opcua_late_queue_overflows_total", d("Subscriptions.LateQueueOverflows")],
      // Seconds against the node's ms.
      ["fieldgate_opcua_late_publish_seconds_total", d("Subscriptions.LatePublishTime")],
    ] as const;
    const deviceCounters = [
      ["fieldgate_device_requests_total", "ns=1;s=sim/Diagnostics/Requests"],
      ["fieldgate_device_errors_total", "ns=1;s=sim/Diagnostics/Errors"],
      ["fieldgate_device_mismatched_replies_total", "ns=1;s=sim/Diagnostics/MismatchedReplies"],
    ] as const;
    const gauges = [
      ["fieldgate_opcua_subscriptions", d("Subscriptions.Subscriptions")],
      ["fieldgate_opcua_monitored_items", d("Subscriptions.MonitoredItems")],
    ] as const;
    const all = [...counters, ...deviceCounters, ...gauges];
    const before = await readNumbers(all.map(([, n]) => n));
    const history0 = await historyStored();
    const f = await scrape();
    // The diagnostics namespace refreshes once a second, device diagnostics at every poll (some
    // slack for a loaded machine).
    await new Promise((r) => setTimeout(r, 2200));
    const after = await readNumbers(all.map(([, n]) => n));
    all.forEach(([metric], i) => {
      const labels = metric.startsWith("fieldgate_device_") ? { device: "sim" } : undefined;
      // A time in seconds against the node's ms, both to a µs (the division is not exact).
      const seconds = metric.endsWith("_seconds_total");
      const us = (ms: number) => (seconds ? Math.round(ms * 1000) : ms);
      const m = us(value(f, metric, labels) * (seconds ? 1000 : 1));
      expect(m, `${metric} >= its node before`).toBeGreaterThanOrEqual(us(before[i]!));
      expect(m, `${metric} <= its node after`).toBeLessThanOrEqual(us(after[i]!));
    });
    expect(value(f, "fieldgate_opcua_subscriptions")).toBe(1);
    expect(value(f, "fieldgate_opcua_monitored_items")).toBe(2);
    expect(value(f, "fieldgate_opcua_sessions")).toBe(1);
    expect(value(f, "fieldgate_opcua_notifications_total")).toBeGreaterThan(0);
    expect(value(f, "fieldgate_device_requests_total", { device: "sim" })).toBeGreaterThan(3);
    // History: the System object samples every 10 s; wait for its next sample to bracket the metric.
    const stored = value(f, "fieldgate_history_samples_stored_total");
    expect(stored).toBeGreaterThanOrEqual(history0);
    const end = Date.now() + 12_000;
    let history1 = history0;
    while (history1 < stored && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 250));
      history1 = await historyStored();
    }
    expect(stored).toBeLessThanOrEqual(history1);
    expect(stored).toBeGreaterThan(0);
    expect(value(f, "fieldgate_history_database_bytes")).toBeGreaterThan(0);
    expect(value(f, "fieldgate_history_writing")).toBe(1);
  }, 30_000);

  it("needs a login: a scraper uses Basic credentials of a gateway user", async () => {
    expect((await fetchPage(g, "/metrics")).status).toBe(401);
    expect((await fetchPage(g, "/metrics", { headers: { authorization: `Basic ${Buffer.from("viewer:wrong").toString("base64")}` } })).status).toBe(401);
  });
});
