// The load side of the counters scenario (issue 3, the OPC UA sampling test): one session, one
// subscription, N monitored items on the bench namespace's UInt64 counters (each counts the
// server's samples of it), sampling 10 ms, queue size 1, Reporting, P Publish requests kept
// outstanding. Runs in the load process (runModuleLoad) on the project's own codec.
//
// What counts: for each item, the counter values of its first and last notification whose
// source timestamp (the sample's time, set by the server) falls in the window. Samples taken =
// last - first; samples expected = (last ts - first ts) / sampling interval. An item passes at
// 99 %. That is what the server sampled; what the subscriber got is counted too: the
// notifications of each item in the window after its first, against the same expectation. It
// falls short of the samples taken when a queue overflows or a Publish is lost, and it decides
// the verdict as well when the queue holds a publishing interval's samples (--queue, else a
// queue of 1 keeps one sample per Publish by design). Where the samples not received went (the
// item's queue, by the Overflow InfoBit; waiting for Publish, by the server's counts) is worked
// out in counters-delivery.ts. Publish responses are parsed only as far as the values need
// (clientHandle, UInt64, status, source timestamp): at 16384 items x 10 publishes/s a full
// decode would make the client the limit.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { decodeDiagnosticInfo, decodeNodeId, decodeVariant } from "../../src/ua/builtin-codec.js";
import { BuiltinType, type NodeId } from "../../src/ua/builtins.js";
import { MonitoringMode, TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { statusCodeName } from "../../src/ua/generated/status-codes.js";
import {
  decodeCreateMonitoredItemsResponse,
  decodeCreateSubscriptionResponse,
  decodeResponseHeader,
  encodeCreateMonitoredItemsRequest,
  encodeCreateSubscriptionRequest,
  encodePublishRequest,
  type ResponseHeader,
  type SubscriptionAcknowledgement,
} from "../../src/ua/generated/types.js";
import { counterId } from "../../src/testing/bench-namespace.js";
import type { UaClientChannel } from "../client/channel.js";
import { readValues, resolveNodes, valueReadOf } from "../client/nodes.js";
import { coreTimes, cpuTimeMicros, memoryOf, runQueueWaitMicros } from "../harness/proc.js";
import { markWindowEdge } from "../harness/window.js";
import { deliveryOf, GapCounts, hasOverflowBit, readServerDelivery, serverDelta, type Delivery, type ServerDelivery } from "./counters-delivery.js";
import { closeAll, openSession } from "./service-load.js";

export interface CountersLoadParams {
  host: string;
  port: number;
  endpointUrl: string;
  items: number;
  publishingIntervalMs: number;
  samplingIntervalMs: number;
  queueSize: number;
  publishesInFlight: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** An item passes with at least this share of the expected samples (0.99). */
  passRatio: number;
  serverPid?: number;
  serverDiagnostics?: boolean;
  /** The CPU the server is pinned to: its busy and steal time over the window are reported. */
  serverCore?: number;
}

/** The subscriber's own process over the window: did it keep up (its wait for its core, its event loop)? */
export interface SubscriberFigures {
  cpuMicros: number;
  /** Its main thread's wait for a CPU (/proc schedstat): other tasks on its core had it. */
  runQueueWaitMicros: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  publishesInFlight: number;
}

export interface CountersLoadResult {
  params: CountersLoadParams;
  windowSeconds: number;
  /** Data change notifications received in the window. */
  notifications: number;
  errors: number;
  errorsTotal: number;
  errorKinds: Record<string, number>;
  channelFaults: number;
  /** runQueueWaitMicros: the main thread's wait for a CPU in the window (another process had its core). */
  server: { cpuMicros: number; runQueueWaitMicros: number; rssBytesAtEnd: number; peakRssBytes: number } | null;
  /** The server's core over the window (with serverCore): CPU time of every task on it, and hypervisor steal, µs. */
  core: { busyMicros: number; stealMicros: number } | null;
  loadCpuMicros: number;
  /** Every item reached passRatio. */
  passed: boolean;
  itemsBelow: number;
  /** Items with two notifications in the window (all of them, when things go well). */
  itemsMeasured: number;
  minRatio: number;
  meanRatio: number;
  /** The queue holds a publishing interval's samples, so every sample should reach the subscriber. */
  receivedCounted: boolean;
  /** Items whose notifications received fell under passRatio of the expected samples; their min and mean share. */
  receivedBelow: number;
  receivedMinRatio: number;
  receivedMeanRatio: number;
  publishResponses: number;
  keepAlives: number;
  /** Where the samples not received went, per item (counters-delivery.ts). */
  delivery: Delivery;
  /** The server's delivery counters over the window (NaN without them). */
  serverDelivery: ServerDelivery;
  subscriber: SubscriberFigures;
  /** The server's sampling lateness over the window (its diagnostics histogram), ms; NaN without one. */
  latenessP50Ms: number;
  latenessP99Ms: number;
  latenessP999Ms: number;
  latenessSlots: number;
  /** The same over the warm-up, from the subscription's creation to the window. */
  warmupLatenessP99Ms: number;
  warmupLatenessP999Ms: number;
  warmupLatenessSlots: number;
  /** The server's GC pauses in the window (its GC pause histogram): count, p99 and max, ms; NaN without one. */
  windowGcPauses: number;
  windowGcP99Ms: number;
  windowGcMaxMs: number;
  /** Slots skipped in the window for being late by more than an interval, and for a poll still running (overruns); NaN without the counts. */
  windowSkipped: number;
  windowOverruns: number;
  /** What the server's stall tracer saw (fieldgate only): late slots of the window with their causes. */
  stalls: string[];
  /** The server's GC pause p99 and max since start, and its event-loop delay p99 and max, ms. */
  gcPauseP99Ms: number;
  gcPauseMaxMs: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

const DATA_CHANGE = ObjectIds.DataChangeNotification_Encoding_DefaultBinary;
const ITEMS_PER_CREATE = 500;
const TWO_32 = 4294967296;
const DIAG = "nsu=urn:fieldgate:diagnostics;s=Sampling.";

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Per-item first and last (value, source time) inside the window, in flat arrays. */
export class Tally {
  readonly firstValue: Float64Array;
  readonly firstTs: Float64Array;
  readonly lastValue: Float64Array;
  readonly lastTs: Float64Array;
  /** Notifications of each item inside the window. */
  readonly received: Uint32Array;
  /** Samples between two notifications of an item in the window that it did not receive. */
  readonly gaps: GapCounts;
  windowStart = Infinity;
  windowEnd = -Infinity;
  notifications = 0;
  publishResponses = 0;
  keepAlives = 0;
  recording = false;
  errors = 0;
  errorsTotal = 0;
  readonly errorKinds: Record<string, number> = {};
  acks: SubscriptionAcknowledgement[] = [];

  constructor(items: number) {
    this.firstValue = new Float64Array(items + 1).fill(NaN);
    this.firstTs = new Float64Array(items + 1).fill(NaN);
    this.lastValue = new Float64Array(items + 1).fill(NaN);
    this.lastTs = new Float64Array(items + 1).fill(NaN);
    this.received = new Uint32Array(items + 1);
    this.gaps = new GapCounts(items);
  }

  error(kind: string): void {
    this.errorsTotal++;
    if (this.recording) this.errors++;
    this.errorKinds[kind] = (this.errorKinds[kind] ?? 0) + 1;
  }

  /** A notification of item `handle`: its counter `value`, source time `ts`, and whether it carries the Overflow InfoBit. */
  record(handle: number, value: number, ts: number, overflow = false): void {
    if (this.recording) this.notifications++;
    if (!(ts >= this.windowStart && ts <= this.windowEnd) || handle >= this.firstTs.length) return;
    if (this.firstTs[handle] !== this.firstTs[handle]) {
      this.firstTs[handle] = ts;
      this.firstValue[handle] = value;
    } else {
      this.gaps.add(handle, this.lastValue[handle], value, overflow);
    }
    this.lastTs[handle] = ts;
    this.lastValue[handle] = value;
    this.received[handle]++;
  }
}

/** Each item's share of its expected samples: as the server took them (the counter) and as notifications received. */
export function itemShares(tally: Tally, items: number, samplingIntervalMs: number, passRatio: number) {
  let below = 0;
  let measured = 0;
  let minRatio = Infinity;
  let sumRatio = 0;
  let receivedBelow = 0;
  let receivedMin = Infinity;
  let receivedSum = 0;
  for (let k = 1; k <= items; k++) {
    const span = tally.lastTs[k] - tally.firstTs[k];
    let ratio = 0;
    let got = 0;
    if (span > 0) {
      measured++;
      ratio = (tally.lastValue[k] - tally.firstValue[k]) / (span / samplingIntervalMs);
      got = (tally.received[k] - 1) / (span / samplingIntervalMs);
    }
    if (!(ratio >= passRatio)) below++;
    if (ratio < minRatio) minRatio = ratio;
    sumRatio += ratio;
    if (!(got >= passRatio)) receivedBelow++;
    if (got < receivedMin) receivedMin = got;
    receivedSum += got;
  }
  return { below, measured, minRatio, sumRatio, receivedBelow, receivedMin, receivedSum };
}

/** Reads a DataValue's counter (UInt64, else any number) and source timestamp into the tally. */
function readItem(r: BinaryReader, handle: number, tally: Tally): void {
  const mask = r.readByte();
  let value = NaN;
  let ts = NaN;
  let overflow = false;
  if (mask & 0x01) {
    if (r.buffer[r.pos] === BuiltinType.UInt64) {
      r.pos++;
      const lo = r.readUInt32();
      value = r.readUInt32() * TWO_32 + lo;
    } else {
      const v = decodeVariant(r).value;
      value = typeof v === "bigint" ? Number(v) : Number(v);
    }
  }
  if (mask & 0x02) {
    const status = r.readUInt32();
    if (status >>> 30 !== 0) tally.error(`notification ${statusCodeName(status)}`);
    overflow = hasOverflowBit(status);
  }
  if (mask & 0x04) ts = r.readDateTime();
  if (mask & 0x10) r.readUInt16();
  if (mask & 0x08) r.readDateTime();
  if (mask & 0x20) r.readUInt16();
  tally.record(handle, value, ts, overflow);
}

interface PublishSummary {
  responseHeader: ResponseHeader;
  subscriptionId: number;
}

/** The minimal PublishResponse parse (Part 4 §5.13.5, §7.21): values go straight to the tally. */
function publishParser(tally: Tally): (r: BinaryReader) => PublishSummary {
  return (r) => {
    const responseHeader = decodeResponseHeader(r);
    const subscriptionId = r.readUInt32();
    const available = r.readInt32();
    r.pos += 4 * Math.max(0, available);
    r.readBoolean(); // moreNotifications
    const sequenceNumber = r.readUInt32();
    r.readDateTime(); // publishTime
    const parts = r.readInt32();
    if (parts <= 0) tally.keepAlives++;
    else tally.acks.push({ subscriptionId, sequenceNumber });
    for (let p = 0; p < parts; p++) {
      const typeId = decodeNodeId(r);
      r.readByte(); // encoding
      const length = r.readInt32();
      const end = r.pos + length;
      if (typeId.namespace === 0 && typeId.value === DATA_CHANGE) {
        const n = r.readInt32();
        for (let i = 0; i < n; i++) readItem(r, r.readUInt32(), tally);
      } else {
        tally.error(`notification type i=${String(typeId.value)}`);
      }
      r.pos = end;
    }
    const results = r.readInt32();
    for (let i = 0; i < results; i++) {
      const s = r.readUInt32();
      if (s >>> 30 !== 0) tally.error(`acknowledgement ${statusCodeName(s)}`);
    }
    const diags = r.readInt32();
    for (let i = 0; i < diags; i++) decodeDiagnosticInfo(r);
    tally.publishResponses++;
    return { responseHeader, subscriptionId };
  };
}

async function publishLoop(ch: UaClientChannel, tally: Tally, running: () => boolean): Promise<void> {
  const parse = publishParser(tally);
  while (running() && !ch.closed) {
    const acks = tally.acks;
    tally.acks = [];
    try {
      await ch.call(
        "Publish",
        ObjectIds.PublishRequest_Encoding_DefaultBinary,
        encodePublishRequest,
        { requestHeader: ch.requestHeader(30_000), subscriptionAcknowledgements: acks },
        ObjectIds.PublishResponse_Encoding_DefaultBinary,
        parse,
      );
    } catch (err) {
      if (running()) tally.error(`Publish: ${(err as Error).message}`);
      return;
    }
  }
}

async function subscribe(ch: UaClientChannel, nodes: readonly NodeId[], p: CountersLoadParams): Promise<number> {
  const created = await ch.call(
    "CreateSubscription",
    ObjectIds.CreateSubscriptionRequest_Encoding_DefaultBinary,
    encodeCreateSubscriptionRequest,
    {
      requestHeader: ch.requestHeader(),
      requestedPublishingInterval: p.publishingIntervalMs,
      requestedLifetimeCount: Math.max(30, Math.ceil(120_000 / p.publishingIntervalMs)),
      requestedMaxKeepAliveCount: 10,
      maxNotificationsPerPublish: 0,
      publishingEnabled: true,
      priority: 0,
    },
    ObjectIds.CreateSubscriptionResponse_Encoding_DefaultBinary,
    decodeCreateSubscriptionResponse,
  );
  for (let from = 0; from < nodes.length; from += ITEMS_PER_CREATE) {
    const batch = nodes.slice(from, from + ITEMS_PER_CREATE);
    const r = await ch.call(
      "CreateMonitoredItems",
      ObjectIds.CreateMonitoredItemsRequest_Encoding_DefaultBinary,
      encodeCreateMonitoredItemsRequest,
      {
        requestHeader: ch.requestHeader(),
        subscriptionId: created.subscriptionId,
        timestampsToReturn: TimestampsToReturn.Both,
        itemsToCreate: batch.map((nodeId, i) => ({
          itemToMonitor: valueReadOf(nodeId),
          monitoringMode: MonitoringMode.Reporting,
          requestedParameters: { clientHandle: from + i + 1, samplingInterval: p.samplingIntervalMs, filter: undefined, queueSize: p.queueSize, discardOldest: true },
        })),
      },
      ObjectIds.CreateMonitoredItemsResponse_Encoding_DefaultBinary,
      decodeCreateMonitoredItemsResponse,
    );
    const bad = (r.results ?? []).find((x) => x.statusCode >>> 30 !== 0);
    if (bad !== undefined) throw new Error(`CreateMonitoredItems: ${statusCodeName(bad.statusCode)}`);
  }
  return created.subscriptionId;
}

/**
 * What fieldgate's stall tracer shows (its diagnostics namespace): the late slots that ran in
 * [from, to] with their causes, GC pauses and event-loop delay; empty and NaN elsewhere.
 */
async function traceOf(ch: UaClientChannel, from: number, to: number): Promise<Pick<CountersLoadResult, "stalls" | "gcPauseP99Ms" | "gcPauseMaxMs" | "loopDelayP99Ms" | "loopDelayMaxMs">> {
  const none = { stalls: [], gcPauseP99Ms: NaN, gcPauseMaxMs: NaN, loopDelayP99Ms: NaN, loopDelayMaxMs: NaN };
  try {
    const names = ["RecentStalls", "GcPauseP99", "GcPauseMax", "EventLoopDelayP99", "EventLoopDelayMax"];
    const nodes = await resolveNodes(ch, names.map((n) => `${DIAG}${n}`));
    const values = await readValues(ch, nodes.map((n) => valueReadOf(n)));
    const stalls = ((values[0]?.value?.value as string[] | null) ?? []).filter((line) => {
      const at = Date.parse(line.slice(0, line.indexOf(": ")));
      return at >= from && at <= to;
    });
    const n = (i: number) => (typeof values[i]?.value?.value === "number" ? (values[i]!.value!.value as number) : NaN);
    return { stalls, gcPauseP99Ms: n(1), gcPauseMaxMs: n(2), loopDelayP99Ms: n(3), loopDelayMaxMs: n(4) };
  } catch {
    return none;
  }
}

/**
 * The server's lateness histogram and its GC pause histogram, counts since start (fieldgate's
 * diagnostics namespace), or undefined elsewhere (gc: undefined from a build without it).
 */
interface Histograms {
  buckets: number[];
  gc: number[] | undefined;
  width: number;
  /** Slots the scheduler skipped since start: late by more than an interval, and busy (a poll still running). */
  skipped: number;
  overruns: number;
}

/** A UInt64 counter (a bigint from our decoder) as a number, NaN when it is not one. */
function uint64(v: unknown): number {
  if (typeof v === "bigint") return Number(v);
  return typeof v === "number" ? v : NaN;
}

async function histograms(ch: UaClientChannel): Promise<Histograms | undefined> {
  try {
    const nodes = await resolveNodes(ch, [`${DIAG}LatenessHistogram`, `${DIAG}LatenessBucketWidth`]);
    const [h, w] = await readValues(ch, nodes.map(valueReadOf));
    const buckets = h?.value?.value;
    if (!Array.isArray(buckets) || typeof w?.value?.value !== "number") return undefined;
    let gc: number[] | undefined;
    let skipped = NaN;
    let overruns = NaN;
    try {
      const [g, sk, ov] = await readValues(ch, (await resolveNodes(ch, [`${DIAG}GcPauseHistogram`, `${DIAG}SkippedSlots`, `${DIAG}Overruns`])).map(valueReadOf));
      if (Array.isArray(g?.value?.value)) gc = g.value.value as number[];
      skipped = uint64(sk?.value?.value);
      overruns = uint64(ov?.value?.value);
    } catch {
      gc = undefined;
    }
    return { buckets: buckets as number[], gc, width: w.value.value, skipped, overruns };
  } catch {
    return undefined;
  }
}

function quantile(delta: readonly number[], width: number, q: number): number {
  const total = delta.reduce((a, b) => a + b, 0);
  if (total === 0) return NaN;
  const target = Math.ceil(q * total);
  let seen = 0;
  for (let i = 0; i < delta.length; i++) {
    seen += delta[i];
    if (seen >= target) return i * width;
  }
  return (delta.length - 1) * width;
}

export async function runCountersLoad(p: CountersLoadParams): Promise<CountersLoadResult> {
  const channels: UaClientChannel[] = [];
  try {
    const ch = await openSession(p, "bench-counters");
    channels.push(ch);
    const texts = Array.from({ length: p.items }, (_, k) => `nsu=urn:fieldgate:bench;i=${counterId(k + 1)}`);
    const nodes = await resolveNodes(ch, texts);
    const tally = new Tally(p.items);
    await subscribe(ch, nodes, p);
    let running = true;
    const loops = Array.from({ length: p.publishesInFlight }, () => publishLoop(ch, tally, () => running));
    // The warm-up's own lateness is reported too: it holds what the window leaves out, the
    // first seconds of a new subscription, while V8 compiles the paths that have become hot.
    const hSub = await histograms(ch);
    await sleep(p.warmupSeconds * 1000);

    const h0 = await histograms(ch);
    const d0 = await readServerDelivery(ch);
    const loopDelay = monitorEventLoopDelay({ resolution: 1 });
    const ownWait0 = runQueueWaitMicros(process.pid);
    loopDelay.enable();
    const t0 = performance.now();
    tally.windowStart = Date.now();
    tally.windowEnd = Infinity;
    tally.recording = true;
    const serverCpu0 = p.serverPid === undefined ? NaN : cpuTimeMicros(p.serverPid);
    const serverWait0 = p.serverPid === undefined ? NaN : runQueueWaitMicros(p.serverPid);
    const core0 = p.serverCore === undefined ? null : coreTimes(p.serverCore);
    const loadCpu0 = process.cpuUsage();
    markWindowEdge(p.serverPid, p.serverDiagnostics);
    await sleep(p.durationSeconds * 1000);
    tally.windowEnd = Date.now();
    const t1 = performance.now();
    const serverCpu1 = p.serverPid === undefined ? NaN : cpuTimeMicros(p.serverPid);
    const serverWait1 = p.serverPid === undefined ? NaN : runQueueWaitMicros(p.serverPid);
    const core1 = p.serverCore === undefined ? null : coreTimes(p.serverCore);
    const loadCpu = process.cpuUsage(loadCpu0);
    const ownWait = runQueueWaitMicros(process.pid) - ownWait0;
    loopDelay.disable();
    markWindowEdge(p.serverPid, p.serverDiagnostics);
    const d1 = await readServerDelivery(ch);
    const memory = p.serverPid === undefined ? null : memoryOf(p.serverPid);
    // Notifications sampled before the window's end may still be on their way.
    await sleep(p.publishingIntervalMs + 200);
    tally.recording = false;
    const h1 = await histograms(ch);
    const trace = await traceOf(ch, tally.windowStart, tally.windowEnd);
    running = false;
    // Waiting requests end with the session (CloseSession answers them); no need to wait them out.
    await Promise.race([Promise.all(loops), sleep(200)]);

    const { below, measured, minRatio, sumRatio, receivedBelow, receivedMin, receivedSum } = itemShares(tally, p.items, p.samplingIntervalMs, p.passRatio);
    const receivedCounted = p.queueSize * p.samplingIntervalMs >= p.publishingIntervalMs;
    let latenessP50Ms = NaN;
    let latenessP99Ms = NaN;
    let latenessP999Ms = NaN;
    let latenessSlots = 0;
    if (h0 !== undefined && h1 !== undefined) {
      const delta = h1.buckets.map((n, i) => n - (h0.buckets[i] ?? 0));
      latenessSlots = delta.reduce((a, b) => a + b, 0);
      latenessP50Ms = quantile(delta, h1.width, 0.5);
      latenessP99Ms = quantile(delta, h1.width, 0.99);
      latenessP999Ms = quantile(delta, h1.width, 0.999);
    }
    let warmupLatenessP99Ms = NaN;
    let warmupLatenessP999Ms = NaN;
    let warmupLatenessSlots = 0;
    if (hSub !== undefined && h0 !== undefined) {
      const delta = h0.buckets.map((n, i) => n - (hSub.buckets[i] ?? 0));
      warmupLatenessSlots = delta.reduce((a, b) => a + b, 0);
      warmupLatenessP99Ms = quantile(delta, h0.width, 0.99);
      warmupLatenessP999Ms = quantile(delta, h0.width, 0.999);
    }
    let windowGcPauses = NaN;
    let windowGcP99Ms = NaN;
    let windowGcMaxMs = NaN;
    if (h0?.gc !== undefined && h1?.gc !== undefined) {
      const before = h0.gc;
      const delta = h1.gc.map((n, i) => n - (before[i] ?? 0));
      windowGcPauses = delta.reduce((a, b) => a + b, 0);
      windowGcP99Ms = windowGcPauses === 0 ? 0 : quantile(delta, h1.width, 0.99);
      let top = delta.length - 1;
      while (top > 0 && delta[top] === 0) top--;
      windowGcMaxMs = windowGcPauses === 0 ? 0 : top * h1.width;
    }
    // Slots not run at all: their lateness is in no histogram, and their samples are missing.
    const windowSkipped = h0 !== undefined && h1 !== undefined ? h1.skipped - h0.skipped : NaN;
    const windowOverruns = h0 !== undefined && h1 !== undefined ? h1.overruns - h0.overruns : NaN;
    const windowSeconds = (t1 - t0) / 1000;
    return {
      params: p,
      windowSeconds,
      notifications: tally.notifications,
      errors: tally.errors,
      errorsTotal: tally.errorsTotal,
      errorKinds: tally.errorKinds,
      channelFaults: ch.closed ? 1 : 0,
      server: memory === null ? null : { cpuMicros: serverCpu1 - serverCpu0, runQueueWaitMicros: serverWait1 - serverWait0, rssBytesAtEnd: memory.rss, peakRssBytes: memory.peakRss },
      core: core0 === null || core1 === null ? null : { busyMicros: core1.busyMicros - core0.busyMicros, stealMicros: core1.stealMicros - core0.stealMicros },
      loadCpuMicros: loadCpu.user + loadCpu.system,
      passed: below === 0 && (!receivedCounted || receivedBelow === 0),
      itemsBelow: below,
      itemsMeasured: measured,
      minRatio: p.items > 0 ? minRatio : NaN,
      meanRatio: p.items > 0 ? sumRatio / p.items : NaN,
      receivedCounted,
      receivedBelow,
      receivedMinRatio: p.items > 0 ? receivedMin : NaN,
      receivedMeanRatio: p.items > 0 ? receivedSum / p.items : NaN,
      publishResponses: tally.publishResponses,
      keepAlives: tally.keepAlives,
      delivery: deliveryOf(tally, p.items, p.samplingIntervalMs, p.queueSize),
      serverDelivery: serverDelta(d0, d1),
      subscriber: {
        cpuMicros: loadCpu.user + loadCpu.system,
        runQueueWaitMicros: ownWait,
        loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
        loopDelayMaxMs: loopDelay.max / 1e6,
        publishesInFlight: p.publishesInFlight,
      },
      latenessP50Ms,
      latenessP99Ms,
      latenessP999Ms,
      latenessSlots,
      warmupLatenessP99Ms,
      warmupLatenessP999Ms,
      warmupLatenessSlots,
      windowGcPauses,
      windowGcP99Ms,
      windowGcMaxMs,
      windowSkipped,
      windowOverruns,
      ...trace,
    };
  } finally {
    await closeAll(channels);
  }
}
