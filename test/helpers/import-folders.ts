// The folders the FAT drive's import works on (src/settings/import.ts), under one test folder:
// the drive's fieldgate/ folder with the README.txt the image puts there, /etc/fieldgate with the
// files given, SSH's folder on the data partition, and the data folder's status file and versions;
// and an import stopped at one of its steps, as a power cut would stop it.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { MapDrivers } from "../../src/config/device-map.js";
import { importSettings, type ImportPaths } from "../../src/settings/import.js";

/** The folders under `base`, made, with `configFiles` (name: text) in /etc/fieldgate. */
export function importFolders(base: string, configFiles: Readonly<Record<string, string>>): ImportPaths {
  const paths = {
    from: join(base, "drive/fieldgate"),
    configDir: join(base, "etc/fieldgate"),
    sshDir: join(base, "data/etc/ssh"),
    statusFile: join(base, "var/lib/fieldgate/settings-import.json"),
    versionsDir: join(base, "var/lib/fieldgate/versions"),
  };
  for (const d of [paths.from, paths.configDir, paths.sshDir]) mkdirSync(d, { recursive: true });
  for (const [name, text] of Object.entries(configFiles)) writeFileSync(join(paths.configDir, name), text);
  // Never applied.
  writeFileSync(join(paths.from, "README.txt"), "read me\r\n");
  return paths;
}

/** What a test throws from an import's step to stand for a power cut there. */
export class PowerCut extends Error {}

/** An import of `paths` stopped at its step number `cut` (0: the first), as a power cut there would stop it. */
export async function importCutAt(paths: ImportPaths, drivers: MapDrivers, cut: number): Promise<void> {
  let k = 0;
  const step = (name: string): void => {
    if (k++ === cut) throw new PowerCut(name);
  };
  await expect(importSettings(paths, drivers, { step })).rejects.toThrow(PowerCut);
}
