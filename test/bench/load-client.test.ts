// The load client against a fake UA-TCP responder: the whole path (Hello to CLO, pipelined
// Reads with patched frames, window accounting) without depending on the real server.
import { afterEach, describe, expect, it } from "vitest";
import { Histogram } from "../../bench/client/histogram.js";
import { runReadLoad, type ReadLoadParams } from "../../bench/scenarios/read-load.js";
import { startCannedResponder, type CannedResponder } from "../../bench/targets/canned-responder.js";

let fake: CannedResponder | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function params(port: number, extra: Partial<ReadLoadParams> = {}): ReadLoadParams {
  return {
    host: "127.0.0.1",
    port,
    endpointUrl: `opc.tcp://127.0.0.1:${port}`,
    connections: 2,
    outstanding: 10,
    values: 1,
    warmupSeconds: 0.1,
    durationSeconds: 0.3,
    serverPid: process.pid,
    ...extra,
  };
}

describe("read load client (fake server)", () => {
  it("opens sessions with the server's anonymous policyId, pipelines Reads and closes cleanly", async () => {
    fake = await startCannedResponder({ anonymousPolicyId: "anon-policy-7" });
    const r = await runReadLoad(params(fake.port));
    expect(r.requests).toBeGreaterThan(0);
    expect(r.errors).toBe(0);
    expect(r.errorsTotal).toBe(0);
    expect(r.channelFaults).toBe(0);
    expect(r.lostInFlight).toBe(0);
    expect(fake.activatedPolicies).toEqual(["anon-policy-7", "anon-policy-7"]);
    expect(fake.closedSessions).toBe(2);
    const h = Histogram.from(r.latencyMicros);
    expect(h.count).toBe(r.requests);
    expect(h.percentile(50)).toBeLessThanOrEqual(h.percentile(99));
    // The fake runs in this process: its /proc figures are ours, but they must come out.
    expect(r.server?.cpuMicros).toBeGreaterThanOrEqual(0);
    expect(r.server?.rssBytesAtEnd).toBeGreaterThan(0);
    // Set-up reads (one validation Read) plus the window's and warm-up's.
    expect(fake.reads).toBeGreaterThan(r.requests);
  });

  it("counts ServiceFaults as errors and keeps the pipeline full", async () => {
    fake = await startCannedResponder({ faultEvery: 7 });
    // The first (validating) Read is #1, so faults start inside the load.
    const r = await runReadLoad(params(fake.port, { connections: 1, outstanding: 4 }));
    expect(r.requests).toBeGreaterThan(20);
    expect(r.errors).toBeGreaterThan(0);
    expect(Math.abs(r.errors - r.requests / 7)).toBeLessThan(r.requests / 7 / 2 + 2);
    expect(Object.keys(r.errorKinds)).toEqual(["ServiceFault BadTooManyOperations"]);
    expect(r.lostInFlight).toBe(0);
  });

  it("reassembles responses split across socket reads and reads several values per request", async () => {
    fake = await startCannedResponder({ splitAt: 13 });
    const r = await runReadLoad(params(fake.port, { connections: 1, outstanding: 3, values: 5 }));
    expect(r.requests).toBeGreaterThan(0);
    expect(r.errorsTotal).toBe(0);
  });

  it("completes responses sent as an intermediate and a final chunk", async () => {
    for (const cut of [1, 10, 30]) {
      await fake?.close();
      fake = await startCannedResponder({ chunkBodyAt: cut });
      const r = await runReadLoad(params(fake.port, { connections: 1, outstanding: 3, values: 2, durationSeconds: 0.2 }));
      expect(r.requests).toBeGreaterThan(0);
      expect(r.errorKinds).toEqual({});
      expect(r.lostInFlight).toBe(0);
    }
  });

  it("checks its minimal parse against full decodes of the responses", async () => {
    fake = await startCannedResponder();
    const r = await runReadLoad(params(fake.port, { connections: 1, outstanding: 2, values: 3, verifyEvery: 1 }));
    expect(r.verifiedResponses).toBeGreaterThan(r.requests - 1);
    expect(r.errorsTotal).toBe(0);
  });

  it("fails with a clear error when nothing listens", async () => {
    fake = await startCannedResponder();
    const port = fake.port;
    await fake.close();
    fake = undefined;
    await expect(runReadLoad(params(port))).rejects.toThrow(/connect/);
  });
});
