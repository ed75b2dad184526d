// One HistoryRead's reading, after the service has checked the request, each node's access and
// its continuation point (services/history.ts): the nodes are read in order within one value
// budget (maxValuesPerRead over all of them), each node's values get its index range and the
// timestamps asked for, and are encoded as the HistoryData body of its result. The read worker
// (read-worker.ts) runs this; it needs nothing but a store.
import type { BinaryWriter } from "../ua/binary-writer.js";
import type { DataValue } from "../ua/builtins.js";
import { TimestampsToReturn } from "../ua/generated/enums.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { encodeHistoryData, type AggregateConfiguration, type ReadAtTimeDetails, type ReadProcessedDetails, type ReadRawModifiedDetails } from "../ua/generated/types.js";
import { applyIndexRange } from "../ua/numeric-range.js";
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
  /** The HistoryData body (Part 11 §6.6.2) of the values read, encoded; absent with no values. */
  readonly historyData?: Uint8Array;
  /** Values in historyData. */
  readonly values: number;
  /** Set when more values remain. */
  readonly cursor?: HistoryCursor;
}

/** Reads the job's nodes in order; `w` is a scratch writer (the bodies are copied out of it). */
export function runReadJob(store: HistoryStore, job: HistoryReadJob, w: BinaryWriter): NodeReadResult[] {
  let budget = job.budget;
  const out: NodeReadResult[] = new Array(job.nodes.length);
  for (let i = 0; i < job.nodes.length; i++) {
    const n = job.nodes[i];
    const s = store.findKey(n.key);
    if (s === undefined) {
      out[i] = { statusCode: StatusCodes.GoodNoData, historyData: encodeValues(w, []), values: 0 };
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
    out[i] = { statusCode: outcome.statusCode, historyData: encodeValues(w, values), values: values.length, cursor: outcome.cursor };
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

/** The HistoryData body of `values`, in memory of its own (a worker hands it over as it is). */
function encodeValues(w: BinaryWriter, values: DataValue[]): Uint8Array {
  w.reset();
  encodeHistoryData(w, { dataValues: values });
  const body = new Uint8Array(w.pos);
  body.set(w.buffer.subarray(0, w.pos));
  return body;
}
