// Where the installed gateway finds its own package: the directory of package.json above this
// module (the source tree, dist/, or the image's /usr/lib/fieldgate), the version in it, and the
// command that runs its CLI there.
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, relative, resolve } from "node:path";
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

/**
 * The command that runs this installation's CLI, as an operator types it where the gateway runs
 * (log lines and the page print it): `fieldgate` when a `fieldgate` on the PATH is this
 * installation's dist/src/cli.js (the appliance's /usr/bin/fieldgate, a link made by `npm link`),
 * else `node dist/src/cli.js` with the path relative to the working folder when it lies below it
 * (a checkout, where `npm start` runs), or absolute.
 */
export function cliCommand(path = process.env.PATH ?? "", cwd = process.cwd()): string {
  const cli = join(packageRoot(), "dist", "src", "cli.js");
  const real = (p: string): string | undefined => {
    try {
      return realpathSync(p);
    } catch {
      return undefined;
    }
  };
  const target = real(cli) ?? cli;
  for (const dir of path.split(delimiter)) {
    if (dir !== "" && real(join(dir, "fieldgate")) === target) return "fieldgate";
  }
  const rel = relative(cwd, cli);
  const shown = rel.startsWith("..") || isAbsolute(rel) ? cli : rel;
  return `node ${/[\s"'$`\\]/.test(shown) ? JSON.stringify(shown) : shown}`;
}
