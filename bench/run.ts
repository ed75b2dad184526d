// `npm run bench -- SCENARIO [options]`: starts the server under test pinned to one core, drives
// it from a load process pinned to another, and prints the figures (and writes them as JSON).
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { allowedCpus, findTaskset } from "./harness/proc.js";
import { formatTable, gitCommit, machineInfo, writeJson, type RunReport } from "./harness/report.js";
import type { BenchContext, CommonOptions, Scenario } from "./harness/scenario.js";
import { readScenario } from "./scenarios/read.js";
import type { ServerTarget } from "./harness/target.js";
import { EchoTarget } from "./targets/echo.js";
import { FieldgateTarget, fieldgateCli } from "./targets/fieldgate.js";

// Erased to the common options: each scenario parses and consumes its own.
const SCENARIOS: readonly Scenario<CommonOptions>[] = [readScenario as unknown as Scenario<CommonOptions>];

/** The repository root: run.js lives in dist/bench/, run.ts in bench/. */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    if (existsSync(join(dir, "package.json"))) return dir;
    dir = dirname(dir);
  }
  return process.cwd();
}

function usage(): string {
  return [
    "usage: npm run bench -- SCENARIO [options]    (--help after a scenario for its options)",
    "scenarios:",
    ...SCENARIOS.map((s) => `  ${s.name.padEnd(10)} ${s.summary}`),
  ].join("\n");
}

/** Server on the first allowed CPU, load on the second, when taskset exists and there are two. */
function placement(options: CommonOptions, notes: string[]): Pick<BenchContext, "serverCpu" | "load"> {
  const inline = options.inline;
  if (inline) notes.push("load ran inline, in the harness process");
  if (!options.pin) {
    notes.push("not pinned (--no-pin)");
    return { serverCpu: undefined, load: { inline } };
  }
  if (findTaskset() === null) {
    notes.push("taskset not found (util-linux): server and load ran unpinned");
    return { serverCpu: undefined, load: { inline } };
  }
  const cpus = allowedCpus();
  if (cpus.length < 2) {
    notes.push(`only ${cpus.length} CPU available: server and load ran unpinned on the same core`);
    return { serverCpu: undefined, load: { inline } };
  }
  return { serverCpu: cpus[0], load: { inline, cpu: inline ? undefined : cpus[1] } };
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h") {
    console.log(usage());
    return name === undefined ? 2 : 0;
  }
  const scenario = SCENARIOS.find((s) => s.name === name);
  if (!scenario) {
    console.error(`unknown scenario "${name}"\n${usage()}`);
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
  const targets: ServerTarget[] = [];
  for (const t of options.targets) {
    if (t === "fieldgate") {
      if (!existsSync(fieldgateCli(root))) {
        console.error(`${fieldgateCli(root)} is missing: npm run bench builds it; after a failed build, fix that first`);
        return 1;
      }
      targets.push(new FieldgateTarget({ root, config: options.config ? resolve(options.config) : undefined }));
    } else if (t === "echo") {
      targets.push(new EchoTarget(root));
    } else {
      console.error(`unknown target "${t}": fieldgate or echo`);
      return 2;
    }
  }
  const notes: string[] = [];
  const ctx: BenchContext = {
    root,
    targets,
    ...placement(options, notes),
    notes,
    log: (line) => process.stderr.write(`bench: ${line}\n`),
  };
  for (const note of notes) ctx.log(note);
  const results = await scenario.run(ctx, options);
  console.log(formatTable(results));
  for (const note of notes) console.log(`note: ${note}`);
  if (options.json) {
    const report: RunReport = {
      tool: "fieldgate-bench",
      date: new Date().toISOString(),
      commit: gitCommit(root),
      machine: machineInfo(),
      notes,
      results,
    };
    writeJson(resolve(options.json), report);
    ctx.log(`wrote ${options.json}`);
  }
  const failed = results.some((r) => r.figures.errorsTotal > 0 || r.figures.channelFaults > 0);
  return failed ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`bench: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);
