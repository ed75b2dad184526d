// The Sparkplug B codec against Eclipse Tahu's (protobufjs over the specification's
// sparkplug_b.proto): what we write Tahu reads back, for every datatype we publish and random
// values; what Tahu writes (commands) we read back; and malformed payloads fail cleanly.
import fc from "fast-check";
import sparkplug from "sparkplug-payload";
import { describe, expect, it } from "vitest";
import { decodePayload, DataType, PayloadWriter, SparkplugDecodeError } from "../../src/northbound/sparkplug-codec.js";
import { variantOf } from "../../src/northbound/commands.js";
import { BuiltinType } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";

const tahu = sparkplug.get("spBv1.0")!;
const runs = Number(process.env.FIELDGATE_FUZZ_RUNS ?? 300);
const num = (v: unknown) => (typeof v === "object" && v !== null && "toNumber" in v ? (v as { toNumber(): number }).toNumber() : Number(v));
const signed64 = (v: unknown) => (typeof v === "object" && v !== null && "toSigned" in v ? (v as { toSigned(): { toString(): string } }).toSigned().toString() : String(v));

type Case = { type: DataType; tahuType: string; value: fc.Arbitrary<number> };
const CASES: Case[] = [
  { type: DataType.Int8, tahuType: "Int8", value: fc.integer({ min: -128, max: 127 }) },
  { type: DataType.Int16, tahuType: "Int16", value: fc.integer({ min: -32768, max: 32767 }) },
  { type: DataType.Int32, tahuType: "Int32", value: fc.integer({ min: -2147483648, max: 2147483647 }) },
  { type: DataType.UInt8, tahuType: "UInt8", value: fc.integer({ min: 0, max: 255 }) },
  { type: DataType.UInt16, tahuType: "UInt16", value: fc.integer({ min: 0, max: 65535 }) },
  { type: DataType.UInt32, tahuType: "UInt32", value: fc.integer({ min: 0, max: 4294967295 }) },
  { type: DataType.Int64, tahuType: "Int64", value: fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }) },
  { type: DataType.UInt64, tahuType: "UInt64", value: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }) },
  { type: DataType.Float, tahuType: "Float", value: fc.float({ noNaN: true }).map((f) => Math.fround(f)) },
  { type: DataType.Double, tahuType: "Double", value: fc.double({ noNaN: true }) },
  { type: DataType.Boolean, tahuType: "Boolean", value: fc.integer({ min: 0, max: 1 }) },
];

describe("PayloadWriter, read by Tahu's decoder", () => {
  it("writes every numeric datatype, alias, timestamp, historical flag and properties as Tahu reads them", () => {
    const w = new PayloadWriter(16);
    for (const c of CASES) {
      fc.assert(
        fc.property(fc.array(c.value, { minLength: 1, maxLength: 40 }), fc.nat({ max: 2 ** 40 }), fc.nat(255), fc.boolean(), (values, ts, seq, historical) => {
          w.reset();
          w.timestamp(1_700_000_000_000 + ts);
          values.forEach((v, i) => {
            const m = w.beginMetric();
            w.name(`folder/metric ${i} °C`);
            w.alias(i + 1);
            w.metricTimestamp(1_600_000_000_000 + ts + i);
            w.datatype(c.type);
            if (historical) w.historical();
            const p = w.beginProperties();
            w.stringProperty("engUnit", "m³/h");
            w.numberProperty("engLow", DataType.Double, -v);
            w.numberProperty("Quality", DataType.Int32, 500);
            w.endProperties(p);
            w.numberValue(c.type, v);
            w.endMetric(m);
          });
          w.seq(seq);
          const p = tahu.decodePayload(w.finish()) as { timestamp: unknown; seq: unknown; metrics: Record<string, unknown>[] };
          expect(num(p.timestamp)).toBe(1_700_000_000_000 + ts);
          expect(num(p.seq)).toBe(seq);
          expect(p.metrics).toHaveLength(values.length);
          p.metrics.forEach((m, i) => {
            const v = values[i]!;
            expect(m.name).toBe(`folder/metric ${i} °C`);
            expect(num(m.alias)).toBe(i + 1);
            expect(num(m.timestamp)).toBe(1_600_000_000_000 + ts + i);
            expect(m.type).toBe(c.tahuType);
            expect(m.isHistorical ?? false).toBe(historical);
            const props = m.properties as Record<string, { value: unknown }>;
            expect(props.engUnit!.value).toBe("m³/h");
            expect(props.engLow!.value).toBe(-v === 0 ? -v : -v);
            expect(props.Quality!.value).toBe(500);
            if (c.type === DataType.Int64) expect(signed64(m.value)).toBe(String(v));
            else if (c.type === DataType.UInt64 || c.type === DataType.UInt32) expect(num(m.value)).toBe(v);
            else if (c.type === DataType.Boolean) expect(m.value).toBe(v === 1);
            else if (c.type === DataType.Float) expect(m.value).toBe(Math.fround(v));
            else expect(m.value).toBe(v);
          });
        }),
        { numRuns: Math.max(20, Math.floor(runs / CASES.length)) },
      );
    }
  });

  it("writes strings, 64-bit integers past 2^53, is_null, and bodies longer than 16 KiB", () => {
    const w = new PayloadWriter(8);
    w.timestamp(1);
    let m = w.beginMetric();
    w.datatype(DataType.String);
    w.stringValue("x".repeat(70_000));
    w.endMetric(m);
    m = w.beginMetric();
    w.datatype(DataType.Int64);
    w.bigValue(-(2n ** 62n) - 3n);
    w.endMetric(m);
    m = w.beginMetric();
    w.datatype(DataType.UInt64);
    w.bigValue(2n ** 64n - 1n);
    w.endMetric(m);
    m = w.beginMetric();
    w.datatype(DataType.Double);
    w.isNull();
    w.endMetric(m);
    w.seq(0);
    const p = tahu.decodePayload(w.finish()) as { metrics: { value: unknown; type: string }[] };
    expect(p.metrics[0]!.value).toBe("x".repeat(70_000));
    expect(signed64(p.metrics[1]!.value)).toBe(String(-(2n ** 62n) - 3n));
    expect(String(p.metrics[2]!.value)).toBe(String(2n ** 64n - 1n));
    expect(p.metrics[3]!.value).toBeNull();
  });
});

describe("decodePayload, of what Tahu's encoder writes (commands)", () => {
  it("reads names, aliases, datatypes and values of every kind", () => {
    const buf = Buffer.from(
      tahu.encodePayload({
        timestamp: 1234,
        metrics: [
          { name: "Node Control/Rebirth", type: "Boolean", value: true },
          { alias: 7, type: "Int16", value: -5 },
          { alias: 8, type: "UInt32", value: 4000000000 },
          { alias: 9, type: "Double", value: 2.5 },
          { alias: 10, type: "Float", value: 1.25 },
          { alias: 11, type: "String", value: "on" },
          { alias: 2 ** 40, type: "Int64", value: -3 },
        ],
      } as never),
    );
    const p = decodePayload(buf);
    expect(p.timestamp).toBe(1234);
    expect(p.metrics.map((m) => [m.name, m.alias, m.datatype, m.kind])).toEqual([
      ["Node Control/Rebirth", undefined, DataType.Boolean, "boolean"],
      [undefined, 7, DataType.Int16, "int"],
      [undefined, 8, DataType.UInt32, "long"],
      [undefined, 9, DataType.Double, "double"],
      [undefined, 10, DataType.Float, "float"],
      [undefined, 11, DataType.String, "string"],
      [undefined, 2 ** 40, DataType.Int64, "long"],
    ]);
    expect(variantOf(p.metrics[1]!, DataType.Int16)).toMatchObject({ dataType: BuiltinType.Int16, value: -5 });
    expect(variantOf(p.metrics[2]!, DataType.UInt32)).toMatchObject({ dataType: BuiltinType.UInt32, value: 4000000000 });
    expect(variantOf(p.metrics[3]!, DataType.Double)).toMatchObject({ dataType: BuiltinType.Double, value: 2.5 });
    expect(variantOf(p.metrics[5]!, DataType.String)).toMatchObject({ dataType: BuiltinType.String, value: "on" });
    expect(variantOf(p.metrics[6]!, DataType.Int64)).toMatchObject({ dataType: BuiltinType.Int64, value: -3n });
    // A value its datatype cannot hold, a string for a number, a boolean for a string.
    expect(variantOf({ ...p.metrics[1]!, num: 40000 }, DataType.Int16)).toBe(StatusCodes.BadOutOfRange);
    expect(variantOf(p.metrics[5]!, DataType.UInt16)).toBe(StatusCodes.BadTypeMismatch);
    expect(variantOf(p.metrics[0]!, DataType.String)).toBe(StatusCodes.BadTypeMismatch);
  });

  it("fails with SparkplugDecodeError on truncated or malformed bytes, never otherwise", () => {
    const good = Buffer.from(tahu.encodePayload({ timestamp: 1, metrics: [{ name: "a", type: "String", value: "hello" }] } as never));
    for (let cut = 1; cut < good.length; cut++) {
      try {
        decodePayload(good.subarray(0, cut));
      } catch (err) {
        expect(err).toBeInstanceOf(SparkplugDecodeError);
      }
    }
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        try {
          decodePayload(Buffer.from(bytes));
        } catch (err) {
          expect(err).toBeInstanceOf(SparkplugDecodeError);
        }
      }),
      { numRuns: runs * 5 },
    );
  });
});
