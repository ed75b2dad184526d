// Where the installed gateway finds its own package: the directory of package.json above this
// module (the source tree, dist/, or the image's /usr/lib/fieldgate) and the version in it.
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The directory of the package.json above this module. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(resolve(dir, "package.json"))) {
    const up = dirname(dir);
    if (up === dir) throw new Error("package.json not found above " + dir);
    dir = up;
  }
  return dir;
}

/** package.json's version; "0.0.0" when it cannot be read (a build without its package file). */
export function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(`${packageRoot()}/package.json`, "utf8")) as { version?: string };
    return pkg.version ?? "0.0.0";
  } catch {
    return "0.0.0";
  }
}
