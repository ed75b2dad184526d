// An opt-in report of the process's own memory and garbage collection, for the bench harness:
// /proc shows CPU and RSS from outside, but the V8 heap and the time spent in GC pauses are
// only known inside. When enabled (FIELDGATE_DIAGNOSTICS=1 for `fieldgate run`; the bench's
// node-opcua peer loads the same module through `--import`), every SIGUSR2 and the exit print
// one line `diagnostics: {json}` on stdout. The harness signals at the edges of its measurement
// window and subtracts. Off by default: nothing is observed and SIGUSR2 keeps Node's default.
import { PerformanceObserver, type PerformanceEntry } from "node:perf_hooks";

/** One line of the report; totals are since the report was installed. */
export interface DiagnosticsSnapshot {
  /** 1, 2, ... per line printed, so that a reader can pair lines with its own requests. */
  seq: number;
  /** Date.now() when the snapshot was taken. */
  time: number;
  /** Why it was printed: "signal", "exit" or "request". */
  reason: string;
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  externalBytes: number;
  arrayBuffersBytes: number;
  /** GC entries observed (scavenges, mark-sweeps, ...). */
  gcCount: number;
  /** Sum of their durations, ms: the time the main thread stood in GC pauses. */
  gcPauseMs: number;
  /** The longest single pause, ms. */
  gcMaxPauseMs: number;
  /**
   * Handles, requests and timers keeping the event loop alive, counted by kind
   * (`process.getActiveResourcesInfo()`: TCPSocketWrap, Timeout, FSReqCallback, ...). The soak
   * run watches these for leaks: a count that grows with uptime is a handle or timer never freed.
   */
  activeResources?: Record<string, number>;
}

export const DIAGNOSTICS_PREFIX = "diagnostics: ";
export const DIAGNOSTICS_ENV = "FIELDGATE_DIAGNOSTICS";

export interface DiagnosticsReport {
  snapshot(reason: string): DiagnosticsSnapshot;
  /** Prints one line now. */
  print(reason: string): void;
  uninstall(): void;
}

let installed: DiagnosticsReport | null = null;

/** True when the environment asks for the report (FIELDGATE_DIAGNOSTICS=1 or true). */
export function diagnosticsRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env[DIAGNOSTICS_ENV];
  return v === "1" || v === "true";
}

/**
 * Starts counting GC pauses and answers SIGUSR2 with a line on `write` (stdout by default).
 * Installing twice returns the first report.
 */
export function installDiagnosticsReport(write: (line: string) => void = (l) => process.stdout.write(l)): DiagnosticsReport {
  if (installed !== null) return installed;
  let gcCount = 0;
  let gcPauseMs = 0;
  let gcMaxPauseMs = 0;
  let seq = 0;
  const observer = new PerformanceObserver((list) => {
    const entries: PerformanceEntry[] = list.getEntries();
    for (let i = 0; i < entries.length; i++) {
      const d = entries[i].duration;
      gcCount++;
      gcPauseMs += d;
      if (d > gcMaxPauseMs) gcMaxPauseMs = d;
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  const snapshot = (reason: string): DiagnosticsSnapshot => {
    const m = process.memoryUsage();
    return {
      seq: ++seq,
      time: Date.now(),
      reason,
      rssBytes: m.rss,
      heapUsedBytes: m.heapUsed,
      heapTotalBytes: m.heapTotal,
      externalBytes: m.external,
      arrayBuffersBytes: m.arrayBuffers,
      gcCount,
      gcPauseMs,
      gcMaxPauseMs,
      activeResources: countResources(),
    };
  };
  const print = (reason: string): void => {
    write(`${DIAGNOSTICS_PREFIX}${JSON.stringify(snapshot(reason))}\n`);
  };
  const onSignal = (): void => print("signal");
  const onExit = (): void => print("exit");
  process.on("SIGUSR2", onSignal);
  process.on("exit", onExit);
  installed = {
    snapshot,
    print,
    uninstall() {
      observer.disconnect();
      process.off("SIGUSR2", onSignal);
      process.off("exit", onExit);
      installed = null;
    },
  };
  return installed;
}

function countResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

/** Parses a line printed by the report; null for any other line. */
export function parseDiagnosticsLine(line: string): DiagnosticsSnapshot | null {
  const at = line.indexOf(DIAGNOSTICS_PREFIX);
  if (at < 0) return null;
  try {
    const v = JSON.parse(line.slice(at + DIAGNOSTICS_PREFIX.length)) as Partial<DiagnosticsSnapshot>;
    if (typeof v.seq !== "number" || typeof v.gcPauseMs !== "number" || typeof v.heapUsedBytes !== "number") return null;
    return v as DiagnosticsSnapshot;
  } catch {
    return null;
  }
}
