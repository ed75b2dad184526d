// Scenario `echo`: the read scenario against the echo target only (a canned UA-TCP responder
// with no decoding and no service work): the ceiling of the load client and of Node's socket
// I/O on this machine, to put the servers' read figures in proportion.
import { EchoTarget } from "../targets/echo.js";
import type { CaseResult } from "../harness/report.js";
import type { Scenario } from "../harness/scenario.js";
import { parseReadOptions, runReadCase, type ReadScenarioOptions } from "./read.js";

export const echoScenario: Scenario<ReadScenarioOptions> = {
  name: "echo",
  summary: "the read cases against a canned responder: the client's and Node's I/O ceiling",
  usage: `npm run bench -- echo [read options]    (--target and --peer are ignored: the target is echo)`,
  smokeArgs: ["--cases", "2x10", "--duration", "1", "--warmup", "0.2"],
  parse(argv) {
    const options = parseReadOptions(argv);
    if (options === null) return null;
    return { ...options, targets: ["echo"], peer: undefined, rounds: options.peer !== undefined ? 1 : options.rounds, scenarioName: "echo" };
  },
  async run(ctx, options) {
    const target = ctx.targets.find((t) => t.name === "echo") ?? new EchoTarget(ctx.root);
    const results: CaseResult[] = [];
    for (const c of options.cases) results.push(await runReadCase(ctx, target, options, c));
    return results;
  },
};
