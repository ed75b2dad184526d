// The workers' bundles (src/build/bundle.ts, dist/bundle/): builtFile picks a worker's bundle
// when it is at least as new as the last compile and its compiled module otherwise (never a stale copy), and each bundle is one self-contained file: it imports
// packages and Node's modules only, no chunk of the gateway's bundle.
// Reads dist/ as `npm test` builds it; the choice itself is checked in a package of its own.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { builtFile as workerFile, builtFileIn as workerFileIn } from "../../src/worker-file.js";

const WORKERS = ["history/write-worker", "history/read-worker", "server/validate-worker", "storage/check-worker"];

describe("worker files", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  function fakePackage(files: Record<string, number>): URL {
    const root = mkdtempSync(join(tmpdir(), "fieldgate-workers-"));
    dirs.push(root);
    for (const [path, mtime] of Object.entries(files)) {
      const file = join(root, path);
      mkdirSync(join(file, ".."), { recursive: true });
      writeFileSync(file, "");
      utimesSync(file, mtime, mtime);
    }
    return pathToFileURL(`${root}/`);
  }

  it("runs the built bundle of each worker", () => {
    for (const name of WORKERS) expect(fileURLToPath(workerFile(name))).toMatch(new RegExp(`/dist/bundle/${name}\\.js$`));
  });

  it("bundles each worker into one file that imports no module of ours", () => {
    for (const name of WORKERS) {
      const text = readFileSync(workerFile(name), "utf8");
      const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].map((m) => m[1]!);
      expect(specifiers.length).toBeGreaterThan(0);
      expect(specifiers.filter((s) => s.startsWith(".") || s.startsWith("/"))).toEqual([]);
      expect(specifiers).toContain("node:worker_threads");
    }
  });

  it("takes the bundle when it is as new as the last compile", () => {
    const root = fakePackage({ "dist/tsconfig.tsbuildinfo": 1000, "dist/bundle/history/write-worker.js": 1000, "dist/src/history/write-worker.js": 999 });
    expect(fileURLToPath(workerFileIn(root, "history/write-worker"))).toBe(fileURLToPath(new URL("dist/bundle/history/write-worker.js", root)));
  });

  it("takes the compiled module when the bundle is older than the last compile, or missing", () => {
    const stale = fakePackage({ "dist/tsconfig.tsbuildinfo": 2000, "dist/bundle/history/read-worker.js": 1000, "dist/src/history/read-worker.js": 2000 });
    expect(fileURLToPath(workerFileIn(stale, "history/read-worker"))).toBe(fileURLToPath(new URL("dist/src/history/read-worker.js", stale)));
    const unbundled = fakePackage({ "dist/tsconfig.tsbuildinfo": 2000, "dist/src/history/read-worker.js": 2000 });
    expect(fileURLToPath(workerFileIn(unbundled, "history/read-worker"))).toBe(fileURLToPath(new URL("dist/src/history/read-worker.js", unbundled)));
  });

  it("takes the bundle of a tree without build info (the image's)", () => {
    const root = fakePackage({ "dist/bundle/history/write-worker.js": 1000, "dist/src/history/write-worker.js": 2000 });
    expect(fileURLToPath(workerFileIn(root, "history/write-worker"))).toBe(fileURLToPath(new URL("dist/bundle/history/write-worker.js", root)));
  });

  it("refuses a worker that was never built", () => {
    const root = fakePackage({ "dist/tsconfig.tsbuildinfo": 1000 });
    expect(() => workerFileIn(root, "history/write-worker")).toThrow(/history\/write-worker\.js is missing: build first/);
  });
});
