// Processed history (Part 13 §5.4): Average, Minimum, Maximum, Count, Start, End and
// Interpolative over the stored raw samples, plus the bounding values ReadAtTime uses.
//
// Decisions where Part 13 leaves room:
// - A variable is treated as Stepped = false (sloped interpolation) when its values are numbers
//   other than Boolean, and as stepped otherwise.
// - Interval results carry the InfoType DataValue bit (0x400) with the historian bits
//   (Calculated, Interpolated, Partial, MultiValue) whenever one of them is set; a plain Raw
//   result keeps the raw StatusCode.
// - An interval that lies entirely before the first or after the last stored sample is
//   Bad_NoData for every aggregate (Part 13 "Before Start of Data"/"After End of Data"), except
//   Interpolative after the end of data, which extrapolates (Part 13 §5.4.3.4).
// - The search for Good neighbours of an interpolated bound skips at most BOUND_SCAN Bad samples.
import { BuiltinType, VariantArrayType, type DataValue, type Variant } from "../ua/builtins.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { AggregateConfiguration } from "../ua/generated/types.js";
import { TIME_MAX, TIME_MIN, type HistoryStore, type Series } from "./store.js";

/** StatusCode info bits (Part 4 §7.39.1): InfoType DataValue and the historian bits. */
export const HistorianBits = {
  InfoTypeDataValue: 0x400,
  Calculated: 0x1,
  Interpolated: 0x2,
  Partial: 0x4,
  ExtraData: 0x8,
  MultiValue: 0x10,
} as const;

export const SUPPORTED_AGGREGATES: ReadonlySet<number> = new Set([
  ObjectIds.AggregateFunction_Average,
  ObjectIds.AggregateFunction_Minimum,
  ObjectIds.AggregateFunction_Maximum,
  ObjectIds.AggregateFunction_Count,
  ObjectIds.AggregateFunction_Start,
  ObjectIds.AggregateFunction_End,
  ObjectIds.AggregateFunction_Interpolative,
]);

/** The server's AggregateConfiguration defaults (Part 13 §4.2.1.2). */
export const DEFAULT_AGGREGATE_CONFIGURATION: Readonly<AggregateConfiguration> = Object.freeze({
  useServerCapabilitiesDefaults: true,
  treatUncertainAsBad: false,
  percentDataBad: 100,
  percentDataGood: 100,
  useSlopedExtrapolation: false,
});

const BOUND_SCAN = 1000;
const CHUNK = 8192;

const f32 = new Float32Array(1);
const i32 = new Int32Array(f32.buffer);

function isBad(st: number): boolean {
  return st >>> 30 >= 2;
}

function isUncertain(st: number): boolean {
  return st >>> 30 === 1;
}

function withBits(status: number, bits: number): number {
  return bits === 0 ? status : (status | HistorianBits.InfoTypeDataValue | bits) >>> 0;
}

/** Does the series hold numbers an Average or an interpolation can use? */
export function isNumericSeries(s: Series): boolean {
  return s.type >= BuiltinType.SByte && s.type <= BuiltinType.Double;
}

function isSloped(s: Series): boolean {
  return isNumericSeries(s);
}

/** The number of a stored `v`, NaN when it has none (NULL, a Variant BLOB). */
function numberOf(type: number, v: unknown): number {
  if (typeof v === "number") {
    if (type === BuiltinType.Float) {
      i32[0] = v;
      return f32[0];
    }
    return v;
  }
  if (typeof v === "bigint") return type === BuiltinType.UInt64 ? Number(BigInt.asUintN(64, v)) : Number(v);
  return NaN;
}

function statusOfRow(row: unknown[]): number {
  return row[2] === null ? StatusCodes.Good : Number(row[2]);
}

/** Running statistics of the raw samples of one interval. */
interface IntervalScan {
  total: number;
  good: number;
  uncertain: number;
  bad: number;
  sumGood: number;
  first: unknown[] | undefined;
  last: unknown[] | undefined;
  minGood: unknown[] | undefined;
  minGoodCount: number;
  maxGood: unknown[] | undefined;
  maxGoodCount: number;
  minUncertain: number;
  maxUncertain: number;
}

/** Scans the samples of [lo, hi) (ascending) or (lo, hi] (descending interval) in chunks. */
function scan(s: Series, lo: number, hi: number, forward: boolean): IntervalScan {
  const r: IntervalScan = {
    total: 0, good: 0, uncertain: 0, bad: 0, sumGood: 0, first: undefined, last: undefined,
    minGood: undefined, minGoodCount: 0, maxGood: undefined, maxGoodCount: 0, minUncertain: Infinity, maxUncertain: -Infinity,
  };
  // (lo, hi] over whole-ms timestamps is [floor(lo)+1, floor(hi)+1).
  let from = forward ? lo : Math.floor(lo) + 1;
  const to = forward ? hi : Math.floor(hi) + 1;
  let minV = Infinity;
  let maxV = -Infinity;
  for (;;) {
    const rows = s.rows(from, to, true, CHUNK);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      const st = statusOfRow(row);
      r.total++;
      if (r.first === undefined) r.first = row;
      r.last = row;
      if (isBad(st)) {
        r.bad++;
        continue;
      }
      const x = numberOf(s.type, row[1]);
      if (isUncertain(st)) {
        r.uncertain++;
        if (x < r.minUncertain) r.minUncertain = x;
        if (x > r.maxUncertain) r.maxUncertain = x;
        continue;
      }
      r.good++;
      r.sumGood += x;
      if (x < minV) {
        minV = x;
        r.minGood = row;
        r.minGoodCount = 1;
      } else if (x === minV) r.minGoodCount++;
      if (x > maxV) {
        maxV = x;
        r.maxGood = row;
        r.maxGoodCount = 1;
      } else if (x === maxV) r.maxGoodCount++;
    }
    if (rows.length < CHUNK) break;
    from = Number(rows[rows.length - 1][0]) + 1;
  }
  return r;
}

/** Part 13 §5.4.3.2 for aggregates that count values (PercentValues). */
function percentValuesStatus(r: IntervalScan, cfg: AggregateConfiguration): number {
  if (r.total === 0) return StatusCodes.Good;
  const bad = r.bad + (cfg.treatUncertainAsBad ? r.uncertain : 0);
  if (bad === 0) return StatusCodes.Good;
  if ((bad / r.total) * 100 >= cfg.percentDataBad) return StatusCodes.BadNoData;
  return ((r.total - bad) / r.total) * 100 >= cfg.percentDataGood ? StatusCodes.Good : StatusCodes.UncertainDataSubNormal;
}

/** One processing interval: samples in [start, end) going forward, (end, start] going back. */
export interface Interval {
  /** The interval's start in the direction of the request: its results' timestamp. */
  readonly start: number;
  readonly end: number;
  readonly partial: boolean;
}

/** Where the stored data begins and ends, for the Before/After Start of Data cases. */
export interface DataExtent {
  readonly oldest: number | undefined;
  readonly newest: number | undefined;
}

export function dataExtent(store: HistoryStore, s: Series): DataExtent {
  return { oldest: store.oldest(s), newest: store.newest(s) };
}

function outsideData(iv: Interval, extent: DataExtent): boolean {
  const lo = Math.min(iv.start, iv.end);
  const hi = Math.max(iv.start, iv.end);
  return extent.oldest === undefined || hi <= extent.oldest || lo > extent.newest!;
}

function scalarOf(s: Series, type: number, x: number): Variant {
  const integral = type >= BuiltinType.SByte && type <= BuiltinType.UInt64 && type !== BuiltinType.Float;
  if (type === BuiltinType.Int64 || type === BuiltinType.UInt64) return { dataType: type, arrayType: VariantArrayType.Scalar, value: BigInt(Math.round(x)) };
  return { dataType: s.type || BuiltinType.Double, arrayType: VariantArrayType.Scalar, value: integral ? Math.round(x) : x };
}

/** Computes one aggregate over one interval. */
export function aggregate(
  store: HistoryStore,
  s: Series,
  aggregateId: number,
  iv: Interval,
  cfg: AggregateConfiguration,
  extent: DataExtent,
): DataValue {
  const ts = iv.start;
  if (aggregateId === ObjectIds.AggregateFunction_Interpolative) {
    if (extent.oldest === undefined || ts < extent.oldest) return { statusCode: StatusCodes.BadNoData, sourceTimestamp: ts };
    return interpolatedBound(store, s, ts, cfg);
  }
  if (outsideData(iv, extent)) return { statusCode: StatusCodes.BadNoData, sourceTimestamp: ts };
  const forward = iv.start <= iv.end;
  const r = forward ? scan(s, iv.start, iv.end, true) : scan(s, iv.end, iv.start, false);
  const partial = iv.partial ? HistorianBits.Partial : 0;
  switch (aggregateId) {
    case ObjectIds.AggregateFunction_Count: {
      const status = percentValuesStatus(r, cfg);
      return {
        value: { dataType: BuiltinType.Int32, arrayType: VariantArrayType.Scalar, value: r.good },
        statusCode: withBits(status, HistorianBits.Calculated | partial),
        sourceTimestamp: ts,
      };
    }
    case ObjectIds.AggregateFunction_Average: {
      const status = percentValuesStatus(r, cfg);
      if (r.good === 0 || status === StatusCodes.BadNoData) return { statusCode: StatusCodes.BadNoData, sourceTimestamp: ts };
      // Part 13 Table "Average": Partial is never set for Average.
      return {
        value: { dataType: BuiltinType.Double, arrayType: VariantArrayType.Scalar, value: r.sumGood / r.good },
        statusCode: withBits(status, HistorianBits.Calculated),
        sourceTimestamp: ts,
      };
    }
    case ObjectIds.AggregateFunction_Minimum:
    case ObjectIds.AggregateFunction_Maximum: {
      const isMin = aggregateId === ObjectIds.AggregateFunction_Minimum;
      const row = isMin ? r.minGood : r.maxGood;
      if (row === undefined) return { statusCode: StatusCodes.BadNoData, sourceTimestamp: ts };
      const x = numberOf(s.type, row[1]);
      // Part 13 §5.4.3.10/11: Uncertain_DataSubNormal when Bad values exist, or when an
      // Uncertain value lies beyond the Good extreme.
      const uncertain = r.bad > 0 || (isMin ? r.minUncertain < x : r.maxUncertain > x);
      const onStart = Number(row[0]) === ts;
      let bits = partial;
      if (!onStart || uncertain) bits |= HistorianBits.Calculated;
      if ((isMin ? r.minGoodCount : r.maxGoodCount) > 1) bits |= HistorianBits.MultiValue;
      return {
        value: store.fromSql(s.type, row[1]),
        statusCode: withBits(uncertain ? StatusCodes.UncertainDataSubNormal : StatusCodes.Good, bits),
        sourceTimestamp: ts,
      };
    }
    case ObjectIds.AggregateFunction_Start:
    case ObjectIds.AggregateFunction_End: {
      // In a backward interval the samples were scanned oldest first too: Start is the sample
      // nearest the interval's start time.
      const wantFirst = (aggregateId === ObjectIds.AggregateFunction_Start) === forward;
      const row = wantFirst ? r.first : r.last;
      if (row === undefined) return { statusCode: StatusCodes.BadNoData, sourceTimestamp: ts };
      return { value: store.fromSql(s.type, row[1]), statusCode: withBits(statusOfRow(row), partial), sourceTimestamp: Number(row[0]) };
    }
    default:
      return { statusCode: StatusCodes.BadAggregateNotSupported, sourceTimestamp: ts };
  }
}

/** A usable neighbour for interpolation: the sample, and how many unusable ones were skipped. */
interface Neighbour {
  row: unknown[] | undefined;
  skipped: number;
}

function usable(st: number, cfg: AggregateConfiguration): boolean {
  return !isBad(st) && !(cfg.treatUncertainAsBad && isUncertain(st));
}

/** The nearest usable sample before (exclusive) or after (exclusive) `t`. */
function neighbour(s: Series, t: number, before: boolean, cfg: AggregateConfiguration): Neighbour {
  const rows = before ? s.rows(TIME_MIN, Math.ceil(t) - 1, false, BOUND_SCAN) : s.rows(Math.floor(t) + 1, TIME_MAX, true, BOUND_SCAN);
  for (let i = 0; i < rows.length; i++) {
    if (usable(statusOfRow(rows[i]), cfg)) return { row: rows[i], skipped: i };
  }
  return { row: undefined, skipped: rows.length };
}

/**
 * Part 13 §3.1.8 Interpolated Bounding Value at `t` (used by Interpolative and by ReadAtTime
 * with useSimpleBounds = false): Bad samples are skipped; skipping one or using an Uncertain
 * sample makes the result Uncertain_DataSubNormal; past the last sample the value is
 * extrapolated (stepped unless UseSlopedExtrapolation).
 */
export function interpolatedBound(store: HistoryStore, s: Series, t: number, cfg: AggregateConfiguration): DataValue {
  if (Number.isInteger(t)) {
    const exact = s.rows(t, t + 1, true, 1)[0];
    if (exact !== undefined && usable(statusOfRow(exact), cfg)) {
      const st = isUncertain(statusOfRow(exact)) ? StatusCodes.UncertainDataSubNormal : StatusCodes.Good;
      return { value: store.fromSql(s.type, exact[1]), statusCode: st, sourceTimestamp: t };
    }
  }
  const prev = neighbour(s, t, true, cfg);
  if (prev.row === undefined) return { statusCode: StatusCodes.BadNoData, sourceTimestamp: t };
  const next = neighbour(s, t, false, cfg);
  const prevSt = statusOfRow(prev.row);
  if (next.row === undefined) {
    let value = store.fromSql(s.type, prev.row[1]);
    if (cfg.useSlopedExtrapolation && isSloped(s)) {
      const before = neighbour(s, Number(prev.row[0]), true, cfg).row;
      if (before) value = slope(s, before, prev.row, t);
    }
    return { value, statusCode: withBits(StatusCodes.UncertainDataSubNormal, HistorianBits.Interpolated), sourceTimestamp: t };
  }
  const degraded = prev.skipped > 0 || next.skipped > 0 || isUncertain(prevSt) || isUncertain(statusOfRow(next.row));
  const value = isSloped(s) ? slope(s, prev.row, next.row, t) : store.fromSql(s.type, prev.row[1]);
  return {
    value,
    statusCode: withBits(degraded ? StatusCodes.UncertainDataSubNormal : StatusCodes.Good, HistorianBits.Interpolated),
    sourceTimestamp: t,
  };
}

/**
 * Part 13 §3.1.9 Simple Bounding Value at `t` (ReadAtTime with useSimpleBounds = true): the
 * sample at `t`, else the line between the samples around it whatever their status, which the
 * result takes (Bad if either is Bad, Uncertain if either is Uncertain).
 */
export function simpleBound(store: HistoryStore, s: Series, t: number): DataValue {
  if (Number.isInteger(t)) {
    const exact = s.rows(t, t + 1, true, 1)[0];
    if (exact !== undefined) return { value: store.fromSql(s.type, exact[1]), statusCode: statusOfRow(exact), sourceTimestamp: t };
  }
  const prev = s.rows(TIME_MIN, Math.ceil(t) - 1, false, 1)[0];
  if (prev === undefined) return { statusCode: StatusCodes.BadNoData, sourceTimestamp: t };
  const next = s.rows(Math.floor(t) + 1, TIME_MAX, true, 1)[0];
  const ps = statusOfRow(prev);
  if (next === undefined) {
    return { value: store.fromSql(s.type, prev[1]), statusCode: withBits(StatusCodes.UncertainDataSubNormal, HistorianBits.Interpolated), sourceTimestamp: t };
  }
  const ns = statusOfRow(next);
  if (isBad(ps) || (isSloped(s) && isBad(ns))) return { statusCode: StatusCodes.BadNoData, sourceTimestamp: t };
  const uncertain = isUncertain(ps) || (isSloped(s) && isUncertain(ns));
  return {
    value: isSloped(s) ? slope(s, prev, next, t) : store.fromSql(s.type, prev[1]),
    statusCode: withBits(uncertain ? StatusCodes.UncertainDataSubNormal : StatusCodes.Good, HistorianBits.Interpolated),
    sourceTimestamp: t,
  };
}

function slope(s: Series, a: unknown[], b: unknown[], t: number): Variant {
  const ta = Number(a[0]);
  const tb = Number(b[0]);
  const va = numberOf(s.type, a[1]);
  const vb = numberOf(s.type, b[1]);
  const x = tb === ta ? va : va + ((vb - va) * (t - ta)) / (tb - ta);
  return scalarOf(s, s.type, x);
}

/**
 * The processing intervals of a ReadProcessed request (Part 11 §6.5.4, Part 13 §5.4.2):
 * `processingInterval` steps from startTime toward endTime, the last one partial when the span
 * is not a multiple; 0 (or a step past the span) gives one interval.
 */
export function intervalCount(start: number, end: number, processingInterval: number): number {
  const span = Math.abs(end - start);
  if (!(processingInterval > 0) || processingInterval >= span) return 1;
  return Math.ceil(span / processingInterval);
}

export function intervalAt(start: number, end: number, processingInterval: number, k: number): Interval {
  const span = Math.abs(end - start);
  const step = !(processingInterval > 0) || processingInterval >= span ? span : processingInterval;
  const dir = end >= start ? 1 : -1;
  const a = start + dir * k * step;
  const remaining = Math.abs(end - a);
  const width = Math.min(step, remaining);
  return { start: a, end: a + dir * width, partial: width < step };
}
