// The history's worker threads (src/worker-link.ts): HistoryRead on the read worker returns
// byte for byte what the same reading on the calling thread returns, on generated data of every
// stored type, through the service (continuation points, budgets, index ranges, timestamps,
// aggregates, bounds); the writer thread starts its worker when there is something to write and
// keeps a batch in its ring until the worker has committed it (durability.test.ts kills it);
// the reader's queue is bounded, abandoned and stopped requests are refused, a worker that runs
// out of heap fails its request only. Every test ends the threads it starts.
// The workers run the compiled code in dist/ (`npm test` builds it first).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { MemoryNamespace } from "../../src/address-space/memory-namespace.js";
import { NamespaceRegistry } from "../../src/address-space/namespace-registry.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { loadGatewayConfig } from "../../src/config/load.js";
import { DEFAULT_AGGREGATE_CONFIGURATION } from "../../src/history/aggregates.js";
import { GatewayHistory, type HistoryBackend } from "../../src/history/history.js";
import { runReadJob, withBodies, type HistoryReadJob } from "../../src/history/read-job.js";
import { HistoryReadThread } from "../../src/history/read-thread.js";
import { HistoryStore, TIME_MAX, TIME_MIN } from "../../src/history/store.js";
import { HistoryWriteThread } from "../../src/history/write-thread.js";
import type { ServerCore } from "../../src/services/server-core.js";
import type { ServiceContext } from "../../src/services/service-table.js";
import type { Session } from "../../src/sessions/session.js";
import { historyRead } from "../../src/services/history.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { BuiltinType, DATETIME_MIN, IdType, VariantArrayType, numericNodeId, scalar, type DataValue, type NodeId, type Variant } from "../../src/ua/builtins.js";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { encodeHistoryReadResponse, type AggregateConfiguration, type HistoryReadRequest, type HistoryReadResponse } from "../../src/ua/generated/types.js";
import { missingBuild, requirePeers, skipWithout } from "../helpers/built.js";
import { T0, dbl, node } from "./helpers.js";

const unbuilt = missingBuild("src/history/write-worker.js", "src/history/read-worker.js");

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-history-threads-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Resolves once `cond` holds, polled every 20 ms; fails after `timeoutMs`. */
async function until(cond: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A GatewayHistory from a `history:` section, in a temp dataDir; closed after the test. */
function gatewayHistory(historyYaml: string): GatewayHistory {
  const dir = tempDir();
  writeFileSync(join(dir, "gateway.yaml"), `dataDir: ./data\nhistory:\n${historyYaml}`);
  const config = loadGatewayConfig(join(dir, "gateway.yaml"));
  const h = new GatewayHistory(config.history, config.dataDir, () => undefined);
  cleanups.push(() => h.close());
  return h;
}

// ---------------------------------------------------------------------------------------------
// Generated history: every stored form (numbers, Int64/UInt64, Booleans, Floats, strings, arrays,
// NaN, a value of another type than the series', Bad samples without a value, two samples in
// one millisecond, sub-millisecond stamps), at uneven times.

const TAGS: Record<string, BuiltinType> = {
  dbl: BuiltinType.Double,
  flt: BuiltinType.Float,
  i32: BuiltinType.Int32,
  u16: BuiltinType.UInt16,
  i64: BuiltinType.Int64,
  u64: BuiltinType.UInt64,
  bool: BuiltinType.Boolean,
  str: BuiltinType.String,
  arr: BuiltinType.Double,
  empty: BuiltinType.Double,
};
const SAMPLES = 1500;

function generated(record: (name: string, dv: DataValue) => void, flush: () => void): void {
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  for (let i = 0; i < SAMPLES; i++) {
    const t = T0 + i * 1000 + (rnd() < 0.1 ? 500 : 0) + (rnd() < 0.02 ? 0.25 : 0);
    const bad = rnd() < 0.05;
    const statusCode = bad ? StatusCodes.BadCommunicationError : rnd() < 0.05 ? StatusCodes.UncertainLastUsableValue : StatusCodes.Good;
    const rec = (name: string, value: Variant) => record(name, bad && rnd() < 0.5 ? { statusCode, sourceTimestamp: t } : { value, statusCode, sourceTimestamp: t });
    rec("dbl", scalar(BuiltinType.Double, rnd() < 0.02 ? NaN : Math.sin(i / 50) * 100 + rnd()));
    rec("flt", scalar(BuiltinType.Float, Math.fround(rnd() * 10)));
    rec("i32", rnd() < 0.03 ? scalar(BuiltinType.Double, 2.5) : scalar(BuiltinType.Int32, Math.round(rnd() * 2000 - 1000)));
    rec("u16", scalar(BuiltinType.UInt16, i % 65536));
    rec("i64", scalar(BuiltinType.Int64, BigInt(i) * 12345678901n - 9n));
    rec("u64", scalar(BuiltinType.UInt64, 2n ** 64n - 1n - BigInt(i)));
    rec("bool", scalar(BuiltinType.Boolean, rnd() < 0.5));
    rec("str", scalar(BuiltinType.String, `s${i}`));
    rec("arr", { dataType: BuiltinType.Double, arrayType: VariantArrayType.Array, value: [i, i + 0.5, -i] });
    // Same millisecond: the later sample is kept.
    if (i % 97 === 0) rec("dbl", scalar(BuiltinType.Double, -1));
    if (i % 400 === 399) flush();
  }
  flush();
}

// ---------------------------------------------------------------------------------------------
// The service against a backend, with continuation points labelled so that two runs compare.

interface Side {
  readonly ctx: ServiceContext;
  readonly session: { readonly historyContinuations: Map<string, unknown> };
}

function side(registry: NamespaceRegistry, backend: HistoryBackend): Side {
  const session = { closed: false, context: (now: number) => ({ sessionId: "t", role: "viewer" as const, now }), historyContinuations: new Map<string, unknown>() };
  const server = { registry, history: backend } as unknown as ServerCore;
  return { ctx: { server, session: session as unknown as Session, now: T0, requestId: 1, channel: undefined } as unknown as ServiceContext, session };
}

type NodeSpec = string | { readonly node: string; readonly indexRange?: string; readonly cp?: Buffer };

class Run {
  readonly responses: string[] = [];
  private readonly labels = new Map<string, number>();
  private readonly w = new BinaryWriter(Buffer.allocUnsafe(1 << 16), 64 << 20);

  constructor(
    private readonly s: Side,
    private readonly ns: number,
  ) {}

  /** One HistoryRead; returns the continuation points of its results. */
  async call(detailsId: number, details: object, nodes: readonly NodeSpec[], ttr = TimestampsToReturn.Source, release = false): Promise<(Buffer | undefined)[]> {
    const req: HistoryReadRequest = {
      requestHeader: { authenticationToken: numericNodeId(0), timestamp: 0, requestHandle: 1, returnDiagnostics: 0, auditEntryId: undefined, timeoutHint: 0, additionalHeader: { typeId: numericNodeId(0), body: null } },
      historyReadDetails: { typeId: numericNodeId(detailsId), body: details },
      timestampsToReturn: ttr,
      releaseContinuationPoints: release,
      nodesToRead: nodes.map((n) => {
        const o = typeof n === "string" ? { node: n } : n;
        return { nodeId: { namespace: this.ns, idType: IdType.String, value: o.node }, indexRange: o.indexRange, dataEncoding: { namespaceIndex: 0, name: "" }, continuationPoint: o.cp };
      }),
    };
    let res: HistoryReadResponse;
    try {
      res = (await historyRead.handle(this.s.ctx, req)) as HistoryReadResponse;
    } catch (err) {
      this.responses.push(`fault ${(err as { statusCode?: number }).statusCode}`);
      return [];
    }
    const label = (b: Buffer): Buffer => {
      const k = b.toString("base64");
      if (!this.labels.has(k)) this.labels.set(k, this.labels.size);
      return Buffer.from([this.labels.get(k)!]);
    };
    const results = res.results!.map((r) => ({ ...r, continuationPoint: r.continuationPoint && label(r.continuationPoint) }));
    encodeHistoryReadResponse(this.w.reset(), { ...res, results });
    this.responses.push(this.w.buffer.subarray(0, this.w.pos).toString("hex"));
    // The bodies were lent until the response is out (the dispatcher tells the service so).
    historyRead.sent?.(res, true);
    return res.results!.map((r) => r.continuationPoint);
  }

  /** A read and its continuations (of the nodes that got a continuation point) to the end. */
  async follow(detailsId: number, details: object, nodes: readonly NodeSpec[], ttr = TimestampsToReturn.Source): Promise<void> {
    let cps = await this.call(detailsId, details, nodes, ttr);
    for (let k = 0; cps.some((c) => c !== undefined) && k < 100; k++) {
      nodes = nodes.flatMap((n, j) => (cps[j] ? [{ ...(typeof n === "string" ? { node: n } : n), cp: cps[j] }] : []));
      cps = await this.call(detailsId, details, nodes, ttr);
    }
  }
}

const RAW = ObjectIds.ReadRawModifiedDetails_Encoding_DefaultBinary;
const PROCESSED = ObjectIds.ReadProcessedDetails_Encoding_DefaultBinary;
const AT_TIME = ObjectIds.ReadAtTimeDetails_Encoding_DefaultBinary;
const raw = (startTime: number, endTime: number, numValuesPerNode: number, returnBounds: boolean) => ({ isReadModified: false, startTime, endTime, numValuesPerNode, returnBounds });
const AGGREGATES = [
  ObjectIds.AggregateFunction_Average,
  ObjectIds.AggregateFunction_Minimum,
  ObjectIds.AggregateFunction_Maximum,
  ObjectIds.AggregateFunction_Count,
  ObjectIds.AggregateFunction_Start,
  ObjectIds.AggregateFunction_End,
  ObjectIds.AggregateFunction_Interpolative,
  ObjectIds.AggregateFunction_Total, // not supported
];

/** The same sequence of requests, whatever backend answers them. */
async function requests(run: Run, session: { readonly historyContinuations: Map<string, unknown> }): Promise<void> {
  const names = Object.keys(TAGS);
  const end = T0 + SAMPLES * 1000;
  for (const n of [...names, "nohist", "missing"]) {
    for (const [s, e, num, b] of [
      [T0, end, 0, false],
      [T0 + 10_500, T0 + 200_250, 37, true],
      [T0 + 200_250, T0 + 10_500, 41, true],
      [T0 + 5000, DATETIME_MIN, 20, true],
      [DATETIME_MIN, T0 + 5000, 20, true],
      [T0 + 7000, T0 + 7000, 0, true],
      [T0 - 5000, T0 - 1000, 0, true],
      [end - 10_000, end + 1_000_000, 0, true],
    ] as const) {
      await run.follow(RAW, raw(s, e, num, b), [n]);
    }
    session.historyContinuations.clear();
  }
  // Nodes sharing the value budget and the continuation points; timestamps; index ranges.
  for (const ttr of [TimestampsToReturn.Source, TimestampsToReturn.Server, TimestampsToReturn.Both]) {
    await run.follow(RAW, raw(T0, end, 0, true), ["dbl", "i32", { node: "arr", indexRange: "1" }, "str", "bool", "u64"], ttr);
    session.historyContinuations.clear();
  }
  await run.call(RAW, raw(T0, T0 + 100_000, 0, false), [{ node: "arr", indexRange: "5:1" }, { node: "dbl", indexRange: "0" }]);
  // The continuation point limit (4): points of later nodes of a request count until their turn.
  const four = await run.call(RAW, raw(T0, end, 10, false), ["dbl", "i32", "flt", "u16"]);
  await run.call(RAW, raw(T0, end, 10, false), ["i64", { node: "dbl", cp: four[0] }, "u64", { node: "i32", cp: four[1] }, "bool", { node: "flt", cp: four[2] }]);
  await run.call(RAW, raw(T0, end, 10, false), [{ node: "i32", cp: four[3] }]); // another node's point
  await run.call(RAW, raw(T0, end, 10, false), [{ node: "u16", cp: four[3] }, "dbl"], TimestampsToReturn.Source, true); // released
  await run.call(RAW, raw(T0, end, 10, false), [{ node: "u16", cp: four[3] }]); // stale
  session.historyContinuations.clear();
  const configs: AggregateConfiguration[] = [
    DEFAULT_AGGREGATE_CONFIGURATION,
    { useServerCapabilitiesDefaults: false, treatUncertainAsBad: true, percentDataBad: 20, percentDataGood: 80, useSlopedExtrapolation: true },
    { useServerCapabilitiesDefaults: false, treatUncertainAsBad: false, percentDataBad: 10, percentDataGood: 50, useSlopedExtrapolation: false }, // rejected
  ];
  for (const cfg of configs) {
    for (const [s, e, interval] of [
      [T0, end, 60_000],
      [end, T0, 100_000],
      [T0 + 1234, T0 + 99_999, 0],
      [T0 - 50_000, T0 + 50_000, 7_000],
    ] as const) {
      const nodes = [...names, "missing", "nohist"];
      const aggregateType = nodes.map((_, j) => numericNodeId(AGGREGATES[j % AGGREGATES.length]));
      await run.follow(PROCESSED, { startTime: s, endTime: e, processingInterval: interval, aggregateType, aggregateConfiguration: cfg }, nodes);
      session.historyContinuations.clear();
    }
  }
  for (const useSimpleBounds of [true, false]) {
    const reqTimes = Array.from({ length: 300 }, (_, k) => T0 - 3000 + k * 5000.5);
    await run.follow(AT_TIME, { reqTimes, useSimpleBounds }, ["dbl", "flt", "i64", "bool", "str", "missing"]);
    await run.call(AT_TIME, { reqTimes: [], useSimpleBounds }, ["dbl"]);
    session.historyContinuations.clear();
  }
  await run.call(RAW, raw(DATETIME_MIN, DATETIME_MIN, 0, false), ["dbl"]);
  await run.call(RAW, { ...raw(T0, T0 + 1000, 0, false), isReadModified: true }, ["dbl"]);
}

function addressSpace(): { registry: NamespaceRegistry; ns: number } {
  const registry = new NamespaceRegistry();
  const ns = registry.register("urn:fieldgate:threads-test");
  const mem = new MemoryNamespace(ns, registry);
  registry.register("urn:fieldgate:threads-test", mem);
  const historized = AccessLevel.CurrentRead | AccessLevel.HistoryRead;
  for (const [name, type] of Object.entries(TAGS)) {
    mem.addVariable({ nodeId: name, browseName: name, dataType: type, accessLevel: historized, valueRank: name === "arr" ? 1 : -1 });
  }
  mem.addVariable({ nodeId: "nohist", browseName: "nohist", dataType: BuiltinType.Double, accessLevel: AccessLevel.CurrentRead });
  return { registry, ns };
}

/** Rows of every generated tag, as a store holds them. */
function rows(store: HistoryStore, ns: number): Record<string, DataValue[]> {
  const out: Record<string, DataValue[]> = {};
  for (const name of Object.keys(TAGS)) {
    const s = store.find({ namespace: ns, idType: IdType.String, value: name });
    out[name] = s ? store.read(s, TIME_MIN, TIME_MAX, true, 1_000_000) : [];
  }
  return out;
}

describe.skipIf(skipWithout(unbuilt))("HistoryRead on the read worker", () => {
  beforeAll(() => requirePeers(unbuilt));

  it("returns byte for byte what the same read on this thread returns, on generated data", async () => {
    const { registry, ns } = addressSpace();
    const id = (name: string): NodeId => ({ namespace: ns, idType: IdType.String, value: name });
    const limits = "  maxValuesPerRead: 700\n  maxContinuationPoints: 4\n  flushCount: 500\n";
    const threaded = gatewayHistory(limits);
    for (const name of Object.keys(TAGS)) threaded.writer.declare(id(name));
    let recorded = 0;
    generated(
      (name, dv) => {
        recorded++;
        threaded.writer.record(id(name), dv);
      },
      () => threaded.writer.flushAll(),
    );
    // The same database read on this thread: runReadJob on a read-only connection.
    const scratch = new BinaryWriter(Buffer.allocUnsafe(1 << 16), 64 << 20);
    const inThread: HistoryBackend = {
      maxNodesPerRead: threaded.maxNodesPerRead,
      maxContinuationPoints: threaded.maxContinuationPoints,
      maxValuesPerRead: threaded.maxValuesPerRead,
      aggregateDefaults: threaded.aggregateDefaults,
      read: async (job: HistoryReadJob) => withBodies(runReadJob(threaded.store, job, scratch), scratch.buffer),
    };

    const a = side(registry, threaded);
    const b = side(registry, inThread);
    const ra = new Run(a, ns);
    const rb = new Run(b, ns);
    await requests(ra, a.session);
    await requests(rb, b.session);
    expect(ra.responses.length).toBeGreaterThan(200);
    expect(ra.responses.length).toBe(rb.responses.length);
    for (let i = 0; i < ra.responses.length; i++) expect(ra.responses[i], `response ${i}`).toBe(rb.responses[i]);
    // Some of everything was answered: values, continuation points, refusals.
    expect(ra.responses.some((r) => r.length > 10_000)).toBe(true);
    // Every generated sample was stored (two in one millisecond keep the later one).
    const stored = rows(threaded.store, ns);
    expect(stored.dbl.length).toBe(SAMPLES);
    expect(threaded.writer.stats).toMatchObject({ recorded, flushed: recorded, dropped: 0 });
    expect(threaded.reader.threads + threaded.writer.threads).toBe(2);
    await threaded.close();
    expect(threaded.reader.threads + threaded.writer.threads).toBe(0);
  }, 120_000);

  it("bounds its queue (BadServerTooBusy), drops requests whose client has gone, refuses at stop (BadShutdown)", async () => {
    const h = gatewayHistory("  maxValuesPerRead: 100000\n");
    h.writer.declare(node("t"));
    for (let i = 0; i < 50_000; i++) h.writer.record(node("t"), dbl(i, T0 + i));
    h.writer.flushAll();
    const reader = new HistoryReadThread({ file: h.file, maxQueued: 2, prepare: () => h.writer.prepareRead() });
    cleanups.push(() => reader.stop());
    const job: HistoryReadJob = { details: { kind: "raw", body: raw(T0, T0 + 50_000, 0, false) }, timestampsToReturn: TimestampsToReturn.Source, budget: 100_000, nodes: [{ key: "ns=1;s=t" }] };
    const outcome = (p: Promise<unknown>) => p.then(() => "ok", (err: { statusCode?: number }) => err.statusCode);
    let gone = false;
    const first = outcome(reader.read(job)); // in the worker
    const second = outcome(reader.read(job, () => gone)); // waits: its client goes meanwhile
    const third = outcome(reader.read(job)); // waits
    const fourth = outcome(reader.read(job)); // the queue is full
    gone = true;
    expect(await fourth).toBe(StatusCodes.BadServerTooBusy);
    expect(await first).toBe("ok");
    expect(await second).toBe(StatusCodes.BadSessionClosed);
    expect(await third).toBe("ok");
    const [values] = await reader.read(job);
    expect(values.values).toBe(50_000);
    expect(reader.threads).toBe(1);
    const waiting = outcome(reader.read(job));
    const later = outcome(reader.read(job));
    await reader.stop();
    expect(await waiting).toBe(StatusCodes.BadShutdown);
    expect(await later).toBe(StatusCodes.BadShutdown);
    expect(await outcome(reader.read(job))).toBe(StatusCodes.BadShutdown);
    expect(reader.threads).toBe(0);
    expect(reader.pending).toBe(0);
  }, 60_000);

  it("answers a read bigger than the memory it shares with the same bytes, and the reads after it", async () => {
    const h = gatewayHistory("  maxValuesPerRead: 1000000\n");
    h.writer.declare(node("t"));
    const n = 300_000; // about 5.4 MB of HistoryData: more than the 4 MiB shared at the start
    for (let i = 0; i < n; i++) h.writer.record(node("t"), dbl(i * 0.5, T0 + i));
    h.writer.flushAll();
    const job = (count: number): HistoryReadJob => ({ details: { kind: "raw", body: raw(T0, T0 + count, 0, false) }, timestampsToReturn: TimestampsToReturn.Both, budget: 1_000_000, nodes: [{ key: "ns=1;s=t" }, { key: "ns=1;s=t", indexRange: "0" }] });
    const scratch = new BinaryWriter(Buffer.allocUnsafe(1 << 16), 1 << 30);
    for (const count of [1000, n, 2000]) {
      const got = await h.read(job(count));
      const expected = withBodies(runReadJob(h.store, job(count), scratch), scratch.buffer);
      expect(got.map((r) => r.values)).toEqual(expected.map((r) => r.values));
      for (let k = 0; k < got.length; k++) expect(Buffer.from(got[k].historyData!).equals(Buffer.from(expected[k].historyData!)), `${count} values, node ${k}`).toBe(true);
    }
  }, 60_000);

  it("ends its worker after idleStop without a read, and starts a new one for the next read", async () => {
    const h = gatewayHistory("  maxValuesPerRead: 100000\n");
    h.writer.declare(node("t"));
    for (let i = 0; i < 2000; i++) h.writer.record(node("t"), dbl(i, T0 + i));
    h.writer.flushAll();
    const reader = new HistoryReadThread({ file: h.file, maxQueued: 4, prepare: () => h.writer.prepareRead(), idleStop: 300 });
    cleanups.push(() => reader.stop());
    const job = (n: number): HistoryReadJob => ({ details: { kind: "raw", body: raw(T0, T0 + n, 0, false) }, timestampsToReturn: TimestampsToReturn.Source, budget: 100_000, nodes: [{ key: "ns=1;s=t" }] });
    const scratch = new BinaryWriter(Buffer.allocUnsafe(1 << 16), 1 << 26);
    const expectRead = async (n: number) => {
      const [got] = await reader.read(job(n));
      const [expected] = withBodies(runReadJob(h.store, job(n), scratch), scratch.buffer);
      expect(got.values).toBe(n);
      expect(Buffer.from(got.historyData!).equals(Buffer.from(expected.historyData!))).toBe(true);
    };
    expect(reader.threads).toBe(0);
    await expectRead(1000);
    expect(reader.threads).toBe(1);
    // Reads closer together than idleStop keep the worker.
    for (let k = 0; k < 3; k++) {
      await new Promise((r) => setTimeout(r, 100));
      await expectRead(10 + k);
      expect(reader.threads).toBe(1);
    }
    await until(() => reader.threads === 0, 10_000);
    // Samples stored while it was gone are read by the next worker.
    for (let i = 2000; i < 3000; i++) h.writer.record(node("t"), dbl(i, T0 + i));
    h.writer.flushAll();
    await expectRead(3000);
    expect(reader.threads).toBe(1);
    await until(() => reader.threads === 0, 10_000);
    // A stop with no worker left refuses what comes after it.
    await reader.stop();
    await expect(reader.read(job(1))).rejects.toMatchObject({ statusCode: StatusCodes.BadShutdown });
    expect(reader.threads).toBe(0);
  }, 60_000);

  it("a worker out of its heap fails its request (BadOutOfMemory); the next read gets a new worker", async () => {
    const h = gatewayHistory("");
    h.writer.declare(node("t"));
    for (let i = 0; i < 100_000; i++) h.writer.record(node("t"), dbl(i, T0 + i));
    h.writer.flushAll();
    const errors: unknown[] = [];
    const reader = new HistoryReadThread({ file: h.file, maxQueued: 4, resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 2 }, onError: (e) => errors.push(e) });
    cleanups.push(() => reader.stop());
    const job = (n: number): HistoryReadJob => ({ details: { kind: "raw", body: raw(T0, T0 + n, 0, false) }, timestampsToReturn: TimestampsToReturn.Source, budget: 10_000_000, nodes: [{ key: "ns=1;s=t" }] });
    const big = await reader.read(job(100_000)).then(
      () => "ok",
      (err: { statusCode?: number }) => err.statusCode,
    );
    expect(big).toBe(StatusCodes.BadOutOfMemory);
    expect(errors.length).toBe(1);
    const [small] = await reader.read(job(100));
    expect(small.values).toBe(100);
  }, 60_000);
});

describe.skipIf(skipWithout(unbuilt))("the history writer thread", () => {
  beforeAll(() => requirePeers(unbuilt));

  it("starts its worker with the first series when the database holds none, and at once when it holds one", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "gateway.yaml"), "dataDir: ./data\nhistory:\n  flushInterval: 60s\n");
    const config = loadGatewayConfig(join(dir, "gateway.yaml"));
    const h = new GatewayHistory(config.history, config.dataDir, () => undefined);
    cleanups.push(() => h.close());
    h.start();
    // Nothing to write or keep within the retention limits: no thread, not even at a tick.
    expect(h.writer.threads).toBe(0);
    h.writer.timerTick();
    expect(h.writer.threads).toBe(0);
    // A historized tag (a reload that adds one): the thread starts at once to make its series
    // (a read finds it; a light history's samples then wait in the spool, spool.test.ts).
    h.writer.declare(node("t"));
    expect(h.writer.threads).toBe(1);
    for (let i = 0; i < 3; i++) h.writer.record(node("t"), dbl(i, T0 + i));
    h.writer.flushAll();
    expect(h.writer.stats).toMatchObject({ recorded: 3, flushed: 3, dropped: 0 });
    await h.close();
    expect(h.writer.threads).toBe(0);
    // The database holds a series now: its retention runs from the start, so the worker does.
    const again = new GatewayHistory(config.history, config.dataDir, () => undefined);
    cleanups.push(() => again.close());
    again.start();
    expect(again.writer.threads).toBe(1);
    expect(again.series(node("t"))).toBeDefined();
  }, 60_000);

  it("keeps a batch in the ring until the worker has committed it: the newest sample goes while the oldest are written", async () => {
    const dir = tempDir();
    const file = join(dir, "history.db");
    new HistoryStore(file).close();
    const w = new HistoryWriteThread({ file, flushInterval: 60_000, flushCount: 4, queueSize: 6 });
    cleanups.push(() => w.close());
    w.declare(node("t"));
    w.start();
    for (let i = 0; i < 6; i++) w.record(node("t"), dbl(i, T0 + i));
    // Sends the first batch (0..3); the worker cannot answer before this test awaits.
    w.timerTick();
    for (let i = 6; i < 9; i++) w.record(node("t"), dbl(i, T0 + i));
    expect(w.stats.dropped).toBe(3);
    expect(w.queued).toBe(6);
    w.flushAll();
    expect(w.stats).toMatchObject({ recorded: 9, flushed: 6, dropped: 3 });
    // With nothing in flight, a full ring drops the oldest again.
    for (let i = 9; i < 16; i++) w.record(node("t"), dbl(i, T0 + i));
    w.flushAll();
    await w.close();
    expect(w.threads).toBe(0);
    const store = new HistoryStore(file, { readonly: true });
    try {
      const values = store.read(store.find(node("t"))!, TIME_MIN, TIME_MAX, true, 100).map((d) => d.value?.value);
      expect(values).toEqual([0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15]);
    } finally {
      store.close();
    }
    expect(w.stats.recorded).toBe(w.stats.flushed + w.queued + w.stats.dropped);
  }, 30_000);

  it("holds samples until the clock is synchronized and stores them at their corrected times", async () => {
    let mono = 5_000;
    let offset = 86_400_000 - mono;
    let synced = false;
    const dir = tempDir();
    const file = join(dir, "history.db");
    new HistoryStore(file).close();
    const log: string[] = [];
    const w = new HistoryWriteThread({
      file,
      flushInterval: 60_000,
      flushCount: 100,
      queueSize: 100,
      now: () => mono + offset,
      monotonic: () => mono,
      clockSynchronized: () => synced,
      clockSyncWait: 600_000,
      log: (m) => log.push(m),
    });
    cleanups.push(() => w.close());
    w.declare(node("a"));
    w.start();
    for (let i = 0; i < 3; i++) {
      w.record(node("a"), dbl(i, mono + offset));
      mono += 1000;
    }
    w.flushAll();
    expect(w.stats).toMatchObject({ waitingForClock: true, flushed: 0 });
    offset = T0 + 3000 - mono;
    synced = true;
    w.timerTick();
    w.flushAll();
    expect(w.stats).toMatchObject({ waitingForClock: false, flushed: 3, restamped: 3 });
    expect(log.join("\n")).toMatch(/3 held sample\(s\) stored at corrected times/);
    await w.close();
    const store = new HistoryStore(file, { readonly: true });
    try {
      expect(store.read(store.find(node("a"))!, TIME_MIN, TIME_MAX, true, 10).map((d) => d.sourceTimestamp)).toEqual([T0, T0 + 1000, T0 + 2000]);
    } finally {
      store.close();
    }
  }, 30_000);
});
