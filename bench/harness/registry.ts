// The scenario registry: every module in bench/scenarios/ that exports a Scenario object is a
// scenario, by its name. A new scenario is one new file there (no list to edit), so engineers
// adding theirs (counters, history, devices, secure) never touch each other's lines.
import { readdirSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { CommonOptions, Scenario } from "./scenario.js";

export function isScenario(v: unknown): v is Scenario<CommonOptions> {
  const s = v as Partial<Scenario<CommonOptions>> | null;
  return typeof s === "object" && s !== null && typeof s.name === "string" && typeof s.parse === "function" && typeof s.run === "function" && typeof s.usage === "string";
}

/** Imports bench/scenarios/*.js (next to this module's folder) and returns their scenarios, sorted by name. */
export async function loadScenarios(dir = fileURLToPath(new URL("../scenarios/", import.meta.url))): Promise<Scenario<CommonOptions>[]> {
  const byName = new Map<string, Scenario<CommonOptions>>();
  const files = readdirSync(dir).filter((f) => /\.(js|ts)$/.test(f) && !f.endsWith(".d.ts") && !f.endsWith(".map")).sort();
  for (const file of files) {
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
