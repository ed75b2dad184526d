// `npm run bench:report`: the headline set, every case side by side with the node-opcua peer in
// alternating rounds, written to bench/RESULTS.md with the machine, the date, the commit and the
// conditions of every figure. Takes several minutes.
// `node dist/bench/report.js [--rounds N] [--duration S] [--warmup S] [--out FILE] [--json FILE] [--only TEXT]`
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { comparedColumns, type CaseSummary } from "./harness/compare.js";
import { loadScenarios } from "./harness/registry.js";
import { gitCommit, machineInfo, writeJson, type CaseResult, type RunReport } from "./harness/report.js";
import { runScenario, type ScenarioRun } from "./harness/runner.js";
import { spliceSections, type ReportSection } from "./harness/splice.js";
import type { CommonOptions, Scenario } from "./harness/scenario.js";
import { repoRoot } from "./run.js";

interface Section {
  title: string;
  scenario: string;
  args: string[];
  /** Why this run is in the report, one line for the reader. */
  about: string;
  withoutPeer?: boolean;
}

function builtInSections(duration: string, warmup: string): Section[] {
  const win = ["--duration", duration, "--warmup", warmup];
  return [
    { title: "Read, 1 value per request", scenario: "read", args: ["--cases", "1x1,10x100,10x1000", ...win], about: "Server_ServerStatus_CurrentTime; connections x requests in flight per connection" },
    { title: "Read, 100 values per request", scenario: "read", args: ["--cases", "1x1,10x100", "--values", "100", ...win], about: "the 11 scalar variables of the test namespace, round robin" },
    { title: "Write, 100 values per request", scenario: "write", args: ["--cases", "1x1,10x10", ...win], about: "100 Int32 WriteValues to the test namespace's Scalar.Int32" },
    { title: "Browse the Server object", scenario: "browse", args: ["--cases", "1x1,10x10", ...win], about: "forward hierarchical references of i=2253, all result fields" },
    { title: "Sessions", scenario: "connect", args: ["--sessions", "50", "--parallel", "10", ...win], about: "cycles of 50 sessions opened 10 at a time (Hello to ActivateSession), held, closed; RSS end = with 50 held" },
    { title: "Idle with 10,000 device tags", scenario: "idle", args: ["--tags", "10000", "--settle", "5"], about: "fieldgate: 10 simulator devices x 1000 uint16 tags polled every second; node-opcua: the same NodeIds as plain variables" },
    { title: "Echo ceiling", scenario: "echo", args: ["--cases", "1x1,10x100", ...win, "--rounds", "1"], about: "canned responses, no decoding: the most the load client and Node's socket I/O reach here" },
  ];
}

function peerVersion(root: string): string {
  try {
    return (JSON.parse(readFileSync(join(root, "node_modules", "node-opcua-server", "package.json"), "utf8")) as { version: string }).version;
  } catch {
    return "?";
  }
}

function num(n: number, unit = ""): string {
  if (!Number.isFinite(n)) return "-";
  const digits = Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : 2;
  return `${n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })}${unit}`;
}

function ratio(r: number | undefined): string {
  return r === undefined || !Number.isFinite(r) ? "-" : `**${r >= 10 ? r.toFixed(1) : r.toFixed(2)}x**`;
}

function sectionTable(run: ScenarioRun): string[] {
  const cols = comparedColumns(run.summaries);
  const out = [`| case | target | ${cols.map((c) => c.label).join(" | ")} |`, `|---|---|${cols.map(() => "---:").join("|")}|`];
  for (const s of run.summaries) {
    for (const [target, m] of Object.entries(s.medians)) {
      out.push(`| ${s.case} | ${target} | ${cols.map((c) => (c.key === "errors" ? String(s.errors[target]) : c.key === "rate" ? `${num(m.rate)}${s.unit !== "req/s" ? ` ${s.unit}` : ""}` : num(m[c.key]))).join(" | ")} |`);
    }
    if (run.peer !== undefined && Object.keys(s.ratio).length) {
      out.push(`| ${s.case} | ${run.first} / ${run.peer} | ${cols.map((c) => (c.key === "errors" ? "" : ratio(s.ratio[c.key]))).join(" | ")} |`);
    }
  }
  return out;
}

function find(runs: Map<string, ScenarioRun>, title: string, caseName: string): CaseSummary | undefined {
  return runs.get(title)?.summaries.find((s) => s.case === caseName);
}

/** The targets of issue 7 against the medians, as table rows. */
function headline(runs: Map<string, ScenarioRun>): string[] {
  const rows: string[] = ["| figure | fieldgate | node-opcua | fieldgate / node-opcua | issue 7 target | met |", "|---|---:|---:|---:|---|---|"];
  const fg = (s: CaseSummary | undefined, k: string): number => s?.medians.fieldgate?.[k] ?? NaN;
  const no = (s: CaseSummary | undefined, k: string): number => s?.medians["node-opcua"]?.[k] ?? NaN;
  const yes = (ok: boolean | undefined): string => (ok === undefined ? "n/a" : ok ? "yes" : "**no**");
  const add = (figure: string, s: CaseSummary | undefined, k: string, unit: string, target: string, ok: (r: number) => boolean): void => {
    const r = fg(s, k) / no(s, k);
    rows.push(`| ${figure} | ${num(fg(s, k), unit)} | ${num(no(s, k), unit)} | ${ratio(r)} | ${target} | ${yes(Number.isFinite(r) ? ok(r) : undefined)} |`);
  };
  const r1 = find(runs, "Read, 1 value per request", "10x100");
  add("Read 1 value, 10 x 100 in flight, req/s", r1, "rate", "", ">= 5x node-opcua", (r) => r >= 5);
  add("... server CPU per Read, µs (the figure least moved by a busy machine)", r1, "cpuPerOp", "", "(5x the rate needs <= 1/5)", (r) => r <= 0.2);
  const echo = find(runs, "Echo ceiling", "10x100");
  const echoRate = echo?.medians.echo?.rate ?? NaN;
  const ofEcho = fg(r1, "rate") / echoRate;
  rows.push(`| ... as a share of the echo ceiling (${num(echoRate)} req/s) | ${num(ofEcho * 100, " %")} | | | >= 50 % of echo | ${yes(Number.isFinite(ofEcho) ? ofEcho >= 0.5 : undefined)} |`);
  add("Read 1 value, 1 x 1, req/s", find(runs, "Read, 1 value per request", "1x1"), "rate", "", "(no target)", () => true);
  const r100 = find(runs, "Read, 100 values per request", "10x100 100 values");
  add("Read 100 values, 10 x 100 in flight, req/s", r100, "rate", "", ">= 5x node-opcua", (r) => r >= 5);
  add("... server CPU per Read of 100 values, µs", r100, "cpuPerOp", "", "(5x the rate needs <= 1/5)", (r) => r <= 0.2);
  const idle = find(runs, "Idle with 10,000 device tags", "10000 tags");
  add("Idle RSS with 10,000 device tags, MB", idle, "rssIdle", "", "<= 1/3 of node-opcua", (r) => r <= 1 / 3);
  add("Start to listening with 10,000 tags, ms", idle, "start", "", "<= 1/10 of node-opcua", (r) => r <= 0.1);
  const r1000 = find(runs, "Read, 1 value per request", "10x1000");
  const faults = r1000?.errors.fieldgate;
  const growth = fg(r1000, "rssEnd") / fg(r1, "rssEnd");
  rows.push(
    `| 10 x 1000 in flight: errors and channel faults (all rounds); RSS vs 10 x 100 | ${faults ?? "-"}; ${num(growth)}x | ${r1000?.errors["node-opcua"] ?? "-"} | | 0 faults, RSS <= 1.5x | ${yes(faults === undefined || !Number.isFinite(growth) ? undefined : faults === 0 && growth <= 1.5)} |`,
  );
  return rows;
}

/** Issue 13's targets from the counters runs, round by round: the worst round decides. */
function sampling(runs: Map<string, ScenarioRun>): string[] {
  const rows = ["| case | rounds passed | min % of samples (worst item, worst round) | lateness p99 / p99.9, ms (worst round) | in the warm-up before the window: p99 / p99.9, ms (worst round) | GC pause p99 / max in the window, ms (worst round) | server waited for its core, ms (worst round) | other tasks on the server's core, % / steal, ms (worst round) | target | met |", "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"];
  for (const [title, run] of runs) {
    if (!title.startsWith("counters:")) continue;
    const ours = run.results.filter((r) => r.target === "fieldgate");
    if (ours.length === 0) continue;
    const c = (r: CaseResult, k: string): number => {
      const v = r.conditions[k];
      return typeof v === "number" ? v : NaN;
    };
    const passed = ours.filter((r) => r.conditions.passed === true).length;
    const worst = (k: string, pick: (a: number, b: number) => number, from: number): number => ours.reduce((m, r) => (Number.isFinite(c(r, k)) ? pick(m, c(r, k)) : m), from);
    const minRatio = worst("minRatio", Math.min, Infinity);
    const p99 = worst("latenessP99Ms", Math.max, -Infinity);
    const p999 = worst("latenessP999Ms", Math.max, -Infinity);
    const warmup = `${worst("warmupLatenessP99Ms", Math.max, -Infinity).toFixed(1)} / ${worst("warmupLatenessP999Ms", Math.max, -Infinity).toFixed(1)}`;
    // Per window where the server reports its GC histogram; since start (start-up's GCs too) where not.
    const windowGc = worst("windowGcP99Ms", Math.max, -Infinity);
    const gc = Number.isFinite(windowGc) ? `${windowGc.toFixed(1)} / ${worst("windowGcMaxMs", Math.max, -Infinity).toFixed(1)}` : `${worst("gcPauseP99Ms", Math.max, -Infinity).toFixed(1)} (since start)`;
    const waited = worst("serverRunQueueWaitMs", Math.max, -Infinity);
    const others = worst("serverCoreOthersShare", Math.max, -Infinity);
    const steal = worst("serverCoreStealMs", Math.max, -Infinity);
    const core = Number.isFinite(others) ? `${(others * 100).toFixed(1)} / ${steal.toFixed(0)}` : "-";
    const met = passed === ours.length && p99 <= 2 && p999 <= 5;
    rows.push(`| ${title.slice("counters: ".length)} | ${passed} of ${ours.length} | ${(minRatio * 100).toFixed(2)} % | ${p99.toFixed(1)} / ${p999.toFixed(1)} | ${warmup} | ${gc} | ${waited.toFixed(0)} | ${core} | every item >= 99 % in every round; p99 <= 2 ms, p99.9 <= 5 ms | ${met ? "yes" : "**no**"} |`);
  }
  return rows.length > 2 ? ["## Sampling targets (issue 13)", "", ...rows, ""] : [];
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      rounds: { type: "string", default: "3" },
      duration: { type: "string", default: "5" },
      warmup: { type: "string", default: "2" },
      out: { type: "string" },
      json: { type: "string" },
      only: { type: "string", multiple: true },
    },
  });
  const root = repoRoot();
  const out = resolve(values.out ?? join(root, "bench", "RESULTS.md"));
  const log = (line: string): void => void process.stderr.write(`bench: ${line}\n`);
  const scenarios = await loadScenarios();
  const byName = new Map(scenarios.map((s) => [s.name, s] as const));
  const sections = builtInSections(values.duration, values.warmup);
  // Scenarios of other issues join the report through their own reportRuns.
  for (const s of scenarios) for (const r of s.reportRuns ?? []) sections.push({ title: r.title, scenario: s.name, args: [...r.args], about: s.summary, withoutPeer: r.withoutPeer === true });
  const runs = new Map<string, ScenarioRun>();
  const failures: string[] = [];
  const started = new Date();
  const loadBefore = loadavg();
  for (const section of sections) {
    if (values.only?.length && !values.only.some((o) => section.title.toLowerCase().includes(o.toLowerCase()))) continue;
    const scenario: Scenario<CommonOptions> | undefined = byName.get(section.scenario);
    if (scenario === undefined) {
      failures.push(`${section.title}: no scenario "${section.scenario}"`);
      continue;
    }
    const args = [...section.args];
    if (!args.includes("--peer") && section.scenario !== "echo" && section.withoutPeer !== true) args.push("--peer", "node-opcua");
    if (!args.includes("--rounds")) args.push("--rounds", values.rounds);
    log(`report: ${section.title}: ${section.scenario} ${args.join(" ")}`);
    try {
      const options = scenario.parse(args);
      if (options === null) throw new Error("parse returned null");
      runs.set(section.title, await runScenario(scenario, options, root, log));
    } catch (err) {
      failures.push(`${section.title}: ${(err as Error).message.split("\n")[0]}`);
      log(`report: ${section.title} failed: ${(err as Error).message}`);
    }
  }
  const loadAfter = loadavg();
  const machine = machineInfo();
  const commit = gitCommit(root);
  const notes = [...new Set([...runs.values()].flatMap((r) => r.notes))];
  const md: string[] = [
    "# fieldgate bench results",
    "",
    `Generated by \`npm run bench:report\` (bench/report.ts) on ${started.toISOString().slice(0, 16).replace("T", " ")} UTC, in ${Math.round((Date.now() - started.getTime()) / 60000)} minutes.`,
    "",
    `- Commit: \`${commit ?? "unknown"}\``,
    `- Machine: ${machine.cpuModel}, ${machine.cpus} CPUs, Linux ${machine.kernel}, Node ${machine.node}. A shared virtual machine: other jobs ran on it during the run, so figures move by tens of percent from run to run; the ratios, measured in the same minutes with rounds alternating, are steadier than the absolute numbers. Load average (1, 5, 15 min) at the start ${loadBefore.map((l) => l.toFixed(1)).join(", ")}, at the end ${loadAfter.map((l) => l.toFixed(1)).join(", ")} (2 CPUs).`,
    `- Peer: node-opcua-server ${peerVersion(root)} (bench/peers/node-opcua-server.ts), security None, anonymous, the same NodeIds as fieldgate; fieldgate: \`dist/src/cli.js run\` with config/gateway.yaml less its simulator device map (the peer polls nothing; bench/targets/fieldgate-config.ts), the idle case with its own map of 10,000 tags, sub and counters with the bench namespace on.`,
    `- Conditions: each server in its own process pinned to one core with taskset, the load client (our codec) in its own process pinned to the other core; a fresh server for every case; ${values.rounds} rounds alternating fieldgate and node-opcua (A B A B), medians shown; ${values.warmup} s warm-up, then a ${values.duration} s window.`,
    "- Figures: rate = responses (or sessions) in the window per second; latency from writing a request to the read that brought its response; srv µs/op = server CPU (utime+stime from /proc) per operation; srv CPU % = the share of its core the server got in the window (far below 100 % while the rate stays below 1 / srv µs/op means the machine's other jobs, or the client, held the rate back: then compare srv µs/op first); RSS from /proc; heap end = V8 heap used at the end of the window and GC ms/s = time in GC pauses per second of the window, both from the server's own report (perf_hooks 'gc' entries; src/server/diagnostics-report.ts, and the same module preloaded into node-opcua); errors = every non-Good result, fault, lost request and channel fault over all rounds.",
    ...notes.map((n) => `- Note: ${n}`),
    ...failures.map((f) => `- **Not measured**: ${f}`),
    "",
    "## Issue 7 targets",
    "",
    ...headline(runs),
    "",
  ];
  const blocks: ReportSection[] = [];
  const targets = sampling(runs);
  if (targets.length > 0) blocks.push({ title: "Sampling targets (issue 13)", lines: targets });
  for (const section of sections) {
    const run = runs.get(section.title);
    if (run === undefined) continue;
    const lines = [`## ${section.title}`, "", `\`npm run bench -- ${section.scenario} ${section.args.join(" ")}\`: ${section.about}.`, "", ...sectionTable(run), ""];
    const notesOf = [...new Set(run.results.flatMap((r: CaseResult) => r.notes.map((n) => `${r.target} ${r.case}: ${n}`)))];
    for (const n of notesOf) lines.push(`- ${n}`);
    if (notesOf.length) lines.push("");
    blocks.push({ title: section.title, lines });
  }
  if (values.only?.length && existsSync(out)) {
    // A partial run: its sections in place of their namesakes, the rest of the file kept.
    const load = (l: number[]): string => l.map((x) => x.toFixed(1)).join(", ");
    const stamp = `Measured by \`node dist/bench/report.js --only ${values.only.join(" --only ")}\` on ${started.toISOString().slice(0, 16).replace("T", " ")} UTC at commit \`${commit ?? "unknown"}\`, ${values.rounds} rounds, load average ${load(loadBefore)} at the start and ${load(loadAfter)} at the end; the rest of this file is another run's.${failures.length ? ` Not measured: ${failures.join("; ")}.` : ""}`;
    const { text, added } = spliceSections(readFileSync(out, "utf8"), blocks, stamp);
    writeFileSync(out, text);
    if (added.length) log(`report: ${out} had no section ${added.map((t) => `"${t}"`).join(", ")}: added at its end`);
  } else {
    md.push(...blocks.flatMap((b) => b.lines));
    writeFileSync(out, `${md.join("\n")}\n`);
  }
  log(`report: wrote ${out}`);
  if (values.json) {
    const report: RunReport = {
      tool: "fieldgate-bench",
      date: started.toISOString(),
      commit,
      machine,
      notes,
      results: [...runs.values()].flatMap((r) => r.results),
      summaries: [...runs.values()].flatMap((r) => r.summaries),
    };
    writeJson(resolve(values.json), report);
  }
  return failures.length ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`bench: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);
