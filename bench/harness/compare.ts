// Rounds and peers: the medians of each figure over the rounds of one case on one target, and
// the ratio fieldgate / peer per figure, as a table and as data for the JSON and RESULTS.md.
import type { CaseResult, Figures } from "./report.js";

/** The figures compared, in table order; `better` says which direction is good. */
export const COMPARED: ReadonlyArray<{ key: string; label: string; get(f: Figures): number; better: "higher" | "lower" }> = [
  { key: "rate", label: "rate", get: (f) => f.requestsPerSecond, better: "higher" },
  { key: "p50", label: "p50 µs", get: (f) => f.latencyMicros.p50, better: "lower" },
  { key: "p99", label: "p99 µs", get: (f) => f.latencyMicros.p99, better: "lower" },
  { key: "p999", label: "p99.9 µs", get: (f) => f.latencyMicros.p999, better: "lower" },
  { key: "cpuPerOp", label: "srv µs/op", get: (f) => f.serverCpuMicrosPerRequest, better: "lower" },
  // How much of its core the server got: well under 100 % with a rate below the server's CPU
  // cost means the machine (other processes) or the client, not the server, set the rate.
  { key: "cpuShare", label: "srv CPU %", get: (f) => f.serverCpuShare * 100, better: "higher" },
  { key: "rssIdle", label: "RSS idle MB", get: (f) => f.serverRssIdleBytes / 2 ** 20, better: "lower" },
  // Only scenarios that read it (parts, restart): the column is left out of tables without it.
  { key: "anonIdle", label: "anon idle MB", get: (f) => (f.serverRssAnonIdleBytes ?? NaN) / 2 ** 20, better: "lower" },
  { key: "rssEnd", label: "RSS end MB", get: (f) => f.serverRssEndBytes / 2 ** 20, better: "lower" },
  { key: "heapEnd", label: "heap end MB", get: (f) => f.serverHeapUsedEndBytes / 2 ** 20, better: "lower" },
  { key: "gcPerSec", label: "GC ms/s", get: (f) => f.gcPausePerSecondMs, better: "lower" },
  { key: "start", label: "start ms", get: (f) => f.startToListeningMs, better: "lower" },
  { key: "errors", label: "errors", get: (f) => f.errorsTotal + f.channelFaults, better: "lower" },
];

export function median(values: readonly number[]): number {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

export interface CaseSummary {
  scenario: string;
  case: string;
  unit: string;
  rounds: number;
  /** Target name → figure key → median over the rounds. */
  medians: Record<string, Record<string, number>>;
  /** Figure key → first target's median / peer's median (NaN without a peer). */
  ratio: Record<string, number>;
  /** Errors over all rounds, per target (summed, not a median: one error is one too many). */
  errors: Record<string, number>;
}

/** Groups results by scenario and case (in first-seen order) and takes medians per target. */
export function summarize(results: readonly CaseResult[], first: string, peer: string | undefined): CaseSummary[] {
  const groups = new Map<string, CaseResult[]>();
  for (const r of results) {
    const key = `${r.scenario}\u0000${r.case}`;
    let g = groups.get(key);
    if (g === undefined) groups.set(key, (g = []));
    g.push(r);
  }
  const out: CaseSummary[] = [];
  for (const g of groups.values()) {
    const medians: Record<string, Record<string, number>> = {};
    const errors: Record<string, number> = {};
    const targets = [...new Set(g.map((r) => r.target))];
    for (const t of targets) {
      const rs = g.filter((r) => r.target === t);
      medians[t] = Object.fromEntries(COMPARED.map((c) => [c.key, median(rs.map((r) => c.get(r.figures)))]));
      errors[t] = rs.reduce((a, r) => a + r.figures.errorsTotal + r.figures.channelFaults, 0);
    }
    const ratio: Record<string, number> = {};
    if (peer !== undefined && medians[first] && medians[peer]) {
      for (const c of COMPARED) ratio[c.key] = medians[first][c.key] / medians[peer][c.key];
    }
    out.push({
      scenario: g[0].scenario,
      case: g[0].case,
      unit: g[0].unit ?? "req/s",
      rounds: Math.max(...targets.map((t) => g.filter((r) => r.target === t).length)),
      medians,
      ratio,
      errors,
    });
  }
  return out;
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return "-";
  const digits = Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : 2;
  return n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function ratioText(r: number | undefined): string {
  return r === undefined || !Number.isFinite(r) ? "-" : `${r >= 10 ? r.toFixed(1) : r.toFixed(2)}x`;
}

/** The COMPARED columns of a table of `summaries`: anon idle only when a case has it. */
export function comparedColumns(summaries: readonly CaseSummary[]): typeof COMPARED {
  return COMPARED.filter((c) => c.key !== "anonIdle" || summaries.some((s) => Object.values(s.medians).some((m) => Number.isFinite(m[c.key]))));
}

/** Medians per target and the ratio row, as a fixed-width text table. */
export function formatSummary(summaries: readonly CaseSummary[], first: string, peer: string | undefined): string {
  const shown = comparedColumns(summaries);
  const header = ["case", "target", ...shown.map((c) => c.label)];
  const rows: string[][] = [];
  for (const s of summaries) {
    for (const [target, m] of Object.entries(s.medians)) {
      rows.push([`${s.scenario} ${s.case}`, `${target} (median of ${s.rounds})`, ...shown.map((c) => (c.key === "errors" ? String(s.errors[target]) : fmt(m[c.key])))]);
    }
    if (peer !== undefined && Object.keys(s.ratio).length) {
      rows.push([`${s.scenario} ${s.case}`, `${first} / ${peer}`, ...shown.map((c) => (c.key === "errors" ? "" : ratioText(s.ratio[c.key])))]);
    }
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}
