// Scenario `idle`: start-to-listening, and RSS, V8 heap and CPU of a server left alone with
// --tags device-like tags (default 10,000): fieldgate from a generated device map of simulator
// devices polled every second, node-opcua with the same NodeIds as plain variables. No client.
//
// fieldgate keeps the device map it last validated in <dataDir>/cache (src/config/
// validated-cache.ts), and the bench's dataDir is kept across runs: a start after an earlier one
// with the same map and build reads the map from there. Each fieldgate case notes which start it
// was (a restart, or a first start); --cold-cache empties the cache before every start.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { IDLE_SETTLE_MS, requestReport } from "../harness/case.js";
import { cpuTimeMicros, memoryOf } from "../harness/proc.js";
import type { CaseResult } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, sleep, type CommonOptions, type Scenario } from "../harness/scenario.js";
import { deviceMapSchema } from "../../src/config/device-map.js";
import { builtinDrivers } from "../../drivers/builtin.js";
import { cacheKey, cachedKey } from "../../src/config/validated-cache.js";
import { benchDataDir, deviceMapYaml } from "../targets/fieldgate-config.js";

export interface IdleScenarioOptions extends CommonOptions {
  tags: number;
  settleSeconds: number;
  /** Empty fieldgate's validated-map cache before each start (a first start). */
  coldCache: boolean;
  /** The first N tags keep history (fieldgate; the node-opcua peer stores none). */
  historyTags: number;
}

const USAGE = `npm run bench -- idle [options]
  --tags N            device-like tags (default 10000; 0 = the default config's nodes only)
  --settle S          seconds left alone before RSS and heap are read (default 5)
  --cold-cache        empty fieldgate's validated device-map cache (<dataDir>/cache) before each
                      start: the start after a map change, instead of a restart with it unchanged
  --history-tags N    the first N tags keep history (history: true; default 0), in a database
                      of the case's own: the history writer's thread runs as with the shipped map
${COMMON_USAGE}`;

export function parseIdleOptions(argv: readonly string[]): IdleScenarioOptions | null {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: { ...COMMON_OPTIONS, tags: { type: "string" }, settle: { type: "string" }, "cold-cache": { type: "boolean" }, "history-tags": { type: "string" } },
  });
  if (values.help) return null;
  return {
    ...commonFrom(values),
    tags: values.tags === "0" ? 0 : positive("tags", values.tags, 10_000),
    settleSeconds: positive("settle", values.settle, 5, false),
    coldCache: values["cold-cache"] === true,
    historyTags: values["history-tags"] === undefined || values["history-tags"] === "0" ? 0 : positive("history-tags", values["history-tags"], 0),
  };
}

export const idleScenario: Scenario<IdleScenarioOptions> = {
  name: "idle",
  summary: "start to listening, idle RSS, heap and CPU with 10,000 device tags",
  usage: USAGE,
  parse: parseIdleOptions,
  smokeArgs: ["--tags", "100", "--settle", "1"],
  async run(ctx, options) {
    const results: CaseResult[] = [];
    for (const target of ctx.targets) {
      const caseName = options.historyTags > 0 ? `${options.tags} tags, ${options.historyTags} with history` : `${options.tags} tags`;
      ctx.log(`idle ${caseName} on ${target.name}: starting the server`);
      const notes: string[] = [];
      // Every fieldgate, a fieldgate@DIR peer too: they share the bench's dataDir, and a peer
      // left on the cache would be compared restarting against a first start.
      if (target.name.startsWith("fieldgate") && options.tags > 0) notes.push(prepareCache(options.coldCache, options.tags, options.historyTags));
      const server = await target.start({ cpu: ctx.serverCpu, nodes: { deviceTags: options.tags, historyTags: options.historyTags }, startTimeoutMs: 120_000 });
      try {
        // The first half settles start-up; CPU is measured over the second (polling, timers).
        await sleep(Math.max(IDLE_SETTLE_MS, (options.settleSeconds * 1000) / 2));
        const t0 = performance.now();
        const cpu0 = cpuTimeMicros(server.pid);
        await sleep((options.settleSeconds * 1000) / 2);
        const windowSeconds = (performance.now() - t0) / 1000;
        const cpu = cpuTimeMicros(server.pid) - cpu0;
        const mem = memoryOf(server.pid);
        const report = await requestReport(server);
        if (server.exited) notes.push("the server exited while idle");
        results.push({
          withoutRequests: true,
          scenario: "idle",
          case: caseName,
          target: target.name,
          figures: {
            requests: 0,
            windowSeconds,
            requestsPerSecond: NaN,
            latencyMicros: { p50: NaN, p90: NaN, p99: NaN, p999: NaN, max: NaN, mean: NaN },
            serverCpuMicrosPerRequest: NaN,
            serverCpuShare: cpu / (windowSeconds * 1e6),
            loadCpuShare: NaN,
            serverRssIdleBytes: mem.rss,
            serverRssEndBytes: mem.rss,
            serverPeakRssBytes: mem.peakRss,
            serverHeapIdleBytes: report?.heapUsedBytes ?? NaN,
            serverHeapUsedEndBytes: report?.heapUsedBytes ?? NaN,
            serverHeapTotalEndBytes: report?.heapTotalBytes ?? NaN,
            gcPauseMs: report?.gcPauseMs ?? NaN,
            gcCount: report?.gcCount ?? NaN,
            gcPausePerSecondMs: NaN,
            startToListeningMs: server.startToListeningMs,
            errors: 0,
            errorsTotal: 0,
            channelFaults: 0,
            lostInFlight: 0,
            verifiedResponses: 0,
          },
          conditions: {
            tags: options.tags,
            settleSeconds: options.settleSeconds,
            warmupSeconds: 0,
            durationSeconds: windowSeconds,
            serverCpu: server.pinnedCpu ?? null,
            loadCpu: null,
            loadInline: false,
            idleRssAfterMs: options.settleSeconds * 1000,
          },
          errorKinds: {},
          notes,
        });
      } finally {
        const exit = await server.stop();
        if (exit.code !== 0) notes.push(`server stopped with exit code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ""} (expected 0 on SIGTERM)`);
      }
    }
    return results;
  },
};

/**
 * Empties the validated-map cache of the bench's dataDir when asked, and says which start the
 * next one is: a restart, when the cache holds this very map validated by this build (the key
 * fieldgate will look for), or a first start.
 */
function prepareCache(cold: boolean, tags: number, historyTags: number): string {
  const dir = join(benchDataDir(), "cache");
  if (cold) rmSync(dir, { recursive: true, force: true });
  const key = cacheKey(deviceMapSchema(builtinDrivers()), deviceMapYaml(tags, "1s", historyTags), "devices.yaml");
  return key !== null && cachedKey(join(dir, "device-map.json")) === key
    ? "a restart: the device map was read from <dataDir>/cache, validated by an earlier start"
    : "a first start: the device map was parsed and validated (none of it in <dataDir>/cache)";
}
