// A gateway child on a disk the test can fill: a private mount namespace (`unshare -m`, root
// only) with the child's dataDir on a small tmpfs. What is missing here to do it, or "".
import { spawn, spawnSync, type ChildProcess, type StdioOptions } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const DIST = join(ROOT, "dist");

export function privateTmpfsMissing(): string {
  if (process.getuid?.() !== 0) return "needs root for a private tmpfs (unshare -m)";
  const r = spawnSync("unshare", ["-m", "--propagation", "private", "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs $d && umount $d && rmdir $d"], { stdio: "ignore" });
  if (r.status !== 0) return "unshare -m or mount -t tmpfs is not permitted here";
  if (spawnSync("test", ["-f", join(DIST, "src", "server", "server.js")]).status !== 0) return "needs the build in dist/ (npm test builds it)";
  return "";
}

/** `node --input-type=module -e source` with `dataDir` on a private tmpfs of 4 MiB. */
export function spawnOnTmpfs(dataDir: string, source: string, stdio: StdioOptions): ChildProcess {
  return spawn("unshare", ["-m", "--propagation", "private", "sh", "-c", 'mount -t tmpfs -o size=4m tmpfs "$0" && exec "$1" --input-type=module -e "$2"', dataDir, process.execPath, source], {
    cwd: ROOT,
    stdio,
  });
}
