// Reading history (Part 11 §6.5): raw values with bounds, processed values and values at given
// times, one node at a time, within a value budget; what is left is a cursor the service keeps
// behind a continuation point.
//
// Decisions where Part 11 leaves room:
// - The startTime is inclusive and the endTime exclusive in both directions: forward reads
//   return [startTime, endTime), backward reads (endTime < startTime) return (endTime, startTime]
//   newest first. startTime == endTime returns the values at exactly that time.
// - With only one of startTime/endTime, numValuesPerNode values are returned from that time
//   (forward from startTime, backward from endTime) without a continuation point, as the range
//   "extends to return this number of values" (Part 11 §6.5.3.1).
// - Bounding values of a raw read are raw samples with their own timestamps; a missing bound is
//   a BadBoundNotFound value stamped with the bound's time. Bounds count toward
//   numValuesPerNode; the start bound comes with the first page, the end bound with the last.
import { DATETIME_MIN, type DataValue } from "../ua/builtins.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { AggregateConfiguration, ReadAtTimeDetails, ReadProcessedDetails, ReadRawModifiedDetails } from "../ua/generated/types.js";
import { aggregate, dataExtent, interpolatedBound, intervalAt, intervalCount, simpleBound } from "./aggregates.js";
import { TIME_MAX, TIME_MIN, type HistoryStore, type Series } from "./store.js";

/** What is left of a raw read. */
export interface RawCursor {
  readonly kind: "raw";
  readonly ascending: boolean;
  /** Window still to read: [lo, hi) ascending, (lo, hi] descending. */
  lo: number;
  hi: number;
  readonly returnBounds: boolean;
  readonly endBoundTime: number;
  /** Values per page: numValuesPerNode, or Infinity (the server's budget decides). */
  readonly pageSize: number;
}

export interface ProcessedCursor {
  readonly kind: "processed";
  next: number;
}

export interface AtTimeCursor {
  readonly kind: "atTime";
  next: number;
}

export type HistoryCursor = RawCursor | ProcessedCursor | AtTimeCursor;

export interface ReadOutcome {
  readonly statusCode: number;
  readonly values: DataValue[];
  /** Set when more values remain. */
  readonly cursor?: HistoryCursor;
}

function given(t: number): boolean {
  return t > DATETIME_MIN;
}

function boundNotFound(t: number): DataValue {
  return { statusCode: StatusCodes.BadBoundNotFound, sourceTimestamp: t };
}

/** Checks a ReadRawModifiedDetails (raw only) before any node is read; Good or the reason. */
export function checkRawDetails(d: ReadRawModifiedDetails): number {
  if (d.isReadModified) return StatusCodes.BadHistoryOperationUnsupported;
  const s = given(d.startTime);
  const e = given(d.endTime);
  // Part 11 §6.5.3.1: two of startTime, endTime and numValuesPerNode shall be given.
  if (!(s && e) && !((s || e) && d.numValuesPerNode > 0)) return StatusCodes.BadInvalidTimestampArgument;
  return StatusCodes.Good;
}

/** Starts a raw read: the first page and, when more remains, the cursor. */
export function readRaw(store: HistoryStore, s: Series, d: ReadRawModifiedDetails, budget: number): ReadOutcome {
  const s0 = given(d.startTime);
  const e0 = given(d.endTime);
  const oneShot = !(s0 && e0);
  let ascending: boolean;
  let lo: number;
  let hi: number;
  let startBound: DataValue | undefined;
  let endBoundTime = NaN;
  if (s0 && e0) {
    ascending = d.startTime <= d.endTime;
    if (d.startTime === d.endTime) {
      lo = d.startTime;
      hi = Math.floor(d.startTime) + 1;
    } else if (ascending) {
      lo = d.startTime;
      hi = d.endTime;
    } else {
      lo = d.endTime;
      hi = d.startTime;
    }
    endBoundTime = d.endTime;
  } else if (s0) {
    ascending = true;
    lo = d.startTime;
    hi = TIME_MAX;
  } else {
    // Backward from endTime, which stays exclusive: (−∞, endTime).
    ascending = false;
    lo = TIME_MIN;
    hi = Math.ceil(d.endTime) - 1;
  }
  const limit = d.numValuesPerNode > 0 ? Math.min(d.numValuesPerNode, budget) : budget;
  const values: DataValue[] = [];
  if (d.returnBounds) {
    const t = s0 ? d.startTime : d.endTime;
    const exact = Number.isInteger(t) && s.rows(t, t + 1, true, 1).length > 0;
    if (!exact || !s0) {
      // The start bound lies outside the window: before startTime going forward, after it going
      // back (and at or after endTime for a backward read from endTime alone).
      startBound = ascending ? store.atOrBefore(s, t) : store.atOrAfter(s, t);
      values.push(startBound ?? boundNotFound(t));
    }
  }
  const pageSize = d.numValuesPerNode > 0 ? d.numValuesPerNode : Infinity;
  const cursor: RawCursor = { kind: "raw", ascending, lo, hi, returnBounds: d.returnBounds && !oneShot, endBoundTime, pageSize };
  const out = page(store, s, cursor, values, limit);
  if (oneShot && out.cursor) return { statusCode: out.statusCode, values: out.values };
  return out;
}

/** Continues a raw read from its cursor. */
export function continueRaw(store: HistoryStore, s: Series, cursor: RawCursor, budget: number): ReadOutcome {
  return page(store, s, cursor, [], Math.min(cursor.pageSize, budget));
}

function page(store: HistoryStore, s: Series, c: RawCursor, values: DataValue[], limit: number): ReadOutcome {
  const room = limit - values.length;
  if (room > 0 && c.lo < c.hi) {
    // One more than fits tells whether the window holds more.
    const got = store.read(s, c.lo, c.hi, c.ascending, room + 1);
    const more = got.length > room;
    const n = more ? room : got.length;
    for (let i = 0; i < n; i++) values.push(got[i]);
    if (more) {
      const last = got[n - 1].sourceTimestamp!;
      if (c.ascending) c.lo = last + 1;
      else c.hi = last - 1;
      return { statusCode: StatusCodes.Good, values, cursor: c };
    }
    // The window is exhausted.
    if (c.ascending) c.lo = c.hi;
    else c.hi = c.lo;
  } else if (room <= 0 && c.lo < c.hi) {
    return { statusCode: StatusCodes.Good, values, cursor: c };
  }
  if (c.returnBounds && !Number.isNaN(c.endBoundTime)) {
    if (values.length >= limit) return { statusCode: StatusCodes.Good, values, cursor: c };
    const t = c.endBoundTime;
    const bound = c.ascending ? store.atOrAfter(s, t) : store.atOrBefore(s, t);
    values.push(bound ?? boundNotFound(t));
  }
  return { statusCode: values.length === 0 ? StatusCodes.GoodNoData : StatusCodes.Good, values };
}

/** Part 11 §6.5.4: checks of ReadProcessedDetails common to all nodes; Good or the reason. */
export function checkProcessedDetails(d: ReadProcessedDetails): number {
  if (!given(d.startTime) || !given(d.endTime) || d.startTime === d.endTime) return StatusCodes.BadInvalidTimestampArgument;
  if (!(d.processingInterval >= 0)) return StatusCodes.BadInvalidArgument;
  return StatusCodes.Good;
}

/** The AggregateConfiguration in force: the server's defaults or the request's own (checked). */
export function aggregateConfiguration(requested: AggregateConfiguration, defaults: AggregateConfiguration): AggregateConfiguration | undefined {
  if (requested.useServerCapabilitiesDefaults) return defaults;
  const ok = (p: number) => Number.isInteger(p) && p >= 0 && p <= 100;
  if (!ok(requested.percentDataBad) || !ok(requested.percentDataGood)) return undefined;
  // Part 13 §4.2.1.2: PercentDataGood shall be >= 100 - PercentDataBad.
  if (requested.percentDataGood < 100 - requested.percentDataBad) return undefined;
  return requested;
}

export function readProcessed(
  store: HistoryStore,
  s: Series,
  d: ReadProcessedDetails,
  aggregateId: number,
  cfg: AggregateConfiguration,
  budget: number,
  cursor?: ProcessedCursor,
): ReadOutcome {
  const total = intervalCount(d.startTime, d.endTime, d.processingInterval);
  const first = cursor?.next ?? 0;
  const last = Math.min(total, first + Math.max(1, budget));
  const extent = dataExtent(store, s);
  const values: DataValue[] = new Array(last - first);
  for (let k = first; k < last; k++) {
    values[k - first] = aggregate(store, s, aggregateId, intervalAt(d.startTime, d.endTime, d.processingInterval, k), cfg, extent);
  }
  if (last < total) return { statusCode: StatusCodes.Good, values, cursor: { kind: "processed", next: last } };
  return { statusCode: StatusCodes.Good, values };
}

export function readAtTime(
  store: HistoryStore,
  s: Series,
  d: ReadAtTimeDetails,
  cfg: AggregateConfiguration,
  budget: number,
  cursor?: AtTimeCursor,
): ReadOutcome {
  const times = d.reqTimes ?? [];
  const first = cursor?.next ?? 0;
  const last = Math.min(times.length, first + Math.max(1, budget));
  const values: DataValue[] = new Array(Math.max(0, last - first));
  for (let k = first; k < last; k++) {
    values[k - first] = d.useSimpleBounds ? simpleBound(store, s, times[k]) : interpolatedBound(store, s, times[k], cfg);
  }
  if (last < times.length) return { statusCode: StatusCodes.Good, values, cursor: { kind: "atTime", next: last } };
  return { statusCode: values.length === 0 ? StatusCodes.GoodNoData : StatusCodes.Good, values };
}
