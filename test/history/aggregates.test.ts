// Part 13 aggregates and Part 11 raw/at-time reads on hand-made data, with exact values and
// StatusCodes (info bits included): full and partial intervals, Bad and Uncertain samples,
// before/after the data, backward intervals, and the AggregateConfiguration knobs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_AGGREGATE_CONFIGURATION, simpleBound } from "../../src/history/aggregates.js";
import { readAtTime, readProcessed, readRaw, continueRaw, type RawCursor } from "../../src/history/read.js";
import type { Series } from "../../src/history/store.js";
import { DATETIME_MIN, type DataValue } from "../../src/ua/builtins.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import type { AggregateConfiguration } from "../../src/ua/generated/types.js";
import { requirePeers, skipWithout } from "../helpers/built.js";
import { HISTORY_UNBUILT, T0, dbl, node, tempHistory, type TempHistory } from "./helpers.js";

const S = 1000;
const U = StatusCodes.UncertainLastUsableValue;
const B = StatusCodes.BadSensorFailure;
// [second, value, status]
const DATA: [number, number, number?][] = [
  [0, 10], [2, 20], [5, 30, U], [8, 40],
  [10, 5], [13, 99, B], [16, 15],
  [25, 7, B],
  [31, 50], [35, 50],
];
const CALC = 0x401;
const INTERP = 0x402;
const PARTIAL = 0x404;
const MULTI = 0x410;
const UNC = StatusCodes.UncertainDataSubNormal;

let h: TempHistory;
let s: Series;
beforeAll(() => {
  if (skipWithout(HISTORY_UNBUILT)) return;
  requirePeers(HISTORY_UNBUILT);
  h = tempHistory();
  h.writer.declare(node("t"));
  for (const [sec, v, st] of DATA) h.writer.record(node("t"), dbl(v, T0 + sec * S, st));
  h.writer.flushAll();
  s = h.store.find(node("t"))!;
});
afterAll(() => h?.cleanup());

function processed(agg: number, start: number, end: number, interval = 10 * S, cfg: AggregateConfiguration = DEFAULT_AGGREGATE_CONFIGURATION): DataValue[] {
  const d = { startTime: T0 + start, endTime: T0 + end, processingInterval: interval, aggregateType: [], aggregateConfiguration: cfg };
  const out = readProcessed(h.store, s, d, agg, cfg, 1000);
  expect(out.cursor).toBeUndefined();
  return out.values;
}

/** [value, statusCode, seconds from T0] of each result. */
function brief(values: DataValue[]): [unknown, number, number][] {
  return values.map((d) => [d.value?.value, d.statusCode ?? 0, (d.sourceTimestamp! - T0) / S]);
}

describe.skipIf(skipWithout(HISTORY_UNBUILT))("ReadProcessed (Part 13)", () => {
  it("Average: Good values only, PercentValues status, never Partial", () => {
    expect(brief(processed(ObjectIds.AggregateFunction_Average, 0, 40 * S))).toEqual([
      [70 / 3, CALC, 0],
      [10, (UNC | CALC) >>> 0, 10],
      [undefined, StatusCodes.BadNoData, 20],
      [50, CALC, 30],
    ]);
  });

  it("Count: Good values, Calculated, Partial on the short last interval", () => {
    expect(brief(processed(ObjectIds.AggregateFunction_Count, 0, 35 * S))).toEqual([
      [3, CALC, 0],
      [2, (UNC | CALC) >>> 0, 10],
      [0, (StatusCodes.BadNoData | CALC) >>> 0, 20],
      [1, CALC | PARTIAL, 30],
    ]);
    expect(brief(processed(ObjectIds.AggregateFunction_Average, 0, 35 * S)).at(-1)).toEqual([50, CALC, 30]);
  });

  it("Minimum and Maximum: Raw on the start time, Calculated elsewhere, MultiValue, Uncertain when Bad values exist", () => {
    expect(brief(processed(ObjectIds.AggregateFunction_Minimum, 0, 40 * S))).toEqual([
      [10, StatusCodes.Good, 0],
      [5, (UNC | CALC) >>> 0, 10],
      [undefined, StatusCodes.BadNoData, 20],
      [50, CALC | MULTI, 30],
    ]);
    expect(brief(processed(ObjectIds.AggregateFunction_Maximum, 0, 35 * S))).toEqual([
      [40, CALC, 0],
      [15, (UNC | CALC) >>> 0, 10],
      [undefined, StatusCodes.BadNoData, 20],
      [50, CALC | PARTIAL, 30],
    ]);
  });

  it("an Uncertain value beyond the Good extreme makes Minimum/Maximum Uncertain", () => {
    // [0, 10): Good 10, 20, 40 and Uncertain 30; within [4, 10) the Uncertain 30 is below the Good 40.
    expect(brief(processed(ObjectIds.AggregateFunction_Minimum, 4 * S, 10 * S, 0))).toEqual([[40, (UNC | CALC) >>> 0, 4]]);
  });

  it("Start and End: the raw sample with its own status and timestamp", () => {
    expect(brief(processed(ObjectIds.AggregateFunction_Start, 0, 40 * S))).toEqual([
      [10, 0, 0],
      [5, 0, 10],
      [7, B, 25],
      [50, 0, 31],
    ]);
    expect(brief(processed(ObjectIds.AggregateFunction_End, 0, 35 * S))).toEqual([
      [40, 0, 8],
      [15, 0, 16],
      [7, B, 25],
      [50, PARTIAL, 31],
    ]);
  });

  it("Interpolative: raw on the start time, sloped between Good neighbours, Uncertain when Bad ones are skipped", () => {
    const got = brief(processed(ObjectIds.AggregateFunction_Interpolative, 0, 50 * S));
    expect(got.slice(0, 2)).toEqual([
      [10, 0, 0],
      [5, 0, 10],
    ]);
    expect(got[2][0]).toBeCloseTo(15 + (35 * 4) / 15, 10);
    expect(got[2].slice(1)).toEqual([(UNC | INTERP) >>> 0, 20]);
    expect(got[3][0]).toBeCloseTo(15 + (35 * 14) / 15, 10);
    expect(got[3].slice(1)).toEqual([(UNC | INTERP) >>> 0, 30]);
    // After the end of data: stepped extrapolation, Uncertain.
    expect(got[4]).toEqual([50, (UNC | INTERP) >>> 0, 40]);
  });

  it("before the start of data every aggregate is Bad_NoData", () => {
    for (const agg of [ObjectIds.AggregateFunction_Average, ObjectIds.AggregateFunction_Count, ObjectIds.AggregateFunction_Start, ObjectIds.AggregateFunction_Interpolative]) {
      expect(brief(processed(agg, -20 * S, 0))).toEqual([
        [undefined, StatusCodes.BadNoData, -20],
        [undefined, StatusCodes.BadNoData, -10],
      ]);
    }
    expect(brief(processed(ObjectIds.AggregateFunction_Average, 40 * S, 50 * S))).toEqual([[undefined, StatusCodes.BadNoData, 40]]);
  });

  it("backward intervals run from startTime down to endTime, each (end, start]", () => {
    expect(brief(processed(ObjectIds.AggregateFunction_Count, 20 * S, 0))).toEqual([
      [1, (UNC | CALC) >>> 0, 20],
      [3, CALC, 10],
    ]);
    expect(brief(processed(ObjectIds.AggregateFunction_Start, 20 * S, 0))).toEqual([
      [15, 0, 16],
      [5, 0, 10],
    ]);
  });

  it("TreatUncertainAsBad and PercentDataGood/PercentDataBad", () => {
    const strict = { ...DEFAULT_AGGREGATE_CONFIGURATION, useServerCapabilitiesDefaults: false, treatUncertainAsBad: true };
    expect(brief(processed(ObjectIds.AggregateFunction_Average, 0, 10 * S, 0, strict))).toEqual([[70 / 3, (UNC | CALC) >>> 0, 0]]);
    const lenient = { ...strict, percentDataGood: 70, percentDataBad: 30 };
    expect(brief(processed(ObjectIds.AggregateFunction_Average, 0, 20 * S, 10 * S, lenient))).toEqual([
      [70 / 3, CALC, 0],
      [undefined, StatusCodes.BadNoData, 10],
    ]);
  });

  it("hands out the rest of the intervals behind a cursor", () => {
    const cfg = DEFAULT_AGGREGATE_CONFIGURATION;
    const d = { startTime: T0, endTime: T0 + 40 * S, processingInterval: 10 * S, aggregateType: [], aggregateConfiguration: cfg };
    const first = readProcessed(h.store, s, d, ObjectIds.AggregateFunction_Count, cfg, 3);
    expect(first.values.map((v) => v.value?.value)).toEqual([3, 2, 0]);
    expect(first.cursor).toEqual({ kind: "processed", next: 3 });
    const rest = readProcessed(h.store, s, d, ObjectIds.AggregateFunction_Count, cfg, 3, first.cursor as { kind: "processed"; next: number });
    expect(rest.values.map((v) => v.value?.value)).toEqual([2]);
    expect(rest.cursor).toBeUndefined();
  });
});

function raw(start: number | undefined, end: number | undefined, numValuesPerNode = 0, returnBounds = false, budget = 1000) {
  return readRaw(h.store, s, {
    isReadModified: false,
    startTime: start === undefined ? DATETIME_MIN : T0 + start * S,
    endTime: end === undefined ? DATETIME_MIN : T0 + end * S,
    numValuesPerNode,
    returnBounds,
  }, budget);
}

const secs = (values: DataValue[]) => values.map((d) => (d.sourceTimestamp! - T0) / S);

describe.skipIf(skipWithout(HISTORY_UNBUILT))("ReadRaw (Part 11 §6.5.3)", () => {
  it("forward [start, end), backward (end, start] newest first, and start == end", () => {
    expect(secs(raw(0, 10).values)).toEqual([0, 2, 5, 8]);
    expect(secs(raw(10, 0).values)).toEqual([10, 8, 5, 2]);
    expect(brief(raw(5, 5).values)).toEqual([[30, U, 5]]);
    expect(raw(50, 60)).toEqual({ statusCode: StatusCodes.GoodNoData, values: [] });
  });

  it("returns bounding values, and BadBoundNotFound where there is none", () => {
    expect(secs(raw(1, 9, 0, true).values)).toEqual([0, 2, 5, 8, 10]);
    expect(secs(raw(9, 1, 0, true).values)).toEqual([10, 8, 5, 2, 0]);
    // A sample on the start time is its own bound.
    expect(secs(raw(0, 9, 0, true).values)).toEqual([0, 2, 5, 8, 10]);
    const beyond = raw(36, 60, 0, true).values;
    expect(brief(beyond)).toEqual([
      [50, 0, 35],
      [undefined, StatusCodes.BadBoundNotFound, 60],
    ]);
  });

  it("pages numValuesPerNode values at a time through a cursor, bounds included", () => {
    const pages: number[][] = [];
    let out = raw(0, 40, 3);
    pages.push(secs(out.values));
    while (out.cursor) {
      out = continueRaw(h.store, s, out.cursor as RawCursor, 1000);
      pages.push(secs(out.values));
    }
    expect(pages).toEqual([[0, 2, 5], [8, 10, 13], [16, 25, 31], [35]]);
    const withBounds: number[][] = [];
    out = raw(1, 35, 4, true);
    withBounds.push(secs(out.values));
    while (out.cursor) {
      out = continueRaw(h.store, s, out.cursor as RawCursor, 1000);
      withBounds.push(secs(out.values));
    }
    expect(withBounds).toEqual([[0, 2, 5, 8], [10, 13, 16, 25], [31, 35]]);
  });

  it("with one time only, returns numValuesPerNode values from it without a cursor", () => {
    const fwd = raw(9, undefined, 2);
    expect(secs(fwd.values)).toEqual([10, 13]);
    expect(fwd.cursor).toBeUndefined();
    const back = raw(undefined, 10, 2);
    expect(secs(back.values)).toEqual([8, 5]);
    expect(back.cursor).toBeUndefined();
  });

  it("the server's value budget also pages", () => {
    const out = raw(0, 40, 0, false, 4);
    expect(secs(out.values)).toEqual([0, 2, 5, 8]);
    expect(out.cursor).toBeDefined();
  });
});

describe.skipIf(skipWithout(HISTORY_UNBUILT))("ReadAtTime (Part 11 §6.5.5)", () => {
  it("interpolated bounds: raw, sloped, Uncertain raw, before and after the data", () => {
    const times = [-1, 1, 5, 14, 40].map((x) => T0 + x * S);
    const out = readAtTime(h.store, s, { reqTimes: times, useSimpleBounds: false }, DEFAULT_AGGREGATE_CONFIGURATION, 1000);
    expect(brief(out.values)).toEqual([
      [undefined, StatusCodes.BadNoData, -1],
      [15, INTERP, 1],
      [30, UNC, 5],
      [5 + (10 * 4) / 6, (UNC | INTERP) >>> 0, 14],
      [50, (UNC | INTERP) >>> 0, 40],
    ]);
  });

  it("simple bounds take the neighbours as they are: a Bad one makes the value Bad", () => {
    expect(brief([simpleBound(h.store, s, T0 + 14 * S)])).toEqual([[undefined, StatusCodes.BadNoData, 14]]);
    expect(brief([simpleBound(h.store, s, T0 + 3 * S)])).toEqual([[20 + 10 / 3, (UNC | INTERP) >>> 0, 3]]);
  });
});
