// The validated device map's cache (src/config/validated-cache.ts) on a first start: written
// once the server listens, not before (FieldgateServer.start), and not at all by a server
// stopped before it got to it.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadGatewayConfig } from "../../src/config/load.js";
import { FieldgateServer } from "../../src/server/server.js";
import { Logger } from "../../src/server/log.js";

let dir: string | undefined;

afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function gateway(): { server: FieldgateServer; cacheFile: string } {
  dir = mkdtempSync(join(tmpdir(), "fieldgate-map-cache-"));
  writeFileSync(join(dir, "devices.yaml"), "devices:\n  - name: plc\n    driver: simulator\n    tags:\n      - { name: r0, address: holding:0 }\n      - { name: r1, address: holding:1 }\n");
  writeFileSync(join(dir, "gateway.yaml"), "server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\ndevices: ./devices.yaml\nsecurity:\n  securityPolicies: [None]\n");
  const server = new FieldgateServer(loadGatewayConfig(join(dir, "gateway.yaml")), new Logger({ level: "error" }));
  return { server, cacheFile: join(dir, "data", "cache", "device-map.json") };
}

describe("the device map's cache on a first start", () => {
  it("is written after start() has returned, in a later turn of the loop", async () => {
    const { server, cacheFile } = gateway();
    try {
      await server.start();
      expect(existsSync(cacheFile)).toBe(false);
      await new Promise((resolve) => setImmediate(resolve));
      expect(existsSync(cacheFile)).toBe(true);
    } finally {
      await server.stop();
    }
  });

  it("is not written by a server stopped before that turn", async () => {
    const { server, cacheFile } = gateway();
    await server.start();
    await server.stop();
    await new Promise((resolve) => setImmediate(resolve));
    expect(existsSync(cacheFile)).toBe(false);
  });
});
