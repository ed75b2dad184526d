// One case of a windowed scenario on one target: start a fresh server, read its idle figures,
// run the load (its own pinned process), read the server's GC and heap report around the
// window, stop the server, and turn it all into a CaseResult. Every request/response scenario
// (read, write, browse, ...) goes through here, so their figures mean the same thing.
import type { DiagnosticsSnapshot } from "../../src/server/diagnostics-report.js";
import type { HistogramSnapshot } from "../client/histogram.js";
import { Histogram } from "../client/histogram.js";
import type { LoadName, LoadParams } from "../scenarios/loads.js";
import { runLoad } from "./load-process.js";
import { memoryOf } from "./proc.js";
import type { CaseConditions, CaseResult, Figures } from "./report.js";
import { sleep, type BenchContext } from "./scenario.js";
import type { RunningServer, ServerTarget, TargetStartOptions } from "./target.js";

/** Idle figures are read this long after the listening line, once start-up garbage has settled. */
export const IDLE_SETTLE_MS = 500;

/** What every windowed load returns (read-load.ts, service-load.ts, ...). */
export interface WindowLoadResult {
  windowSeconds: number;
  /** Responses within the window. */
  requests: number;
  /** Errors within the window (non-Good service result, ServiceFault, bad result count, ...). */
  errors: number;
  /** Errors over the whole run, warm-up and drain included. */
  errorsTotal: number;
  errorKinds: Record<string, number>;
  /** Channels that died during the run. */
  channelFaults: number;
  /** Requests still unanswered when the drain gave up. */
  lostInFlight: number;
  /** Responses decoded in full and checked result by result (warm-up included). */
  verifiedResponses: number;
  latencyMicros: HistogramSnapshot;
  requestBytes: number;
  /** The server over the window: utime + stime in µs, RSS at its end; null when not local. */
  server: { cpuMicros: number; rssBytesAtEnd: number; peakRssBytes: number } | null;
  /** CPU time of the load process over the window, µs: near the window length means the client was the limit. */
  loadCpuMicros: number;
}

/** What the server's own report says about the window: GC pauses and the heap at its end. */
export interface WindowDiagnostics {
  heapIdleBytes: number;
  heapUsedEndBytes: number;
  heapTotalEndBytes: number;
  gcPauseMs: number;
  gcCount: number;
  gcMaxPauseMs: number;
}

const NO_DIAGNOSTICS: WindowDiagnostics = {
  heapIdleBytes: NaN,
  heapUsedEndBytes: NaN,
  heapTotalEndBytes: NaN,
  gcPauseMs: NaN,
  gcCount: NaN,
  gcMaxPauseMs: NaN,
};

/** Asks a server with a diagnostics report for one line and waits for it (null on time-out or without). */
export async function requestReport(server: RunningServer, timeoutMs = 1000): Promise<DiagnosticsSnapshot | null> {
  if (!server.diagnostics || server.exited) return null;
  const before = server.reports.length;
  try {
    process.kill(server.pid, "SIGUSR2");
  } catch {
    return null;
  }
  return (await waitReports(server, before + 1, timeoutMs)) ? server.reports[before] : null;
}

async function waitReports(server: RunningServer, count: number, timeoutMs: number): Promise<boolean> {
  const until = performance.now() + timeoutMs;
  while (server.reports.length < count) {
    if (performance.now() > until || server.exited) return false;
    await sleep(20);
  }
  return true;
}

/**
 * The two reports the load asked for at the window's edges (the load sends SIGUSR2 at both),
 * taken from the reports that arrived after `before`.
 */
export async function windowDiagnostics(server: RunningServer, before: number, idle: DiagnosticsSnapshot | null): Promise<WindowDiagnostics> {
  if (!server.diagnostics) return NO_DIAGNOSTICS;
  await waitReports(server, before + 2, 1500);
  const start = server.reports[before];
  const end = server.reports[before + 1];
  if (start === undefined || end === undefined) return { ...NO_DIAGNOSTICS, heapIdleBytes: idle?.heapUsedBytes ?? NaN };
  return {
    heapIdleBytes: idle?.heapUsedBytes ?? NaN,
    heapUsedEndBytes: end.heapUsedBytes,
    heapTotalEndBytes: end.heapTotalBytes,
    gcPauseMs: end.gcPauseMs - start.gcPauseMs,
    gcCount: end.gcCount - start.gcCount,
    gcMaxPauseMs: end.gcMaxPauseMs,
  };
}

export function figuresOf(load: WindowLoadResult, idleRss: number, startMs: number, diag: WindowDiagnostics): Figures {
  const h = Histogram.from(load.latencyMicros);
  const windowMicros = load.windowSeconds * 1e6;
  const serverCpu = load.server?.cpuMicros ?? NaN;
  return {
    requests: load.requests,
    windowSeconds: load.windowSeconds,
    requestsPerSecond: load.requests / load.windowSeconds,
    latencyMicros: {
      p50: h.percentile(50),
      p90: h.percentile(90),
      p99: h.percentile(99),
      p999: h.percentile(99.9),
      max: h.count ? h.max : NaN,
      mean: h.mean(),
    },
    serverCpuMicrosPerRequest: load.requests > 0 ? serverCpu / load.requests : NaN,
    serverCpuShare: serverCpu / windowMicros,
    loadCpuShare: load.loadCpuMicros / windowMicros,
    serverRssIdleBytes: idleRss,
    serverRssEndBytes: load.server?.rssBytesAtEnd ?? NaN,
    serverPeakRssBytes: load.server?.peakRssBytes ?? NaN,
    serverHeapIdleBytes: diag.heapIdleBytes,
    serverHeapUsedEndBytes: diag.heapUsedEndBytes,
    serverHeapTotalEndBytes: diag.heapTotalEndBytes,
    gcPauseMs: diag.gcPauseMs,
    gcCount: diag.gcCount,
    gcPausePerSecondMs: diag.gcPauseMs / load.windowSeconds,
    startToListeningMs: startMs,
    errors: load.errors,
    errorsTotal: load.errorsTotal,
    channelFaults: load.channelFaults,
    lostInFlight: load.lostInFlight,
    verifiedResponses: load.verifiedResponses,
  };
}

export interface CaseSpec<N extends LoadName> {
  scenario: string;
  caseName: string;
  load: N;
  /** The load's parameters for this server (host, port, pid, ...). */
  params(server: RunningServer): LoadParams<N>;
  /** The scenario's own conditions (connections, outstanding, nodes, ...). */
  conditions: Partial<CaseConditions>;
  warmupSeconds: number;
  durationSeconds: number;
  start?: Omit<TargetStartOptions, "cpu">;
  /** What one "request" is (default req/s): sessions, notifications, ... */
  unit?: string;
  /**
   * Runs after the idle figures, before the load; what it returns runs once the load is done
   * (the web scenario opens status pages on the server with it). Its notes join the result's.
   */
  around?(server: RunningServer): Promise<(notes: string[]) => Promise<void>>;
}

export async function runWindowCase<N extends LoadName>(ctx: BenchContext, target: ServerTarget, spec: CaseSpec<N>): Promise<CaseResult> {
  const label = `${spec.scenario} ${spec.caseName} on ${target.name}`;
  ctx.log(`${label}: starting the server`);
  const server = await target.start({ ...spec.start, cpu: ctx.serverCpu });
  const notes: string[] = [];
  try {
    await sleep(IDLE_SETTLE_MS);
    const idle = memoryOf(server.pid);
    const idleReport = await requestReport(server);
    ctx.log(`${label}: listening after ${server.startToListeningMs.toFixed(0)} ms, pid ${server.pid}; ${spec.warmupSeconds} s warm-up, ${spec.durationSeconds} s window`);
    const before = server.reports.length;
    const after = spec.around === undefined ? undefined : await spec.around(server);
    let run;
    try {
      run = await runLoad(spec.load, spec.params(server), ctx.load);
    } finally {
      await after?.(notes);
    }
    const load = run.result as unknown as WindowLoadResult;
    const diag = await windowDiagnostics(server, before, idleReport);
    if (server.exited) notes.push("the server exited during the run");
    if (load.lostInFlight > 0) notes.push(`${load.lostInFlight} requests unanswered after the window`);
    if (load.channelFaults > 0) notes.push(`${load.channelFaults} channels closed under load`);
    if (Number.isFinite(load.loadCpuMicros) && load.loadCpuMicros / (load.windowSeconds * 1e6) > 0.9) {
      notes.push("the load process used over 90 % of its core: the client may be the limit");
    }
    return {
      scenario: spec.scenario,
      case: spec.caseName,
      target: target.name,
      unit: spec.unit ?? "req/s",
      figures: figuresOf(load, idle.rss, server.startToListeningMs, diag),
      conditions: {
        ...spec.conditions,
        warmupSeconds: spec.warmupSeconds,
        durationSeconds: spec.durationSeconds,
        serverCpu: server.pinnedCpu ?? null,
        loadCpu: run.pinnedCpu ?? null,
        loadInline: run.inline,
        requestBytes: load.requestBytes,
        idleRssAfterMs: IDLE_SETTLE_MS,
      },
      errorKinds: load.errorKinds,
      notes,
    };
  } finally {
    const exit = await server.stop();
    // SIGTERM closes channels and sessions cleanly and exits 0; `notes` is the result's array.
    if (exit.code !== 0) notes.push(`server stopped with exit code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ""} (expected 0 on SIGTERM)`);
  }
}

