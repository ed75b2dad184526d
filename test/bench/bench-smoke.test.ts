// Smoke run of the bench harness: the built gateway under a short read load. It checks that
// figures come out and that the protocol traffic is error-free, never how fast anything is.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { distFile, missingBuild, requirePeers, skipWithout } from "../helpers/built.js";
import type { LoadPlacement, LoadRun } from "../../bench/harness/load-process.js";
import type { BenchContext } from "../../bench/harness/scenario.js";
import { formatSummary, median, summarize } from "../../bench/harness/compare.js";
import { loadScenarios } from "../../bench/harness/registry.js";
import type { CaseResult, Figures } from "../../bench/harness/report.js";
import { connectScenario } from "../../bench/scenarios/connect.js";
import { parseReadOptions, runReadCase } from "../../bench/scenarios/read.js";
import { browseScenario, writeScenario } from "../../bench/scenarios/service.js";
import { FieldgateTarget } from "../../bench/targets/fieldgate.js";
import { startCannedResponder } from "../../bench/targets/canned-responder.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const dataDir = mkdtempSync(join(tmpdir(), "fieldgate-bench-test-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const cliUnbuilt = missingBuild("src/cli.js");
const distLoadProcess = distFile("bench/harness/load-process.js");
const workerUnbuilt = missingBuild("bench/harness/load-process.js", "bench/harness/load-worker.js");

function context(): BenchContext {
  return {
    root,
    // Its own dataDir: test files run in parallel, and two first starts must not make one certificate together.
    targets: [new FieldgateTarget({ root, dataDir })],
    serverCpu: undefined,
    load: { inline: true },
    notes: [],
    log: () => {},
  };
}

describe.skipIf(skipWithout(cliUnbuilt))("bench smoke: read scenario against the built gateway", () => {
  beforeAll(() => requirePeers(cliUnbuilt));
  it("produces figures for 2 connections x 10 outstanding with zero errors", async () => {
    const options = parseReadOptions(["--connections", "2", "--outstanding", "10", "--duration", "1", "--warmup", "0.3", "--inline"]);
    expect(options).not.toBeNull();
    const ctx = context();
    const target = ctx.targets[0];
    const result = await runReadCase(ctx, target, options!, options!.cases[0]);
    const f = result.figures;
    expect(result.errorKinds).toEqual({});
    expect(f.requests).toBeGreaterThan(0);
    expect(f.requestsPerSecond).toBeGreaterThan(0);
    expect(f.errors).toBe(0);
    expect(f.errorsTotal).toBe(0);
    expect(f.channelFaults).toBe(0);
    expect(f.lostInFlight).toBe(0);
    // Little's law: with 2 x 10 requests always in flight, the rate times the mean latency is
    // 20, give or take the requests that straddle the window's edges (a slow machine's latency
    // times 20, over the 1 s window). Latencies in another unit than µs, or not timed per
    // request, miss it by far.
    const inFlight = (f.requestsPerSecond * f.latencyMicros.mean) / 1e6;
    expect(inFlight).toBeGreaterThan(12);
    expect(inFlight).toBeLessThan(28);
    expect(f.startToListeningMs).toBeGreaterThan(0);
    expect(f.serverRssIdleBytes).toBeGreaterThan(0);
    expect(f.serverRssEndBytes).toBeGreaterThan(0);
    expect(f.serverCpuMicrosPerRequest).toBeGreaterThanOrEqual(0);
    expect(result.notes.filter((n) => !n.includes("over 90 %"))).toEqual([]);
  }, 30_000);
});

describe.skipIf(skipWithout(cliUnbuilt))("bench smoke: write, browse and connect against the built gateway", () => {
  beforeAll(() => requirePeers(cliUnbuilt));
  it("write (100 values) and browse (the Server object) produce figures with zero errors", async () => {
    for (const name of ["write", "browse"] as const) {
      const scenario = name === "write" ? writeScenario : browseScenario;
      const options = scenario.parse(["--cases", "2x3", "--duration", "0.6", "--warmup", "0.2", "--inline"]);
      expect(options).not.toBeNull();
      const [result] = await scenario.run(context(), options!);
      expect(result.scenario).toBe(name);
      expect(result.errorKinds).toEqual({});
      expect(result.figures.requests).toBeGreaterThan(0);
      expect(result.figures.errorsTotal).toBe(0);
      expect(result.figures.lostInFlight).toBe(0);
      // The gateway's own report (FIELDGATE_DIAGNOSTICS): heap and GC figures come out.
      expect(result.figures.serverHeapUsedEndBytes).toBeGreaterThan(0);
      // Both window reports came (NaN without them), and they agree with each other.
      expect(Number.isInteger(result.figures.gcCount)).toBe(true);
      expect(result.figures.gcPauseMs > 0).toBe(result.figures.gcCount > 0);
      expect(result.notes.filter((n) => !n.includes("over 90 %"))).toEqual([]);
    }
  }, 40_000);

  it("connect opens, holds and closes sessions with zero errors", async () => {
    const options = connectScenario.parse(["--sessions", "4", "--parallel", "2", "--duration", "0.5", "--warmup", "0", "--inline"]);
    const [result] = await connectScenario.run(context(), options!);
    expect(result.unit).toBe("sessions/s");
    expect(result.errorKinds).toEqual({});
    expect(result.figures.requests).toBeGreaterThanOrEqual(4);
    expect(result.figures.channelFaults).toBe(0);
    expect(result.figures.serverRssEndBytes).toBeGreaterThan(0);
  }, 30_000);
});

describe("bench comparison", () => {
  it("takes medians per case and target and the ratio to the peer", () => {
    const result = (target: string, rate: number, round: number): CaseResult => ({
      scenario: "read",
      case: "1x1",
      target,
      round,
      figures: { requestsPerSecond: rate, latencyMicros: { p50: rate, p90: 0, p99: 0, p999: 0, max: 0, mean: 0 }, errorsTotal: 0, channelFaults: 0 } as unknown as Figures,
      conditions: { warmupSeconds: 0, durationSeconds: 1, serverCpu: null, loadCpu: null, loadInline: true, idleRssAfterMs: 0 },
      errorKinds: {},
      notes: [],
    });
    const rs = [result("fieldgate", 100, 1), result("node-opcua", 10, 1), result("fieldgate", 300, 2), result("node-opcua", 30, 2), result("fieldgate", 200, 3), result("node-opcua", 20, 3)];
    const [s] = summarize(rs, "fieldgate", "node-opcua");
    expect(s.rounds).toBe(3);
    expect(s.medians.fieldgate.rate).toBe(200);
    expect(s.medians["node-opcua"].rate).toBe(20);
    expect(s.ratio.rate).toBe(10);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([NaN])).toBeNaN();
    expect(formatSummary([s], "fieldgate", "node-opcua")).toMatch(/fieldgate \/ node-opcua .*10\.0x/);
  });

  it("finds every scenario in bench/scenarios by its exported Scenario", async () => {
    const names = (await loadScenarios(resolve(root, "bench", "scenarios"))).map((s) => s.name);
    for (const n of ["browse", "connect", "echo", "idle", "read", "smoke", "write"]) expect(names).toContain(n);
  });
});

describe.skipIf(skipWithout(workerUnbuilt))("bench load process", () => {
  beforeAll(() => requirePeers(workerUnbuilt));
  it("runs the load in its own process (pinned when taskset exists) and returns its figures", async () => {
    const fake = await startCannedResponder();
    try {
      const mod = (await import(distLoadProcess)) as {
        runLoad(load: "read", params: object, placement: LoadPlacement): Promise<LoadRun<"read">>;
      };
      const run = await mod.runLoad(
        "read",
        {
          host: "127.0.0.1",
          port: fake.port,
          endpointUrl: `opc.tcp://127.0.0.1:${fake.port}`,
          connections: 1,
          outstanding: 2,
          values: 1,
          warmupSeconds: 0.1,
          durationSeconds: 0.3,
        },
        { cpu: 0 },
      );
      expect(run.inline).toBe(false);
      expect(run.result.requests).toBeGreaterThan(0);
      expect(run.result.errorsTotal).toBe(0);
      expect(run.result.server).toBeNull();
    } finally {
      await fake.close();
    }
  }, 20_000);
});
