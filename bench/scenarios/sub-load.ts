// The load side of the sub scenario: one subscriber session with one subscription monitoring
// `items` variables (sampling interval 0, a queue per item), kept fed with Publish requests that
// acknowledge what came back; and one writer session whose pipelined Writes change every one of
// those variables on each request. The figure is data-change notifications received per second;
// latency is from the notification's server timestamp to its arrival (ms resolution, one clock).
// Part 4 §5.13 (subscriptions), §5.12 (monitored items).
import type { NodeId } from "../../src/ua/builtins.js";
import { MonitoringMode, TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { statusCodeName } from "../../src/ua/generated/status-codes.js";
import {
  decodeCreateMonitoredItemsResponse,
  decodeCreateSubscriptionResponse,
  decodePublishResponse,
  encodeCreateMonitoredItemsRequest,
  encodeCreateSubscriptionRequest,
  encodePublishRequest,
  type DataChangeNotification,
  type SubscriptionAcknowledgement,
} from "../../src/ua/generated/types.js";
import type { UaClientChannel } from "../client/channel.js";
import { Histogram } from "../client/histogram.js";
import { resolveNodes, valueReadOf } from "../client/nodes.js";
import { ServicePipeline, isGood } from "../client/service-pipeline.js";
import { writeShape } from "../client/shapes.js";
import type { WindowLoadResult } from "../harness/case.js";
import { cpuTimeMicros, memoryOf } from "../harness/proc.js";
import { markWindowEdge } from "../harness/window.js";
import { closeAll, openSession } from "./service-load.js";

export interface SubLoadParams {
  host: string;
  port: number;
  endpointUrl: string;
  /** Monitored variables (Int32, writable), as node texts; round robin up to `items`. */
  nodes: string[];
  items: number;
  /** Writes in flight on the writer session. */
  writesInFlight: number;
  publishingIntervalMs: number;
  /** Queue per monitored item (Part 4 §5.12.1.5): large enough that no change is discarded. */
  queueSize: number;
  /** Publish requests kept outstanding (Part 4 §5.13.5). */
  publishesInFlight: number;
  warmupSeconds: number;
  durationSeconds: number;
  serverPid?: number;
  serverDiagnostics?: boolean;
}

export interface SubLoadResult extends WindowLoadResult {
  params: SubLoadParams;
  /** Write requests completed in the window (each changes every item). */
  writes: number;
  publishResponses: number;
  keepAlives: number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const DATA_CHANGE = ObjectIds.DataChangeNotification_Encoding_DefaultBinary;

class Subscriber {
  readonly latency = new Histogram();
  recording = false;
  running = true;
  notifications = 0;
  publishResponses = 0;
  keepAlives = 0;
  errors = 0;
  errorsTotal = 0;
  readonly errorKinds: Record<string, number> = {};
  private acks: SubscriptionAcknowledgement[] = [];
  private lastSequence = 0;
  private loops: Promise<void>[] = [];

  constructor(
    private readonly channel: UaClientChannel,
    readonly subscriptionId: number,
  ) {}

  error(kind: string): void {
    this.errorsTotal++;
    if (this.recording) this.errors++;
    this.errorKinds[kind] = (this.errorKinds[kind] ?? 0) + 1;
  }

  start(inFlight: number): void {
    for (let i = 0; i < inFlight; i++) this.loops.push(this.loop());
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.race([Promise.all(this.loops), sleep(5000)]);
  }

  private async loop(): Promise<void> {
    while (this.running && !this.channel.closed) {
      const acks = this.acks;
      this.acks = [];
      let res: ReturnType<typeof decodePublishResponse>;
      try {
        res = await this.channel.call(
          "Publish",
          ObjectIds.PublishRequest_Encoding_DefaultBinary,
          encodePublishRequest,
          { requestHeader: this.channel.requestHeader(30_000), subscriptionAcknowledgements: acks },
          ObjectIds.PublishResponse_Encoding_DefaultBinary,
          decodePublishResponse,
        );
      } catch (err) {
        if (this.running) this.error(`Publish: ${(err as Error).message}`);
        return;
      }
      const arrived = Date.now();
      this.publishResponses++;
      for (const r of res.results ?? []) if (!isGood(r)) this.error(`acknowledgement ${statusCodeName(r)}`);
      const msg = res.notificationMessage;
      const data = msg.notificationData ?? [];
      if (data.length === 0) {
        this.keepAlives++;
        continue;
      }
      // Part 4 §5.13.1.1: sequence numbers of notification messages go up by one.
      if (this.lastSequence !== 0 && msg.sequenceNumber !== this.lastSequence + 1) this.error(`sequence gap ${this.lastSequence} -> ${msg.sequenceNumber}`);
      this.lastSequence = msg.sequenceNumber;
      this.acks.push({ subscriptionId: res.subscriptionId, sequenceNumber: msg.sequenceNumber });
      for (const eo of data) {
        if (eo.typeId.namespace !== 0 || eo.typeId.value !== DATA_CHANGE) {
          this.error(`notification type i=${String(eo.typeId.value)}`);
          continue;
        }
        const items = (eo.body as DataChangeNotification).monitoredItems ?? [];
        if (!this.recording) continue;
        this.notifications += items.length;
        for (const item of items) {
          const status = item.value.statusCode ?? 0;
          if (!isGood(status)) this.error(`notification ${statusCodeName(status)}`);
          const ts = item.value.serverTimestamp ?? item.value.sourceTimestamp;
          if (ts !== undefined) this.latency.record(Math.max(0, arrived - ts) * 1000);
        }
      }
    }
  }
}

async function subscribe(ch: UaClientChannel, nodes: NodeId[], params: SubLoadParams): Promise<Subscriber> {
  const created = await ch.call(
    "CreateSubscription",
    ObjectIds.CreateSubscriptionRequest_Encoding_DefaultBinary,
    encodeCreateSubscriptionRequest,
    {
      requestHeader: ch.requestHeader(),
      requestedPublishingInterval: params.publishingIntervalMs,
      requestedLifetimeCount: 600,
      requestedMaxKeepAliveCount: 20,
      maxNotificationsPerPublish: 0,
      publishingEnabled: true,
      priority: 0,
    },
    ObjectIds.CreateSubscriptionResponse_Encoding_DefaultBinary,
    decodeCreateSubscriptionResponse,
  );
  const items = await ch.call(
    "CreateMonitoredItems",
    ObjectIds.CreateMonitoredItemsRequest_Encoding_DefaultBinary,
    encodeCreateMonitoredItemsRequest,
    {
      requestHeader: ch.requestHeader(),
      subscriptionId: created.subscriptionId,
      timestampsToReturn: TimestampsToReturn.Both,
      itemsToCreate: Array.from({ length: params.items }, (_, i) => ({
        itemToMonitor: valueReadOf(nodes[i % nodes.length]),
        monitoringMode: MonitoringMode.Reporting,
        requestedParameters: { clientHandle: i + 1, samplingInterval: 0, filter: undefined, queueSize: params.queueSize, discardOldest: true },
      })),
    },
    ObjectIds.CreateMonitoredItemsResponse_Encoding_DefaultBinary,
    decodeCreateMonitoredItemsResponse,
  );
  const bad = (items.results ?? []).find((r) => !isGood(r.statusCode));
  if (bad !== undefined) throw new Error(`CreateMonitoredItems: ${statusCodeName(bad.statusCode)}`);
  if ((items.results ?? []).length !== params.items) throw new Error(`CreateMonitoredItems returned ${(items.results ?? []).length} results for ${params.items}`);
  return new Subscriber(ch, created.subscriptionId);
}

export async function runSubLoad(params: SubLoadParams): Promise<SubLoadResult> {
  const channels: UaClientChannel[] = [];
  try {
    const subCh = await openSession(params, "bench-sub-subscriber");
    channels.push(subCh);
    const writeCh = await openSession(params, "bench-sub-writer");
    channels.push(writeCh);
    const nodes = await resolveNodes(subCh, params.nodes);
    const subscriber = await subscribe(subCh, nodes, params);
    subscriber.start(params.publishesInFlight);
    const writer = new ServicePipeline(writeCh, { shape: writeShape(nodes, Math.min(params.items, nodes.length), true), outstanding: params.writesInFlight });
    writer.start();
    await sleep(params.warmupSeconds * 1000);

    writer.resetWindow();
    writer.recording = true;
    subscriber.recording = true;
    const t0 = performance.now();
    const serverCpu0 = params.serverPid === undefined ? NaN : cpuTimeMicros(params.serverPid);
    const loadCpu0 = process.cpuUsage();
    markWindowEdge(params.serverPid, params.serverDiagnostics);
    await sleep(params.durationSeconds * 1000);
    writer.recording = false;
    subscriber.recording = false;
    const t1 = performance.now();
    const serverCpu1 = params.serverPid === undefined ? NaN : cpuTimeMicros(params.serverPid);
    const loadCpu = process.cpuUsage(loadCpu0);
    markWindowEdge(params.serverPid, params.serverDiagnostics);
    const memory = params.serverPid === undefined ? null : memoryOf(params.serverPid);
    const lost = await writer.stop(5000);
    await subscriber.stop();
    // A channel closed before our own close is a fault (closed is set only by a failure until then).
    const subFault = subCh.closed ? 1 : 0;

    const errorKinds: Record<string, number> = { ...subscriber.errorKinds };
    for (const [kind, n] of writer.errorKinds) errorKinds[`writer: ${kind}`] = n;
    return {
      params,
      windowSeconds: (t1 - t0) / 1000,
      requests: subscriber.notifications,
      writes: writer.completed,
      publishResponses: subscriber.publishResponses,
      keepAlives: subscriber.keepAlives,
      errors: subscriber.errors + writer.errors,
      errorsTotal: subscriber.errorsTotal + writer.errorsTotal,
      errorKinds,
      channelFaults: subFault + (writer.channelError !== null ? 1 : 0),
      lostInFlight: lost,
      verifiedResponses: writer.verified,
      latencyMicros: subscriber.latency.snapshot(),
      requestBytes: writer.requestSize,
      server: memory === null ? null : { cpuMicros: serverCpu1 - serverCpu0, rssBytesAtEnd: memory.rss, peakRssBytes: memory.peakRss },
      loadCpuMicros: loadCpu.user + loadCpu.system,
    };
  } finally {
    await closeAll(channels);
  }
}
