// The store's value encoding (every scalar type round-trips, other shapes as Variant BLOBs) and
// the gateway's writer (write-thread.ts): filtering, drop-oldest when full, batches bounded by
// flushCount, staging, the timer.
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { BuiltinType, VariantArrayType, scalar, type DataValue, type Variant } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { TIME_MAX, TIME_MIN } from "../../src/history/store.js";
import { HistoryStore } from "../../src/history/store.js";
import { requirePeers, skipWithout } from "../helpers/built.js";
import { HISTORY_UNBUILT, T0, dbl, node, stagedRows, tempHistory, type TempHistory } from "./helpers.js";

let h: TempHistory | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

function all(t: TempHistory, name: string): DataValue[] {
  const s = t.store.find(node(name))!;
  return t.store.read(s, TIME_MIN, TIME_MAX, true, 1_000_000);
}

describe.skipIf(skipWithout(HISTORY_UNBUILT))("HistoryStore", () => {
  beforeAll(() => requirePeers(HISTORY_UNBUILT));

  it("round-trips every numeric scalar type, and keeps other shapes as Variants", () => {
    h = tempHistory();
    const cases: [string, Variant[]][] = [
      ["bool", [scalar(BuiltinType.Boolean, true), scalar(BuiltinType.Boolean, false)]],
      ["i16", [scalar(BuiltinType.Int16, -32768), scalar(BuiltinType.Int16, 7)]],
      ["u32", [scalar(BuiltinType.UInt32, 0xffffffff), scalar(BuiltinType.UInt32, 0)]],
      ["i64", [scalar(BuiltinType.Int64, -(2n ** 63n)), scalar(BuiltinType.Int64, 2n ** 62n + 1n)]],
      ["u64", [scalar(BuiltinType.UInt64, 2n ** 64n - 1n), scalar(BuiltinType.UInt64, 5n)]],
      ["f32", [scalar(BuiltinType.Float, Math.fround(0.1)), scalar(BuiltinType.Float, -0)]],
      ["f64", [scalar(BuiltinType.Double, 1.5), scalar(BuiltinType.Double, 3), scalar(BuiltinType.Double, NaN), scalar(BuiltinType.Double, -Infinity)]],
      ["str", [scalar(BuiltinType.String, "hello"), scalar(BuiltinType.String, "007")]],
      ["mixed", [scalar(BuiltinType.Double, 2.25), { dataType: BuiltinType.Double, arrayType: VariantArrayType.Array, value: [1, 2] }, scalar(BuiltinType.String, "x")]],
    ];
    for (const [name, values] of cases) {
      h.writer.declare(node(name));
      values.forEach((v, i) => h!.writer.record(node(name), { value: v, sourceTimestamp: T0 + i }));
    }
    // A Bad sample without a value: the device stopped answering.
    h.writer.record(node("f64"), { statusCode: StatusCodes.BadCommunicationError, sourceTimestamp: T0 + 10 });
    h.writer.flushAll();
    for (const [name, values] of cases) {
      const got = all(h, name).slice(0, values.length);
      expect(got.map((d) => d.value), name).toEqual(values);
      expect(got.map((d) => d.sourceTimestamp)).toEqual(values.map((_, i) => T0 + i));
    }
    const last = all(h, "f64").at(-1)!;
    expect(last).toEqual({ value: undefined, statusCode: StatusCodes.BadCommunicationError, sourceTimestamp: T0 + 10 });
  });

  it("reopens a database with its series and their types", () => {
    h = tempHistory();
    h.writer.declare(node("a"));
    h.writer.record(node("a"), { value: scalar(BuiltinType.Float, 2.5), sourceTimestamp: T0, statusCode: StatusCodes.UncertainLastUsableValue });
    h.writer.flushAll();
    h.store.close();
    const again = new HistoryStore(h.file);
    try {
      const s = again.find(node("a"))!;
      expect(s.type).toBe(BuiltinType.Float);
      expect(again.read(s, TIME_MIN, TIME_MAX, true, 10)).toEqual([
        { value: scalar(BuiltinType.Float, 2.5), statusCode: StatusCodes.UncertainLastUsableValue, sourceTimestamp: T0 },
      ]);
    } finally {
      again.close();
    }
  });
});

describe.skipIf(skipWithout(HISTORY_UNBUILT))("the history writer", () => {
  beforeAll(() => requirePeers(HISTORY_UNBUILT));

  it("stores only changes beyond the deadband, and every status change", () => {
    h = tempHistory();
    h.writer.declare(node("t"), { onChangeOnly: true, deadband: 0.5 });
    const xs = [10, 10.2, 10.5, 10.6, 11.2, 11.2];
    xs.forEach((x, i) => h!.writer.record(node("t"), dbl(x, T0 + i)));
    h.writer.record(node("t"), dbl(11.2, T0 + 6, StatusCodes.UncertainLastUsableValue));
    h.writer.flushAll();
    expect(all(h, "t").map((d) => [d.value?.value, d.sourceTimestamp! - T0])).toEqual([
      [10, 0],
      [10.6, 3],
      [11.2, 4],
      [11.2, 6],
    ]);
    expect(h.writer.stats).toMatchObject({ recorded: 4, filtered: 3 });
  });

  it("drops and counts the oldest unflushed samples when the ring is full", () => {
    h = tempHistory({ queueSize: 5 });
    h.writer.declare(node("t"));
    for (let i = 0; i < 8; i++) h.writer.record(node("t"), dbl(i, T0 + i));
    expect(h.writer.queued).toBe(5);
    expect(h.writer.stats.dropped).toBe(3);
    h.writer.flushAll();
    expect(all(h, "t").map((d) => d.value?.value)).toEqual([3, 4, 5, 6, 7]);
  });

  it("writes at most flushCount samples per transaction", () => {
    h = tempHistory({ flushCount: 4 });
    h.writer.declare(node("t"));
    for (let i = 0; i < 10; i++) h.writer.record(node("t"), dbl(i, T0 + i));
    const flushed: number[] = [];
    for (let k = 0; k < 4; k++) {
      h.writer.tickNow();
      flushed.push(h.writer.stats.flushed);
    }
    expect(flushed).toEqual([4, 8, 10, 10]);
    expect(h.writer.stats.flushes).toBe(3);
  });

  it("stages flushed samples and moves them to the tags' tables in bulk, not on every flush", () => {
    h = tempHistory({ flushCount: 4, compactCount: 10, compactInterval: 3_600_000 });
    h.writer.declare(node("t"));
    for (let i = 0; i < 8; i++) h.writer.record(node("t"), dbl(i, T0 + i));
    h.writer.tickNow();
    h.writer.tickNow();
    expect(stagedRows(h.file)).toBe(8); // below compactCount: still staged
    for (let i = 8; i < 12; i++) h.writer.record(node("t"), dbl(i, T0 + i));
    h.writer.tickNow();
    expect(stagedRows(h.file)).toBe(0);
    expect(all(h, "t").map((d) => d.value?.value)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    // Reads never miss a staged sample: they move what is staged first.
    h.writer.record(node("t"), dbl(12, T0 + 12));
    h.writer.tickNow();
    expect(stagedRows(h.file)).toBe(1);
    expect(all(h, "t")).toHaveLength(13);
  });

  it("ignores samples of nodes that were never declared", () => {
    h = tempHistory();
    h.writer.record(node("nobody"), dbl(1, T0));
    expect(h.writer.queued).toBe(0);
  });

  it("flushes from its own timer", async () => {
    h = tempHistory({ flushInterval: 20, flushCount: 1000 });
    h.writer.declare(node("t"));
    h.writer.start();
    h.writer.record(node("t"), dbl(1, T0));
    await vi.waitFor(() => expect(h!.writer.stats.flushed).toBe(1), { timeout: 5000, interval: 10 });
    expect(all(h, "t")).toHaveLength(1);
  });
});
