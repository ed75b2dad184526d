// `npm run bench -- smoke`: every registered scenario for a second or two with small cases (its
// `smokeArgs`), checking that each produces figures and that the protocol traffic was
// error-free. For CI: it never judges a figure's size, only that it exists and that nothing
// failed. The exit status is 1 when a scenario threw, returned no result, or counted an error.
import { parseArgs } from "node:util";
import { loadScenarios } from "../harness/registry.js";
import { formatTable, type CaseResult } from "../harness/report.js";
import { runScenario } from "../harness/runner.js";
import { COMMON_OPTIONS, commonFrom, type CommonOptions, type Scenario } from "../harness/scenario.js";

export interface SmokeOptions extends CommonOptions {
  only: string[];
}

const DEFAULT_SMOKE_ARGS = ["--duration", "1", "--warmup", "0.2"];

/** What is wrong with one smoke result, or null. */
export function smokeProblem(r: CaseResult): string | null {
  const f = r.figures;
  if (f.errorsTotal > 0) return `${f.errorsTotal} errors: ${Object.keys(r.errorKinds).join("; ")}`;
  if (f.channelFaults > 0) return `${f.channelFaults} channel faults`;
  if (f.lostInFlight > 0) return `${f.lostInFlight} requests unanswered`;
  if (r.withoutRequests !== true && !(f.requests > 0 && f.requestsPerSecond > 0)) return "no requests completed in the window";
  // A figure a scenario measures must be sane; one it does not measure (NaN) is not asked for.
  if (f.startToListeningMs <= 0) return "start-to-listening time not positive";
  if (f.serverRssIdleBytes <= 0) return "idle RSS not positive";
  const stopped = r.notes.find((n) => n.startsWith("server stopped with exit code") || n.startsWith("the server exited"));
  if (stopped !== undefined) return stopped;
  return null;
}

export const smokeScenario: Scenario<SmokeOptions> = {
  name: "smoke",
  summary: "CI: every scenario for a second with small cases; fails on errors, never on speed",
  usage: `npm run bench -- smoke [--only NAME ...] [--json FILE]`,
  smokeArgs: null,
  parse(argv) {
    const { values } = parseArgs({ args: [...argv], strict: true, allowPositionals: false, options: { ...COMMON_OPTIONS, only: { type: "string", multiple: true } } });
    if (values.help) return null;
    return { ...commonFrom(values), only: values.only ?? [] };
  },
  async run(ctx, options) {
    const scenarios = (await loadScenarios()).filter((s) => s.smokeArgs !== null && s.name !== "smoke");
    const results: CaseResult[] = [];
    const failures: string[] = [];
    for (const s of scenarios) {
      if (options.only.length && !options.only.includes(s.name)) continue;
      const args = [...(s.smokeArgs ?? DEFAULT_SMOKE_ARGS), ...(options.inline ? ["--inline"] : []), ...(options.pin ? [] : ["--no-pin"])];
      ctx.log(`smoke: ${s.name} ${args.join(" ")}`);
      try {
        const parsed = s.parse(args);
        if (parsed === null) throw new Error("parse returned null");
        const run = await runScenario(s, parsed, ctx.root, ctx.log);
        if (run.results.length === 0) failures.push(`${s.name}: no results`);
        for (const r of run.results) {
          const problem = smokeProblem(r);
          if (problem !== null) failures.push(`${s.name} ${r.case} on ${r.target}: ${problem}`);
        }
        results.push(...run.results);
      } catch (err) {
        failures.push(`${s.name}: ${(err as Error).message}`);
      }
    }
    ctx.log(`smoke: ${scenarios.length} scenarios, ${results.length} results, ${failures.length} failures`);
    if (failures.length) {
      // The figures that did come out help to see what failed; then the run fails.
      if (results.length) process.stderr.write(`${formatTable(results)}\n`);
      throw new Error(`smoke failed:\n  ${failures.join("\n  ")}`);
    }
    return results;
  },
};
