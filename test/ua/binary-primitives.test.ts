import { describe, expect, it } from "vitest";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { DATETIME_MIN } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { reader, thrownStatus } from "./helpers.js";

const { BadDecodingError, BadEncodingError, BadEncodingLimitsExceeded } = StatusCodes;

function written(f: (w: BinaryWriter) => void): Buffer {
  const w = new BinaryWriter(Buffer.alloc(4));
  f(w);
  return Buffer.from(w.view());
}

describe("BinaryWriter / BinaryReader primitives", () => {
  it("integers at their limits round-trip, little-endian", () => {
    const bytes = written((w) => {
      w.writeBoolean(true);
      w.writeSByte(-128);
      w.writeByte(255);
      w.writeInt16(-32768);
      w.writeUInt16(65535);
      w.writeInt32(-2147483648);
      w.writeUInt32(4294967295);
      w.writeInt64(-(2n ** 63n));
      w.writeUInt64(2n ** 64n - 1n);
    });
    expect(bytes.subarray(0, 7).toString("hex")).toBe("0180ff0080ffff");
    const r = reader(bytes);
    expect(r.readBoolean()).toBe(true);
    expect(r.readSByte()).toBe(-128);
    expect(r.readByte()).toBe(255);
    expect(r.readInt16()).toBe(-32768);
    expect(r.readUInt16()).toBe(65535);
    expect(r.readInt32()).toBe(-2147483648);
    expect(r.readUInt32()).toBe(4294967295);
    expect(r.readInt64()).toBe(-(2n ** 63n));
    expect(r.readUInt64()).toBe(2n ** 64n - 1n);
    expect(r.remaining).toBe(0);
  });

  it("floats keep NaN, -0 and infinities", () => {
    const values = [NaN, -0, Infinity, -Infinity, 1.5, Number.MAX_VALUE, Number.MIN_VALUE];
    const r = reader(written((w) => values.forEach((v) => w.writeDouble(v))));
    for (const v of values) expect(Object.is(r.readDouble(), v)).toBe(true);
    const rf = reader(written((w) => [NaN, -0, 0.25].forEach((v) => w.writeFloat(v))));
    expect(rf.readFloat()).toBeNaN();
    expect(Object.is(rf.readFloat(), -0)).toBe(true);
    expect(rf.readFloat()).toBe(0.25);
  });

  it("DateTime: 1601 is 0 ticks, before it clamps to 0, from 9999-12-31 on it is Int64 max (Part 6 §5.2.2.5)", () => {
    expect(written((w) => w.writeDateTime(DATETIME_MIN)).toString("hex")).toBe("0000000000000000");
    expect(written((w) => w.writeDateTime(DATETIME_MIN - 1e6)).toString("hex")).toBe("0000000000000000");
    expect(written((w) => w.writeDateTime(NaN)).toString("hex")).toBe("0000000000000000");
    expect(written((w) => w.writeDateTime(Date.UTC(9999, 11, 31, 23, 59, 59))).toString("hex")).toBe("ffffffffffffff7f");
    // 1970-01-01 is 116444736000000000 ticks = 0x019DB1DED53E8000.
    expect(written((w) => w.writeDateTime(0)).toString("hex")).toBe("00803ed5deb19d01");
    const t = Date.UTC(2024, 5, 30, 12, 34, 56, 789) + 0.1234;
    const back = reader(written((w) => w.writeDateTime(t))).readDateTime();
    expect(Math.abs(back - t)).toBeLessThan(0.001); // 1 µs: a ms double near 2024 holds ~0.24 µs
    expect(reader(Buffer.alloc(8)).readDateTime()).toBe(DATETIME_MIN);
  });

  it("String: null, empty, multibyte; invalid UTF-8 is refused", () => {
    const bytes = written((w) => {
      w.writeString(undefined);
      w.writeString("");
      w.writeString("€𝄞");
    });
    expect(bytes.subarray(0, 8).toString("hex")).toBe("ffffffff00000000");
    const r = reader(bytes);
    expect(r.readString()).toBeUndefined();
    expect(r.readString()).toBe("");
    expect(r.readString()).toBe("€𝄞");
    for (const bad of [[0xc3, 0x28], [0xe2, 0x82], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xc0, 0xaf]]) {
      const b = Buffer.concat([Buffer.from(new Int32Array([bad.length]).buffer), Buffer.from(bad)]);
      expect(thrownStatus(() => reader(b).readString())).toBe(BadDecodingError);
    }
  });

  it("ByteString and Guid", () => {
    const bytes = written((w) => {
      w.writeByteString(undefined);
      w.writeByteString(Buffer.from([1, 2]));
      w.writeGuid("72962B91-FA75-4AE6-8D28-B404DC7DAF63");
    });
    const r = reader(bytes);
    expect(r.readByteString()).toBeUndefined();
    const view = r.readByteStringView();
    expect([...(view as Buffer)]).toEqual([1, 2]);
    expect((view as Buffer).buffer).toBe(bytes.buffer);
    expect(r.readGuid()).toBe("72962b91-fa75-4ae6-8d28-b404dc7daf63");
  });

  it("readByteString copies, short (byte by byte) and long: the input may be reused at once", () => {
    for (const n of [0, 1, 32, 64, 65, 1000]) {
      const value = Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + n) & 0xff));
      const bytes = written((w) => {
        w.writeByteString(value);
        w.writeByte(0xaa);
      });
      const r = reader(bytes);
      const got = r.readByteString()!;
      expect(got.equals(value)).toBe(true);
      expect(r.readByte()).toBe(0xaa);
      bytes.fill(0x55);
      expect(got.equals(value)).toBe(true);
    }
  });

  it("lengths: -1 is null, other negatives and lengths past the end are BadDecodingError", () => {
    const neg = Buffer.from([0xfe, 0xff, 0xff, 0xff]);
    expect(thrownStatus(() => reader(neg).readString())).toBe(BadDecodingError);
    expect(thrownStatus(() => reader(neg).readByteStringView())).toBe(BadDecodingError);
    const long = Buffer.from([0x10, 0, 0, 0, 1, 2]);
    expect(thrownStatus(() => reader(long).readString())).toBe(BadDecodingError);
    expect(thrownStatus(() => reader(long).readByteString())).toBe(BadDecodingError);
    const huge = Buffer.from([0xff, 0xff, 0xff, 0x7f]);
    expect(thrownStatus(() => reader(huge).readArrayLength(1))).toBe(BadDecodingError);
    expect(thrownStatus(() => reader(huge, { maxArrayLength: 0x7fffffff }).readArrayLength(1))).toBe(BadDecodingError);
    expect(thrownStatus(() => reader(Buffer.from([3, 0, 0, 0, 0x61, 0x62, 0x63]), { maxStringLength: 2 }).readString())).toBe(BadDecodingError);
  });

  it("every read past the end is BadDecodingError, never RangeError", () => {
    const reads: ((r: BinaryReader) => unknown)[] = [
      (r) => r.readBoolean(),
      (r) => r.readSByte(),
      (r) => r.readByte(),
      (r) => r.readInt16(),
      (r) => r.readUInt16(),
      (r) => r.readInt32(),
      (r) => r.readUInt32(),
      (r) => r.readInt64(),
      (r) => r.readUInt64(),
      (r) => r.readFloat(),
      (r) => r.readDouble(),
      (r) => r.readDateTime(),
      (r) => r.readGuid(),
      (r) => r.readString(),
      (r) => r.readByteString(),
      (r) => r.readArrayLength(),
    ];
    const full = Buffer.alloc(32, 0);
    for (const read of reads) {
      const size = (() => {
        const r = reader(full);
        read(r);
        return r.pos;
      })();
      // A slice that ends early inside a bigger buffer: the reader must honour `end`.
      for (let n = 0; n < size; n++) {
        expect(thrownStatus(() => read(new BinaryReader(full, 3, 3 + n)))).toBe(BadDecodingError);
      }
    }
  });

  it("depth: enter past maxDepth is BadDecodingError", () => {
    const r = reader(Buffer.alloc(0), { maxDepth: 2 });
    r.enter();
    r.enter();
    expect(thrownStatus(() => r.enter())).toBe(BadDecodingError);
    r.setBuffer(Buffer.alloc(1));
    expect(r.depth).toBe(0);
  });

  it("the writer grows, also from an empty buffer, and stops at maxSize", () => {
    const w = new BinaryWriter(Buffer.alloc(0));
    for (let i = 0; i < 1000; i++) w.writeUInt32(i);
    expect(w.pos).toBe(4000);
    expect(w.view().readUInt32LE(3996)).toBe(999);
    const small = new BinaryWriter(Buffer.alloc(4), 16);
    expect(thrownStatus(() => small.writeBytes(Buffer.alloc(17)))).toBe(BadEncodingLimitsExceeded);
  });

  it("the writer refuses values that do not fit their type with BadEncodingError", () => {
    const bad: ((w: BinaryWriter) => void)[] = [
      (w) => w.writeBoolean(1 as unknown as boolean),
      (w) => w.writeSByte(128),
      (w) => w.writeByte(256),
      (w) => w.writeByte(1.5),
      (w) => w.writeInt16(32768),
      (w) => w.writeUInt16(-1),
      (w) => w.writeInt32(NaN),
      (w) => w.writeInt32("1" as unknown as number),
      (w) => w.writeUInt32(-1),
      (w) => w.writeUInt32(2 ** 32),
      (w) => w.writeInt64(1 as unknown as bigint),
      (w) => w.writeInt64(2n ** 63n),
      (w) => w.writeUInt64(-1n),
      (w) => w.writeFloat("x" as unknown as number),
      (w) => w.writeDouble(undefined as unknown as number),
      (w) => w.writeDateTime(new Date() as unknown as number),
      (w) => w.writeString(5 as unknown as string),
      (w) => w.writeByteString("ab" as unknown as Buffer),
      (w) => w.writeGuid("72962b91fa754ae68d28b404dc7daf63"),
      (w) => w.writeGuid("zz962b91-fa75-4ae6-8d28-b404dc7daf63"),
    ];
    for (const f of bad) expect(thrownStatus(() => f(new BinaryWriter(Buffer.alloc(16))))).toBe(BadEncodingError);
  });

  it("reset() rewinds and clears the depth", () => {
    const w = new BinaryWriter(Buffer.alloc(8));
    w.writeInt32(1);
    w.depth = 3;
    w.reset();
    expect(w.pos).toBe(0);
    expect(w.depth).toBe(0);
  });
});
