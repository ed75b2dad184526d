// Runs every generator and writes their output into the repository (`npm run generate`).
// test/ua/generated.test.ts runs the same generators and compares with the committed files.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { generateNodeIds } from "./gen-node-ids.js";
import { generateNs0 } from "./gen-ns0.js";
import { generateStatusCodes } from "./gen-status-codes.js";
import { generateTypes } from "./gen-types.js";
import { generateUnits } from "./gen-units.js";
import { repoRoot, type GeneratedFile } from "./schema.js";

export const generators: ReadonlyArray<() => GeneratedFile[]> = [generateStatusCodes, generateNodeIds, generateTypes, generateNs0, generateUnits];

export function generateAll(): GeneratedFile[] {
  return generators.flatMap((g) => g());
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const root = repoRoot();
  for (const file of generateAll()) {
    const target = resolve(root, file.path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, file.content);
    console.log("wrote", file.path);
  }
}
