// One HistoryRead's reading, after the service has checked the request, each node's access and
// its continuation point (services/history.ts): the nodes are read in order within one value
// budget (maxValuesPerRead over all of them), each node's values get its index range and the
// timestamps asked for, and are encoded as the HistoryData body of its result, all bodies one
// after the other in one writer. The read worker (read-worker.ts) runs this; it needs nothing but
// a store.
import type { BinaryWriter } from "../ua/binary-writer.js";
import type { DataValue } from "../ua/builtins.js";
import { TimestampsToReturn } from "../ua/generated/enums.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
// Types only: the generated structures' module would be most of the read worker's code, and of
// its memory, for the one encoder it needs, HistoryData's (encodeValues below).
import type { AggregateConfiguration, ReadAtTimeDetails, ReadProcessedDetails, ReadRawModifiedDetails } from "../ua/generated/types.js";
import { applyIndexRange } from "../ua/numeric-range.js";
import { encodeDataValue } from "../ua/builtin-codec.js";
import { continueRaw, readAtTime, readProcessed, readRaw, type HistoryCursor, type ReadOutcome } from "./read.js";
import type { HistoryStore, Series } from "./store.js";

export type ReadDetails =
  | { readonly kind: "raw"; readonly body: ReadRawModifiedDetails }
  | { readonly kind: "processed"; readonly body: ReadProcessedDetails; readonly cfg?: AggregateConfiguration }
  | { readonly kind: "atTime"; readonly body: ReadAtTimeDetails; readonly cfg: AggregateConfiguration };

export interface NodeRead {
  /** The node's NodeId in text form (its series' name). */
  readonly key: string;
  readonly indexRange?: string;
  /** Where the node's continuation point left off. */
  readonly cursor?: HistoryCursor;
  /** Processed reads: the node's aggregate function (a NodeId of namespace 0). */
  readonly aggregateId?: number;
  /** The node's result when it has a series: this status and no values (an aggregate refused). */
  readonly refused?: number;
}

export interface HistoryReadJob {
  readonly details: ReadDetails;
  readonly timestampsToReturn: TimestampsToReturn;
  /** Values for all the nodes together. */
  readonly budget: number;
  readonly nodes: readonly NodeRead[];
}

export interface NodeReadResult {
  readonly statusCode: number;
  /**
   * The HistoryData body (Part 11 §6.6.2) of the values read, encoded; absent with no values.
   * From the read worker: a view of memory it shares, valid until its next job starts (the
   * service copies it into the response in the same turn).
   */
  readonly historyData?: Uint8Array;
  /** Values in historyData. */
  readonly values: number;
  /** Set when more values remain. */
  readonly cursor?: HistoryCursor;
}

/** A NodeReadResult whose body is [start, end) of the bytes the job was encoded into. */
export interface EncodedNodeResult extends Omit<NodeReadResult, "historyData"> {
  readonly body?: readonly [number, number];
}

/** The results with their bodies as views of `bytes` (what the job's writer held). */
export function withBodies(results: readonly EncodedNodeResult[], bytes: Uint8Array): NodeReadResult[] {
  return results.map((r) => ({ statusCode: r.statusCode, values: r.values, cursor: r.cursor, historyData: r.body && bytes.subarray(r.body[0], r.body[1]) }));
}

/** Reads the job's nodes in order, encoding their bodies one after the other into `w` (reset first). */
export function runReadJob(store: HistoryStore, job: HistoryReadJob, w: BinaryWriter): EncodedNodeResult[] {
  let budget = job.budget;
  w.reset();
  const out: EncodedNodeResult[] = new Array(job.nodes.length);
  for (let i = 0; i < job.nodes.length; i++) {
    const n = job.nodes[i];
    const s = store.findKey(n.key);
    if (s === undefined) {
      out[i] = { statusCode: StatusCodes.GoodNoData, body: encodeValues(w, []), values: 0 };
      continue;
    }
    if (n.refused !== undefined) {
      out[i] = { statusCode: n.refused, values: 0 };
      continue;
    }
    const outcome = readNode(store, s, job.details, n, Math.max(1, budget));
    budget -= outcome.values.length;
    let values = outcome.values;
    if (n.indexRange !== undefined && n.indexRange !== "") values = values.map((v) => applyIndexRange(v, n.indexRange!));
    stamp(values, job.timestampsToReturn);
    out[i] = { statusCode: outcome.statusCode, body: encodeValues(w, values), values: values.length, cursor: outcome.cursor };
  }
  return out;
}

function readNode(store: HistoryStore, s: Series, d: ReadDetails, n: NodeRead, room: number): ReadOutcome {
  const cursor = n.cursor;
  switch (d.kind) {
    case "raw":
      return cursor?.kind === "raw" ? continueRaw(store, s, cursor, room) : readRaw(store, s, d.body, room);
    case "processed":
      return readProcessed(store, s, d.body, n.aggregateId!, d.cfg!, room, cursor?.kind === "processed" ? cursor : undefined);
    case "atTime":
      return readAtTime(store, s, d.body, d.cfg, room, cursor?.kind === "atTime" ? cursor : undefined);
  }
}

/** TimestampsToReturn (Part 4 §7.40) on stored samples, which carry their source timestamp. */
function stamp(values: DataValue[], mode: TimestampsToReturn): void {
  if (mode === TimestampsToReturn.Source) return;
  for (let i = 0; i < values.length; i++) {
    const dv = values[i];
    // The gateway stamps samples as it polls them: the server timestamp is the source timestamp.
    if (mode === TimestampsToReturn.Both) dv.serverTimestamp = dv.sourceTimestamp;
    else values[i] = { value: dv.value, statusCode: dv.statusCode, serverTimestamp: dv.sourceTimestamp };
  }
}

/**
 * Appends the HistoryData body of `values` (Part 11 §6.6.2: its one field, dataValues, an array
 * of DataValue: Int32 length, then each; Part 6 §5.2.5); returns where it is.
 */
function encodeValues(w: BinaryWriter, values: DataValue[]): [number, number] {
  const start = w.pos;
  w.writeInt32(values.length);
  for (let i = 0; i < values.length; i++) encodeDataValue(w, values[i]);
  return [start, w.pos];
}
