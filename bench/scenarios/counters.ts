// Scenario `counters` (issue 3): the OPC UA sampling test used to compare servers. N UInt64
// counters of the bench namespace (`server.benchNamespace: N`, ns=1;i=1..N, skipping the
// BenchmarkValues' 1001..1100) count every sample the server takes of them; one session, one
// subscription (publishing 100 ms and 1000 ms), N items at 10 ms sampling, queue size 1,
// Reporting, 4 Publish requests outstanding. A case passes when every item reaches 99 % of the
// samples a 10 ms rate gives over the window. `--search` looks for the largest N that passes
// both publishing intervals. Figures: notifications/s, server CPU share, and the server's
// sampling lateness p50/p99 over the window (fieldgate's diagnostics histogram).
// `--with read` or `--with history` adds another client's load on the same server for the whole
// run (issue 13's second and third targets): Reads 10 x 100, or HistoryRead of 100,000 stored
// values in a loop (history-read-load.ts; the values stored before the server starts).
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { Histogram } from "../client/histogram.js";
import { runModuleLoad } from "../harness/load-process.js";
import { memoryOf } from "../harness/proc.js";
import type { CaseResult } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, sleep, type BenchContext, type CommonOptions, type Scenario } from "../harness/scenario.js";
import type { ServerTarget } from "../harness/target.js";
import { verdictOf, type ServerDelivery } from "./counters-delivery.js";
import type { CountersLoadParams, CountersLoadResult } from "./counters-load.js";
import { BENCH_HISTORY_NODE_TEXT, HISTORY_READ_LOAD, type HistoryReadLoadParams, type HistoryReadLoadResult } from "./history-read-load.js";
import type { ReadLoadParams, ReadLoadResult } from "./read-load.js";
import { timerFloorOnCore } from "./timer-floor.js";

export interface CountersScenarioOptions extends CommonOptions {
  items: number[];
  search: boolean;
  /** Largest N the search tries. */
  searchMax: number;
  publishingIntervals: number[];
  samplingIntervalMs: number;
  queueSize: number;
  publishesInFlight: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** Run the server under test with SCHED_FIFO (chrt): a dedicated core's timing on a shared machine. */
  realtime: boolean;
  /** Run the server at this nice value instead (ordinary scheduling, no RT throttling); undefined: leave it. */
  serverNice: number | undefined;
  /** SCHED_FIFO priority of the subscriber's process (0: ordinary scheduling). */
  subscriberPriority: number;
  /** Another client's load on the same server meanwhile: none, Reads 10 x 100, or HistoryRead in a loop. */
  with: "none" | "read" | "history";
  /** With `history`: values stored before the start, and read by each HistoryRead. */
  historyValues: number;
  /** Seconds of the bare scheduler on the server's core before each fieldgate case (0: none). */
  timerFloorSeconds: number;
}

const PASS_RATIO = 0.99;
/** The search's resolution (open62541 passes 10240 and fails 12288 on this test). */
const SEARCH_STEP = 1024;

const USAGE = `npm run bench -- counters [options]
  --items LIST        monitored counters, comma-separated cases (default 1024,16384)
  --search            find the largest N passing at every publishing interval: doubling from
                      the first --items value, then halving the gap down to ${SEARCH_STEP}
  --search-max N      largest N the search tries (default 32768; past 50000 the default
                      limits.maxMonitoredItemsPerSubscription refuses the items)
  --publishing LIST   publishing intervals in ms (default 100,1000)
  --sampling MS       sampling interval (default 10)
  --queue N           queue size per item (default 1)
  --publishes N       Publish requests kept outstanding (default 4)
  --warmup S          seconds from the subscription to the window (default 20: V8 compiles the
                      sampling and publishing paths as they become hot, for ~10-20 s at
                      1,024 items, each compile a late slot of 2-10 ms; the warm-up's own
                      lateness is reported beside the window's)
  --duration S        seconds of the measurement window (default 10)
  --with LOAD         another client loads the same server for the whole run: read (the
                      Read 10 x 100 load: 10 connections, 100 Reads of 1 value in flight each),
                      or history (one session reading --history-values stored values of one
                      node in one HistoryRead, again and again; fieldgate targets only)
  --history-values N  values stored before the server starts and read per HistoryRead with
                      --with history (default 100000, one every 10 ms ending an hour ago)
  --timer-floor S     before each fieldgate case, run the gateway's scheduler alone (no
                      server, tasks that do nothing) for S seconds on the server's core and
                      report its lateness beside the case's: the floor libuv's whole-ms
                      timers and the machine set (timer-floor.ts)
  --realtime          give the server under test SCHED_FIFO priority 10 (chrt, needs
                      CAP_SYS_NICE): on a machine shared with other work, this approaches the
                      timing of the dedicated core the test assumes; the report says so.
                      Caveat: with Publish responses past ~500 KB (about 18000 items at 100 ms)
                      the server's CPU share jumps under SCHED_FIFO (the kernel's own network
                      work on that core waits behind it), so trust it below that
  --server-nice=N     run the server under test at nice N (e.g. =-20; needs CAP_SYS_NICE),
                      and the bench's session's autogroup with it where the kernel groups
                      sessions, instead of --realtime: ordinary scheduling, which the kernel does not
                      throttle (a SCHED_FIFO task gets at most sched_rt_runtime_us of each
                      sched_rt_period_us, 95 % by default: a server kept busy by the load
                      client is stopped for the rest of each second, and its slots with it)
  --subscriber-priority N  SCHED_FIFO priority of the subscriber's process, which shares the
                      load core with the --with load client (default 5 with --realtime or --server-nice, below
                      the server's 10; 0: ordinary scheduling). A SCADA client has a machine of
                      its own: its Publish requests go out as soon as a response is read, not
                      when the load client on the same core yields; the load client keeps
                      reading flat out in its own process with the rest of that core
${COMMON_USAGE}`;

function list(name: string, text: string | undefined, fallback: number[]): number[] {
  if (text === undefined) return fallback;
  return text.split(",").map((t) => positive(name, t.trim(), 0));
}

export function parseCountersOptions(argv: readonly string[]): CountersScenarioOptions | null {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...COMMON_OPTIONS,
      items: { type: "string" },
      search: { type: "boolean", default: false },
      "search-max": { type: "string" },
      publishing: { type: "string" },
      sampling: { type: "string" },
      queue: { type: "string" },
      publishes: { type: "string" },
      warmup: { type: "string" },
      duration: { type: "string" },
      realtime: { type: "boolean", default: false },
      "subscriber-priority": { type: "string" },
      "server-nice": { type: "string" },
      with: { type: "string" },
      "history-values": { type: "string" },
      "timer-floor": { type: "string" },
    },
  });
  const withLoad = values.with ?? "none";
  if (withLoad !== "none" && withLoad !== "read" && withLoad !== "history") throw new Error(`--with: expected none, read or history, got ${withLoad}`);
  if (values.help) return null;
  const serverNice = values["server-nice"] === undefined ? undefined : Number(values["server-nice"]);
  if (serverNice !== undefined && !(Number.isInteger(serverNice) && serverNice >= -20 && serverNice <= 19)) throw new Error(`--server-nice: expected an integer from -20 to 19, got "${values["server-nice"]}"`);
  if (serverNice !== undefined && values.realtime) throw new Error("--server-nice and --realtime: choose one");
  const placed = values.realtime === true || serverNice !== undefined;
  return {
    ...commonFrom(values),
    items: list("items", values.items, [1024, 16384]),
    search: values.search ?? false,
    searchMax: positive("search-max", values["search-max"], 32768),
    publishingIntervals: list("publishing", values.publishing, [100, 1000]),
    samplingIntervalMs: positive("sampling", values.sampling, 10, false),
    queueSize: positive("queue", values.queue, 1),
    publishesInFlight: positive("publishes", values.publishes, 4),
    warmupSeconds: values.warmup === "0" ? 0 : positive("warmup", values.warmup, 20, false),
    durationSeconds: positive("duration", values.duration, 10, false),
    realtime: values.realtime ?? false,
    serverNice,
    subscriberPriority:
      values["subscriber-priority"] === "0" ? 0 : values["subscriber-priority"] === undefined ? (placed ? 5 : 0) : positive("subscriber-priority", values["subscriber-priority"], 5),
    with: withLoad,
    historyValues: positive("history-values", values["history-values"], 100_000),
    timerFloorSeconds: values["timer-floor"] === undefined || values["timer-floor"] === "0" ? 0 : positive("timer-floor", values["timer-floor"], 10, false),
  };
}

/** The stall lines of fieldgate's diagnostics grouped by cause: "cause (count, max late ms)". */
function stallCauses(lines: readonly string[]): string {
  const by = new Map<string, { n: number; max: number }>();
  for (const line of lines) {
    const m = / ran ([\d.]+) ms late; the loop was busy with (.*?)(?: \([\d.]+ ms\))?$/.exec(line);
    if (!m) continue;
    const e = by.get(m[2]!) ?? { n: 0, max: 0 };
    e.n++;
    e.max = Math.max(e.max, Number(m[1]));
    by.set(m[2]!, e);
  }
  return [...by].sort((a, b) => b[1].n - a[1].n).map(([cause, e]) => `${cause} (${e.n}, up to ${e.max.toFixed(1)} ms late)`).join("; ");
}

/** NaN crosses the load process's IPC as null. */
const num = (x: number | null) => (typeof x === "number" ? x : NaN);
const pct = (x: number | null) => `${(num(x) * 100).toFixed(2)} %`;
const ms = (x: number | null) => (Number.isFinite(num(x)) ? `${num(x).toFixed(1)} ms` : "-");

const WITH_NAMES = { none: "", read: ", with Reads 10 x 100", history: ", with HistoryRead of {values} values in a loop" } as const;

/** The stored history of a `--with history` case: `values` samples 10 ms apart, ending an hour ago (well inside retention). */
function storedRange(values: number): { samples: number; startTime: number; intervalMs: number; endTime: number } {
  const endTime = Date.now() - 3_600_000;
  return { samples: values, startTime: endTime - values * 10, intervalMs: 10, endTime };
}

async function runCase(ctx: BenchContext, target: ServerTarget, o: CountersScenarioOptions, items: number, publishingMs: number): Promise<CaseResult> {
  const caseName = `${items} items @ ${o.samplingIntervalMs} ms, publishing ${publishingMs} ms${WITH_NAMES[o.with].replace("{values}", o.historyValues.toLocaleString("en-US"))}`;
  if (o.with === "history" && !target.name.startsWith("fieldgate")) throw new Error(`--with history: ${target.name} has no stored history to read (fieldgate targets only)`);
  const floor = o.timerFloorSeconds > 0 && target.name.startsWith("fieldgate") ? await timerFloorOnCore(ctx.serverCpu, o.timerFloorSeconds) : undefined;
  ctx.log(`counters ${caseName} on ${target.name}: starting the server`);
  const load1m = loadavg()[0];
  const stored = o.with === "history" ? storedRange(o.historyValues) : undefined;
  const history = stored === undefined ? undefined : { samples: stored.samples, startTime: stored.startTime, intervalMs: stored.intervalMs };
  const server = await target.start({ cpu: ctx.serverCpu, nodes: { counters: items, history }, startTimeoutMs: 120_000 });
  const notes: string[] = [];
  let group: { name: string; restore(): void } | undefined;
  try {
    if (o.realtime) {
      // Every thread of the server process (-a): its event loop and libuv's.
      execFileSync("chrt", ["-a", "-f", "-p", "10", String(server.pid)], { stdio: "ignore" });
      notes.push("server ran with SCHED_FIFO priority 10 (--realtime)");
    }
    if (o.serverNice !== undefined) {
      // Every thread: nice is a thread's own on Linux (setpriority by task id).
      for (const task of readdirSync(`/proc/${server.pid}/task`)) execFileSync("renice", ["-n", String(o.serverNice), "-p", task], { stdio: "ignore" });
      // With autogroups (sched(7)) a nice value weighs only inside the server's session; against
      // other sessions it is the autogroup's nice that counts: this bench's session (the harness
      // and its load processes too).
      group = autogroupNice(server.pid, o.serverNice);
      notes.push(`server ran at nice ${o.serverNice} (--server-nice)${group ? `, its session's autogroup too (${group.name})` : ""}`);
    }
    await sleep(500);
    const idle = memoryOf(server.pid);
    const params: CountersLoadParams = {
      host: server.host,
      port: server.port,
      endpointUrl: server.endpointUrl,
      items,
      publishingIntervalMs: publishingMs,
      samplingIntervalMs: o.samplingIntervalMs,
      queueSize: o.queueSize,
      publishesInFlight: o.publishesInFlight,
      warmupSeconds: o.warmupSeconds,
      durationSeconds: o.durationSeconds,
      passRatio: PASS_RATIO,
      serverPid: server.pid,
      serverDiagnostics: server.diagnostics,
      serverCore: ctx.serverCpu,
    };
    // The other client's load runs for the whole of the counters client's (its set-up included);
    // it does not mark the server's window (the counters client does).
    const otherSeconds = o.warmupSeconds + o.durationSeconds + 2 + items / 4000;
    const second =
      o.with === "read"
        ? runModuleLoad<ReadLoadParams, ReadLoadResult>(new URL("./read-load.js", import.meta.url).href, "runReadLoad", {
            host: server.host,
            port: server.port,
            endpointUrl: server.endpointUrl,
            connections: 10,
            outstanding: 100,
            values: 1,
            warmupSeconds: 0.5,
            durationSeconds: otherSeconds,
          }, ctx.load)
        : undefined;
    const third =
      stored !== undefined
        ? runModuleLoad<HistoryReadLoadParams, HistoryReadLoadResult>(HISTORY_READ_LOAD, "runHistoryReadLoad", {
            host: server.host,
            port: server.port,
            endpointUrl: server.endpointUrl,
            node: BENCH_HISTORY_NODE_TEXT,
            startTime: stored.startTime,
            endTime: stored.endTime,
            valuesPerRead: stored.samples,
            warmupSeconds: 0.5,
            durationSeconds: otherSeconds,
          }, ctx.load)
        : undefined;
    // Awaited after the counters client; a failure meanwhile is not an unhandled rejection.
    second?.catch(() => undefined);
    third?.catch(() => undefined);
    const subscriberPlacement = o.subscriberPriority > 0 ? { ...ctx.load, realtimePriority: o.subscriberPriority } : ctx.load;
    const run = await runModuleLoad<CountersLoadParams, CountersLoadResult>(new URL("./counters-load.js", import.meta.url).href, "runCountersLoad", params, subscriberPlacement);
    const r = run.result;
    if (second !== undefined) {
      const read = (await second).result;
      notes.push(`the second client's Reads: ${Math.round(read.requests / read.windowSeconds).toLocaleString("en-US")} req/s, ${read.errors} errors`);
    }
    let historyReads: HistoryReadLoadResult | undefined;
    if (third !== undefined) {
      historyReads = (await third).result;
      const h = historyReads;
      const lat = Histogram.from(h.latencyMicros);
      const kinds = Object.entries(h.errorKinds).map(([k, n]) => `${n} ${k}`).join(", ");
      notes.push(
        `the third client's HistoryReads of ${o.historyValues.toLocaleString("en-US")} values: ${(h.reads / h.windowSeconds).toFixed(2)}/s over ${h.windowSeconds.toFixed(1)} s ` +
          `(${Math.round(h.values / h.windowSeconds).toLocaleString("en-US")} values/s), each p50 ${(lat.percentile(50) / 1000).toFixed(0)} ms, max ${(h.latencyMicros.max / 1000).toFixed(0)} ms; ` +
          `${h.errors} errors${kinds ? ` (${kinds})` : ""}, ${h.verifiedResponses} responses decoded in full and checked`,
      );
    }
    const verdict = r.passed ? "PASS" : "FAIL";
    notes.push(
      `${verdict}: ${r.itemsBelow} of ${items} items under ${pct(PASS_RATIO)} of the expected samples; min ${pct(r.minRatio)}, mean ${pct(r.meanRatio)}`,
      r.receivedCounted
        ? `as the subscriber received them: ${r.receivedBelow} of ${items} items under ${pct(PASS_RATIO)}; min ${pct(r.receivedMinRatio)}, mean ${pct(r.receivedMeanRatio)}`
        : `as the subscriber received them: min ${pct(r.receivedMinRatio)}, mean ${pct(r.receivedMeanRatio)} (not in the verdict: a queue of ${o.queueSize} keeps fewer samples than a publishing interval brings)`,
      r.latenessSlots > 0
        ? `sampling lateness p50 ${ms(r.latenessP50Ms)}, p99 ${ms(r.latenessP99Ms)}, p99.9 ${ms(r.latenessP999Ms)} over ${r.latenessSlots} scheduler slots`
        : "sampling lateness: not reported by this server",
    );
    notes.push(...deliveryNotes(r, o));
    if (r.warmupLatenessSlots > 0) notes.push(`lateness in the warm-up (the ${o.warmupSeconds} s from the subscription to the window): p99 ${ms(r.warmupLatenessP99Ms)}, p99.9 ${ms(r.warmupLatenessP999Ms)} over ${r.warmupLatenessSlots} slots`);
    if (Number.isFinite(num(r.windowGcPauses))) notes.push(`GC pauses in the window: ${r.windowGcPauses}, p99 ${ms(r.windowGcP99Ms)}, max ${ms(r.windowGcMaxMs)}`);
    if (Number.isFinite(num(r.windowSkipped))) notes.push(`slots not run in the window (no lateness recorded, no sample taken): ${r.windowSkipped} late by more than an interval, ${r.windowOverruns} while the group's last poll was still running`);
    if (Number.isFinite(num(r.gcPauseP99Ms))) {
      notes.push(`GC pauses p99 ${ms(r.gcPauseP99Ms)}, max ${ms(r.gcPauseMaxMs)}; event-loop delay p99 ${ms(r.loopDelayP99Ms)}, max ${ms(r.loopDelayMaxMs)} (since start)`);
      notes.push(`${r.stalls.length} slots more than 2 ms late in the window (the server keeps the last 32)${r.stalls.length > 0 ? `; causes: ${stallCauses(r.stalls)}` : ""}`);
    }
    const cpu = r.server?.cpuMicros ?? NaN;
    const waited = r.server?.runQueueWaitMicros ?? NaN;
    if (Number.isFinite(waited)) notes.push(`the server's main thread waited ${(waited / 1000).toFixed(1)} ms for its core in the window (${((waited / (r.windowSeconds * 1e6)) * 100).toFixed(2)} %; /proc schedstat: other processes had it)`);
    // What schedstat cannot see: other tasks' CPU time on the server's core, and the time the
    // hypervisor took the virtual CPU away (steal; /proc/stat counts it in 10 ms ticks).
    const core = r.core;
    if (core !== null && Number.isFinite(core.busyMicros)) {
      const others = Math.max(0, core.busyMicros - cpu);
      notes.push(
        `the server's core (CPU ${ctx.serverCpu}) was busy with other tasks ${((others / (r.windowSeconds * 1e6)) * 100).toFixed(1)} % of the window; hypervisor steal ${(core.stealMicros / 1000).toFixed(0)} ms (/proc/stat)`,
      );
      const throttled = o.realtime ? rtThrottle(cpu, waited, others, r.windowSeconds) : undefined;
      if (throttled !== undefined) notes.push(throttled);
    }
    if (floor !== undefined) {
      const causes = Object.entries(floor.causes).map(([c, n]) => `${n} ${c}`).join(", ");
      notes.push(
        `the scheduler alone on the same core just before (${o.timerFloorSeconds} s, no server): lateness p50 ${floor.p50Ms.toFixed(1)} ms, p99 ${floor.p99Ms.toFixed(1)} ms, p99.9 ${floor.p999Ms.toFixed(1)} ms over ${floor.slots} slots${causes ? `; late: ${causes}` : ""}`,
      );
    }
    notes.push(`load average ${load1m.toFixed(2)} (1 min) at the start, ${loadavg()[0].toFixed(2)} at the end`);
    if (server.exited) notes.push(`the server exited during the run; its last lines:\n${server.outputTail()}`);
    if (r.channelFaults > 0) notes.push("the channel closed under load");
    const window = r.windowSeconds;
    const lost = verdictOf(r.delivery, serverOf(r.serverDelivery));
    return {
      scenario: "counters",
      case: caseName,
      target: target.name,
      unit: "notifications/s",
      figures: {
        requests: r.notifications,
        windowSeconds: window,
        requestsPerSecond: r.notifications / window,
        // The server's sampling lateness against its deadlines, µs (not a request latency).
        latencyMicros: { p50: num(r.latenessP50Ms) * 1000, p90: NaN, p99: num(r.latenessP99Ms) * 1000, p999: NaN, max: NaN, mean: NaN },
        serverCpuMicrosPerRequest: r.notifications > 0 ? cpu / r.notifications : NaN,
        serverCpuShare: cpu / (window * 1e6),
        loadCpuShare: r.loadCpuMicros / (window * 1e6),
        serverRssIdleBytes: idle.rss,
        serverRssEndBytes: r.server?.rssBytesAtEnd ?? NaN,
        serverPeakRssBytes: r.server?.peakRssBytes ?? NaN,
        serverHeapIdleBytes: NaN,
        serverHeapUsedEndBytes: NaN,
        serverHeapTotalEndBytes: NaN,
        gcPauseMs: NaN,
        gcCount: NaN,
        gcPausePerSecondMs: NaN,
        startToListeningMs: server.startToListeningMs,
        errors: r.errors,
        errorsTotal: r.errorsTotal,
        channelFaults: r.channelFaults,
        lostInFlight: 0,
        verifiedResponses: 0,
      },
      conditions: {
        items,
        samplingIntervalMs: o.samplingIntervalMs,
        publishingIntervalMs: publishingMs,
        queueSize: o.queueSize,
        publishesInFlight: o.publishesInFlight,
        realtime: o.realtime,
        serverNice: o.serverNice ?? null,
        passed: r.passed,
        itemsBelow: r.itemsBelow,
        minRatio: num(r.minRatio),
        meanRatio: num(r.meanRatio),
        receivedCounted: r.receivedCounted,
        receivedBelow: r.receivedBelow,
        receivedMinRatio: num(r.receivedMinRatio),
        receivedMeanRatio: num(r.receivedMeanRatio),
        latenessP50Ms: num(r.latenessP50Ms),
        latenessP99Ms: num(r.latenessP99Ms),
        latenessP999Ms: num(r.latenessP999Ms),
        gcPauseP99Ms: num(r.gcPauseP99Ms),
        windowGcP99Ms: num(r.windowGcP99Ms),
        warmupLatenessP99Ms: num(r.warmupLatenessP99Ms),
        warmupLatenessP999Ms: num(r.warmupLatenessP999Ms),
        windowGcMaxMs: num(r.windowGcMaxMs),
        stallsInWindow: r.stalls.length,
        serverRunQueueWaitMs: num((r.server?.runQueueWaitMicros ?? NaN) / 1000),
        serverCoreOthersShare: r.core === null ? null : num(Math.max(0, r.core.busyMicros - cpu) / (window * 1e6)),
        serverCoreStealMs: r.core === null ? null : num(r.core.stealMicros / 1000),
        lostInSampling: lost.sampling,
        lostInQueue: lost.queue,
        lostWaitingForPublish: lost.publish,
        lostOtherwise: lost.other,
        worstLostInSampling: r.delivery.sampling.worst,
        worstLostInQueue: r.delivery.queue.worst,
        overflowInfoBits: r.delivery.overflowBits,
        serverQueueOverflows: num(r.serverDelivery.queueOverflows),
        serverLateQueueOverflows: num(r.serverDelivery.lateQueueOverflows),
        serverLatePublishMs: num(r.serverDelivery.latePublishMs),
        serverChannelWaitMs: num(r.serverDelivery.channelWaitMs),
        subscriberPriority: o.subscriberPriority,
        subscriberRunQueueWaitMs: num(r.subscriber.runQueueWaitMicros / 1000),
        subscriberLoopDelayMaxMs: num(r.subscriber.loopDelayMaxMs),
        with: o.with,
        historyValues: o.with === "history" ? o.historyValues : null,
        historyReadsPerSecond: historyReads ? historyReads.reads / historyReads.windowSeconds : null,
        historyReadErrors: historyReads ? historyReads.errors : null,
        loadAverage1m: load1m,
        warmupSeconds: o.warmupSeconds,
        durationSeconds: o.durationSeconds,
        serverCpu: server.pinnedCpu ?? null,
        loadCpu: run.pinnedCpu ?? null,
        loadInline: run.inline,
        idleRssAfterMs: 500,
      },
      errorKinds: r.errorKinds,
      notes,
    };
  } finally {
    group?.restore();
    const exit = await server.stop();
    if (exit.code !== 0) notes.push(`server stopped with exit code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ""} (expected 0 on SIGTERM)`);
  }
}

/**
 * Sets the nice of `pid`'s autogroup (/proc/PID/autogroup) when the kernel has them: its name
 * and how to put the nice it had back (the session outlives the case), or undefined.
 */
function autogroupNice(pid: number, nice: number): { name: string; restore(): void } | undefined {
  try {
    if (readFileSync("/proc/sys/kernel/sched_autogroup_enabled", "latin1").trim() !== "1") return undefined;
    const file = `/proc/${pid}/autogroup`;
    const before = /nice (-?\d+)/.exec(readFileSync(file, "latin1"))?.[1] ?? "0";
    writeFileSync(file, String(nice));
    // Through the harness's own entry: the server's is gone once it has stopped.
    return { name: readFileSync(file, "latin1").trim(), restore: () => writeFileSync("/proc/self/autogroup", before) };
  } catch {
    return undefined;
  }
}

/**
 * A SCHED_FIFO server that waited for its core while no other task used it was stopped by the
 * kernel's RT throttling: real-time tasks get at most sched_rt_runtime_us of each
 * sched_rt_period_us (95 % by default), then the core goes to ordinary tasks, or stays idle.
 */
function rtThrottle(cpuMicros: number, waitedMicros: number, othersMicros: number, windowSeconds: number): string | undefined {
  let runtime: number;
  let period: number;
  try {
    runtime = Number(readFileSync("/proc/sys/kernel/sched_rt_runtime_us", "latin1"));
    period = Number(readFileSync("/proc/sys/kernel/sched_rt_period_us", "latin1"));
  } catch {
    return undefined;
  }
  if (!(runtime > 0 && runtime < period)) return undefined;
  const window = windowSeconds * 1e6;
  const cap = runtime / period;
  // The server ran near the cap, and waited for a core that others did not use meanwhile.
  if (!(cpuMicros / window >= cap - 0.03 && waitedMicros > othersMicros + 0.005 * window)) return undefined;
  return (
    `the server used ${((cpuMicros / window) * 100).toFixed(1)} % of its core, at the kernel's cap for SCHED_FIFO tasks (sched_rt_runtime_us ${runtime} of ${period}): ` +
    `most of its wait was RT throttling, the core left to ordinary tasks or idle (--server-nice runs it unthrottled)`
  );
}

/** NaN crossed IPC as null: the server's counts as numbers again. */
function serverOf(d: ServerDelivery): ServerDelivery {
  return {
    at: num(d.at),
    queueOverflows: num(d.queueOverflows),
    lateQueueOverflows: num(d.lateQueueOverflows),
    latePublishMs: num(d.latePublishMs),
    channelWaitMs: num(d.channelWaitMs),
    latePublishes: num(d.latePublishes),
  };
}

/** Where the samples not received went (counters-delivery.ts), the server's delivery counts, the subscriber's own figures, and the verdict. */
function deliveryNotes(r: CountersLoadResult, o: CountersScenarioOptions): string[] {
  const d = r.delivery;
  const share = (x: { mean: number; worst: number }) => `${pct(x.mean)} / ${pct(x.worst)}`;
  const notes = [
    `where the samples went, per item (mean / worst item): not taken ${share(d.sampling)}; taken and lost in the item's queue (a gap closed by the Overflow InfoBit) ${share(d.queue)}; ` +
      `lost with no InfoBit ${share(d.other)}; ${d.overflowBits.toLocaleString("en-US")} notifications carried the Overflow InfoBit (${d.itemsWithOverflow} items)` +
      (d.outOfOrder > 0 ? `; ${d.outOfOrder.toLocaleString("en-US")} notifications OUT OF ORDER (a counter not above its item's previous one)` : ""),
  ];
  const sd = serverOf(r.serverDelivery);
  if (Number.isFinite(sd.latePublishMs)) {
    notes.push(
      `the server over ${(sd.at / 1000).toFixed(1)} s of the window (its diagnostics between two refreshes): ${sd.queueOverflows.toLocaleString("en-US")} queue overflows, ` +
        `${sd.lateQueueOverflows.toLocaleString("en-US")} of them while the subscription waited for a Publish request; it waited for the client's Publish requests ${sd.latePublishMs.toFixed(0)} ms ` +
        `(late ${sd.latePublishes} times), for a busy channel ${sd.channelWaitMs.toFixed(0)} ms`,
    );
  } else if (Number.isFinite(sd.queueOverflows)) {
    notes.push(`the server over ${(sd.at / 1000).toFixed(1)} s of the window: ${sd.queueOverflows.toLocaleString("en-US")} queue overflows (it does not time its wait for Publish requests)`);
  }
  const sub = r.subscriber;
  notes.push(
    `the subscriber (its own process, ${sub.publishesInFlight} Publish requests out, ${o.subscriberPriority > 0 ? `SCHED_FIFO ${o.subscriberPriority}` : "ordinary scheduling"}): ` +
      `${((num(sub.cpuMicros) / (r.windowSeconds * 1e6)) * 100).toFixed(1)} % of a core, waited ${(num(sub.runQueueWaitMicros) / 1000).toFixed(1)} ms for its core, ` +
      `event-loop delay p99 ${ms(sub.loopDelayP99Ms)}, max ${ms(sub.loopDelayMaxMs)}`,
  );
  const v = verdictOf(d, sd);
  notes.push(`verdict: ${v.text}${r.receivedCounted ? "" : ` (a queue of ${o.queueSize} keeps fewer samples than a publishing interval brings: its losses are by design)`}`);
  return notes;
}

/** Every publishing interval of N; true when all passed. */
async function runN(ctx: BenchContext, target: ServerTarget, o: CountersScenarioOptions, n: number, results: CaseResult[]): Promise<boolean> {
  let ok = true;
  for (const publishing of o.publishingIntervals) {
    const r = await runCase(ctx, target, o, n, publishing);
    results.push(r);
    ctx.log(`counters ${r.case} on ${target.name}: ${r.notes[0]}`);
    if (r.conditions.passed !== true) ok = false;
  }
  return ok;
}

export const countersScenario: Scenario<CountersScenarioOptions> = {
  name: "counters",
  summary: "the sampling test: N UInt64 counters at 10 ms, does every item get 99 % of its samples",
  usage: USAGE,
  parse: parseCountersOptions,
  smokeArgs: ["--items", "100", "--publishing", "100", "--warmup", "0.5", "--duration", "1"],
  reportRuns: [
    { title: "counters: 1024 items at 10 ms sampling (100 ms publishing)", args: ["--items", "1024", "--publishing", "100", "--rounds", "3"] },
    // Issue 13's targets: node-opcua already fails at 1024 items, so these run fieldgate alone.
    { title: "counters: 16384 items at 10 ms sampling (issue 13)", args: ["--items", "16384", "--publishing", "100", "--rounds", "3"], withoutPeer: true },
    { title: "counters: 4096 items at 10 ms with a Read 10 x 100 load alongside (issue 13)", args: ["--items", "4096", "--publishing", "100", "--with", "read", "--rounds", "3"], withoutPeer: true },
    {
      title: "counters: 1024 items at 10 ms with HistoryRead of 100,000 values in a loop alongside (issue 13)",
      args: ["--items", "1024", "--publishing", "100", "--with", "history", "--rounds", "3"],
      withoutPeer: true,
    },
  ],
  async run(ctx, options) {
    const results: CaseResult[] = [];
    for (const target of ctx.targets) {
      if (!options.search) {
        for (const n of options.items) await runN(ctx, target, options, n, results);
        continue;
      }
      // Doubling until a failure, then halving the gap between the last pass and the first failure.
      let pass = 0;
      let fail = 0;
      for (let n = options.items[0]; n <= options.searchMax; n *= 2) {
        if (await runN(ctx, target, options, n, results)) pass = n;
        else {
          fail = n;
          break;
        }
      }
      while (fail > 0 && fail - pass > SEARCH_STEP) {
        const mid = Math.round((pass + fail) / 2 / SEARCH_STEP) * SEARCH_STEP;
        if (await runN(ctx, target, options, mid, results)) pass = mid;
        else fail = mid;
      }
      const summary = `largest N passing on ${target.name}: ${pass || "none"}${fail ? ` (fails at ${fail})` : ` (up to --search-max ${options.searchMax})`}`;
      ctx.log(`counters ${summary}`);
      ctx.notes.push(summary);
    }
    return results;
  },
};
