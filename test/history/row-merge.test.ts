// A series' rows merged with a read's overlay (row-merge.ts): in order either way, one row per ms
// with the overlay's winning, within the table query's bounds and count.
import { describe, expect, it } from "vitest";
import { extentWith, mergeRows, type Row } from "../../src/history/row-merge.js";

const rows = (...ts: number[]): Row[] => ts.map((t) => [t, `table ${t}`, null]);
const extra = (...ts: number[]): Row[] => ts.map((t) => [t, `overlay ${t}`, null]);
const values = (r: Row[]) => r.map((x) => x[1]);

describe("mergeRows", () => {
  it("merges ascending, the overlay's row replacing the table's of the same ms, up to the count", () => {
    // The table's query gave its first 4 rows of [0, 100); the overlay has 2, 5 (also in the table), 7 and 200 (out of range).
    const table = rows(1, 5, 8, 9);
    const merged = mergeRows(table, extra(2, 5, 7, 200), 0, 100, true, 4);
    expect(values(merged)).toEqual(["table 1", "overlay 2", "overlay 5", "overlay 7"]);
    expect(values(mergeRows(table, extra(2, 5, 7, 200), 0, 100, true, 10))).toEqual(["table 1", "overlay 2", "overlay 5", "overlay 7", "table 8", "table 9"]);
  });

  it("merges descending within (lo, hi], and keeps the table's bounds for fractional times", () => {
    // (1.5, 8.5] is ts 2..8, newest first.
    const table = rows(8, 6, 2);
    expect(values(mergeRows(table, extra(1, 2, 7, 9), 1.5, 8.5, false, 10))).toEqual(["table 8", "overlay 7", "table 6", "overlay 2"]);
    // [1.5, 8.5) is ts 2..8 ascending.
    expect(values(mergeRows(rows(2, 6, 8), extra(1, 2, 7, 9), 1.5, 8.5, true, 10))).toEqual(["overlay 2", "table 6", "overlay 7", "table 8"]);
  });

  it("gives the table's rows back as they are when the overlay has none in range", () => {
    const table = rows(3, 4);
    expect(mergeRows(table, extra(10, 11), 0, 10, true, 5)).toBe(table);
    expect(mergeRows(table, [], 0, 10, false, 5)).toBe(table);
  });

  it("takes the overlay's ends into a series' extent", () => {
    expect(extentWith(5, extra(2, 9), true)).toBe(2);
    expect(extentWith(5, extra(2, 9), false)).toBe(9);
    expect(extentWith(undefined, extra(2, 9), true)).toBe(2);
    expect(extentWith(5, undefined, false)).toBe(5);
  });
});
