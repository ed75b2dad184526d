// Writes config/gateway.schema.json, config/devices.schema.json and config/network.schema.json
// from the schemas in src/config/gateway-config.ts, device-map.ts (with the built-in drivers'
// keys) and network-config.ts:
//   node dist/src/build/write-schema.js           writes them
//   node dist/src/build/write-schema.js --check   exits 1 if a committed file is stale
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { builtinDrivers } from "../../drivers/builtin.js";
import { renderDeviceMapJsonSchema, renderGatewayJsonSchema, renderNetworkJsonSchema } from "../config/json-schema.js";

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

const files: ReadonlyArray<readonly [string, string]> = [
  ["gateway.schema.json", renderGatewayJsonSchema()],
  ["devices.schema.json", renderDeviceMapJsonSchema(builtinDrivers())],
  ["network.schema.json", renderNetworkJsonSchema()],
];

for (const [name, text] of files) {
  const target = join(repoRoot(), "config", name);
  const shown = relative(process.cwd(), target) || target;
  if (process.argv.includes("--check")) {
    const current = existsSync(target) ? readFileSync(target, "utf8") : "";
    if (current !== text) {
      process.stderr.write(`${shown} is out of date; run: node dist/src/build/write-schema.js\n`);
      process.exitCode = 1;
    }
  } else {
    writeFileSync(target, text);
    process.stdout.write(`wrote ${shown}\n`);
  }
}
