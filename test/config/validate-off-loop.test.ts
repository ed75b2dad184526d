// A reload's device map validated on a worker (src/config/validate-off-loop.ts): the map that
// comes back in pieces is the map validated on this thread, a bad map's issues still name file,
// line, column and key, the event loop turns while the worker validates, and a worker that
// cannot run is a rejection the caller can fall back from. A first start's map kept in the cache
// by a worker: the key is the one the next start looks for, a bad map is not kept, and a keep
// stopped half-way leaves no file. Runs the built worker (dist/).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { deviceMapCacheFile, validateDeviceMap } from "../../src/config/device-map.js";
import { keepDeviceMapOffLoop, validateDeviceMapOffLoop } from "../../src/config/validate-off-loop.js";
import { MapAssembly, piecesOf } from "../../src/config/validate-pieces.js";
import { cacheText } from "../../src/config/validated-cache.js";
import { DRIVERS } from "../helpers/map.js";

// The gateway's worker: the validation of config/validate-worker.ts with the built-in drivers.
const WORKER = resolve(dirname(fileURLToPath(import.meta.url)), "../../dist/src/server/validate-worker.js");
const built = existsSync(WORKER);
const worker = { file: pathToFileURL(WORKER) };

function mapText(devices: number, tags: number): string {
  const lines = ["devices:"];
  for (let d = 0; d < devices; d++) {
    lines.push(`  - name: plc${d}`, "    driver: simulator", "    rate: 1s", "    tags:");
    for (let t = 0; t < tags; t++) lines.push(`      - { name: tag${t}, address: "holding:${100 + t}", type: uint16 }`);
  }
  return lines.join("\n") + "\n";
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function writeMap(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "fg-offloop-"));
  dirs.push(dir);
  const file = join(dir, "devices.yaml");
  writeFileSync(file, text);
  return file;
}

describe("device map pieces", () => {
  it("put together again in order give the map; out of order is refused", () => {
    const file = writeMap(mapText(3, 7));
    const r = validateDeviceMap(file, DRIVERS);
    if (!r.ok) throw new Error("fixture map is invalid");
    const { head, pieces } = piecesOf(r.value, 3);
    // 7 tags in pieces of 3: three pieces a device.
    expect(pieces).toHaveLength(9);
    const a = new MapAssembly(head);
    for (const p of pieces) a.add(p);
    expect(a.map).toEqual(r.value);
    const b = new MapAssembly(head);
    expect(() => b.add(pieces[1]!)).toThrow(/out of order/);
  });
});

describe.skipIf(!built)("a device map validated on a worker", () => {
  it("comes back equal to the map validated on this thread, while the event loop turns", async () => {
    const file = writeMap(mapText(4, 1500));
    const here = validateDeviceMap(file, DRIVERS);
    let turns = 0;
    const ticker = setInterval(() => turns++, 1);
    try {
      const there = await validateDeviceMapOffLoop(file, undefined, { ...worker, tagsPerPiece: 256 });
      expect(there.ok).toBe(true);
      expect(there).toEqual(here);
    } finally {
      clearInterval(ticker);
    }
    // 4 x 1,500 tags in pieces of 256: 24 pieces, each its own turn of the loop.
    expect(turns).toBeGreaterThan(0);
  }, 30_000);

  it("refuses a bad map with the issues validateDeviceMap gives: file, line, column and key", async () => {
    const file = writeMap(mapText(1, 3).replace('address: "holding:101"', 'address: "holdin:101"'));
    const here = validateDeviceMap(file, DRIVERS);
    const there = await validateDeviceMapOffLoop(file, undefined, worker);
    expect(there.ok).toBe(false);
    expect(there.issues).toEqual(here.issues);
    expect(there.issues[0]).toMatchObject({ file, line: 7, path: "devices[0].tags[1].address" });
    expect(there.issues[0]!.column).toBeGreaterThan(0);
  }, 30_000);

  it("rejects when its worker cannot run, so that the caller can validate itself", async () => {
    const file = writeMap(mapText(1, 1));
    const missing = pathToFileURL(join(dirname(file), "no-such-worker.js"));
    await expect(validateDeviceMapOffLoop(file, undefined, { file: missing })).rejects.toThrow();
  }, 30_000);
});

describe.skipIf(!built)("a device map kept in the cache by a worker", () => {
  it("is kept under the key the next start looks for, and read back from it", async () => {
    const file = writeMap(mapText(2, 300));
    const cacheDir = join(dirname(file), "cache");
    const keeping = keepDeviceMapOffLoop(file, cacheDir, worker);
    await expect(keeping.done).resolves.toBe(true);
    const cacheFile = deviceMapCacheFile(cacheDir);
    // What the cache holds is what the next start reads back: a mark put into it comes back
    // (validated by the built code, as the gateway's own start is: the key hashes that code).
    const kept = JSON.parse(readFileSync(cacheFile, "utf8")) as { key: string; value: { devices: { name: string }[] } };
    expect(kept.value).toEqual((validateDeviceMap(file, DRIVERS) as { value: unknown }).value);
    kept.value.devices[0]!.name = "from-the-cache";
    writeFileSync(cacheFile, cacheText(kept.key, kept.value));
    const again = await validateDeviceMapOffLoop(file, cacheDir, worker);
    expect(again.ok && again.value.devices[0]!.name).toBe("from-the-cache");
    expect(readdirSync(cacheDir)).toEqual(["device-map.json"]);
  }, 30_000);

  it("keeps nothing of a bad map, and says it was not valid", async () => {
    const file = writeMap(mapText(1, 3).replace('address: "holding:101"', 'address: "holdin:101"'));
    const cacheDir = join(dirname(file), "cache");
    await expect(keepDeviceMapOffLoop(file, cacheDir, worker).done).resolves.toBe(false);
    expect(existsSync(deviceMapCacheFile(cacheDir))).toBe(false);
  }, 30_000);

  it("stopped before it ends, leaves no cache file, whole or unfinished", async () => {
    const file = writeMap(mapText(10, 1000));
    const cacheDir = join(dirname(file), "cache");
    const keeping = keepDeviceMapOffLoop(file, cacheDir, worker);
    const outcome = keeping.done.then(
      () => "ended",
      () => "stopped",
    );
    await keeping.stop();
    expect(await outcome).toBe("stopped");
    expect(existsSync(cacheDir) ? readdirSync(cacheDir) : []).toEqual([]);
  }, 30_000);
});
