// Which build of one of the gateway's modules runs: its bundle in dist/bundle (src/build/bundle.ts
// says why the gateway and each worker get one file of their own), or its compiled module in
// dist/src when there is no bundle or the bundle is older than the last compile (`tsc -b` alone
// after a change: its build info is newer): never a stale copy of the code. src/cli.ts loads the
// gateway (main) by it, and the worker threads are started by it. Loaded from the TypeScript
// sources (vitest) or from the gateway's bundle, it still names built files (`npm test` builds
// them first).
import { existsSync, statSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { packageRoot } from "./package-info.js";

/** The built module `path` (under src/, without .js: "history/write-worker") of this package. */
export function builtFile(path: string): URL {
  return builtFileIn(pathToFileURL(`${packageRoot()}/`), path);
}

/** builtFile's choice in the package at `root` (a directory URL ending in "/"). */
export function builtFileIn(root: URL, path: string): URL {
  const bundled = fileURLToPath(new URL(`dist/bundle/${path}.js`, root));
  const compiled = fileURLToPath(new URL(`dist/src/${path}.js`, root));
  const buildInfo = fileURLToPath(new URL("dist/tsconfig.tsbuildinfo", root));
  if (existsSync(bundled) && (!existsSync(buildInfo) || statSync(bundled).mtimeMs >= statSync(buildInfo).mtimeMs)) return pathToFileURL(bundled);
  if (!existsSync(compiled)) throw new Error(`${compiled} is missing: build first (npm run build)`);
  return pathToFileURL(compiled);
}
