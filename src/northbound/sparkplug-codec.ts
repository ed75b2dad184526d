// Sparkplug B payloads (Sparkplug 3.0 §6.4.1, the specification's sparkplug_b.proto) written and
// read by hand instead of through a generated protobuf library. The field numbers and wire types
// below are the schema's; the reasons for our own code:
// - A DDATA of a poll cycle is encoded straight from the value cache into one reused buffer:
//   no message object, no Long, no array per metric (protobufjs builds an object tree per
//   payload and a Long per 64-bit value, then encodes it in one synchronous call).
// - A DBIRTH of 10,000 tags is one message, but its encoding can stop after any metric and go
//   on in the next task (births.ts): the writer keeps its position, so no slice exceeds ~2 ms.
// - Commands (NCMD/DCMD) are decoded with a bounds check before every read: a malformed payload
//   is a SparkplugDecodeError, never an exception from deep inside a library.
// Eclipse Tahu's sparkplug-payload decoder (protobufjs with the same .proto) reads what we write
// in the tests; our decoder reads what it writes.

/** Sparkplug 3.0 §6.4.16 Data Types (the DataType enum of sparkplug_b.proto). */
export const enum DataType {
  Unknown = 0,
  Int8 = 1,
  Int16 = 2,
  Int32 = 3,
  Int64 = 4,
  UInt8 = 5,
  UInt16 = 6,
  UInt32 = 7,
  UInt64 = 8,
  Float = 9,
  Double = 10,
  Boolean = 11,
  String = 12,
  DateTime = 13,
  Text = 14,
}

/** Sparkplug 3.0 §6.4.9.1 Quality Codes: the 'Quality' property, an Int32. */
export const enum Quality {
  Bad = 0,
  Good = 192,
  Stale = 500,
}

// Wire types (protobuf encoding) and field numbers of sparkplug_b.proto.
const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;

const enum PayloadField {
  Timestamp = 1,
  Metrics = 2,
  Seq = 3,
}

const enum MetricField {
  Name = 1,
  Alias = 2,
  Timestamp = 3,
  Datatype = 4,
  IsHistorical = 5,
  IsTransient = 6,
  IsNull = 7,
  Properties = 9,
  IntValue = 10,
  LongValue = 11,
  FloatValue = 12,
  DoubleValue = 13,
  BooleanValue = 14,
  StringValue = 15,
  BytesValue = 16,
}

const enum PropertySetField {
  Keys = 1,
  Values = 2,
}

const enum PropertyValueField {
  Type = 1,
  IsNull = 2,
  IntValue = 3,
  LongValue = 4,
  FloatValue = 5,
  DoubleValue = 6,
  BooleanValue = 7,
  StringValue = 8,
}

const TWO_32 = 4294967296;
const MASK_64 = (1n << 64n) - 1n;

/**
 * Writes one Sparkplug payload at a time into a buffer it reuses and grows. Length-delimited
 * parts (a metric, its property set, a property value) reserve two bytes for their length and
 * move their body when the length needs one byte or more than two. `finish()` copies the payload
 * out (MQTT keeps the buffer it is given until it is written).
 */
export class PayloadWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initialSize = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(initialSize);
  }

  /** Bytes written so far. */
  get length(): number {
    return this.pos;
  }

  reset(): void {
    this.pos = 0;
  }

  /** A copy of the payload written since the last reset. */
  finish(): Buffer {
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    return out;
  }

  // ---- payload --------------------------------------------------------------------------------

  timestamp(ms: number): void {
    this.key(PayloadField.Timestamp, VARINT);
    this.varint(ms);
  }

  seq(n: number): void {
    this.key(PayloadField.Seq, VARINT);
    this.varint(n);
  }

  /** Opens a metric; every metric field written until endMetric(start) belongs to it. */
  beginMetric(): number {
    this.key(PayloadField.Metrics, LEN);
    return this.openLength();
  }

  endMetric(start: number): void {
    this.closeLength(start);
  }

  // ---- metric ---------------------------------------------------------------------------------

  name(s: string): void {
    this.stringField(MetricField.Name, s);
  }

  alias(n: number): void {
    this.key(MetricField.Alias, VARINT);
    this.varint(n);
  }

  metricTimestamp(ms: number): void {
    this.key(MetricField.Timestamp, VARINT);
    this.varint(ms < 0 ? 0 : Math.floor(ms));
  }

  datatype(t: DataType): void {
    this.key(MetricField.Datatype, VARINT);
    this.varint(t);
  }

  historical(): void {
    this.key(MetricField.IsHistorical, VARINT);
    this.byte(1);
  }

  isNull(): void {
    this.key(MetricField.IsNull, VARINT);
    this.byte(1);
  }

  /**
   * A number as the value of a metric of `type`: Int8..Int32, UInt8 and UInt16 in int_value
   * (signed ones as their 32-bit two's complement, §6.4.17), Int64/UInt64/DateTime in long_value
   * (Int64 as its 64-bit two's complement), Float, Double, Boolean (0 = false). UInt32 goes in
   * long_value, where Eclipse Tahu's encoders put it and its JavaScript decoder looks for it
   * (§6.4.17 names uint32; a UInt32 fits either, and our command decoder reads both).
   */
  numberValue(type: DataType, n: number): void {
    this.valueOf(type, n, MetricField.IntValue, MetricField.LongValue, MetricField.FloatValue, MetricField.DoubleValue, MetricField.BooleanValue);
  }

  /** A 64-bit integer beyond 2^53 (Int64/UInt64 metrics). */
  bigValue(n: bigint): void {
    this.key(MetricField.LongValue, VARINT);
    const u = n & MASK_64;
    this.varint64(Number(u & 0xffffffffn), Number(u >> 32n));
  }

  stringValue(s: string): void {
    this.stringField(MetricField.StringValue, s);
  }

  /** Opens the metric's property set (§6.4.8); keys and values are written pairwise. */
  beginProperties(): number {
    this.key(MetricField.Properties, LEN);
    return this.openLength();
  }

  endProperties(start: number): void {
    this.closeLength(start);
  }

  /** One property: its key, then a PropertyValue of `type` holding `n` (numbers and booleans). */
  numberProperty(key: string, type: DataType, n: number): void {
    this.stringField(PropertySetField.Keys, key);
    this.key(PropertySetField.Values, LEN);
    const start = this.openLength();
    this.key(PropertyValueField.Type, VARINT);
    this.varint(type);
    this.valueOf(type, n, PropertyValueField.IntValue, PropertyValueField.LongValue, PropertyValueField.FloatValue, PropertyValueField.DoubleValue, PropertyValueField.BooleanValue);
    this.closeLength(start);
  }

  stringProperty(key: string, value: string): void {
    this.stringField(PropertySetField.Keys, key);
    this.key(PropertySetField.Values, LEN);
    const start = this.openLength();
    this.key(PropertyValueField.Type, VARINT);
    this.varint(DataType.String);
    this.stringField(PropertyValueField.StringValue, value);
    this.closeLength(start);
  }

  // ---- encoding -------------------------------------------------------------------------------

  private valueOf(type: DataType, n: number, intField: number, longField: number, floatField: number, doubleField: number, boolField: number): void {
    switch (type) {
      case DataType.Int8:
      case DataType.Int16:
      case DataType.Int32:
      case DataType.UInt8:
      case DataType.UInt16:
        this.key(intField, VARINT);
        this.varint(n >>> 0);
        return;
      case DataType.UInt32:
        this.key(longField, VARINT);
        this.varint(n >>> 0);
        return;
      case DataType.Int64:
      case DataType.UInt64:
      case DataType.DateTime:
        this.key(longField, VARINT);
        if (n >= 0) this.varint(n);
        else {
          const hi = Math.floor(n / TWO_32);
          this.varint64((n - hi * TWO_32) >>> 0, hi >>> 0);
        }
        return;
      case DataType.Float:
        this.key(floatField, FIXED32);
        this.ensure(4);
        this.buf.writeFloatLE(n, this.pos);
        this.pos += 4;
        return;
      case DataType.Double:
        this.key(doubleField, FIXED64);
        this.ensure(8);
        this.buf.writeDoubleLE(n, this.pos);
        this.pos += 8;
        return;
      case DataType.Boolean:
        this.key(boolField, VARINT);
        this.byte(n !== 0 ? 1 : 0);
        return;
      default:
        throw new RangeError(`not a numeric Sparkplug datatype: ${type}`);
    }
  }

  private key(field: number, wire: number): void {
    this.ensure(11);
    // Every field number here is below 16: the key is one byte.
    this.buf[this.pos++] = (field << 3) | wire;
  }

  private byte(b: number): void {
    this.buf[this.pos++] = b;
  }

  /** A non-negative integer below 2^53. */
  private varint(n: number): void {
    this.ensure(10);
    const b = this.buf;
    let p = this.pos;
    if (n < 0x80000000) {
      let v = n | 0;
      while (v >= 0x80) {
        b[p++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      b[p++] = v;
    } else {
      while (n >= 0x80) {
        b[p++] = (n % 128) | 0x80;
        n = Math.floor(n / 128);
      }
      b[p++] = n;
    }
    this.pos = p;
  }

  /** A 64-bit value from its unsigned halves. */
  private varint64(lo: number, hi: number): void {
    this.ensure(10);
    const b = this.buf;
    let p = this.pos;
    while (hi !== 0 || lo >= 0x80) {
      b[p++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    b[p++] = lo;
    this.pos = p;
  }

  private stringField(field: number, s: string): void {
    this.key(field, LEN);
    const n = Buffer.byteLength(s, "utf8");
    this.varint(n);
    this.ensure(n);
    this.pos += this.buf.write(s, this.pos, n, "utf8");
  }

  /** Reserves two bytes for a length; returns where they are. */
  private openLength(): number {
    this.ensure(2);
    const start = this.pos;
    this.pos += 2;
    return start;
  }

  private closeLength(start: number): void {
    const body = start + 2;
    const len = this.pos - body;
    const b = this.buf;
    if (len < 0x80) {
      b.copyWithin(start + 1, body, this.pos);
      b[start] = len;
      this.pos--;
    } else if (len < 0x4000) {
      b[start] = (len & 0x7f) | 0x80;
      b[start + 1] = len >>> 7;
    } else {
      let bytes = 3;
      while (len >= 2 ** (7 * bytes)) bytes++;
      this.ensure(bytes - 2);
      const buf = this.buf;
      buf.copyWithin(start + bytes, body, this.pos);
      this.pos += bytes - 2;
      let v = len;
      for (let i = 0; i < bytes - 1; i++) {
        buf[start + i] = (v & 0x7f) | 0x80;
        v = Math.floor(v / 128);
      }
      buf[start + bytes - 1] = v;
    }
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }
}

// ---- decoding (commands) ----------------------------------------------------------------------

export class SparkplugDecodeError extends Error {
  readonly code = "SPARKPLUG_DECODE";
}

/** A metric of a command (NCMD/DCMD), as far as fieldgate acts on it. */
export interface DecodedMetric {
  name?: string;
  alias?: number;
  timestamp?: number;
  datatype?: number;
  isNull: boolean;
  isHistorical: boolean;
  /** Which value field was present: "int" (int_value), "long", "float", "double", "boolean", "string", or "none". */
  kind: "int" | "long" | "float" | "double" | "boolean" | "string" | "none";
  /** int_value as its uint32; long_value as a number while exact, else as a bigint (unsigned); float, double; boolean as 0/1. */
  num: number;
  big: bigint | undefined;
  str: string | undefined;
}

export interface DecodedPayload {
  timestamp?: number;
  seq?: number;
  metrics: DecodedMetric[];
}

/** Most metrics decoded from one command: a hostile payload cannot make us build millions. */
export const MAX_COMMAND_METRICS = 10_000;

class Reader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  /** A varint as a number while below 2^53; larger values set `big`. */
  big: bigint | undefined = undefined;

  varint(): number {
    let lo = 0;
    let hi = 0;
    let shift = 0;
    this.big = undefined;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new SparkplugDecodeError("truncated varint");
      const b = this.buf[this.pos++]!;
      if (shift < 28) lo |= (b & 0x7f) << shift;
      else if (shift === 28) {
        lo |= (b & 0x0f) << 28;
        hi |= (b & 0x7f) >>> 4;
      } else hi |= (b & 0x7f) << (shift - 32);
      shift += 7;
      if ((b & 0x80) === 0) {
        const h = hi >>> 0;
        if (h < 0x200000) return h * TWO_32 + (lo >>> 0);
        this.big = (BigInt(h) << 32n) | BigInt(lo >>> 0);
        return Number(this.big);
      }
    }
    throw new SparkplugDecodeError("varint longer than 10 bytes");
  }

  length(): number {
    const n = this.varint();
    if (n > this.end - this.pos) throw new SparkplugDecodeError(`length ${n} past the end of the payload`);
    return n;
  }

  string(): string {
    const n = this.length();
    const s = this.buf.toString("utf8", this.pos, this.pos + n);
    this.pos += n;
    return s;
  }

  fixed32Float(): number {
    if (this.end - this.pos < 4) throw new SparkplugDecodeError("truncated float");
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }

  fixed64Double(): number {
    if (this.end - this.pos < 8) throw new SparkplugDecodeError("truncated double");
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  skip(wire: number): void {
    switch (wire) {
      case VARINT:
        this.varint();
        return;
      case FIXED64:
        if (this.end - this.pos < 8) throw new SparkplugDecodeError("truncated fixed64");
        this.pos += 8;
        return;
      case LEN:
        this.pos += this.length();
        return;
      case FIXED32:
        if (this.end - this.pos < 4) throw new SparkplugDecodeError("truncated fixed32");
        this.pos += 4;
        return;
      default:
        throw new SparkplugDecodeError(`wire type ${wire} not allowed`);
    }
  }
}

/** Decodes a Sparkplug B payload's timestamp, seq and metrics (the parts commands use). */
export function decodePayload(buf: Buffer): DecodedPayload {
  const r = new Reader(buf, 0, buf.length);
  const out: DecodedPayload = { metrics: [] };
  while (!r.done) {
    const key = r.varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (field === PayloadField.Timestamp && wire === VARINT) out.timestamp = r.varint();
    else if (field === PayloadField.Seq && wire === VARINT) out.seq = r.varint();
    else if (field === PayloadField.Metrics && wire === LEN) {
      if (out.metrics.length >= MAX_COMMAND_METRICS) throw new SparkplugDecodeError(`more than ${MAX_COMMAND_METRICS} metrics`);
      const n = r.length();
      out.metrics.push(decodeMetric(new Reader(buf, r.pos, r.pos + n)));
      r.pos += n;
    } else r.skip(wire);
  }
  return out;
}

function decodeMetric(r: Reader): DecodedMetric {
  const m: DecodedMetric = { isNull: false, isHistorical: false, kind: "none", num: 0, big: undefined, str: undefined };
  while (!r.done) {
    const key = r.varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    switch (wire === VARINT || wire === LEN || wire === FIXED32 || wire === FIXED64 ? field : -1) {
      case MetricField.Name:
        if (wire !== LEN) break;
        m.name = r.string();
        continue;
      case MetricField.Alias:
        if (wire !== VARINT) break;
        m.alias = r.varint();
        continue;
      case MetricField.Timestamp:
        if (wire !== VARINT) break;
        m.timestamp = r.varint();
        continue;
      case MetricField.Datatype:
        if (wire !== VARINT) break;
        m.datatype = r.varint();
        continue;
      case MetricField.IsHistorical:
        if (wire !== VARINT) break;
        m.isHistorical = r.varint() !== 0;
        continue;
      case MetricField.IsNull:
        if (wire !== VARINT) break;
        m.isNull = r.varint() !== 0;
        continue;
      case MetricField.IntValue:
        if (wire !== VARINT) break;
        m.kind = "int";
        m.num = r.varint() >>> 0;
        continue;
      case MetricField.LongValue:
        if (wire !== VARINT) break;
        m.kind = "long";
        m.num = r.varint();
        m.big = r.big;
        continue;
      case MetricField.FloatValue:
        if (wire !== FIXED32) break;
        m.kind = "float";
        m.num = r.fixed32Float();
        continue;
      case MetricField.DoubleValue:
        if (wire !== FIXED64) break;
        m.kind = "double";
        m.num = r.fixed64Double();
        continue;
      case MetricField.BooleanValue:
        if (wire !== VARINT) break;
        m.kind = "boolean";
        m.num = r.varint() !== 0 ? 1 : 0;
        continue;
      case MetricField.StringValue:
        if (wire !== LEN) break;
        m.kind = "string";
        m.str = r.string();
        continue;
      default:
        break;
    }
    r.skip(wire);
  }
  return m;
}
