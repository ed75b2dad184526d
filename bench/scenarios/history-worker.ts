// The process the `history` scenario measures, pinned to the server core. One measurement per
// run, printed as one JSON line on stdout:
//   ingest SECONDS WARMUP RATE: a FieldgateServer with its history writer fed RATE samples/s by
//     a synthetic poller (1000 tags, a new DataValue per sample, every 10 ms), while the harness
//     reads from the server over TCP; prints "port N" first, then the figures.
//   bytes: bytes per stored sample on disk for Double and UInt16 tags (100 tags, 1 s samples).
//   raw: HistoryRead of 100,000 raw values through the service handler (the read worker reads and
//     encodes the values) and the response encoder; heap bytes are this thread's.
//   processed: Average over one day of 1 s samples (24 one-hour intervals, and one of a day).
// Module code runs only when this file is the main script (the scenario registry imports every
// module of this folder).
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadGatewayConfig } from "../../src/config/load.js";
import { DEFAULT_AGGREGATE_CONFIGURATION } from "../../src/history/aggregates.js";
import { readProcessed } from "../../src/history/read.js";
import { HistoryStore } from "../../src/history/store.js";
import { HistoryWriteThread } from "../../src/history/write-thread.js";
import { FieldgateServer } from "../../src/server/server.js";
import type { ServiceContext } from "../../src/services/service-table.js";
import { historyRead } from "../../src/services/history.js";
import { MemoryNamespace } from "../../src/address-space/memory-namespace.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { BuiltinType, IdType, VariantArrayType, numericNodeId, type NodeId } from "../../src/ua/builtins.js";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { encodeHistoryReadResponse, type HistoryReadRequest } from "../../src/ua/generated/types.js";

const T0 = Date.UTC(2024, 0, 1);
const TAGS = 1000;

function out(v: unknown): void {
  process.stdout.write(`${JSON.stringify(v)}\n`);
}

function cpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** Bytes this process handed to write() so far (/proc/self/io wchar), NaN without /proc. */
function bytesWritten(): number {
  try {
    const m = /^wchar: (\d+)$/m.exec(readFileSync("/proc/self/io", "utf8"));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "fieldgate-bench-history-"));
}

function tagId(k: number): NodeId {
  return { namespace: 1, idType: IdType.String, value: `dev.tag${k}` };
}

async function ingest(seconds: number, warmup: number, rate: number): Promise<void> {
  const dir = tempDir();
  const file = join(dir, "gateway.yaml");
  writeFileSync(file, "server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\nhistory:\n  queueSize: 1000000\n  retention:\n    maxSize: 0\n");
  const server = new FieldgateServer(loadGatewayConfig(file), { info() {}, warn: (m) => process.stderr.write(`${m}\n`) });
  await server.start();
  const w = server.history.writer;
  const ids = Array.from({ length: TAGS }, (_, k) => tagId(k));
  for (const id of ids) w.declare(id);
  out({ port: server.port });
  const perTick = Math.max(1, Math.round(rate / 100));
  let i = 0;
  let t = T0;
  // The poller: what a poll group hands the sink, one new DataValue per sample.
  const timer = setInterval(() => {
    for (let n = 0; n < perTick; n++, i++) {
      if (i % TAGS === 0) t += 1;
      w.record(ids[i % TAGS], { value: { dataType: BuiltinType.Double, arrayType: VariantArrayType.Scalar, value: Math.sin(i / 977) * 100 }, sourceTimestamp: t });
    }
  }, 10);
  // The writer's worker thread starts with the first series declared (a database without any):
  // the warm-up counts from its first flush, so the window measures the writer, not its start.
  const readyBy = Date.now() + 30_000;
  while (w.stats.flushes === 0 && Date.now() < readyBy) await new Promise((r) => setTimeout(r, 20));
  if (w.stats.flushes === 0) throw new Error("history ingest: the writer did not flush within 30 s of the first samples");
  await new Promise((r) => setTimeout(r, warmup * 1000));
  const s0 = { ...w.stats };
  const c0 = cpuMicros();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const window = (performance.now() - t0) / 1000;
  const cpu = cpuMicros() - c0;
  const s1 = { ...w.stats };
  clearInterval(timer);
  out({
    windowSeconds: window,
    offered: (s1.recorded + s1.filtered - s0.recorded - s0.filtered) / window,
    flushedPerSecond: (s1.flushed - s0.flushed) / window,
    droppedPerSecond: (s1.dropped - s0.dropped) / window,
    flushes: s1.flushes - s0.flushes,
    cpuShare: cpu / (window * 1e6),
    cpuMicrosPerSample: cpu / Math.max(1, s1.flushed - s0.flushed),
    queuedAtEnd: w.queued,
  });
  // Let the harness's client stop its Reads before the server goes away.
  await new Promise((r) => setTimeout(r, 1000));
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

async function bytes(): Promise<void> {
  const results: Record<string, number> = {};
  for (const kind of ["Double", "UInt16"] as const) {
    const dir = tempDir();
    const file = join(dir, "history.db");
    new HistoryStore(file).close();
    // compactCount 6000: staged samples move once a minute at 100 samples/s, as with the defaults.
    const w = new HistoryWriteThread({ file, flushInterval: 1000, flushCount: 100, queueSize: 1000, compactCount: 6000 });
    const ids = Array.from({ length: 100 }, (_, k) => tagId(k));
    for (const id of ids) w.declare(id);
    const seconds = 10_000;
    const type = kind === "Double" ? BuiltinType.Double : BuiltinType.UInt16;
    // One flush per second of 100 samples (one per tag), as a 1 s poll with a 1 s flush writes.
    // The worker thread's writes count: /proc/self/io is the whole process's.
    const written0 = bytesWritten();
    for (let s = 0; s < seconds; s++) {
      for (let k = 0; k < 100; k++) {
        const x = Math.sin(s / 60 + k) * 100;
        w.record(ids[k], { value: { dataType: type, arrayType: VariantArrayType.Scalar, value: kind === "Double" ? x : Math.round(x) + 1000 }, sourceTimestamp: T0 + s * 1000 });
      }
      w.tickNow(); // one flush, and a move of the staged samples when due
    }
    // The close moves what is staged and checkpoints the WAL into the file.
    await w.close();
    const written = bytesWritten() - written0;
    const store = new HistoryStore(file, { readonly: true });
    const used = store.usedBytes();
    store.close();
    const size = statSync(file).size;
    results[`${kind}UsedBytesPerSample`] = used / (seconds * 100);
    results[`${kind}FileBytesPerSample`] = size / (seconds * 100);
    // What the card sees: every flush appends each touched page to the WAL, checkpoints copy
    // them into the file.
    results[`${kind}WrittenBytesPerSample`] = written / (seconds * 100);
    rmSync(dir, { recursive: true, force: true });
  }
  out(results);
}

async function raw(): Promise<void> {
  const dir = tempDir();
  const file = join(dir, "gateway.yaml");
  writeFileSync(file, "server:\n  host: 127.0.0.1\n  port: 0\n  testNamespace: false\ndataDir: ./data\n");
  const server = new FieldgateServer(loadGatewayConfig(file), { info() {}, warn() {} });
  const ns = server.registry.register("urn:bench:history");
  const mem = new MemoryNamespace(ns, server.registry);
  server.registry.register("urn:bench:history", mem);
  mem.addVariable({ nodeId: "v", browseName: "v", parent: numericNodeId(85), dataType: BuiltinType.Double, accessLevel: AccessLevel.CurrentRead | AccessLevel.HistoryRead });
  const nodeId: NodeId = { namespace: ns, idType: IdType.String, value: "v" };
  const w = server.history.writer;
  w.declare(nodeId);
  const N = 100_000;
  for (let i = 0; i < N; i++) {
    w.record(nodeId, { value: { dataType: BuiltinType.Double, arrayType: VariantArrayType.Scalar, value: i * 0.25 }, sourceTimestamp: T0 + i * 1000 });
    if (i % 10_000 === 9999) w.flushAll();
  }
  w.flushAll();
  const session = {
    context: (now: number) => ({ sessionId: "bench", role: "viewer" as const, now }),
    historyContinuations: new Map<string, unknown>(),
  };
  const request: HistoryReadRequest = {
    requestHeader: { authenticationToken: numericNodeId(0), timestamp: Date.now(), requestHandle: 1, returnDiagnostics: 0, auditEntryId: undefined, timeoutHint: 0, additionalHeader: { typeId: numericNodeId(0), body: null } },
    historyReadDetails: {
      typeId: numericNodeId(ObjectIds.ReadRawModifiedDetails_Encoding_DefaultBinary),
      body: { isReadModified: false, startTime: T0, endTime: T0 + N * 1000, numValuesPerNode: 0, returnBounds: false },
    },
    timestampsToReturn: TimestampsToReturn.Source,
    releaseContinuationPoints: false,
    nodesToRead: [{ nodeId, indexRange: undefined, dataEncoding: { namespaceIndex: 0, name: "" }, continuationPoint: undefined }],
  };
  const writer = new BinaryWriter(Buffer.allocUnsafe(4 << 20), 64 << 20);
  const runs: { ms: number; heapBytes: number; values: number; responseBytes: number }[] = [];
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let k = 0; k < 6; k++) {
    gc?.();
    const h0 = process.memoryUsage().heapUsed;
    const t0 = performance.now();
    const ctx = { server, session, now: Date.now(), requestId: 1, channel: undefined } as unknown as ServiceContext;
    const res = (await historyRead.handle(ctx, request)) as unknown as { results: { historyData?: { body: Buffer } }[] };
    encodeHistoryReadResponse(writer.reset(), res as never);
    const ms = performance.now() - t0;
    const heapBytes = process.memoryUsage().heapUsed - h0;
    // The body is the encoded HistoryData: its first Int32 is the number of DataValues.
    runs.push({ ms, heapBytes, values: res.results[0].historyData!.body.readInt32LE(0), responseBytes: writer.pos });
  }
  // Never started (no listener): close the history directly.
  await server.history.close();
  rmSync(dir, { recursive: true, force: true });
  // The first run warms the JIT and SQLite's cache; report the median of the others.
  const rest = runs.slice(1).sort((a, b) => a.ms - b.ms);
  const mid = rest[Math.floor(rest.length / 2)];
  out({ ...mid, firstMs: runs[0].ms });
}

async function processed(): Promise<void> {
  const dir = tempDir();
  const file = join(dir, "history.db");
  new HistoryStore(file).close();
  const w = new HistoryWriteThread({ file, flushInterval: 1000, flushCount: 10_000, queueSize: 10_000 });
  const id = tagId(0);
  w.declare(id);
  const day = 86_400;
  for (let i = 0; i < day; i++) {
    w.record(id, { value: { dataType: BuiltinType.Double, arrayType: VariantArrayType.Scalar, value: Math.sin(i / 3600) * 50 + 50 }, sourceTimestamp: T0 + i * 1000 });
    if (i % 10_000 === 9999) w.flushAll();
  }
  w.flushAll();
  // A read-only connection, as the read worker's: it has the writer move the staged samples first.
  const store = new HistoryStore(file, { readonly: true, beforeRead: () => w.prepareReadSync() });
  const s = store.find(id)!;
  const cfg = DEFAULT_AGGREGATE_CONFIGURATION;
  const time = (interval: number): number => {
    const d = { startTime: T0, endTime: T0 + day * 1000, processingInterval: interval, aggregateType: [], aggregateConfiguration: cfg };
    const times: number[] = [];
    for (let k = 0; k < 5; k++) {
      const t0 = performance.now();
      readProcessed(store, s, d, ObjectIds.AggregateFunction_Average, cfg, 100_000);
      times.push(performance.now() - t0);
    }
    return times.sort((a, b) => a - b)[2];
  };
  const hourly = time(3_600_000);
  const daily = time(0);
  store.close();
  await w.close();
  rmSync(dir, { recursive: true, force: true });
  out({ hourlyMs: hourly, dailyMs: daily, samples: day });
}

async function main(argv: string[]): Promise<void> {
  const [mode, ...rest] = argv;
  switch (mode) {
    case "ingest":
      return ingest(Number(rest[0] ?? 10), Number(rest[1] ?? 2), Number(rest[2] ?? 300_000));
    case "bytes":
      return bytes();
    case "raw":
      return raw();
    case "processed":
      return processed();
    default:
      throw new Error(`history-worker: unknown mode ${String(mode)}`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
