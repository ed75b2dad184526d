// A driver defined in the tests alone, "telemeter": meters that answer each request with one
// telegram of self-describing records, as meters on a meter bus do, not with registers. It stands
// behind the driver interface of src/devices like the built-in drivers and is registered from the
// test, so that no file of src/ or drivers/ knows it: its own device and tag keys and their
// messages, a record selector for an address ("volume/1": the quantity and its storage number),
// a meter number for a station, the serial bus its meters share as its link, one telegram for a
// whole read (every tag of a device in one block), and codecs that find their record in the
// telegram by what it is, not by where it sits.
//
// The telegram, as a meter sends it: "TM" (0x54 0x4d), a record count, then the records, each
// [quantity code][storage][kind][value]: kind 0 a value of 4 bytes, two's complement big-endian,
// times 10^(exponent, the next signed byte); kind 1 text of [length] ASCII bytes.
import type { DeviceConfig, DeviceMap, DeviceSyntax, TagConfig, ValueType } from "../../src/config/device-map.js";
import { custom, string, type Checker, type ParseResult } from "../../src/config/schema.js";
import { suggest } from "../../src/config/validate.js";
import { DriverError, type BlockData, type BlockRequest, type Driver, type DriverHealth } from "../../src/devices/driver.js";
import type { DriverDefinition, DriverProtocol, TagPlan } from "../../src/devices/registry.js";
import { ValuePath, type Encoded, type RawValue, type TagCodec } from "../../src/devices/tag-codec.js";
import { BuiltinType, type Variant } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";

export const TELEMETER = "telemeter";

/** The quantities a telemeter reports, by their code in a telegram; fabrication is text. */
export const QUANTITIES = { volume: 1, energy: 2, power: 3, flow: 4, fabrication: 9 } as const;
export type Quantity = keyof typeof QUANTITIES;
const NAMES = Object.keys(QUANTITIES) as Quantity[];

/** A tag's record: its quantity and storage number (0: the current value, 1..15: stored ones). */
export interface RecordSelector {
  readonly quantity: Quantity;
  readonly storage: number;
}

// ---- the device map's keys ----------------------------------------------------------------

export function parseSelector(raw: unknown): ParseResult<RecordSelector> {
  if (typeof raw !== "string") return { ok: false, message: "" };
  const m = /^([a-z]+)(?:\/(\d+))?$/.exec(raw.trim());
  if (m === null) return { ok: false, message: "" };
  const quantity = m[1]!;
  if (!NAMES.includes(quantity as Quantity)) {
    const near = suggest(quantity, NAMES);
    return { ok: false, message: `a telemeter reports no ${quantity}${near ? `; did you mean "${near}"?` : ` (it reports ${NAMES.join(", ")})`}` };
  }
  const storage = m[2] === undefined ? 0 : Number(m[2]);
  if (storage > 15) return { ok: false, message: `storage numbers are 0 to 15, got ${storage}` };
  return { ok: true, value: { quantity: quantity as Quantity, storage } };
}

function formatSelector(s: RecordSelector): string {
  return `${s.quantity}/${s.storage}`;
}

const record = custom<RecordSelector>({
  expected: "a record like volume, volume/1 or energy/0 (a quantity and its storage number)",
  description: "The record the tag reads: a quantity, and after a / its storage number (0, the current value, by default).",
  jsonSchema: { type: "string", pattern: "^\\s*[a-z]+(/\\d+)?\\s*$" },
  parse: parseSelector,
});

const meter = custom<string>({
  expected: "an 8-digit meter number like 12345678",
  description: "The meter's number, printed on it: its address on the bus.",
  jsonSchema: { type: "string", pattern: "^\\d{8}$" },
  parse: (raw) => (typeof raw === "string" && /^\d{8}$/.test(raw) ? { ok: true, value: raw } : { ok: false, message: typeof raw === "number" ? "quote it: a meter number is text, its leading zeros count" : "" }),
});

type MeterDevice = Omit<DeviceConfig, "tags"> & { readonly bus: string; readonly meter: string; readonly tags: readonly MeterTag[] };
type MeterTag = TagConfig & { readonly record: RecordSelector };

function valueType(tag: TagConfig): ValueType {
  return (tag as MeterTag).record.quantity === "fabrication" ? { name: "text", numeric: false } : { name: "number", numeric: true };
}

function checkTag(tag: TagConfig, c: Checker): void {
  if (tag.access === "readwrite") c.report("access", "a telemeter's records are read-only: expected read");
}

function checkDevice(device: DeviceConfig, c: Checker): void {
  const seen = new Map<string, number>();
  (device as MeterDevice).tags.forEach((t, i) => {
    const key = formatSelector(t.record);
    const first = seen.get(key);
    if (first !== undefined) c.report(["tags", i, "record"], `record ${key} is read by tags[${first}] already`);
    else seen.set(key, i);
  });
}

export const TELEMETER_SYNTAX: DeviceSyntax = {
  deviceKeys: { bus: string({ description: "The serial bus (under `buses`) the meter is on.", minLength: 1 }), meter },
  tagKeys: { record },
  busKey: "bus",
  valueType,
  checkTag,
  checkDevice,
};

// ---- telegrams ----------------------------------------------------------------------------

/** A record of a meter: a number (value * 10^exponent) or text. */
export interface MeterRecord {
  readonly quantity: Quantity;
  readonly storage: number;
  readonly value: number | string;
}

/** The telegram of `records`, as a meter sends it. */
export function encodeTelegram(records: readonly MeterRecord[]): Buffer {
  const parts: Buffer[] = [Buffer.from([0x54, 0x4d, records.length])];
  for (const r of records) {
    const head = [QUANTITIES[r.quantity], r.storage];
    if (typeof r.value === "string") {
      parts.push(Buffer.from([...head, 1, r.value.length]), Buffer.from(r.value, "ascii"));
    } else {
      // Three decimals: the value times 1000, with exponent -3.
      const body = Buffer.alloc(8);
      body.writeUInt8(0, 0);
      body.writeInt32BE(Math.round(r.value * 1000), 1);
      body.writeInt8(-3, 5);
      parts.push(Buffer.from(head), body.subarray(0, 6));
    }
  }
  return Buffer.concat(parts);
}

/** A telegram decoded: its records in the order sent. What the link's reads give (BlockData). */
export class Telegram {
  constructor(readonly records: readonly MeterRecord[]) {}

  find(s: RecordSelector): MeterRecord | undefined {
    for (const r of this.records) if (r.quantity === s.quantity && r.storage === s.storage) return r;
    return undefined;
  }
}

const CODE_TO_QUANTITY = new Map<number, Quantity>(Object.entries(QUANTITIES).map(([q, c]) => [c, q as Quantity]));

function malformed(why: string): DriverError {
  return new DriverError("malformed", StatusCodes.BadCommunicationError, `telegram: ${why}`, true);
}

/** Decodes a telegram, every length checked before it is read; a bad one is a `malformed` DriverError. */
export function decodeTelegram(bytes: Buffer): Telegram {
  if (bytes.length < 3 || bytes[0] !== 0x54 || bytes[1] !== 0x4d) throw malformed("no TM header");
  const records: MeterRecord[] = [];
  let at = 3;
  for (let n = 0; n < bytes[2]!; n++) {
    if (at + 3 > bytes.length) throw malformed(`record ${n} cut short`);
    const quantity = CODE_TO_QUANTITY.get(bytes[at]!);
    if (quantity === undefined) throw malformed(`record ${n} of unknown quantity ${bytes[at]}`);
    const storage = bytes[at + 1]!;
    const kind = bytes[at + 2]!;
    at += 3;
    if (kind === 0) {
      if (at + 5 > bytes.length) throw malformed(`record ${n} cut short`);
      const exponent = bytes.readInt8(at + 4);
      const raw = bytes.readInt32BE(at);
      records.push({ quantity, storage, value: exponent < 0 ? raw / 10 ** -exponent : raw * 10 ** exponent });
      at += 5;
    } else if (kind === 1) {
      const length = bytes[at];
      if (length === undefined || at + 1 + length > bytes.length) throw malformed(`record ${n} cut short`);
      records.push({ quantity, storage, value: bytes.toString("ascii", at + 1, at + 1 + length) });
      at += 1 + length;
    } else {
      throw malformed(`record ${n} of unknown kind ${kind}`);
    }
  }
  return new Telegram(records);
}

// ---- the codec --------------------------------------------------------------------------------

const NOT_WRITABLE: Encoded = { ok: false, statusCode: StatusCodes.BadNotWritable };

/** A tag's record in a telegram, found by its quantity and storage number wherever it sits. */
class RecordCodec implements TagCodec {
  readonly area = "telegram";
  readonly width = 1;
  readonly partial = false;
  readonly builtinType: BuiltinType;
  readonly path: ValuePath;

  constructor(
    private readonly selector: RecordSelector,
    private readonly scale: number,
    private readonly offset: number,
  ) {
    const text = selector.quantity === "fabrication";
    this.builtinType = text ? BuiltinType.String : BuiltinType.Double;
    // NaN when the telegram has no such record: decodeRaw then says so (undefined).
    this.path = text ? ValuePath.Object : ValuePath.Checked;
  }

  decodeNumber(data: BlockData): number {
    const v = (data as Telegram).find(this.selector)?.value;
    return typeof v === "number" ? v * this.scale + this.offset : NaN;
  }

  decodeRaw(data: BlockData): RawValue | undefined {
    const v = (data as Telegram).find(this.selector)?.value;
    return typeof v === "number" ? v * this.scale + this.offset : v;
  }

  encode(_value: Variant): Encoded {
    return NOT_WRITABLE;
  }

  merge(_current: BlockData, written: Uint16Array | Uint8Array): Uint16Array | Uint8Array {
    return written;
  }
}

export const TELEMETER_PROTOCOL: DriverProtocol = {
  syntax: TELEMETER_SYNTAX,
  tag: (tag): TagPlan => {
    const t = tag as MeterTag;
    return { codec: new RecordCodec(t.record, t.scale, t.offset), start: 0 };
  },
  station: (d) => (d as MeterDevice).meter,
  // One telegram holds every record: one read a cycle, whatever the tags.
  readLimits: () => ({ maxGap: 0, maxCount: { telegram: 1 } }),
  formatAddress: (t) => formatSelector((t as MeterTag).record),
};

// ---- the link -------------------------------------------------------------------------------

/** A meter on a test's bus: its records, and whether it answers. */
export class Meter {
  silent = false;
  /** Requests it was sent. */
  requests = 0;
  constructor(public records: MeterRecord[]) {}
}

/** The meters of a test by bus port and meter number, and the links opened (one per bus). */
export class MeterBus {
  readonly meters = new Map<string, Meter>();
  readonly opened: string[] = [];

  add(port: string, number: string, records: MeterRecord[]): Meter {
    const m = new Meter(records);
    this.meters.set(`${port}/${number}`, m);
    return m;
  }
}

export interface TelemeterLinkOptions {
  readonly port: string;
}

/** One bus: a request at a time to the meter it names, whose telegram comes back decoded. */
class TelemeterLink implements Driver<string> {
  connected = false;
  private requests = 0;
  private errors = 0;
  private lastError: string | undefined;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly bus: MeterBus,
    private readonly options: TelemeterLinkOptions,
  ) {}

  async connect(): Promise<void> {
    this.connected = true;
  }

  readBlock(r: BlockRequest<string>): Promise<BlockData> {
    // The bus carries one request at a time: each waits for the one before.
    const run = () => this.ask(r);
    const answer = this.tail.then(run, run);
    this.tail = answer.catch(() => undefined);
    return answer;
  }

  private async ask(r: BlockRequest<string>): Promise<Telegram> {
    this.requests++;
    if (r.area !== "telegram" || r.start !== 0 || r.count !== 1) {
      this.errors++;
      throw new DriverError("unsupported", StatusCodes.BadNotSupported, `a meter sends one telegram, not ${r.area}:${r.start}+${r.count}`, false);
    }
    await new Promise((resolve) => setImmediate(resolve));
    const meter = this.bus.meters.get(`${this.options.port}/${r.station}`);
    if (meter !== undefined) meter.requests++;
    if (meter === undefined || meter.silent) {
      this.errors++;
      this.lastError = `meter ${r.station}: no answer`;
      throw new DriverError("timeout", StatusCodes.BadCommunicationError, this.lastError, true);
    }
    return decodeTelegram(encodeTelegram(meter.records));
  }

  async write(station: string): Promise<void> {
    throw new DriverError("unsupported", StatusCodes.BadNotWritable, `meter ${station}: records are read-only`, false);
  }

  async close(): Promise<void> {
    this.connected = false;
  }

  health(): DriverHealth {
    return { connected: this.connected, requests: this.requests, errors: this.errors, lastError: this.lastError, lastRoundTrip: undefined };
  }
}

/** The telemeter driver, its meters those of `bus`. */
export function telemeterDriver(bus: MeterBus): DriverDefinition<TelemeterLinkOptions> {
  return {
    protocol: TELEMETER_PROTOCOL,
    linkKey: (d, map: DeviceMap) => map.buses[(d as MeterDevice).bus]!.port,
    linkOptions: (devices, map) => ({ port: map.buses[(devices[0] as MeterDevice).bus]!.port }),
    open: (options) => {
      bus.opened.push(options.port);
      return new TelemeterLink(bus, options);
    },
    describeLink: (d) => `bus ${(d as MeterDevice).bus} meter ${(d as MeterDevice).meter}`,
  };
}
