// Writes config/gateway.schema.json from the schema in gateway-config.ts:
//   node dist/src/config/write-schema.js           writes it
//   node dist/src/config/write-schema.js --check   exits 1 if the committed file is stale
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { renderGatewayJsonSchema } from "./json-schema.js";

/** The repository root: the nearest folder above this script with a package.json (the script
 * runs from src/ under a TS runner and from dist/src/ once built). */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json"))) {
    const up = dirname(dir);
    if (up === dir) throw new Error("write-schema: no package.json above this script");
    dir = up;
  }
  return dir;
}

const target = join(repoRoot(), "config", "gateway.schema.json");
const text = renderGatewayJsonSchema();
const shown = relative(process.cwd(), target) || target;

if (process.argv.includes("--check")) {
  const current = existsSync(target) ? readFileSync(target, "utf8") : "";
  if (current !== text) {
    process.stderr.write(`${shown} is out of date; run: node dist/src/config/write-schema.js\n`);
    process.exit(1);
  }
} else {
  writeFileSync(target, text);
  process.stdout.write(`wrote ${shown}\n`);
}
