// Scenarios `write` and `browse`: pipelined Write requests of 100 Int32 values, and Browse
// requests of the Server object, for each case of connections x outstanding; one fresh server
// per case, as in `read`.
import { parseArgs } from "node:util";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { runWindowCase } from "../harness/case.js";
import type { CaseResult } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, type BenchContext, type CommonOptions, type Scenario } from "../harness/scenario.js";
import type { ServerTarget } from "../harness/target.js";
import { parseCases, type ReadCase } from "./read.js";
import type { ServiceRequestSpec } from "./service-load.js";

export interface ServiceScenarioOptions extends CommonOptions {
  cases: ReadCase[];
  request: ServiceRequestSpec;
  warmupSeconds: number;
  durationSeconds: number;
}

/** The writable Int32 of the test namespace, which fieldgate and the node-opcua peer both have. */
export const DEFAULT_WRITE_NODE = "nsu=urn:fieldgate:test;s=Scalar.Int32";
export const DEFAULT_BROWSE_NODE = `i=${ObjectIds.Server}`;
const DEFAULT_CASES = "1x1,10x10";

function usage(name: "write" | "browse"): string {
  const what =
    name === "write"
      ? `  --values N          Int32 values written per request (default 100)
  --node ID           node to write, repeatable, round robin over the values (default
                      ${DEFAULT_WRITE_NODE}; the peer also has s=BenchmarkValue0..99)`
      : `  --node ID           node to browse, repeatable, all in one request (default ${DEFAULT_BROWSE_NODE}, the Server object)`;
  return `npm run bench -- ${name} [options]
  --cases LIST        cases as CONNECTIONSxOUTSTANDING,... (default ${DEFAULT_CASES})
${what}
  --warmup S          seconds before the window (default 2)
  --duration S        seconds of the measurement window (default 10)
${COMMON_USAGE}`;
}

function parser(name: "write" | "browse"): (argv: readonly string[]) => ServiceScenarioOptions | null {
  return (argv) => {
    const { values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        ...COMMON_OPTIONS,
        cases: { type: "string" },
        values: { type: "string" },
        node: { type: "string", multiple: true },
        warmup: { type: "string" },
        duration: { type: "string" },
      },
    });
    if (values.help) return null;
    const request: ServiceRequestSpec =
      name === "write"
        ? { service: "write", nodes: values.node?.length ? values.node : [DEFAULT_WRITE_NODE], values: positive("values", values.values, 100) }
        : { service: "browse", nodes: values.node?.length ? values.node : [DEFAULT_BROWSE_NODE] };
    return {
      ...commonFrom(values),
      cases: parseCases(values.cases ?? DEFAULT_CASES),
      request,
      warmupSeconds: values.warmup === "0" ? 0 : positive("warmup", values.warmup, 2, false),
      durationSeconds: positive("duration", values.duration, 10, false),
    };
  };
}

export function runServiceCase(ctx: BenchContext, target: ServerTarget, options: ServiceScenarioOptions, c: ReadCase): Promise<CaseResult> {
  const req = options.request;
  return runWindowCase(ctx, target, {
    scenario: req.service,
    caseName: `${c.connections}x${c.outstanding}${req.service === "write" ? ` ${req.values} values` : ""}`,
    load: "service",
    params: (server) => ({
      host: server.host,
      port: server.port,
      endpointUrl: server.endpointUrl,
      connections: c.connections,
      outstanding: c.outstanding,
      request: req,
      warmupSeconds: options.warmupSeconds,
      durationSeconds: options.durationSeconds,
      serverPid: server.pid,
      serverDiagnostics: server.diagnostics,
    }),
    conditions: { connections: c.connections, outstanding: c.outstanding, nodes: req.nodes, values: req.service === "write" ? req.values : req.nodes.length },
    warmupSeconds: options.warmupSeconds,
    durationSeconds: options.durationSeconds,
  });
}

function scenario(name: "write" | "browse", summary: string): Scenario<ServiceScenarioOptions> {
  return {
    name,
    summary,
    usage: usage(name),
    parse: parser(name),
    smokeArgs: ["--cases", "2x4", "--duration", "1", "--warmup", "0.2"],
    async run(ctx, options) {
      const results: CaseResult[] = [];
      for (const c of options.cases) for (const target of ctx.targets) results.push(await runServiceCase(ctx, target, options, c));
      return results;
    },
  };
}

export const writeScenario = scenario("write", "pipelined Writes of 100 Int32 values (1 x 1, 10 x 10 in flight)");
export const browseScenario = scenario("browse", "pipelined Browses of the Server object (1 x 1, 10 x 10 in flight)");
