// What a bench run reports: one CaseResult per scenario case and target, a readable table, and
// a JSON document with the machine, the date, the commit and the conditions of every figure
// (the raw material of bench/RESULTS.md later).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, release } from "node:os";
import type { CaseSummary } from "./compare.js";

export interface LatencyFigures {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

export interface Figures {
  requests: number;
  windowSeconds: number;
  requestsPerSecond: number;
  /** Microseconds, from send to the arrival of the socket read that held the response. */
  latencyMicros: LatencyFigures;
  /** Server utime + stime over the window / requests, µs; NaN without /proc. */
  serverCpuMicrosPerRequest: number;
  /** Server CPU over the window / window length: near 1 means the server core was saturated. */
  serverCpuShare: number;
  /** Load process CPU over the window / window length: near 1 means the client was the limit. */
  loadCpuShare: number;
  serverRssIdleBytes: number;
  serverRssEndBytes: number;
  serverPeakRssBytes: number;
  /** The anonymous part of the idle RSS (RssAnon: heaps, arenas, stacks), when a scenario reads it. */
  serverRssAnonIdleBytes?: number;
  /** V8 heap used 0.5 s after listening, from the server's own report; NaN without one. */
  serverHeapIdleBytes: number;
  /** V8 heap used and reserved at the end of the window, from the server's own report. */
  serverHeapUsedEndBytes: number;
  serverHeapTotalEndBytes: number;
  /** Time the server's main thread spent in GC pauses inside the window, ms (perf_hooks 'gc' entries). */
  gcPauseMs: number;
  gcCount: number;
  /** gcPauseMs / window seconds: ms of GC per second of load. */
  gcPausePerSecondMs: number;
  startToListeningMs: number;
  errors: number;
  errorsTotal: number;
  channelFaults: number;
  lostInFlight: number;
  /** Responses the load client decoded in full as a check on its minimal parse. */
  verifiedResponses: number;
}

export interface CaseConditions {
  connections?: number;
  outstanding?: number;
  values?: number;
  nodes?: string[];
  timestampsToReturn?: string;
  /** Anything else a scenario holds constant (sessions, counters, tags, ...). */
  [condition: string]: string | number | boolean | null | string[] | undefined;
  warmupSeconds: number;
  durationSeconds: number;
  /** CPU the server was pinned to, or null. */
  serverCpu: number | null;
  /** CPU the load process was pinned to, or null (also when the load ran inline). */
  loadCpu: number | null;
  loadInline: boolean;
  requestBytes?: number;
  idleRssAfterMs: number;
}

export interface CaseResult {
  scenario: string;
  case: string;
  target: string;
  /** What requestsPerSecond counts: "req/s" (default), "sessions/s", "notifications/s", ... */
  unit?: string;
  /** 1, 2, ... when the run alternated rounds (--rounds). */
  round?: number;
  figures: Figures;
  conditions: CaseConditions;
  errorKinds: Record<string, number>;
  /** Anything that qualifies the figures (no taskset, server exit code, ...). */
  notes: string[];
  /** A case that serves no requests by design (idle, a feature switched off): smoke does not ask for any. */
  withoutRequests?: boolean;
}

export interface RunReport {
  tool: "fieldgate-bench";
  date: string;
  commit: string | null;
  machine: { cpuModel: string; cpus: number; kernel: string; node: string };
  notes: string[];
  results: CaseResult[];
  /** Medians per case and target over the rounds, and ratios to the peer. */
  summaries?: CaseSummary[];
}

export function machineInfo(): RunReport["machine"] {
  const list = cpus();
  return { cpuModel: list[0]?.model ?? "unknown", cpus: list.length, kernel: release(), node: process.version };
}

export function gitCommit(root: string): string | null {
  try {
    const head = execFileSync("git", ["rev-parse", "HEAD"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    return dirty ? `${head}+dirty` : head;
  } catch {
    try {
      return readFileSync(`${root}/.git/HEAD`, "utf8").trim();
    } catch {
      return null;
    }
  }
}

function fmt(n: number, digits = 0): string {
  if (!Number.isFinite(n)) return "-";
  return n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function mb(bytes: number): string {
  return Number.isFinite(bytes) ? fmt(bytes / (1 << 20), 1) : "-";
}

function pct(share: number): string {
  return Number.isFinite(share) ? `${fmt(share * 100)} %` : "-";
}

/** Figures of a case that serves no requests: every request figure NaN or 0, the rest from `base`. */
export function figuresWithoutRequests(base: Partial<Figures>): Figures {
  return {
    requests: 0,
    windowSeconds: 0,
    requestsPerSecond: NaN,
    latencyMicros: { p50: NaN, p90: NaN, p99: NaN, p999: NaN, max: NaN, mean: NaN },
    serverCpuMicrosPerRequest: NaN,
    serverCpuShare: NaN,
    loadCpuShare: NaN,
    serverRssIdleBytes: NaN,
    serverRssEndBytes: NaN,
    serverPeakRssBytes: NaN,
    serverHeapIdleBytes: NaN,
    serverHeapUsedEndBytes: NaN,
    serverHeapTotalEndBytes: NaN,
    gcPauseMs: NaN,
    gcCount: NaN,
    gcPausePerSecondMs: NaN,
    startToListeningMs: NaN,
    errors: 0,
    errorsTotal: 0,
    channelFaults: 0,
    lostInFlight: 0,
    verifiedResponses: 0,
    ...base,
  };
}

/** The figures as a fixed-width text table, one row per case (an anon column when a case has RssAnon). */
export function formatTable(results: readonly CaseResult[]): string {
  const anon = results.some((r) => Number.isFinite(r.figures.serverRssAnonIdleBytes));
  const header = ["target", "case", "rate", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "srv µs/op", "srv CPU", "load CPU", "RSS idle MB", ...(anon ? ["anon idle MB"] : []), "RSS end MB", "heap end MB", "GC ms", "start ms", "errors"];
  const rows = results.map((r) => {
    const f = r.figures;
    return [
      r.target,
      `${r.scenario} ${r.case}${r.round !== undefined ? ` #${r.round}` : ""}`,
      `${fmt(f.requestsPerSecond)}${r.unit && r.unit !== "req/s" ? ` ${r.unit}` : ""}`,
      fmt(f.latencyMicros.p50),
      fmt(f.latencyMicros.p90),
      fmt(f.latencyMicros.p99),
      fmt(f.latencyMicros.p999),
      fmt(f.serverCpuMicrosPerRequest, 2),
      pct(f.serverCpuShare),
      pct(f.loadCpuShare),
      mb(f.serverRssIdleBytes),
      ...(anon ? [mb(f.serverRssAnonIdleBytes ?? NaN)] : []),
      mb(f.serverRssEndBytes),
      mb(f.serverHeapUsedEndBytes),
      fmt(f.gcPauseMs, 1),
      fmt(f.startToListeningMs),
      f.errorsTotal === f.errors ? fmt(f.errors) : `${fmt(f.errors)} (${fmt(f.errorsTotal)} in run)`,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  const out = [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)];
  for (const r of results) {
    for (const [kind, n] of Object.entries(r.errorKinds)) out.push(`  ${r.target} ${r.case}: ${n} x ${kind}`);
    for (const note of r.notes) out.push(`  ${r.target} ${r.case}: ${note}`);
  }
  return out.join("\n");
}

export function writeJson(path: string, report: RunReport): void {
  // NaN (a figure /proc could not give) becomes null, which JSON can carry.
  writeFileSync(path, `${JSON.stringify(report, (_k, v: unknown) => (typeof v === "number" && !Number.isFinite(v) ? null : v), 2)}\n`);
}
