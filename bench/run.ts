// `npm run bench -- SCENARIO [options]`: starts the server under test pinned to one core, drives
// it from a load process pinned to another, and prints the figures (and writes them as JSON).
// With `--peer node-opcua` every case also runs against node-opcua, rounds alternating A B A B,
// and the medians and the ratio fieldgate / node-opcua are printed per figure.
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { formatSummary } from "./harness/compare.js";
import { loadScenarios } from "./harness/registry.js";
import { formatTable, gitCommit, machineInfo, writeJson, type RunReport } from "./harness/report.js";
import { runScenario } from "./harness/runner.js";
import type { CommonOptions, Scenario } from "./harness/scenario.js";

/** The repository root: run.js lives in dist/bench/, run.ts in bench/. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    if (existsSync(join(dir, "package.json"))) return dir;
    dir = dirname(dir);
  }
  return process.cwd();
}

function usage(scenarios: readonly Scenario<CommonOptions>[]): string {
  return [
    "usage: npm run bench -- SCENARIO [options]    (--help after a scenario for its options)",
    "scenarios:",
    ...scenarios.map((s) => `  ${s.name.padEnd(10)} ${s.summary}`),
  ].join("\n");
}

async function main(argv: string[]): Promise<number> {
  const scenarios = await loadScenarios();
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h") {
    console.log(usage(scenarios));
    return name === undefined ? 2 : 0;
  }
  const scenario = scenarios.find((s) => s.name === name);
  if (!scenario) {
    console.error(`unknown scenario "${name}"\n${usage(scenarios)}`);
    return 2;
  }
  let options: CommonOptions | null;
  try {
    options = scenario.parse(rest);
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${scenario.usage}`);
    return 2;
  }
  if (options === null) {
    console.log(scenario.usage);
    return 0;
  }
  const root = repoRoot();
  const log = (line: string): void => void process.stderr.write(`bench: ${line}\n`);
  const run = await runScenario(scenario, options, root, log);
  console.log(formatTable(run.results));
  if (run.peer !== undefined || options.rounds > 1) {
    console.log("");
    console.log(formatSummary(run.summaries, run.first, run.peer));
  }
  for (const note of run.notes) console.log(`note: ${note}`);
  if (options.json) {
    const report: RunReport = {
      tool: "fieldgate-bench",
      date: new Date().toISOString(),
      commit: gitCommit(root),
      machine: machineInfo(),
      notes: run.notes,
      results: run.results,
      summaries: run.summaries,
    };
    writeJson(resolve(options.json), report);
    log(`wrote ${options.json}`);
  }
  const failed = run.results.some((r) => r.figures.errorsTotal > 0 || r.figures.channelFaults > 0);
  return failed ? 1 : 0;
}

// Only as the entry point: other modules import repoRoot() without running a bench.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      console.error(`bench: ${err instanceof Error ? err.message : String(err)}`);
      process.exitCode = 1;
    },
  );
}
