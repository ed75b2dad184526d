// Tests that run the build in dist/: the CLI in a child process, the worker threads (started
// from their built files, src/worker-file.ts), bench processes. `npm test` builds it first; a
// suite whose files are missing skips outside CI and fails in it (ci.ts):
//   const unbuilt = missingBuild("src/cli.js");
//   describe.skipIf(skipWithout(unbuilt))("...", () => { beforeAll(() => requirePeers(unbuilt)); ... });
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

export { requirePeers, skipWithout } from "./ci.js";

/** The package's dist/ directory, with a trailing slash. */
export const DIST = fileURLToPath(new URL("../../dist/", import.meta.url));

/** A file of the build: `path` is relative to dist/ ("src/cli.js"). */
export function distFile(path: string): string {
  return DIST + path;
}

/** The built CLI (package.json's bin). */
export const CLI = distFile("src/cli.js");

/** What of `paths` (relative to dist/) the build lacks, as a message; "" when it has them all. */
export function missingBuild(...paths: string[]): string {
  const missing = paths.filter((p) => !existsSync(distFile(p)));
  return missing.length === 0 ? "" : `${missing.map((p) => `dist/${p}`).join(", ")} (npm run build)`;
}
