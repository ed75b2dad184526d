// `fieldgate import kepware TAGS.csv --device NAME` and `fieldgate export csv`: the command
// lines around kepware.ts. The import writes a device map (YAML) that `fieldgate validate`
// accepts, to stdout or --out, and one line per row on stderr that was not converted, or was
// with something left out, as FILE:LINE: tag: what.
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { loadDeviceMap } from "./device-map.js";
import { deviceEntriesText } from "./entry-yaml.js";
import { ConfigError, formatIssue, loadGatewayConfig } from "./load.js";
import { decodeText, exportKepwareCsv, importKepwareCsv, type KepwareDrivers } from "./kepware.js";
import { kepwareDeviceValue } from "./kepware-map.js";

export const IMPORT_USAGE = `  fieldgate import kepware TAGS.csv --device NAME [--host H] [--port N] [--unit-id N]
                 [--driver D] [--byte-order ABCD|CDAB|BADC|DCBA] [--out FILE]
                                            a device map (YAML) from a Kepware tag CSV; rows not
                                            converted are listed on stderr (exit 1 if any)`;
export const EXPORT_USAGE = `  fieldgate export csv [--config FILE | --devices FILE] [--device NAME] [--semicolon] [--out FILE]
                                            a device's tags as a Kepware tag CSV`;

type Out = (s: string) => void;

/**
 * Runs `fieldgate import ...` with the gateway's `drivers` (the device's driver converts its
 * addresses); returns the exit code (0 all rows converted, 1 some not, 2 usage or nothing converted).
 */
export async function importCommand(argv: string[], drivers: KepwareDrivers, out: Out = (s) => process.stdout.write(s), err: Out = (s) => process.stderr.write(`${s}\n`)): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        device: { type: "string" },
        host: { type: "string" },
        port: { type: "string" },
        "unit-id": { type: "string" },
        driver: { type: "string" },
        "byte-order": { type: "string" },
        out: { type: "string", short: "o" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (e) {
    err(`fieldgate import: ${(e as Error).message}\nusage:\n${IMPORT_USAGE}`);
    return 2;
  }
  const { values: v, positionals } = parsed;
  if (v.help) {
    out(`usage:\n${IMPORT_USAGE}\n`);
    return 0;
  }
  const [format, file] = positionals;
  if (format !== "kepware" || file === undefined || v.device === undefined) {
    err(`fieldgate import: expected \`import kepware TAGS.csv --device NAME\`\nusage:\n${IMPORT_USAGE}`);
    return 2;
  }
  // The drivers Kepware has a form for; the first (the gateway's first protocol over TCP) by default.
  const kepware = drivers.names.filter((n) => drivers.kepwareOf(n) !== undefined);
  const driver = v.driver ?? kepware[0] ?? "";
  const addressing = kepware.includes(driver) ? drivers.kepwareOf(driver) : undefined;
  if (addressing === undefined) {
    err(`fieldgate import: --driver: expected one of ${kepware.join(", ")}, got "${driver}"`);
    return 2;
  }
  const entry = addressing.importDevice(driver, { host: v.host, port: v.port, station: v["unit-id"], byteOrder: v["byte-order"] });
  if (typeof entry === "string") {
    err(`fieldgate import: ${entry}`);
    return 2;
  }
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    err(`fieldgate import: ${file}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : (e as Error).message}`);
    return 2;
  }
  const result = importKepwareCsv(decodeText(bytes), addressing);
  for (const n of result.notes) err(`${file}:${n.line}: ${n.tag ? `${n.tag}: ` : ""}${n.converted ? "" : "not converted: "}${n.message}`);
  const skipped = result.notes.filter((n) => !n.converted).length;
  if (result.tags.length === 0) {
    err(`fieldgate import: no tag converted from ${file} (${result.rows} rows)`);
    return 2;
  }
  const device = kepwareDeviceValue(v.device, driver, entry, result);
  const header = [
    `Imported from ${file} by \`fieldgate import kepware\`: ${result.tags.length} of ${result.rows} rows (${skipped} not converted, listed when it ran).`,
    ...entry.advice,
  ];
  // What was written must load: the import is only as good as the map it makes.
  const { text, issues } = deviceEntriesText(header, entry.sections, [device], drivers, v.out ?? "import.yaml");
  if (issues.length > 0) {
    for (const i of issues) err(`fieldgate import: the map made is not valid: ${formatIssue(i)}`);
    return 2;
  }
  if (v.out !== undefined) writeFileSync(v.out, text);
  else out(text);
  err(`fieldgate import: ${result.tags.length} of ${result.rows} rows converted${skipped > 0 ? `, ${skipped} not (listed above)` : ""}${v.out ? `; wrote ${v.out}` : ""}`);
  return skipped > 0 ? 1 : 0;
}

/** Runs `fieldgate export csv ...` with the gateway's `drivers` (the device's driver writes its addresses). */
export async function exportCommand(argv: string[], drivers: KepwareDrivers, out: Out = (s) => process.stdout.write(s), err: Out = (s) => process.stderr.write(`${s}\n`)): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: "string", short: "c" },
        devices: { type: "string" },
        device: { type: "string" },
        semicolon: { type: "boolean" },
        out: { type: "string", short: "o" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (e) {
    err(`fieldgate export: ${(e as Error).message}\nusage:\n${EXPORT_USAGE}`);
    return 2;
  }
  const { values: v, positionals } = parsed;
  if (v.help) {
    out(`usage:\n${EXPORT_USAGE}\n`);
    return 0;
  }
  if (positionals[0] !== "csv" || positionals.length > 1) {
    err(`fieldgate export: expected \`export csv\`\nusage:\n${EXPORT_USAGE}`);
    return 2;
  }
  let map;
  try {
    const devicesFile = v.devices ?? loadGatewayConfig(v.config ?? "config/gateway.yaml").devices;
    if (devicesFile === undefined) {
      err("fieldgate export: the gateway config names no device map (devices:); give one with --devices FILE");
      return 2;
    }
    map = loadDeviceMap(devicesFile, drivers);
  } catch (e) {
    if (e instanceof ConfigError) {
      err(e.message);
      return 1;
    }
    throw e;
  }
  const names = map.devices.map((d) => d.name);
  const device = v.device === undefined ? (map.devices.length === 1 ? map.devices[0] : undefined) : map.devices.find((d) => d.name === v.device);
  if (device === undefined) {
    err(
      v.device === undefined
        ? `fieldgate export: the map has ${names.length} devices; name one with --device (${names.join(", ")})`
        : `fieldgate export: no device "${v.device}" in the map (${names.join(", ") || "none"})`,
    );
    return 2;
  }
  const addressing = drivers.kepwareOf(device.driver);
  if (addressing === undefined) {
    err(`fieldgate export: device "${device.name}" is of driver ${device.driver}, whose tags Kepware has no form for`);
    return 2;
  }
  const csv = exportKepwareCsv(device, addressing, v.semicolon ? ";" : ",");
  if (v.out !== undefined) writeFileSync(v.out, csv);
  else out(csv);
  const lost = device.tags.filter((t) => t.history || (t.range !== undefined && t.scale === 1 && t.offset === 0)).length;
  err(
    `fieldgate export: ${device.tags.length} tags of ${device.name}${v.out ? ` to ${v.out}` : ""}` +
      addressing.exportNotes(device).map((n) => `; ${n}`).join("") +
      (lost > 0 ? `; ${lost} tag(s) with history or an unscaled range: Kepware's CSV has no column for those` : ""),
  );
  return 0;
}
