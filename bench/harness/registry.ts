// The scenario registry: every module in bench/scenarios/ that exports a Scenario object as a
// const whose name ends in "Scenario" (`export const countersScenario: Scenario<...> = {...}`) is
// a scenario, by its name. A new scenario is one new file there (no list to edit), so engineers
// adding theirs (counters, history, devices, secure) never touch each other's lines. Only files
// whose text has such an export are imported: helpers and process entry points (a simulator, a
// worker) in the same folder are never run by the registry.
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { CommonOptions, Scenario } from "./scenario.js";

export function isScenario(v: unknown): v is Scenario<CommonOptions> {
  const s = v as Partial<Scenario<CommonOptions>> | null;
  return typeof s === "object" && s !== null && typeof s.name === "string" && typeof s.parse === "function" && typeof s.run === "function" && typeof s.usage === "string";
}

const SCENARIO_EXPORT = /export const \w*Scenario\b/;

/** Imports bench/scenarios/*.js (next to this module's folder) and returns their scenarios, sorted by name. */
export async function loadScenarios(dir = fileURLToPath(new URL("../scenarios/", import.meta.url))): Promise<Scenario<CommonOptions>[]> {
  const byName = new Map<string, Scenario<CommonOptions>>();
  const files = readdirSync(dir).filter((f) => /\.(js|ts)$/.test(f) && !f.endsWith(".d.ts") && !f.endsWith(".map")).sort();
  for (const file of files) {
    if (!SCENARIO_EXPORT.test(readFileSync(`${dir}/${file}`, "utf8"))) continue;
    const mod = (await import(pathToFileURL(`${dir}/${file}`).href)) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      if (!isScenario(value)) continue;
      const seen = byName.get(value.name);
      if (seen !== undefined && seen !== value) throw new Error(`two scenarios named "${value.name}" (one in ${file})`);
      byName.set(value.name, value);
    }
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}
