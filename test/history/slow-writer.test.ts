// What a slow writer's thread holds up (read-thread.ts, write-thread.ts, read-overlay.ts): not a
// HistoryRead, which never waits for the thread to start, to open the database (its check, an
// earlier run's spool) or for a lock it waits on, and still answers with every flushed sample,
// from the tags' tables, the staging table and the spool, each sample once and as the writer will
// store it; and not a stop for longer than stopCheckWait, which leaves what it could not store
// in the spool for the next start. The thread is held at its start here by a module of the
// test's own (a slow CPU does the same to it: an isolate's start took seconds under emulation).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_AGGREGATE_CONFIGURATION } from "../../src/history/aggregates.js";
import type { HistoryReadJob, NodeReadResult } from "../../src/history/read-job.js";
import { HistoryReadThread } from "../../src/history/read-thread.js";
import { SampleRing } from "../../src/history/sample-ring.js";
import { spoolFileOf, spoolRecord } from "../../src/history/spool.js";
import { HistoryStore } from "../../src/history/store.js";
import { HistoryWriteThread } from "../../src/history/write-thread.js";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BuiltinType } from "../../src/ua/builtins.js";
import { decodeDataValue } from "../../src/ua/builtin-codec.js";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { builtFile } from "../../src/worker-file.js";
import { missingBuild, requirePeers, skipWithout } from "../helpers/built.js";
import { T0, dbl, node } from "./helpers.js";

const unbuilt = missingBuild("src/history/write-worker.js", "src/history/read-worker.js");

/** A raw read of "ns=1;s=t", every value. */
const RAW: HistoryReadJob = {
  details: { kind: "raw", body: { isReadModified: false, startTime: T0 - 1000, endTime: T0 + 100_000, numValuesPerNode: 0, returnBounds: false } },
  timestampsToReturn: TimestampsToReturn.Source,
  budget: 10_000,
  nodes: [{ key: "ns=1;s=t" }],
};

/** Count per 4 ms interval of "ns=1;s=t" from T0 to T0 + 8 (Part 13's Count: the raw samples in it). */
const COUNT: HistoryReadJob = {
  details: {
    kind: "processed",
    body: { startTime: T0, endTime: T0 + 8, processingInterval: 4, aggregateType: [], aggregateConfiguration: DEFAULT_AGGREGATE_CONFIGURATION },
    cfg: DEFAULT_AGGREGATE_CONFIGURATION,
  },
  timestampsToReturn: TimestampsToReturn.Source,
  budget: 10_000,
  nodes: [{ key: "ns=1;s=t", aggregateId: ObjectIds.AggregateFunction_Count }],
};

/** The values of a result's HistoryData body (Part 11 §6.6.2), with their source times after T0. */
function valuesOf(r: NodeReadResult): [unknown, number][] {
  const reader = new BinaryReader().setBuffer(Buffer.from(r.historyData!));
  const n = reader.readInt32();
  const out: [unknown, number][] = [];
  for (let i = 0; i < n; i++) {
    const dv = decodeDataValue(reader);
    out.push([dv.value?.value, (dv.sourceTimestamp ?? 0) - T0]);
  }
  return out;
}

/**
 * A writer's worker module that waits, before it loads the real one, until the gate is open: a
 * start as slow as the test wants. The gate is a file (a message could come before the worker
 * listens).
 */
function gatedWorker(dir: string): { url: URL; open(): void; shut(): void } {
  const gate = join(dir, "gate-open");
  const file = join(dir, "gated-write-worker.mjs");
  writeFileSync(
    file,
    `import { existsSync } from "node:fs";
while (!existsSync(${JSON.stringify(gate)})) await new Promise((r) => setTimeout(r, 5));
await import(${JSON.stringify(builtFile("history/write-worker").href)});
`,
  );
  return {
    url: pathToFileURL(file),
    open: () => writeFileSync(gate, ""),
    /** Workers that start from now on wait again (those past the gate go on). */
    shut: () => rmSync(gate, { force: true }),
  };
}

/** The values of "ns=1;s=t" in its table, on a connection of this thread's. */
function stored(file: string): unknown[] {
  const store = new HistoryStore(file, { readonly: true });
  try {
    return store.read(store.find(node("t"))!, T0, T0 + 100, true, 100).map((dv) => dv.value?.value);
  } finally {
    store.close();
  }
}

/** Resolves to what `p` resolves to, or to `late` when it has not within `ms` (a read that waits for what it must not). */
function within<T, L>(p: Promise<T>, ms: number, late: L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<L>((r) => (timer = setTimeout(r, ms, late)))]).finally(() => clearTimeout(timer));
}

describe.skipIf(skipWithout(unbuilt))("a HistoryRead beside the writer's thread", () => {
  beforeAll(() => requirePeers(unbuilt));
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  function tempDir(): string {
    const dir = mkdtempSync(join(tmpdir(), "fieldgate-spool-read-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  /** A new, empty history database in a directory of its own, and its spool's name. */
  function newDatabase(): { dir: string; file: string; spool: string } {
    const dir = tempDir();
    const file = join(dir, "history.db");
    new HistoryStore(file).close();
    return { dir, file, spool: spoolFileOf(file) };
  }

  it("answers at once after a restart while the writer's first thread has not even started, with the tables', the staged and the spooled samples", async () => {
    const dir = tempDir();
    const file = join(dir, "history.db");
    const spool = spoolFileOf(file);
    // What a run killed while its thread had not run for a while leaves: t = 0..2 in the tag's
    // table, 3..4 staged, 5..7 in the spool, and the spool's sample of ms 2 (a second sample in
    // that millisecond) replacing the table's.
    const store = new HistoryStore(file);
    const s = store.ensureSeries(node("t"));
    const ring = new SampleRing(8);
    for (let i = 0; i < 5; i++) ring.putNumber(i, 0, T0 + i, 0, BuiltinType.Double, i);
    store.writeBatch(ring, [s], 0, 3);
    store.compact();
    store.writeBatch(ring, [s], 3, 2);
    expect(store.staged).toBe(2);
    store.close();
    const spooled = new SampleRing(4);
    spooled.putNumber(0, 0, T0 + 2, 0, BuiltinType.Double, 20);
    for (let i = 5; i < 8; i++) spooled.putNumber(i - 4, 0, T0 + i, 0, BuiltinType.Double, i);
    writeFileSync(spool, spoolRecord(spooled, 0, 4, [{ key: "ns=1;s=t" }], 0));

    const gate = gatedWorker(dir);
    cleanups.push(() => gate.open());
    const w = new HistoryWriteThread({ file, spool, flushInterval: 1000, flushCount: 1000, queueSize: 100, workerFile: gate.url });
    cleanups.push(() => w.close());
    const reader = new HistoryReadThread({ file, maxQueued: 4, prepare: () => w.prepareRead(), spool });
    cleanups.push(() => reader.stop());
    w.declare(node("t"));
    w.start();
    expect(w.threads).toBe(1);

    const expected = [
      [0, 0],
      [1, 1],
      [20, 2],
      [3, 3],
      [4, 4],
      [5, 5],
      [6, 6],
      [7, 7],
    ];
    // The writer's thread stays held until the read has answered: a read that waits for it never does.
    const raw = await within(reader.read(RAW), 15_000, "the read waited for the writer's thread" as const);
    expect(raw).not.toBe("the read waited for the writer's thread");
    expect(valuesOf((raw as NodeReadResult[])[0]!)).toEqual(expected);
    const [count] = await within(reader.read(COUNT), 15_000, [] as NodeReadResult[]);
    // The second interval is past the tag's table (up to ms 2): counted from the overlay.
    expect(count && valuesOf(count).map(([v]) => v)).toEqual([4, 4]);
    expect(w.stats.flushed).toBe(0);

    // Once let go, the thread stores the spool and moves the staged rows: the same answer, now from the tables.
    gate.open();
    await w.close();
    expect(valuesOf((await reader.read(RAW))[0]!)).toEqual(expected);
    expect(stored(file)).toEqual(expected.map(([v]) => v));
  }, 60_000);

  it("answers while no writer's thread runs, without starting one", async () => {
    const { file, spool } = newDatabase();
    let now = T0;
    const w = new HistoryWriteThread({ file, spool, now: () => now, flushInterval: 1000, flushCount: 1000, queueSize: 1000, linger: 5000, drainInterval: 60_000 });
    cleanups.push(() => w.close());
    const reader = new HistoryReadThread({ file, maxQueued: 4, prepare: () => w.prepareRead(), spool });
    cleanups.push(() => reader.stop());
    w.declare(node("t"));
    for (let i = 0; i < 3; i++) w.record(node("t"), dbl(i, T0 + i));
    w.flushAll();
    // Needed 5 s ago: the next tick ends the thread.
    now += 6000;
    w.tickNow();
    expect(w.threads).toBe(0);
    for (let i = 3; i < 6; i++) w.record(node("t"), dbl(i, T0 + i));
    w.timerTick();
    await w.spoolSettled();
    expect(w.spooled).toBe(3);
    expect(valuesOf((await reader.read(RAW))[0]!)).toEqual(Array.from({ length: 6 }, (_, i) => [i, i]));
    expect(w.threads).toBe(0);
    expect(w.spooled).toBe(3);

    // A tag the map adds meanwhile: a thread starts to make its series, and goes again; the read
    // finds the series and its spooled samples.
    w.declare(node("u"));
    expect(w.threads).toBe(1);
    w.tickNow();
    now += 6000;
    w.tickNow();
    expect(w.threads).toBe(0);
    // (The spool's emptying after the thread's store first.)
    await w.spoolSettled();
    for (let i = 0; i < 2; i++) w.record(node("u"), dbl(-i, T0 + i));
    w.timerTick();
    await w.spoolSettled();
    expect(w.spooled).toBe(2);
    const [u] = await reader.read({ ...RAW, nodes: [{ key: "ns=1;s=u" }] });
    expect(valuesOf(u!)).toEqual([
      [-0, 0],
      [-1, 1],
    ]);
    expect(w.threads).toBe(0);
  }, 60_000);

  it("answers while a running writer's move of the staged rows waits for a lock", async () => {
    const { file, spool } = newDatabase();
    const w = new HistoryWriteThread({ file, spool, flushInterval: 1000, flushCount: 1000, queueSize: 1000 });
    cleanups.push(() => w.close());
    const reader = new HistoryReadThread({ file, maxQueued: 4, prepare: () => w.prepareRead(), spool, prepareWait: 50 });
    cleanups.push(() => reader.stop());
    w.declare(node("t"));
    for (let i = 0; i < 3; i++) w.record(node("t"), dbl(i, T0 + i));
    w.flushAll();
    expect(w.threads).toBe(1);
    // Another connection holds the write lock: the thread's move waits (SQLite's busy timeout), the read does not.
    const lock = new Database(file);
    cleanups.push(() => lock.close());
    lock.exec("BEGIN IMMEDIATE");
    const locked = await within(reader.read(RAW), 15_000, "the read waited for the lock" as const);
    lock.exec("ROLLBACK");
    expect(locked).not.toBe("the read waited for the lock");
    expect(valuesOf((locked as NodeReadResult[])[0]!)).toEqual(Array.from({ length: 3 }, (_, i) => [i, i]));
  }, 60_000);

  it("a stop waits for a thread it had to start at most stopCheckWait, and leaves the spool, which the next start stores", async () => {
    const { dir, file, spool } = newDatabase();
    const gate = gatedWorker(dir);
    cleanups.push(() => gate.open());
    const lines: string[] = [];
    let now = T0;
    const options = { file, spool, flushInterval: 1000, flushCount: 1000, queueSize: 1000, linger: 5000, drainInterval: 60_000 };
    const w = new HistoryWriteThread({ ...options, now: () => now, workerFile: gate.url, log: (m) => lines.push(m), stopCheckWait: 100 });
    cleanups.push(() => w.close());
    w.declare(node("t"));
    w.start();
    gate.open();
    for (let i = 0; i < 3; i++) w.record(node("t"), dbl(i, T0 + i));
    w.flushAll();
    gate.shut();
    now += 6000;
    w.tickNow();
    expect(w.threads).toBe(0);
    // Two samples spooled by the timer, one recorded after: close() spools it before it starts a thread.
    for (let i = 3; i < 5; i++) w.record(node("t"), dbl(i, T0 + i));
    w.timerTick();
    await w.spoolSettled();
    w.record(node("t"), dbl(5, T0 + 5));
    expect(w.spooled).toBe(2);
    // The thread close() starts stays held: the stop ends without it.
    await w.close();
    expect(lines).toEqual([`history: stopped before the history's thread had stored what waits in ${spool}; the next start stores it`]);
    expect(w.stats).toMatchObject({ recorded: 6, flushed: 3, dropped: 0 });
    expect(w.threads).toBe(0);

    const next = new HistoryWriteThread({ ...options, untilFirstSeries: true });
    next.start();
    await next.close();
    expect(stored(file)).toEqual([0, 1, 2, 3, 4, 5]);
  }, 60_000);

  it("a stop during the first thread's check leaves the queued samples in the spool instead of dropping them", async () => {
    const { dir, file, spool } = newDatabase();
    const gate = gatedWorker(dir);
    cleanups.push(() => gate.open());
    const lines: string[] = [];
    const options = { file, spool, flushInterval: 1000, flushCount: 1000, queueSize: 1000 };
    const w = new HistoryWriteThread({ ...options, workerFile: gate.url, log: (m) => lines.push(m), stopCheckWait: 100 });
    cleanups.push(() => w.close());
    w.declare(node("t"));
    w.start();
    for (let i = 0; i < 4; i++) w.record(node("t"), dbl(i, T0 + i));
    await w.close();
    expect(lines).toEqual([`history: stopped while the database was being checked; 4 sample(s) stay in ${spool} for the next start, 0 queued sample(s) not written (counted as dropped)`]);
    expect(w.stats.dropped).toBe(0);
    const next = new HistoryWriteThread({ ...options, untilFirstSeries: true });
    next.start();
    await next.close();
    expect(stored(file)).toEqual([0, 1, 2, 3]);
  }, 60_000);
});
