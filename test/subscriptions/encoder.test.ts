// The NotificationMessage encoder against the generated decoders and BinaryWriter: the same
// bytes as a DataValue encoded the long way, for numbers (UInt64 without bigint) and DataValues.
import { describe, expect, it } from "vitest";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { encodeDataValue } from "../../src/ua/builtin-codec.js";
import { BuiltinType, VariantArrayType, type DataValue } from "../../src/ua/builtins.js";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { decodeNotificationMessage, type DataChangeNotification } from "../../src/ua/generated/types.js";
import { QueueSlot } from "../../src/subscriptions/monitored-item.js";
import { NotificationWriter, OVERFLOW_INFO_BITS, writeSlot } from "../../src/subscriptions/notification-encoder.js";
import { ChunkWriter } from "../../src/transport/chunk-writer.js";
import { FakeOutput, FakeSealer } from "../transport/fake-chunks.js";

function numberSlot(type: BuiltinType, num: number, sourceTs: number, serverTs: number, status = 0, overflow = false): QueueSlot {
  const s = new QueueSlot();
  s.type = type;
  s.num = num;
  s.sourceTs = sourceTs;
  s.serverTs = serverTs;
  s.status = status;
  s.overflow = overflow;
  return s;
}

/** writeSlot's bytes after the client handle. */
function slotBytes(slot: QueueSlot, timestamps = TimestampsToReturn.Both): Buffer {
  const w = new BinaryWriter(Buffer.allocUnsafe(4));
  writeSlot(w, 7, slot, timestamps, true);
  expect(w.buffer.readUInt32LE(0)).toBe(7);
  return Buffer.from(w.view(4));
}

function dataValueBytes(dv: DataValue): Buffer {
  const w = new BinaryWriter(Buffer.allocUnsafe(4));
  encodeDataValue(w, dv);
  return Buffer.from(w.view());
}

describe("writeSlot", () => {
  const times = [Date.UTC(2026, 10, 30, 12, 0, 0, 123), Date.UTC(2026, 10, 30, 12, 0, 0, 124), Date.UTC(1500, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59), 0];

  it("encodes numbers as the DataValue they stand for, UInt64 without a bigint", () => {
    for (const t of times) {
      for (const s of times) {
        const expected = dataValueBytes({
          value: { dataType: BuiltinType.UInt64, arrayType: VariantArrayType.Scalar, value: 2n ** 40n + 5n },
          sourceTimestamp: t,
          serverTimestamp: s,
        });
        expect(slotBytes(numberSlot(BuiltinType.UInt64, 2 ** 40 + 5, t, s))).toEqual(expected);
      }
    }
    for (const [type, value] of [
      [BuiltinType.Double, 1.5],
      [BuiltinType.Int32, -3],
      [BuiltinType.Boolean, 1],
      [BuiltinType.UInt16, 65535],
    ] as const) {
      const v = type === BuiltinType.Boolean ? true : value;
      expect(slotBytes(numberSlot(type, value, times[0], times[0]))).toEqual(
        dataValueBytes({ value: { dataType: type, arrayType: VariantArrayType.Scalar, value: v }, sourceTimestamp: times[0], serverTimestamp: times[0] }),
      );
    }
  });

  it("applies TimestampsToReturn and the overflow bits", () => {
    const slot = numberSlot(BuiltinType.Int32, 1, times[0], times[1], 0, true);
    const value = { dataType: BuiltinType.Int32, arrayType: VariantArrayType.Scalar, value: 1 };
    const status = OVERFLOW_INFO_BITS;
    expect(slotBytes(slot, TimestampsToReturn.Neither)).toEqual(dataValueBytes({ value, statusCode: status }));
    expect(slotBytes(slot, TimestampsToReturn.Source)).toEqual(dataValueBytes({ value, statusCode: status, sourceTimestamp: times[0] }));
    expect(slotBytes(slot, TimestampsToReturn.Server)).toEqual(dataValueBytes({ value, statusCode: status, serverTimestamp: times[1] }));
  });

  it("encodes a DataValue slot as the DataValue with the server's timestamp", () => {
    const dv: DataValue = {
      value: { dataType: BuiltinType.String, arrayType: VariantArrayType.Scalar, value: "x" },
      statusCode: 0x40000000,
      sourceTimestamp: times[1],
      sourcePicoseconds: 7,
    };
    const slot = new QueueSlot();
    slot.dv = dv;
    slot.serverTs = times[0];
    expect(slotBytes(slot)).toEqual(dataValueBytes({ ...dv, serverTimestamp: times[0] }));
  });
});

describe("NotificationWriter", () => {
  it("writes a message the generated decoder reads, in a buffer of its own or across the chunks of a ChunkWriter", () => {
    const write = (nw: NotificationWriter, items: number): void => {
      nw.beginDataChanges();
      for (let i = 0; i < items; i++) writeSlot(nw.w, i, numberSlot(BuiltinType.UInt64, 3 + i, times0(), times0()), TimestampsToReturn.Both, true);
      nw.items = items;
      nw.endDataChanges();
      nw.statusChange(0x800a0000);
    };
    const nw = new NotificationWriter();
    nw.beginOwn(5, times0());
    write(nw, 1);
    const own = nw.finish();
    const m = decodeNotificationMessage(new BinaryReader(own));
    expect(m.sequenceNumber).toBe(5);
    expect(m.notificationData).toHaveLength(2);
    expect((m.notificationData![0].body as DataChangeNotification).monitoredItems![0].value.value?.value).toBe(3n);

    // 300 notifications in chunks of 64 bytes: counts and lengths are patched in chunks long full.
    nw.beginOwn(6, times0());
    write(nw, 300);
    const expected = nw.finish();
    const out = new FakeOutput(256, 1000);
    const sealer = new FakeSealer(64);
    const w = new ChunkWriter(out);
    w.begin(sealer, 1 << 20, 0, out.bufferSize);
    const at = w.mark();
    nw.begin(w, 6, times0());
    write(nw, 300);
    nw.end();
    const kept = w.copyFrom(at);
    w.unmark();
    w.end(true);
    w.flush();
    const chunks = out.chunks();
    expect(chunks.length).toBeGreaterThan(100);
    expect(Buffer.concat(chunks.map((c) => c.body))).toEqual(expected);
    expect(kept).toEqual(expected);
    const dc = decodeNotificationMessage(new BinaryReader(kept)).notificationData![0].body as DataChangeNotification;
    expect(dc.monitoredItems!.map((n) => n.clientHandle)).toEqual([...Array(300).keys()]);
  });
});

function times0(): number {
  return Date.UTC(2026, 0, 1);
}
