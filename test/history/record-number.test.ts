// HistorySink.recordNumber (a numeric sample without a DataValue, as the value cache hands its
// slots on) stores what record() stores for the DataValue of that number, and filters alike (on
// change, deadband), in the gateway's writer (its worker runs from dist/: `npm test` builds it).
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { HistoryStore, TIME_MAX, TIME_MIN } from "../../src/history/store.js";
import type { HistorySink } from "../../src/history/sink.js";
import { BuiltinType, VariantArrayType, type DataValue } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { requirePeers, skipWithout } from "../helpers/built.js";
import { HISTORY_UNBUILT, T0, node, tempHistory } from "./helpers.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Per type, the numbers a tag of it gives (Boolean 0/1; 64-bit integers below 2^53). */
const CASES: [string, BuiltinType, number[]][] = [
  ["bool", BuiltinType.Boolean, [0, 1, 1, 0]],
  ["i8", BuiltinType.SByte, [-128, 127, 0]],
  ["u16", BuiltinType.UInt16, [0, 65535, 7, 7]],
  ["i32", BuiltinType.Int32, [-(2 ** 31), 2 ** 31 - 1]],
  ["u32", BuiltinType.UInt32, [0, 2 ** 32 - 1]],
  ["i64", BuiltinType.Int64, [-(2 ** 53) + 1, 2 ** 53 - 1, 0]],
  ["u64", BuiltinType.UInt64, [0, 2 ** 53 - 1]],
  ["f32", BuiltinType.Float, [Math.fround(0.1), -0, Math.fround(1e30)]],
  ["f64", BuiltinType.Double, [1.5, -0, NaN, Infinity, 2.25, 2.5]],
  ["dt", BuiltinType.DateTime, [T0, T0 + 0.5]],
  ["sc", BuiltinType.StatusCode, [StatusCodes.Good, StatusCodes.BadCommunicationError]],
];

/** The DataValue the value cache makes of a number (value-cache.ts numberVariant). */
function dataValue(type: BuiltinType, x: number, statusCode: number, t: number): DataValue {
  const value = type === BuiltinType.Boolean ? x !== 0 : type === BuiltinType.Int64 || type === BuiltinType.UInt64 ? BigInt(x) : x;
  return { value: { dataType: type, arrayType: VariantArrayType.Scalar, value }, statusCode, sourceTimestamp: t };
}

/** Every case as DataValues into `a.*` and as numbers into `b.*`, on-change with a deadband into `*.db`. */
function feed(w: HistorySink): void {
  for (const [name, type] of CASES) {
    for (const p of ["a", "b"]) w.declare(node(`${p}.${name}`));
  }
  for (const p of ["a", "b"]) w.declare(node(`${p}.db`), { onChangeOnly: true, deadband: 0.5 });
  let t = T0;
  for (const [name, type, xs] of CASES) {
    xs.forEach((x, i) => {
      const st = i === 1 ? StatusCodes.UncertainLastUsableValue : StatusCodes.Good;
      t += 10;
      w.record(node(`a.${name}`), dataValue(type, x, st, t));
      w.recordNumber(node(`b.${name}`), type, x, st, t);
    });
  }
  // A Double series fed a value of another type is stored as that Variant, both ways.
  w.record(node("a.f64"), dataValue(BuiltinType.Int64, 5, StatusCodes.Good, t + 1));
  w.recordNumber(node("b.f64"), BuiltinType.Int64, 5, StatusCodes.Good, t + 1);
  for (const [k, x] of [10, 10.2, 10.5, 10.6, 11.2, 11.2, NaN, NaN].entries()) {
    const st = k === 5 ? StatusCodes.UncertainLastUsableValue : StatusCodes.Good;
    w.record(node("a.db"), dataValue(BuiltinType.Double, x, st, t + 10 + k));
    w.recordNumber(node("b.db"), BuiltinType.Double, x, st, t + 10 + k);
  }
}

function rows(store: HistoryStore, name: string): DataValue[] {
  const s = store.find(node(name));
  return s ? store.read(s, TIME_MIN, TIME_MAX, true, 1000) : [];
}

function expectSame(store: HistoryStore): void {
  for (const name of [...CASES.map(([n]) => n), "db"]) {
    const a = rows(store, `a.${name}`);
    expect(a.length, name).toBeGreaterThan(0);
    expect(rows(store, `b.${name}`), name).toEqual(a);
    expect(store.find(node(`b.${name}`))!.type, name).toBe(store.find(node(`a.${name}`))!.type);
  }
  // The deadband kept 10, 10.6, 11.2, the status change, and the NaNs (no number is within a deadband of NaN).
  expect(rows(store, "b.db").map((d) => d.value?.value)).toEqual([10, 10.6, 11.2, 11.2, NaN, NaN]);
}

describe.skipIf(skipWithout(HISTORY_UNBUILT))("recordNumber", () => {
  beforeAll(() => requirePeers(HISTORY_UNBUILT));

  it("stores and filters what record() does", () => {
    const h = tempHistory();
    cleanups.push(() => h.cleanup());
    feed(h.writer);
    h.writer.flushAll();
    expectSame(h.store);
    expect(h.writer.stats.filtered).toBe(2 * 2);
  });
});
