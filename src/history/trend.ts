// One tag's history over a time range as points to draw (the status page's trend), read the way
// every HistoryRead is: as a job of the history read thread (read-thread.ts), off the event loop,
// queued and bounded like a client's, each node's values within the job's budget.
//
// First the raw values, at most `maxPoints` of them (one more tells whether there are more). A
// range that holds more is read again as processed values (Part 13 §5.4.3.5 Minimum and §5.4.3.6
// Maximum) over `maxPoints` / 2 intervals of equal length: the band a person sees of a tag that
// moves faster than the chart has pixels for, without sending every sample. Values that are not
// numbers, or not Good, are left out; their count is given.
import { BinaryReader } from "../ua/binary-reader.js";
import { decodeDataValue } from "../ua/builtin-codec.js";
import type { DataValue } from "../ua/builtins.js";
import { TimestampsToReturn } from "../ua/generated/enums.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { statusCodeName, StatusCodes } from "../ua/generated/status-codes.js";
import type { HistoryBackend } from "./history.js";
import type { HistoryReadJob, NodeReadResult } from "./read-job.js";

/** Most points one trend read returns: a chart of ~1,000 pixels wants no more. */
export const MAX_TREND_POINTS = 2000;

export interface TrendPoints {
  /** Source times (ms) and values, in time order. */
  readonly t: readonly number[];
  readonly v: readonly number[];
  /** With processed values: the intervals' length (ms), and each interval's minimum and maximum in v and `high`. */
  readonly interval?: number;
  readonly high?: readonly number[];
  /** Values left out: not numbers, or not Good. */
  readonly skipped: number;
}

function numberOf(dv: DataValue): number | undefined {
  if (dv.statusCode !== undefined && dv.statusCode >>> 30 !== 0) return undefined;
  const v = dv.value?.value;
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "bigint") return Number(v);
  return undefined;
}

/** The values of one node's HistoryData body (Part 11 §6.6.2), copied out of the read thread's memory. */
function decodeBody(result: NodeReadResult): DataValue[] {
  const body = result.historyData;
  if (body === undefined || body.length === 0) return [];
  const r = new BinaryReader(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  const n = r.readInt32();
  const out: DataValue[] = new Array(Math.max(0, n));
  for (let i = 0; i < n; i++) out[i] = decodeDataValue(r);
  return out;
}

function failed(result: NodeReadResult): boolean {
  return result.statusCode >>> 30 === 2;
}

/**
 * `key`'s values (its NodeId text: the history's series name) from `from` to `to` (ms), at most
 * `maxPoints` points. Rejects as a HistoryRead would (UaStatusError: BadServerTooBusy with too
 * many reads waiting, BadShutdown).
 */
export async function readTrend(history: HistoryBackend, key: string, from: number, to: number, maxPoints = MAX_TREND_POINTS): Promise<TrendPoints> {
  const points = Math.max(2, Math.min(maxPoints, MAX_TREND_POINTS, history.maxValuesPerRead - 1));
  const raw: HistoryReadJob = {
    details: { kind: "raw", body: { isReadModified: false, startTime: from, endTime: to, numValuesPerNode: points + 1, returnBounds: false } },
    timestampsToReturn: TimestampsToReturn.Source,
    budget: points + 1,
    nodes: [{ key }],
  };
  const [first] = await history.read(raw);
  if (first === undefined || failed(first)) throw new TrendError(first?.statusCode ?? StatusCodes.BadInternalError);
  const values = decodeBody(first);
  if (values.length <= points) {
    const t: number[] = [];
    const v: number[] = [];
    for (const dv of values) {
      const n = numberOf(dv);
      if (n === undefined || dv.sourceTimestamp === undefined) continue;
      t.push(dv.sourceTimestamp);
      v.push(n);
    }
    return { t, v, skipped: values.length - t.length };
  }
  const intervals = Math.max(1, Math.floor(points / 2));
  const interval = Math.max(1, Math.ceil((to - from) / intervals));
  const processed: HistoryReadJob = {
    details: {
      kind: "processed",
      body: { startTime: from, endTime: to, processingInterval: interval, aggregateConfiguration: { ...history.aggregateDefaults } },
      cfg: history.aggregateDefaults,
    },
    timestampsToReturn: TimestampsToReturn.Source,
    budget: 2 * intervals + 2,
    nodes: [
      { key, aggregateId: ObjectIds.AggregateFunction_Minimum },
      { key, aggregateId: ObjectIds.AggregateFunction_Maximum },
    ],
  };
  const results = await history.read(processed);
  const low = results[0];
  const high = results[1];
  if (low === undefined || high === undefined || failed(low) || failed(high)) throw new TrendError((low && failed(low) ? low : high)?.statusCode ?? StatusCodes.BadInternalError);
  // Decoded one after the other: the second body is a view of the same memory, valid this turn.
  const lows = decodeBody(low);
  const highs = decodeBody(high);
  const t: number[] = [];
  const v: number[] = [];
  const hi: number[] = [];
  let skipped = 0;
  for (let i = 0; i < lows.length && i < highs.length; i++) {
    const a = numberOf(lows[i]!);
    const b = numberOf(highs[i]!);
    // An interval without data (BadNoData) is a gap in the chart, not a point.
    if (a === undefined || b === undefined) {
      skipped++;
      continue;
    }
    t.push(from + i * interval);
    v.push(a);
    hi.push(b);
  }
  return { t, v, high: hi, interval, skipped };
}

/** A trend that could not be read: the history's StatusCode. */
export class TrendError extends Error {
  constructor(readonly statusCode: number) {
    super(`history read failed: ${statusCodeName(statusCode)}`);
    this.name = "TrendError";
  }
}
