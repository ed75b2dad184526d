// A Kepware tag CSV made into a device of the map (kepware.ts converts the rows): the device
// with its link settings, as a map of its own (`fieldgate import kepware`), or added to a map
// being edited (the status page's upload), whose comments and layout stay as they were. The map
// is not applied here: the person checks it, sees the difference and applies it.
import { Document, isMap, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from "yaml";
import { BYTE_ORDERS, DRIVERS, type ByteOrder, type DriverName } from "./device-map.js";
import { importKepwareCsv, type ImportResult } from "./kepware.js";
import { formatDuration } from "./schema.js";

export interface KepwareDeviceOptions {
  readonly device: string;
  readonly driver: DriverName;
  readonly host?: string;
  readonly port?: number;
  readonly unitId?: number;
  readonly byteOrder?: ByteOrder;
}

/** The bus a modbus-rtu device is put on until the person names theirs. */
export const PLACEHOLDER_BUS = "rs485-1";

type OptionName = "driver" | "byteOrder" | "port" | "unitId";
const FORM_LABELS: Readonly<Record<OptionName, string>> = { driver: "driver", byteOrder: "byte order", port: "port", unitId: "unit id" };

/**
 * Checks the options as a person gives them (flags, a form); a message for the first that is
 * wrong, naming it as `labels` do (the command line's flags, the page's fields).
 */
export function kepwareOptions(
  raw: { device?: unknown; driver?: unknown; host?: unknown; port?: unknown; unitId?: unknown; byteOrder?: unknown },
  labels: Readonly<Record<OptionName, string>> = FORM_LABELS,
): KepwareDeviceOptions | string {
  if (typeof raw.device !== "string" || raw.device === "") return "the device needs a name";
  const driver = raw.driver === undefined || raw.driver === "" ? "modbus-tcp" : raw.driver;
  if (typeof driver !== "string" || !(DRIVERS as readonly string[]).includes(driver)) return `${labels.driver}: expected one of ${DRIVERS.join(", ")}, got "${String(driver)}"`;
  const byteOrder = typeof raw.byteOrder === "string" && raw.byteOrder !== "" ? raw.byteOrder.toUpperCase() : undefined;
  if (byteOrder !== undefined && !(BYTE_ORDERS as readonly string[]).includes(byteOrder)) return `${labels.byteOrder}: expected one of ${BYTE_ORDERS.join(", ")}, got "${String(raw.byteOrder)}"`;
  const int = (v: unknown): number | undefined | string => {
    if (v === undefined || v === "" || v === null) return undefined;
    const n = Number(v);
    return Number.isInteger(n) && n >= 0 && n <= 65535 ? n : `expected a whole number, got "${String(v)}"`;
  };
  const port = int(raw.port);
  const unitId = int(raw.unitId);
  if (typeof port === "string") return `${labels.port}: ${port}`;
  if (typeof unitId === "string") return `${labels.unitId}: ${unitId}`;
  return {
    device: raw.device,
    driver: driver as DriverName,
    ...(typeof raw.host === "string" && raw.host !== "" ? { host: raw.host } : {}),
    ...(port === undefined ? {} : { port }),
    ...(unitId === undefined ? {} : { unitId }),
    ...(byteOrder === undefined ? {} : { byteOrder: byteOrder as ByteOrder }),
  };
}

/** The device of the converted rows, as the map writes it (defaults left out). */
export function kepwareDevice(result: ImportResult, o: KepwareDeviceOptions): Record<string, unknown> {
  const device: Record<string, unknown> = { name: o.device, driver: o.driver };
  if (o.driver === "modbus-tcp" || o.driver === "modbus-rtu-over-tcp") device.host = o.host ?? "127.0.0.1";
  if (o.driver === "modbus-rtu") device.bus = PLACEHOLDER_BUS;
  if (o.port !== undefined) device.port = o.port;
  if (o.unitId !== undefined) device.unitId = o.unitId;
  if (o.byteOrder !== undefined) device.byteOrder = o.byteOrder;
  if (result.rate !== undefined) device.rate = formatDuration(result.rate);
  device.tags = result.tags.map((t) => (t.rate === undefined ? { ...t } : { ...t, rate: formatDuration(t.rate) }));
  return device;
}

/** Each tag on a line of its own (`- { name: ..., address: ... }`), as the shipped map writes them. */
function flowTags(device: unknown): void {
  const tags = isMap(device) ? device.get("tags") : undefined;
  if (isSeq(tags)) for (const item of tags.items) if (isMap(item)) item.flow = true;
}

/** A map of its own holding the device (and, for modbus-rtu, a placeholder bus). */
export function kepwareMapText(result: ImportResult, o: KepwareDeviceOptions, header: readonly string[]): string {
  const device = kepwareDevice(result, o);
  const doc = new Document(o.driver === "modbus-rtu" ? { buses: { [PLACEHOLDER_BUS]: { port: "/dev/ttyUSB0" } }, devices: [device] } : { devices: [device] });
  flowTags(doc.getIn(["devices", 0]));
  const lines = header.map((l) => `# ${l}`).join("\n");
  return `${lines === "" ? "" : `${lines}\n`}${doc.toString({ lineWidth: 0 })}`;
}

export interface KepwareAdded {
  /** The map with the device added. */
  readonly text: string;
  readonly converted: number;
  readonly rows: number;
  /** Rows not converted, or converted with something left out: "line 12: tag: what". */
  readonly notes: readonly string[];
}

/**
 * The map `text` with the CSV's device appended to its devices (and the placeholder bus, for
 * modbus-rtu, when the map has none of that name). `body` is what the page sends:
 * {text, csv, device, driver?, host?, port?, unitId?, byteOrder?}.
 */
export function addKepwareDevice(body: Readonly<Record<string, unknown>>): KepwareAdded | { readonly error: string } {
  if (typeof body.text !== "string" || typeof body.csv !== "string") return { error: 'expected JSON {"text": "<the map>", "csv": "<the CSV>", "device": "<name>", ...}' };
  const o = kepwareOptions(body);
  if (typeof o === "string") return { error: o };
  const result = importKepwareCsv(body.csv);
  const notes = result.notes.map((n) => `line ${n.line}: ${n.tag ? `${n.tag}: ` : ""}${n.converted ? "" : "not converted: "}${n.message}`);
  if (result.tags.length === 0) return { error: `no tag converted from the CSV (${result.rows} rows)${notes.length > 0 ? `: ${notes.slice(0, 5).join("; ")}` : ""}` };
  const doc = parseDocument(body.text.trim() === "" ? "devices: []\n" : body.text);
  if (doc.errors.length > 0) return { error: `the map has a YAML syntax error (${doc.errors[0]!.message.split("\n")[0]}): fix it first` };
  if (!isMap(doc.contents)) return { error: "the map is not a mapping of buses and devices: fix it first" };
  let devices = doc.get("devices");
  if (devices === undefined || devices === null) {
    doc.set("devices", doc.createNode([]));
    devices = doc.get("devices");
  }
  if (!isSeq(devices)) return { error: "devices: is not a list in the map: fix it first" };
  // A flow list ([]) would put the whole device on one line.
  (devices as YAMLSeq).flow = false;
  const node = doc.createNode(kepwareDevice(result, o));
  flowTags(node);
  (devices as YAMLSeq).items.push(node);
  if (o.driver === "modbus-rtu") {
    let buses = doc.get("buses");
    if (buses === undefined || buses === null) {
      doc.set("buses", doc.createNode({}));
      buses = doc.get("buses");
    }
    if (isMap(buses) && !(buses as YAMLMap).has(PLACEHOLDER_BUS)) (buses as YAMLMap).set(PLACEHOLDER_BUS, doc.createNode({ port: "/dev/ttyUSB0" }));
  }
  return { text: doc.toString({ lineWidth: 0 }), converted: result.tags.length, rows: result.rows, notes };
}
