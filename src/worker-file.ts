// The file a worker thread of the gateway runs (the history's workers, the device map's
// validation on a reload): its bundle in dist/bundle (src/build/bundle.ts says why a worker
// gets one file of its own), or its compiled module in dist/src when there is no bundle or the
// bundle is older than the last compile (src/cli.ts's rule: never a stale copy). Loaded from
// the TypeScript sources (vitest) or from the gateway's bundle, it still names built files
// (`npm test` builds them first).
import { existsSync, statSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { packageRoot } from "./package-info.js";

/** The worker `path` (under src/, without .js: "history/write-worker") of this package. */
export function workerFile(path: string): URL {
  return workerFileIn(pathToFileURL(`${packageRoot()}/`), path);
}

/** workerFile's choice in the package at `root` (a directory URL ending in "/"). */
export function workerFileIn(root: URL, path: string): URL {
  const bundled = fileURLToPath(new URL(`dist/bundle/${path}.js`, root));
  const compiled = fileURLToPath(new URL(`dist/src/${path}.js`, root));
  const buildInfo = fileURLToPath(new URL("dist/tsconfig.tsbuildinfo", root));
  if (existsSync(bundled) && (!existsSync(buildInfo) || statSync(bundled).mtimeMs >= statSync(buildInfo).mtimeMs)) return pathToFileURL(bundled);
  if (!existsSync(compiled)) throw new Error(`worker ${compiled} is missing: build first (npm run build)`);
  return pathToFileURL(compiled);
}
