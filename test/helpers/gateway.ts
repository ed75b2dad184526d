// Starts a real FieldgateServer on 127.0.0.1 with an ephemeral port, from a YAML config written
// to a temp folder (so the tests go through the same loader as `fieldgate run`).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadGatewayConfig } from "../../src/config/load.js";
import { FieldgateServer, type FieldgateServerOptions } from "../../src/server/server.js";

export interface TestGateway {
  server: FieldgateServer;
  url: string;
  stop(): Promise<void>;
}

/**
 * `extraYaml` is appended to a config that listens on 127.0.0.1:0 with the test namespace on
 * (the interop tests read and write its variables; it is off by default). `options.drivers`:
 * the drivers its device map may name, when not the built-in ones.
 */
export async function startGateway(extraYaml = "", options: FieldgateServerOptions = {}): Promise<TestGateway> {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-test-"));
  const file = join(dir, "gateway.yaml");
  writeFileSync(file, `server:\n  host: 127.0.0.1\n  port: 0\n  testNamespace: true\ndataDir: ./data\n${extraYaml}`);
  const server = new FieldgateServer(loadGatewayConfig(file), undefined, options);
  await server.start();
  return {
    server,
    url: `opc.tcp://127.0.0.1:${server.port}`,
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
