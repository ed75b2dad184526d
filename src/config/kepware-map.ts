// A Kepware tag CSV made into a device of a map (kepware.ts converts the rows, the device's driver
// says its keys: KepwareAddressing): as a map of its own (`fieldgate import kepware`), or added
// to a map being edited (the status page's upload), whose comments and layout stay as they were.
// The map is not applied here: the person checks it, sees the difference and applies it.
import { addDeviceEntries } from "./entry-yaml.js";
import { formatDuration } from "./schema.js";
import { importKepwareCsv, type ImportResult, type KepwareDevice, type KepwareDrivers } from "./kepware.js";

/** The device of the converted rows as the map writes it: its driver's keys, its rate, its tags. */
export function kepwareDeviceValue(name: string, driver: string, entry: KepwareDevice, result: ImportResult): Record<string, unknown> {
  const device: Record<string, unknown> = { name, driver, ...entry.keys };
  if (result.rate !== undefined) device.rate = formatDuration(result.rate);
  device.tags = result.tags.map((t) => (t.rate === undefined ? { ...t } : { ...t, rate: formatDuration(t.rate) }));
  return device;
}

export interface KepwareAdded {
  /** The map with the device added. */
  readonly text: string;
  readonly converted: number;
  readonly rows: number;
  /** Rows not converted, or converted with something left out: "line 12: tag: what"; then the driver's advice. */
  readonly notes: readonly string[];
}

/**
 * The map `text` with the CSV's device appended to its devices, and the sections its driver
 * needs (a placeholder bus) where the map has none of their names. `body` is what the page
 * sends: {text, csv, device, driver?, host?, port?, station?, byteOrder?}; the driver defaults to
 * the first of `drivers` that Kepware has a form for.
 */
export function addKepwareDevice(body: Readonly<Record<string, unknown>>, drivers: KepwareDrivers): KepwareAdded | { readonly error: string } {
  if (typeof body.text !== "string" || typeof body.csv !== "string") return { error: 'expected JSON {"text": "<the map>", "csv": "<the CSV>", "device": "<name>", ...}' };
  if (typeof body.device !== "string" || body.device === "") return { error: "the device needs a name" };
  const kepware = drivers.names.filter((n) => drivers.kepwareOf(n) !== undefined);
  const driver = typeof body.driver === "string" && body.driver !== "" ? body.driver : (kepware[0] ?? "");
  const addressing = kepware.includes(driver) ? drivers.kepwareOf(driver) : undefined;
  if (addressing === undefined) return { error: `driver: expected one of ${kepware.join(", ")}, got "${driver}"` };
  const given = (v: unknown): string | undefined => (v === undefined || v === null || v === "" ? undefined : String(v));
  const entry = addressing.importDevice(driver, { host: given(body.host), port: given(body.port), station: given(body.station), byteOrder: given(body.byteOrder) });
  if (typeof entry === "string") return { error: entry };
  const result = importKepwareCsv(body.csv, addressing);
  const notes = result.notes.map((n) => `line ${n.line}: ${n.tag ? `${n.tag}: ` : ""}${n.converted ? "" : "not converted: "}${n.message}`);
  if (result.tags.length === 0) return { error: `no tag converted from the CSV (${result.rows} rows)${notes.length > 0 ? `: ${notes.slice(0, 5).join("; ")}` : ""}` };
  const added = addDeviceEntries(body.text, [kepwareDeviceValue(body.device, driver, entry, result)], entry.sections);
  if ("error" in added) return added;
  if (added.skipped.length > 0) return { error: `the map has a device named ${body.device} already: choose another name` };
  return { text: added.text, converted: result.tags.length, rows: result.rows, notes: [...notes, ...entry.advice] };
}
