// The `urn:fieldgate:diagnostics` namespace: what the scheduler and the subscription engine
// count, as variables under Objects/Diagnostics (DESIGN: overruns, skipped slots and lateness
// are exposed as diagnostics). Refreshed once a second by a slot of the same scheduler, so
// clients read or subscribe to them like any value.
//
// Lateness is how long after its deadline a slot ran (all slots of the scheduler: sampling,
// publishing, device polls). The histogram variable gives the raw counts (bucket i = i*0.1 ms
// late, the last bucket 1 s and more) so that a client can take the quantiles of any window
// from two reads.
import { MemoryNamespace, type MemoryVariable } from "../address-space/memory-namespace.js";
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import type { Clock } from "../sampling/clock.js";
import { LATENESS_BUCKET_MS, type DeadlineScheduler, type ScheduledGroup } from "../sampling/scheduler.js";
import { formatStall, STALL_MS, type LoopTrace } from "../sampling/loop-trace.js";
import { nodeIdToString } from "../ua/node-id.js";
import { BuiltinType, VariantArrayType, numericNodeId, stringNodeId, type NodeId } from "../ua/builtins.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import type { SubscriptionEngine } from "./engine.js";

export const DIAGNOSTICS_NAMESPACE_URI = "urn:fieldgate:diagnostics";

type Getter = () => number | bigint | string | Uint32Array | readonly string[];

/** One poll group as the diagnostics show it. */
export interface PollGroupReport {
  readonly device: string;
  readonly interval: number;
  readonly samples: number;
  readonly skipped: number;
  readonly overruns: number;
  readonly backedOff: number;
}

/** What the diagnostics show beyond the scheduler and the subscriptions. */
export interface DiagnosticsSources {
  readonly trace?: LoopTrace;
  /** The device map's poll groups. */
  pollGroups?(): readonly PollGroupReport[];
}

/** Items listed by Subscriptions.ItemSkips at most (the count of all is ItemsMissingSamples). */
const MAX_LISTED_ITEMS = 100;

interface Entry {
  readonly variable: MemoryVariable;
  readonly type: BuiltinType;
  readonly get: Getter;
}

export class DiagnosticsNamespace {
  readonly namespace: MemoryNamespace;
  private readonly entries: Entry[] = [];
  private slot: ScheduledGroup | undefined;
  private refreshes = 0;

  constructor(
    registry: NamespaceRegistry,
    private readonly scheduler: DeadlineScheduler,
    private readonly engine: SubscriptionEngine,
    private readonly clock: Clock,
    private readonly sources: DiagnosticsSources = {},
  ) {
    this.namespace = new MemoryNamespace(registry.register(DIAGNOSTICS_NAMESPACE_URI), registry);
    registry.register(DIAGNOSTICS_NAMESPACE_URI, this.namespace);
    this.build();
    this.refresh();
  }

  /** Starts the once-a-second refresh. */
  start(interval = 1000): void {
    if (this.slot === undefined) this.slot = this.scheduler.every(interval, { sample: () => this.refresh(), label: "diagnostics refresh" }, this.clock.now() + interval);
  }

  stop(): void {
    if (this.slot !== undefined) this.scheduler.cancel(this.slot);
    this.slot = undefined;
  }

  nodeId(name: string): NodeId {
    return stringNodeId(name, this.namespace.namespaceIndex);
  }

  refresh(): void {
    this.refreshes++;
    const now = this.clock.wallNow();
    for (const e of this.entries) {
      const v = e.get();
      const arrayType = v instanceof Uint32Array || Array.isArray(v) ? VariantArrayType.Array : VariantArrayType.Scalar;
      this.namespace.setValue(e.variable, { value: { dataType: e.type, arrayType, value: v }, sourceTimestamp: now });
    }
  }

  private build(): void {
    const ns = this.namespace;
    const root = ns.addFolder({ nodeId: "Diagnostics", browseName: "Diagnostics", parent: numericNodeId(ObjectIds.ObjectsFolder) }).nodeId;
    const sampling = ns.addFolder({ nodeId: "Sampling", browseName: "Sampling", parent: root }).nodeId;
    const s = this.scheduler;
    const t = s.totals;
    const count = (n: number): bigint => BigInt(Math.trunc(n));
    const add = (parent: NodeId, name: string, type: BuiltinType, get: Getter, description: string, valueRank = -1): void => {
      const variable = ns.addVariable({ nodeId: `${String(parent.value)}.${name}`, browseName: name, parent, dataType: type, valueRank, description });
      this.entries.push({ variable, type, get });
    };
    add(sampling, "ScheduledGroups", BuiltinType.UInt32, () => s.size, "Slots in the scheduler's heap: sampling intervals, subscriptions, device poll groups.");
    add(sampling, "Samples", BuiltinType.UInt64, () => count(t.samples), "Slots run since start.");
    add(sampling, "SkippedSlots", BuiltinType.UInt64, () => count(t.skipped), "Slots skipped because the process was more than one interval late.");
    add(sampling, "Overruns", BuiltinType.UInt64, () => count(t.overruns), "Slots skipped because the previous run (a device poll) had not finished.");
    add(sampling, "LatenessP50", BuiltinType.Double, () => s.latencyQuantile(0.5), "Median lateness of slots since start, ms.");
    add(sampling, "LatenessP99", BuiltinType.Double, () => s.latencyQuantile(0.99), "99th percentile lateness of slots since start, ms.");
    add(sampling, "LatenessBucketWidth", BuiltinType.Double, () => LATENESS_BUCKET_MS, "Width of one LatenessHistogram bucket, ms.");
    add(sampling, "LatenessHistogram", BuiltinType.UInt32, () => Uint32Array.from(s.latenessHistogram()), "Slots run per lateness bucket; the last bucket is 1 s and more.", 1);
    const trace = this.sources.trace;
    if (trace !== undefined) {
      const ms = "ms, since start";
      add(sampling, "EventLoopDelayP50", BuiltinType.Double, () => trace.delayPercentile(50), `Median event-loop delay (perf_hooks monitorEventLoopDelay), ${ms}.`);
      add(sampling, "EventLoopDelayP99", BuiltinType.Double, () => trace.delayPercentile(99), `99th percentile event-loop delay, ${ms}.`);
      add(sampling, "EventLoopDelayP999", BuiltinType.Double, () => trace.delayPercentile(99.9), `99.9th percentile event-loop delay, ${ms}.`);
      add(sampling, "EventLoopDelayMax", BuiltinType.Double, () => trace.delayMax, `Largest event-loop delay, ${ms}.`);
      add(sampling, "GcPauses", BuiltinType.UInt64, () => count(trace.gcCount), "Garbage collection pauses of the main thread since start.");
      add(sampling, "GcPauseP99", BuiltinType.Double, () => trace.gcPauses.quantile(0.99), `99th percentile of the GC pauses, ${ms}.`);
      add(sampling, "GcPauseMax", BuiltinType.Double, () => trace.gcPauseMax, `Longest GC pause, ${ms}.`);
      // The quantiles above count the start-up's GCs for good; two readings of this one give a
      // window's own (bench counters).
      add(sampling, "GcPauseHistogram", BuiltinType.UInt32, () => trace.gcPauses.bucketsSinceStart(), "GC pauses since start per bucket of LatenessBucketWidth ms; the last bucket is 1 s and more.", 1);
      add(sampling, "LongestTask", BuiltinType.String, () => (trace.longestTask === "" ? "" : `${trace.longestTask}: ${trace.longestTaskMs.toFixed(1)} ms`), "The longest task this process timed on its event loop since start.");
      add(sampling, "Stalls", BuiltinType.UInt64, () => count(trace.stallCount), `Slots run more than ${STALL_MS} ms late since start.`);
      add(sampling, "RecentStalls", BuiltinType.String, () => trace.recentStalls().map(formatStall), "The last late slots, with the task or GC pause that held the event loop meanwhile.", 1);
    }
    const groups = this.sources.pollGroups;
    if (groups !== undefined) {
      add(sampling, "PollGroups", BuiltinType.String, () => groups().map(formatPollGroup), "Each device poll group: slots run, skipped late, skipped busy (overruns), skipped backing off.", 1);
    }

    const subs = ns.addFolder({ nodeId: "Subscriptions", browseName: "Subscriptions", parent: root }).nodeId;
    const e = this.engine;
    const st = e.stats;
    add(subs, "Subscriptions", BuiltinType.UInt32, () => e.subscriptionCount, "Subscriptions of all sessions.");
    add(subs, "MonitoredItems", BuiltinType.UInt32, () => e.monitoredItemCount, "Monitored items of all subscriptions.");
    add(subs, "SamplingGroups", BuiltinType.UInt32, () => e.sampler.groupCount, "Distinct sampling intervals being sampled.");
    add(subs, "FedItems", BuiltinType.UInt32, () => e.sampler.fedItemCount, "Items fed by their device poll instead of sampled.");
    add(subs, "SamplingPasses", BuiltinType.UInt64, () => count(e.sampler.passes), "Sampling passes run (one per group per interval).");
    add(subs, "NotificationMessages", BuiltinType.UInt64, () => count(st.notificationMessages), "NotificationMessages sent.");
    add(subs, "Notifications", BuiltinType.UInt64, () => count(st.notifications), "Data change notifications sent.");
    add(subs, "KeepAlives", BuiltinType.UInt64, () => count(st.keepAlives), "Keep-alive messages sent.");
    add(subs, "LatePublishes", BuiltinType.UInt64, () => count(st.latePublishes), "Times a subscription with something to send found no Publish request it could use (Part 4 5.13.1.2: Late).");
    add(subs, "LatePublishTime", BuiltinType.Double, () => e.publishWaits().latePublishMs, "Time a session had a subscription with something to send and no Publish request queued by its client, ms since start.");
    add(subs, "ChannelWaitTime", BuiltinType.Double, () => e.publishWaits().channelWaitMs, "Time a session had a subscription with something to send and Publish requests queued on a channel busy with a large response, ms since start.");
    add(subs, "QueueOverflows", BuiltinType.UInt64, () => count(st.queueOverflows), "Notifications discarded by full item queues.");
    add(subs, "LateQueueOverflows", BuiltinType.UInt64, () => count(st.lateQueueOverflows), "Of QueueOverflows, those discarded while their subscription waited for a Publish request from its client.");
    add(subs, "PublishTimeouts", BuiltinType.UInt64, () => count(st.publishTimeouts), "Publish requests answered BadTimeout after their timeoutHint.");
    add(subs, "ExpiredSubscriptions", BuiltinType.UInt64, () => count(st.subscriptionsExpired), "Subscriptions closed because their lifetime ran out.");
    // Worked out at each refresh (once a second): short even for tens of thousands of items.
    let skips: SkipReport = { total: 0, items: 0, listed: [] };
    let skipsAt = -1;
    const skipReport = (): SkipReport => {
      if (skipsAt !== this.refreshes) {
        skips = skipReportOf(e);
        skipsAt = this.refreshes;
      }
      return skips;
    };
    add(subs, "SkippedSamples", BuiltinType.UInt64, () => count(skipReport().total), "Samples monitored items missed because their poll group or sampling group skipped a late or busy slot (skip-not-burst).");
    add(subs, "ItemsMissingSamples", BuiltinType.UInt32, () => skipReport().items, "Monitored items that missed at least one sample.");
    add(subs, "ItemSkips", BuiltinType.String, () => skipReport().listed, `Per monitored item that missed samples (at most ${MAX_LISTED_ITEMS}): subscription, item, node, interval, samples missed.`, 1);
  }
}

interface SkipReport {
  readonly total: number;
  readonly items: number;
  readonly listed: readonly string[];
}

function skipReportOf(engine: SubscriptionEngine): SkipReport {
  let total = 0;
  let items = 0;
  const listed: string[] = [];
  for (const sub of engine.subscriptions.values()) {
    for (const item of sub.items.values()) {
      const n = engine.sampler.skippedSamples(item);
      if (n <= 0) continue;
      total += n;
      items++;
      if (listed.length < MAX_LISTED_ITEMS) {
        listed.push(`subscription ${sub.id} item ${item.id} on ${nodeIdToString(item.read.nodeId)} @${item.samplingInterval} ms: ${n} samples missed`);
      }
    }
  }
  return { total, items, listed };
}

function formatPollGroup(g: PollGroupReport): string {
  return `${g.device} @${g.interval} ms: ${g.samples} slots run, ${g.skipped} skipped late, ${g.overruns} skipped busy, ${g.backedOff} backing off`;
}
