// HistoryRead in a loop, as a load any scenario can run beside its own (issue 13: sampling keeps
// its deadlines while a client reads 100,000 history values in a loop):
//
//   runHistoryReadLoad  one session reads the raw values of one node over [startTime, endTime),
//                       `valuesPerRead` per request, one request after the other for the window;
//                       a page that leaves a continuation point has it released at once. In the
//                       load process: runModuleLoad(HISTORY_READ_LOAD, "runHistoryReadLoad", ...).
//   fillHistory         writes N samples of one node straight into a dataDir's history database
//                       before the server starts (the gateway's writer, batches of 50,000), so
//                       a server has 100,000 stored values without waiting for them.
//
// Responses are parsed as far as the counts (status, continuation point, number of DataValues);
// every `verifyEvery`th is decoded in full and its values checked (count, Good, timestamps
// rising inside the range).
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { decodeNodeId } from "../../src/ua/builtin-codec.js";
import { BuiltinType, VariantArrayType, type NodeId } from "../../src/ua/builtins.js";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { statusCodeName } from "../../src/ua/generated/status-codes.js";
import { decodeHistoryReadResponse, decodeResponseHeader, encodeHistoryReadRequest, type HistoryData, type HistoryReadRequest } from "../../src/ua/generated/types.js";
import { HistoryStore } from "../../src/history/store.js";
import { HistoryWriteThread } from "../../src/history/write-thread.js";
import { parseNodeId } from "../../src/ua/node-id.js";
import type { UaClientChannel } from "../client/channel.js";
import { Histogram, type HistogramSnapshot } from "../client/histogram.js";
import { resolveNodes } from "../client/nodes.js";
import { cpuTimeMicros, memoryOf } from "../harness/proc.js";
import { markWindowEdge } from "../harness/window.js";
import { closeAll, openSession, type SessionTarget, type WindowParams } from "./service-load.js";

/** This module's URL in dist/, for runModuleLoad. */
export const HISTORY_READ_LOAD = new URL("./history-read-load.js", import.meta.url).href;

/**
 * The stored node of the bench's history cases (the loop case's server, and the fieldgate
 * target's with ScenarioNodes.history): a Double variable of a namespace of its own, added to
 * the server from outside, whose values fillHistory stored.
 */
export const BENCH_HISTORY_URI = "urn:fieldgate:bench-history";
export const BENCH_HISTORY_NODE = "bench.history";
/** As a load client names it (the namespace index is the server's to give). */
export const BENCH_HISTORY_NODE_TEXT = `nsu=${BENCH_HISTORY_URI};s=${BENCH_HISTORY_NODE}`;

export interface HistoryReadLoadParams extends SessionTarget, WindowParams {
  /** The historized node, as NodeId text (`ns=1;s=plc0.tag0`, `nsu=<uri>;s=...`). */
  node: string;
  /** The range read, ms since 1970: [startTime, endTime). */
  startTime: number;
  endTime: number;
  /** numValuesPerNode of each request (default 100,000). */
  valuesPerRead?: number;
  /** Decode every Nth response in full (default 16; 0: never). */
  verifyEvery?: number;
}

export interface HistoryReadLoadResult {
  params: HistoryReadLoadParams;
  windowSeconds: number;
  /** HistoryReads answered inside the window (continuation releases not counted). */
  reads: number;
  /** DataValues they returned. */
  values: number;
  errors: number;
  errorsTotal: number;
  errorKinds: Record<string, number>;
  channelFaults: number;
  verifiedResponses: number;
  /** Per HistoryRead, from sending to the whole response, µs. */
  latencyMicros: HistogramSnapshot;
  server: { cpuMicros: number; rssBytesAtEnd: number; peakRssBytes: number } | null;
  loadCpuMicros: number;
}

interface Page {
  status: number;
  values: number;
  continuationPoint: Buffer | undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The HistoryReadResponse of one node, read as far as the counts (Part 4 §5.10.3, Part 11 §6.6). */
function parsePage(r: BinaryReader): Page {
  const header = decodeResponseHeader(r);
  if (header.serviceResult >>> 30 !== 0) return { status: header.serviceResult, values: 0, continuationPoint: undefined };
  const results = r.readInt32();
  if (results !== 1) throw new Error(`HistoryRead returned ${results} results for one node`);
  const status = r.readUInt32();
  const cp = r.readByteString() ?? undefined;
  const typeId = decodeNodeId(r);
  const encoding = r.readByte();
  let values = 0;
  if (encoding === 0x01) {
    const length = r.readInt32();
    const end = r.pos + length;
    if (typeId.value === ObjectIds.HistoryData_Encoding_DefaultBinary && length >= 4) values = Math.max(0, r.readInt32());
    r.pos = end;
  }
  // diagnosticInfos: an empty array, or skipped with the rest of the body.
  r.pos = r.end;
  return { status, values, continuationPoint: cp === undefined ? undefined : Buffer.from(cp) };
}

/** A full decode: `expected` values, Good, timestamps rising inside [start, end). */
function verifyPage(start: number, end: number, expected: number): (r: BinaryReader) => Page {
  return (r) => {
    const res = decodeHistoryReadResponse(r);
    const result = res.results?.[0];
    if (result === undefined) throw new Error("HistoryRead returned no result");
    const dvs = (result.historyData?.body as HistoryData | null)?.dataValues ?? [];
    if (dvs.length !== expected && expected > 0) throw new Error(`HistoryRead returned ${dvs.length} values, the counting parse ${expected}`);
    let last = -Infinity;
    for (const dv of dvs) {
      const t = dv.sourceTimestamp ?? NaN;
      if (!(t >= start && t < end && t > last)) throw new Error(`HistoryRead value at ${t} is out of order or outside the range`);
      if ((dv.statusCode ?? 0) >>> 30 !== 0) throw new Error(`HistoryRead value ${statusCodeName(dv.statusCode!)}`);
      last = t;
    }
    return { status: result.statusCode, values: dvs.length, continuationPoint: result.continuationPoint ?? undefined };
  };
}

function request(ch: UaClientChannel, nodeId: NodeId, p: HistoryReadLoadParams, continuationPoint?: Buffer): HistoryReadRequest {
  return {
    requestHeader: ch.requestHeader(30_000),
    historyReadDetails: {
      typeId: { namespace: 0, idType: 0, value: ObjectIds.ReadRawModifiedDetails_Encoding_DefaultBinary },
      body: { isReadModified: false, startTime: p.startTime, endTime: p.endTime, numValuesPerNode: p.valuesPerRead ?? 100_000, returnBounds: false },
    },
    timestampsToReturn: TimestampsToReturn.Source,
    releaseContinuationPoints: continuationPoint !== undefined,
    nodesToRead: [{ nodeId, indexRange: undefined, dataEncoding: { namespaceIndex: 0, name: "" }, continuationPoint }],
  };
}

async function historyRead(ch: UaClientChannel, req: HistoryReadRequest, parse: (r: BinaryReader) => Page): Promise<Page> {
  return ch.call("HistoryRead", ObjectIds.HistoryReadRequest_Encoding_DefaultBinary, encodeHistoryReadRequest, req, ObjectIds.HistoryReadResponse_Encoding_DefaultBinary, parse);
}

export async function runHistoryReadLoad(p: HistoryReadLoadParams): Promise<HistoryReadLoadResult> {
  const channels: UaClientChannel[] = [];
  try {
    const ch = await openSession(p, "bench-history-read", (p.warmupSeconds + p.durationSeconds) * 1000);
    channels.push(ch);
    const [nodeId] = await resolveNodes(ch, [p.node]);
    const verifyEvery = p.verifyEvery ?? 16;
    // One full read first: the node must answer with values.
    const first = await historyRead(ch, request(ch, nodeId, p), verifyPage(p.startTime, p.endTime, 0));
    if (first.status >>> 30 !== 0 || first.values === 0) throw new Error(`HistoryRead of ${p.node}: ${statusCodeName(first.status)}, ${first.values} values`);
    if (first.continuationPoint) await historyRead(ch, request(ch, nodeId, p, first.continuationPoint), parsePage);

    const latency = new Histogram();
    const errorKinds: Record<string, number> = {};
    let recording = false;
    let running = true;
    let reads = 0;
    let values = 0;
    let errors = 0;
    let errorsTotal = 0;
    let verified = 0;
    let n = 0;
    const loop = (async () => {
      while (running && !ch.closed) {
        const verify = verifyEvery > 0 && ++n % verifyEvery === 0;
        const t0 = performance.now();
        try {
          const page = await historyRead(ch, request(ch, nodeId, p), verify ? verifyPage(p.startTime, p.endTime, 0) : parsePage);
          if (page.status >>> 30 !== 0) throw new Error(statusCodeName(page.status));
          // GoodNoData included: the values are gone (retention), or the range misses them.
          if (page.values === 0) throw new Error(`no values (${statusCodeName(page.status)})`);
          if (recording) {
            latency.record(Math.round((performance.now() - t0) * 1000));
            reads++;
            values += page.values;
            if (verify) verified++;
          }
          if (page.continuationPoint) await historyRead(ch, request(ch, nodeId, p, page.continuationPoint), parsePage);
        } catch (err) {
          errorsTotal++;
          if (recording) errors++;
          const kind = (err as Error).message.slice(0, 80);
          errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
          if (ch.closed) return;
        }
      }
    })();
    await sleep(p.warmupSeconds * 1000);
    recording = true;
    const t0 = performance.now();
    const serverCpu0 = p.serverPid === undefined ? NaN : cpuTimeMicros(p.serverPid);
    const loadCpu0 = process.cpuUsage();
    markWindowEdge(p.serverPid, p.serverDiagnostics);
    await sleep(p.durationSeconds * 1000);
    recording = false;
    const t1 = performance.now();
    const serverCpu1 = p.serverPid === undefined ? NaN : cpuTimeMicros(p.serverPid);
    const loadCpu = process.cpuUsage(loadCpu0);
    markWindowEdge(p.serverPid, p.serverDiagnostics);
    const memory = p.serverPid === undefined ? null : memoryOf(p.serverPid);
    running = false;
    await Promise.race([loop, sleep(p.drainTimeoutMs ?? 10_000)]);
    return {
      params: p,
      windowSeconds: (t1 - t0) / 1000,
      reads,
      values,
      errors,
      errorsTotal,
      errorKinds,
      channelFaults: ch.closed ? 1 : 0,
      verifiedResponses: verified,
      latencyMicros: latency.snapshot(),
      server: memory === null ? null : { cpuMicros: serverCpu1 - serverCpu0, rssBytesAtEnd: memory.rss, peakRssBytes: memory.peakRss },
      loadCpuMicros: loadCpu.user + loadCpu.system,
    };
  } finally {
    await closeAll(channels);
  }
}

export interface FillHistoryParams {
  /** The server's dataDir (the database is dataDir/history.db) ... */
  dataDir: string;
  /** ... unless the config names its own `history.database`. */
  database?: string;
  /** The node as the server will name it, NodeId text with its namespace index (`ns=1;s=plc0.tag0`). */
  node: string;
  samples: number;
  /** First sample's source timestamp, ms since 1970, and the time between samples. */
  startTime: number;
  intervalMs: number;
  /** Stored as Doubles (a sine) or UInt16 values (default Double). */
  type?: "Double" | "UInt16";
}

/** Writes the samples with the gateway's writer and closes it; returns the range they cover. */
export async function fillHistory(p: FillHistoryParams): Promise<{ file: string; startTime: number; endTime: number }> {
  const file = p.database ?? join(p.dataDir, "history.db");
  mkdirSync(dirname(file), { recursive: true });
  new HistoryStore(file).close();
  const batch = 50_000;
  const writer = new HistoryWriteThread({ file, flushInterval: 60_000, flushCount: batch, queueSize: batch, compactCount: 1e9, compactInterval: 1e12 });
  const nodeId = parseNodeId(p.node);
  writer.declare(nodeId);
  const dataType = p.type === "UInt16" ? BuiltinType.UInt16 : BuiltinType.Double;
  try {
    for (let i = 0; i < p.samples; i++) {
      const x = Math.sin(i / 1000) * 100;
      writer.record(nodeId, { value: { dataType, arrayType: VariantArrayType.Scalar, value: dataType === BuiltinType.UInt16 ? Math.round(x) + 1000 : x }, sourceTimestamp: p.startTime + i * p.intervalMs });
      if (writer.queued === batch) writer.flushAll();
    }
    writer.flushAll();
  } finally {
    // Moves the staged samples to their table before it ends.
    await writer.close();
  }
  if (writer.stats.flushed !== p.samples) throw new Error(`fillHistory: ${writer.stats.flushed} of ${p.samples} samples stored`);
  return { file, startTime: p.startTime, endTime: p.startTime + p.samples * p.intervalMs };
}
