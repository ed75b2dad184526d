// The HistoryRead loop load of the bench (bench/scenarios/history-read-load.ts), as another
// scenario uses it: fillHistory gives a dataDir stored values before the server starts, and
// runHistoryReadLoad reads them in a loop, each response decoded in full and checked here.
// It checks that the load reads what was stored, never how fast.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { fillHistory, runHistoryReadLoad } from "../../bench/scenarios/history-read-load.js";
import { MemoryNamespace } from "../../src/address-space/memory-namespace.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { loadGatewayConfig } from "../../src/config/load.js";
import { FieldgateServer } from "../../src/server/server.js";
import { BuiltinType } from "../../src/ua/builtins.js";

const dir = mkdtempSync(join(tmpdir(), "fieldgate-bench-history-load-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const URI = "urn:fieldgate:bench-history-test";

describe("the HistoryRead loop load", () => {
  it("reads the values fillHistory stored, page after page, and releases the continuation points", async () => {
    const file = join(dir, "gateway.yaml");
    writeFileSync(file, "server:\n  host: 127.0.0.1\n  port: 0\n  testNamespace: false\ndataDir: ./data\nsecurity:\n  securityPolicies: [None]\nhistory:\n  maxContinuationPoints: 1\n");
    const quiet = { info() {}, warn() {} };
    // The namespace index the server will give the node: a server that never starts says it.
    const probe = new FieldgateServer(loadGatewayConfig(file), quiet);
    const ns = probe.registry.register(URI);
    await probe.history.close();
    // Within retention.maxAge (30 days): older samples would be deleted under the load.
    const start = Date.now() - 3_600_000;
    const filled = await fillHistory({ dataDir: join(dir, "data"), node: `ns=${ns};s=v`, samples: 20_000, startTime: start, intervalMs: 10 });
    expect(filled).toMatchObject({ startTime: start, endTime: start + 200_000 });

    const server = new FieldgateServer(loadGatewayConfig(file), quiet);
    expect(server.registry.register(URI)).toBe(ns);
    const mem = new MemoryNamespace(ns, server.registry);
    server.registry.register(URI, mem);
    mem.addVariable({ nodeId: "v", browseName: "v", dataType: BuiltinType.Double, accessLevel: AccessLevel.CurrentRead | AccessLevel.HistoryRead });
    await server.start();
    try {
      const r = await runHistoryReadLoad({
        host: "127.0.0.1",
        port: server.port,
        endpointUrl: `opc.tcp://127.0.0.1:${server.port}`,
        node: `nsu=${URI};s=v`,
        startTime: filled.startTime,
        endTime: filled.endTime,
        valuesPerRead: 5000,
        verifyEvery: 1,
        warmupSeconds: 0.2,
        durationSeconds: 1,
      });
      expect(r.errorsTotal).toBe(0);
      expect(r.channelFaults).toBe(0);
      expect(r.reads).toBeGreaterThan(0);
      // Each read returns a full page: one continuation point each, released before the next
      // (maxContinuationPoints 1 would refuse the next read's point otherwise).
      expect(r.values).toBe(r.reads * 5000);
      expect(r.verifiedResponses).toBe(r.reads);
    } finally {
      await server.stop();
    }
  }, 60_000);
});
