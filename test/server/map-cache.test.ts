// The validated device map's cache (src/config/validated-cache.ts) on a first start: written
// once the server listens, by a worker (FieldgateServer.start, keepDeviceMapOffLoop), under the
// key the next start looks for; not at all by a server stopped before the worker ended.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { loadGatewayConfig } from "../../src/config/load.js";
import { validateDeviceMapOffLoop } from "../../src/config/validate-off-loop.js";
import { FieldgateServer } from "../../src/server/server.js";
import { Logger } from "../../src/log.js";
import { cacheText } from "../../src/config/validated-cache.js";

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
  it("is written after start() has returned, by a worker, under the key of the map's text", async () => {
    const { server, cacheFile } = gateway();
    try {
      await server.start();
      expect(existsSync(cacheFile)).toBe(false);
      const until = Date.now() + 20_000;
      while (!existsSync(cacheFile) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
      // The next start (the built code, whose source the key hashes) reads it back: a mark put into it comes back.
      const kept = JSON.parse(readFileSync(cacheFile, "utf8")) as { key: string; value: { devices: { name: string }[] } };
      expect(kept.value.devices.map((d) => d.name)).toEqual(["plc"]);
      kept.value.devices[0]!.name = "from-the-cache";
      writeFileSync(cacheFile, cacheText(kept.key, kept.value));
      const again = await validateDeviceMapOffLoop(join(dir!, "devices.yaml"), join(cacheFile, ".."), { file: pathToFileURL(resolve(__dirname, "../../dist/src/server/validate-worker.js")) });
      expect(again.ok && again.value.devices[0]!.name).toBe("from-the-cache");
    } finally {
      await server.stop();
    }
  }, 30_000);

  it("is not written by a server stopped before that turn", async () => {
    const { server, cacheFile } = gateway();
    await server.start();
    await server.stop();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const cacheDir = join(cacheFile, "..");
    expect(existsSync(cacheDir) ? readdirSync(cacheDir) : []).toEqual([]);
  });
});
