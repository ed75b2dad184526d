// The module of a built checkout whose FieldgateServer its CLI runs: for the preloads that wrap
// the server's methods from outside (fieldgate-history.ts, loop-probe.ts).
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/**
 * The module whose FieldgateServer the CLI will run, so that the wrapped start is that one: the
 * bundle's (dist/bundle/server.js) where src/cli.ts takes the bundle (present, and not older
 * than the last compile), else the compiled module.
 */
export function serverModule(root: string): string {
  const bundled = join(root, "dist", "bundle", "server.js");
  const compiled = join(root, "dist", "tsconfig.tsbuildinfo");
  const fresh = existsSync(bundled) && (!existsSync(compiled) || statSync(bundled).mtimeMs >= statSync(compiled).mtimeMs);
  return pathToFileURL(fresh ? bundled : join(root, "dist", "src", "server", "server.js")).href;
}
