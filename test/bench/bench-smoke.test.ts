// Smoke run of the bench harness: the built gateway under a short read load. It checks that
// figures come out and that the protocol traffic is error-free, never how fast anything is.
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { LoadPlacement, LoadRun } from "../../bench/harness/load-process.js";
import type { BenchContext } from "../../bench/harness/scenario.js";
import { parseReadOptions, runReadCase } from "../../bench/scenarios/read.js";
import { FieldgateTarget, fieldgateCli } from "../../bench/targets/fieldgate.js";
import { startCannedResponder } from "../../bench/targets/canned-responder.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const cliBuilt = existsSync(fieldgateCli(root));
const distLoadProcess = join(root, "dist", "bench", "harness", "load-process.js");
const workerBuilt = existsSync(distLoadProcess) && existsSync(join(root, "dist", "bench", "harness", "load-worker.js"));

if (!cliBuilt) console.warn(`bench smoke skipped: ${fieldgateCli(root)} is missing (npm run build)`);
if (!workerBuilt) console.warn(`bench load-process test skipped: ${distLoadProcess} is missing (npm run build)`);

function context(): BenchContext {
  return {
    root,
    targets: [new FieldgateTarget({ root })],
    serverCpu: undefined,
    load: { inline: true },
    notes: [],
    log: () => {},
  };
}

describe.skipIf(!cliBuilt)("bench smoke: read scenario against the built gateway", () => {
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
    expect(f.latencyMicros.p50).toBeLessThanOrEqual(f.latencyMicros.p90);
    expect(f.latencyMicros.p90).toBeLessThanOrEqual(f.latencyMicros.p99);
    expect(f.latencyMicros.p99).toBeLessThanOrEqual(f.latencyMicros.max);
    expect(f.startToListeningMs).toBeGreaterThan(0);
    expect(f.serverRssIdleBytes).toBeGreaterThan(0);
    expect(f.serverRssEndBytes).toBeGreaterThan(0);
    expect(f.serverCpuMicrosPerRequest).toBeGreaterThanOrEqual(0);
    expect(result.notes.filter((n) => !n.includes("over 90 %"))).toEqual([]);
  }, 30_000);
});

describe.skipIf(!workerBuilt)("bench load process", () => {
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
