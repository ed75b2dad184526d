// GET /metrics: the Prometheus text exposition format (version 0.0.4), with Prometheus's naming
// conventions: a `fieldgate_` prefix, base units in the name (`_seconds`, `_bytes`), `_total` on
// counters, the standard `process_*` metrics. Each value is read where the gateway keeps it (the
// same counters the OPC UA diagnostics nodes show), at the moment of the scrape.
import { readFileSync } from "node:fs";
import type { DeviceRuntime } from "../devices/device-runtime.js";
import type { GatewayHistory } from "../history/history.js";
import type { DeadlineScheduler } from "../sampling/scheduler.js";
import type { SessionManager } from "../sessions/session.js";
import type { SubscriptionEngine } from "../subscriptions/engine.js";
import type { BufferPool } from "../transport/buffer-pool.js";
import type { UpdateStats } from "./updates.js";
import { DAMAGED_KINDS, type DamagedFiles } from "../storage/damaged.js";
import type { Northbound } from "../northbound/northbound.js";

/** What /metrics reads of the gateway, each part as narrow as what it reads. */
export interface MetricsSource {
  readonly deviceRuntime: Pick<DeviceRuntime, "pollers" | "pollLateness">;
  readonly scheduler: Pick<DeadlineScheduler, "totals">;
  readonly subscriptions: Pick<SubscriptionEngine, "stats" | "subscriptionCount" | "monitoredItemCount" | "publishWaits">;
  readonly sessions: Pick<SessionManager, "sessions">;
  readonly channelCount: number;
  readonly history: Pick<GatewayHistory, "writer" | "store" | "unavailable">;
  readonly damagedFiles: Pick<DamagedFiles, "count">;
  readonly northbound: Pick<Northbound, "failure" | "configured">;
  readonly bufferPool: Pick<BufferPool, "inUse" | "maxInUse" | "capacity" | "bufferSize" | "misses">;
}

/** Bucket bounds of the poll lateness histogram, seconds. */
export const LATENESS_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

type Labels = Readonly<Record<string, string>>;

class Exposition {
  private out = "";

  family(name: string, type: "counter" | "gauge" | "histogram", help: string): this {
    this.out += `# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}\n# TYPE ${name} ${type}\n`;
    return this;
  }

  sample(name: string, value: number, labels?: Labels): this {
    this.out += `${name}${labels ? labelText(labels) : ""} ${formatValue(value)}\n`;
    return this;
  }

  text(): string {
    return this.out;
  }
}

function labelText(labels: Labels): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(labels)) parts.push(`${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`);
  return `{${parts.join(",")}}`;
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

const STATES = ["waiting", "ok", "failing", "demoted"] as const;

/** USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux ABI Node runs on. */
const USER_HZ = 100;

/** The process's start time (s since the epoch), from /proc on Linux, else from uptime. */
function processStartTime(): number {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const startTicks = Number(fields[19]);
    const boot = /^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"));
    if (boot && Number.isFinite(startTicks)) return Number(boot[1]) + startTicks / USER_HZ;
  } catch {
    // Not Linux.
  }
  return Date.now() / 1000 - process.uptime();
}

const startTime = processStartTime();

export function renderMetrics(server: MetricsSource, version: string, web?: { clients: number; stats: Readonly<UpdateStats> }): string {
  const e = new Exposition();
  e.family("fieldgate_build_info", "gauge", "Always 1; the version of the running gateway as a label.").sample("fieldgate_build_info", 1, { version });

  const cpu = process.cpuUsage();
  e.family("process_cpu_seconds_total", "counter", "User and system CPU time spent by the gateway, seconds.").sample("process_cpu_seconds_total", (cpu.user + cpu.system) / 1e6);
  e.family("process_resident_memory_bytes", "gauge", "Resident memory of the gateway, bytes.").sample("process_resident_memory_bytes", process.memoryUsage.rss());
  e.family("process_start_time_seconds", "gauge", "Start time of the gateway since the Unix epoch, seconds.").sample("process_start_time_seconds", Math.round(startTime * 100) / 100);
  const heap = process.memoryUsage();
  e.family("nodejs_heap_size_used_bytes", "gauge", "V8 heap in use, bytes.").sample("nodejs_heap_size_used_bytes", heap.heapUsed);
  e.family("nodejs_heap_size_total_bytes", "gauge", "V8 heap reserved, bytes.").sample("nodejs_heap_size_total_bytes", heap.heapTotal);

  // Devices.
  const pollers = server.deviceRuntime.pollers();
  e.family("fieldgate_device_up", "gauge", "1 while the device answers (state ok), else 0.");
  for (const p of pollers) e.sample("fieldgate_device_up", p.state === "ok" ? 1 : 0, { device: p.name });
  e.family("fieldgate_device_state", "gauge", "1 for the state the device is in (waiting, ok, failing, demoted), 0 for the others.");
  for (const p of pollers) for (const st of STATES) e.sample("fieldgate_device_state", p.state === st ? 1 : 0, { device: p.name, state: st });
  e.family("fieldgate_device_requests_total", "counter", "Requests sent to the device (reads and writes).");
  for (const p of pollers) e.sample("fieldgate_device_requests_total", p.requests, { device: p.name });
  e.family("fieldgate_device_errors_total", "counter", "Requests to the device that failed (no answer, refused, malformed), and failed connects.");
  for (const p of pollers) e.sample("fieldgate_device_errors_total", p.errors, { device: p.name });
  e.family("fieldgate_device_mismatched_replies_total", "counter", "Replies on the device's link, while its request waited, that answered another request (another transaction, device or function).");
  for (const p of pollers) e.sample("fieldgate_device_mismatched_replies_total", p.mismatchedReplies, { device: p.name });
  e.family("fieldgate_device_skipped_polls_total", "counter", "Poll cycles of the device not run: late, still busy, or backing off after a failure.");
  for (const p of pollers) e.sample("fieldgate_device_skipped_polls_total", p.skippedCycles, { device: p.name });
  e.family("fieldgate_device_round_trip_seconds", "gauge", "Round-trip time of the last answered request to the device, seconds.");
  for (const p of pollers) e.sample("fieldgate_device_round_trip_seconds", p.lastRoundTrip / 1000, { device: p.name });
  e.family("fieldgate_device_tags", "gauge", "Tags polled on the device.");
  for (const p of pollers) e.sample("fieldgate_device_tags", p.tags.length, { device: p.name });

  const late = server.deviceRuntime.pollLateness.totals(LATENESS_BUCKETS_S.map((s) => s * 1000));
  e.family("fieldgate_poll_lateness_seconds", "histogram", "How late device polls started against their absolute deadlines, seconds (0.1 ms resolution).");
  LATENESS_BUCKETS_S.forEach((le, i) => e.sample("fieldgate_poll_lateness_seconds_bucket", late.le[i]!, { le: String(le) }));
  e.sample("fieldgate_poll_lateness_seconds_bucket", late.count, { le: "+Inf" });
  e.sample("fieldgate_poll_lateness_seconds_sum", late.sum / 1000);
  e.sample("fieldgate_poll_lateness_seconds_count", late.count);

  const t = server.scheduler.totals;
  e.family("fieldgate_scheduler_slots_total", "counter", "Slots run by the deadline scheduler (sampling, publishing, device polls).").sample("fieldgate_scheduler_slots_total", t.samples);
  e.family("fieldgate_scheduler_skipped_slots_total", "counter", "Slots skipped because the process was more than one interval late.").sample("fieldgate_scheduler_skipped_slots_total", t.skipped);
  e.family("fieldgate_scheduler_overruns_total", "counter", "Slots skipped because the previous run had not finished.").sample("fieldgate_scheduler_overruns_total", t.overruns);

  // OPC UA.
  const sub = server.subscriptions;
  const st = sub.stats;
  let sessions = 0;
  for (const s of server.sessions.sessions()) if (s.activated) sessions++;
  e.family("fieldgate_opcua_sessions", "gauge", "OPC UA sessions activated and open.").sample("fieldgate_opcua_sessions", sessions);
  e.family("fieldgate_opcua_channels", "gauge", "Secure channels (TCP connections) open.").sample("fieldgate_opcua_channels", server.channelCount);
  e.family("fieldgate_opcua_subscriptions", "gauge", "Subscriptions of all sessions.").sample("fieldgate_opcua_subscriptions", sub.subscriptionCount);
  e.family("fieldgate_opcua_monitored_items", "gauge", "Monitored items of all subscriptions.").sample("fieldgate_opcua_monitored_items", sub.monitoredItemCount);
  e.family("fieldgate_opcua_notifications_total", "counter", "Data change notifications sent.").sample("fieldgate_opcua_notifications_total", st.notifications);
  e.family("fieldgate_opcua_notification_messages_total", "counter", "NotificationMessages (Publish responses with data) sent.").sample("fieldgate_opcua_notification_messages_total", st.notificationMessages);
  e.family("fieldgate_opcua_keep_alives_total", "counter", "Keep-alive messages sent.").sample("fieldgate_opcua_keep_alives_total", st.keepAlives);
  e.family("fieldgate_opcua_late_publishes_total", "counter", "Times a subscription with something to send found no Publish request it could use.").sample("fieldgate_opcua_late_publishes_total", st.latePublishes);
  const waits = sub.publishWaits();
  e.family("fieldgate_opcua_late_publish_seconds_total", "counter", "Time a session had a subscription with something to send and no Publish request queued by its client.").sample("fieldgate_opcua_late_publish_seconds_total", waits.latePublishMs / 1000);
  e.family("fieldgate_opcua_queue_overflows_total", "counter", "Notifications discarded by full monitored item queues.").sample("fieldgate_opcua_queue_overflows_total", st.queueOverflows);
  e.family("fieldgate_opcua_late_queue_overflows_total", "counter", "Notifications discarded by full queues while their subscription waited for a Publish request.").sample("fieldgate_opcua_late_queue_overflows_total", st.lateQueueOverflows);

  // History.
  const h = server.history;
  const hs = h.writer.stats;
  e.family("fieldgate_history_samples_recorded_total", "counter", "Samples handed to the history writer.").sample("fieldgate_history_samples_recorded_total", hs.recorded);
  e.family("fieldgate_history_samples_stored_total", "counter", "Samples (rows) committed to the history database.").sample("fieldgate_history_samples_stored_total", hs.flushed);
  e.family("fieldgate_history_samples_dropped_total", "counter", "Samples dropped unwritten because the queue was full.").sample("fieldgate_history_samples_dropped_total", hs.dropped);
  e.family("fieldgate_history_samples_queued", "gauge", "Samples waiting to be written.").sample("fieldgate_history_samples_queued", h.writer.queued);
  e.family("fieldgate_history_failed_flushes_total", "counter", "Writes to the history database that failed.").sample("fieldgate_history_failed_flushes_total", hs.failedFlushes);
  e.family("fieldgate_history_writing", "gauge", "1 while history is stored, 0 while writes to the database fail (a full disk).").sample("fieldgate_history_writing", hs.failing ? 0 : 1);
  let fileBytes = 0;
  try {
    fileBytes = h.store.fileBytes();
  } catch {
    fileBytes = NaN;
  }
  e.family("fieldgate_history_database_bytes", "gauge", "Size of the history database file (pages in use and free), bytes.").sample("fieldgate_history_database_bytes", fileBytes);

  // Damaged files and the optional parts.
  e.family("fieldgate_damaged_files_total", "counter", "Files found damaged and moved aside (to <name>.damaged-<time>, never deleted) since start, by kind; the log and the status page name them.");
  for (const kind of DAMAGED_KINDS) e.sample("fieldgate_damaged_files_total", server.damagedFiles.count(kind), { kind });
  e.family("fieldgate_part_up", "gauge", "1 while an optional part runs (history; northbound when configured), 0 when it could not start (the log says why).");
  e.sample("fieldgate_part_up", h.unavailable === undefined ? 1 : 0, { part: "history" });
  if (server.northbound.configured) e.sample("fieldgate_part_up", server.northbound.failure === undefined ? 1 : 0, { part: "northbound" });

  // Transport.
  const pool = server.bufferPool;
  e.family("fieldgate_buffer_pool_buffers_in_use", "gauge", "Chunk buffers of the process-wide pool in use.").sample("fieldgate_buffer_pool_buffers_in_use", pool.inUse);
  e.family("fieldgate_buffer_pool_buffers_in_use_max", "gauge", "Most chunk buffers in use at once since start.").sample("fieldgate_buffer_pool_buffers_in_use_max", pool.maxInUse);
  e.family("fieldgate_buffer_pool_buffers", "gauge", "Chunk buffers the transport's memory budget can hold (transport.memoryLimit over the buffer size).").sample("fieldgate_buffer_pool_buffers", pool.capacity);
  e.family("fieldgate_buffer_pool_buffer_size_bytes", "gauge", "Size of one chunk buffer, bytes.").sample("fieldgate_buffer_pool_buffer_size_bytes", pool.bufferSize);
  e.family("fieldgate_buffer_pool_misses_total", "counter", "Times a connection found no buffer free and waited.").sample("fieldgate_buffer_pool_misses_total", pool.misses);

  if (web !== undefined) {
    e.family("fieldgate_web_clients", "gauge", "Status pages open (update streams).").sample("fieldgate_web_clients", web.clients);
    e.family("fieldgate_web_updates_total", "counter", "Update rounds sent to open status pages.").sample("fieldgate_web_updates_total", web.stats.ticks);
    e.family("fieldgate_web_update_seconds_total", "counter", "Time on the event loop building and sending those updates (their synchronous slices), seconds.").sample("fieldgate_web_update_seconds_total", web.stats.busyMs / 1000);
    e.family("fieldgate_web_sent_bytes_total", "counter", "Bytes of updates sent to status pages.").sample("fieldgate_web_sent_bytes_total", web.stats.bytes);
    e.family("fieldgate_web_update_slice_max_seconds", "gauge", "Longest synchronous slice of an update round since start, seconds.").sample("fieldgate_web_update_slice_max_seconds", web.stats.maxSliceMs / 1000);
  }
  return e.text();
}
