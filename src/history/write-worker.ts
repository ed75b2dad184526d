// The history writer's worker thread (write-thread.ts is its other half, write-messages.ts what
// they say): the one connection that writes the history database. It reads each batch straight
// from the ring the main thread fills (shared memory), commits it in one transaction, then runs a
// step of compaction and retention, and answers with what it did. It never holds samples itself:
// until it answers that a batch is committed, the batch stays in the ring, so a worker that fails
// or dies loses nothing.
//
// The database is opened by the first request (the main thread sends "open" first). The first
// worker of a process checks it before (PRAGMA quick_check, storage/sqlite-check.ts): here, off
// the event loop, because the check reads the whole file; and before the first write, so that
// no sample goes into a damaged file. Samples polled meanwhile wait in the ring; HistoryReads do
// not wait (read-thread.ts: they read the staging table and the spool). A damaged database,
// found then or by a later statement (SQLITE_CORRUPT), is moved aside and a new one started; the
// reports go to the main thread with the next answer.
//
// A spool file (spool.ts) that an earlier run left (it ended before a worker stored what it had
// spooled) is stored by the first worker when it opens the database, before any batch of the
// ring (its samples are older), and removed; or moved aside when it does not read as records,
// once its whole records are stored.
import { readFileSync, unlinkSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { moveAside, type DamagedFile } from "../storage/damaged.js";
import { checkOrMoveAside, isDamage, openOrMoveAside } from "../storage/sqlite-check.js";
import { StoreMaintenance } from "./maintenance.js";
import { SampleRing } from "./sample-ring.js";
import { HISTORY_FILE, HistoryStore, type Series } from "./store.js";
import { readSpool, SPOOL_FILE } from "./spool.js";
import { serveLink } from "../worker-serve.js";
import { faultInfo, type FaultInfo, type LinkData } from "../worker-link.js";
import type { WriteReply, WriteRequest, WriteWorkerData } from "./write-messages.js";

const data = workerData as WriteWorkerData & LinkData;
const ring = new SampleRing(data.capacity, data.ring);
/** Declared series by the main thread's index; a key without its series failed to be created. */
const keys: string[] = [];
const series: (Series | undefined)[] = [];
/** Files moved aside, not yet reported. */
const damaged: DamagedFile[] = [];
const note = (d: DamagedFile): void => void damaged.push(d);
let store: HistoryStore | undefined;
let maintenance: StoreMaintenance | undefined;
let checked = !data.check;

/** The open store: opened (checked first, the first time) when it is not. */
function open(): { store: HistoryStore; maintenance: StoreMaintenance } {
  if (store === undefined || maintenance === undefined) {
    if (!checked) {
      checked = true;
      checkOrMoveAside(data.file, HISTORY_FILE, note);
    }
    store = openOrMoveAside(data.file, HISTORY_FILE, () => new HistoryStore(data.file, data.store), note);
    maintenance = new StoreMaintenance(store, data.maintenance, Date.now());
  }
  return { store, maintenance };
}

/**
 * A statement found the database damaged: it goes aside, and the next request opens a new one
 * (the failed batch is still in the ring and goes there). What was staged in it goes with it.
 */
function damagedNow(err: unknown): void {
  const s = store;
  store = undefined;
  maintenance = undefined;
  series.fill(undefined);
  try {
    s?.close();
  } catch {
    // A damaged file may fail its close too; the file goes aside all the same.
  }
  // A rename that fails (a read-only file system) leaves the statement's error to answer.
  note(moveAside(data.file, HISTORY_FILE, err instanceof Error ? err.message : String(err)));
}

/** Creates the series whose declaration failed (a full disk): a batch needs all of them. */
function ensureDeclared(s: HistoryStore): void {
  for (let i = 0; i < keys.length; i++) if (series[i] === undefined && keys[i] !== undefined) series[i] = s.ensureSeriesKey(keys[i]);
}

function handle(req: WriteRequest): { reply: Omit<WriteReply, "seq">; last?: boolean } {
  switch (req.op) {
    case "open": {
      const { store: s } = open();
      ensureDeclared(s);
      const replayed = req.replay === true && data.spool !== undefined ? replaySpool(s, data.spool) : undefined;
      return { reply: { replayed, staged: s.staged } };
    }
    case "declare":
      keys[req.index] = req.key;
      series[req.index] = open().store.ensureSeriesKey(req.key);
      return { reply: {} };
    case "tick": {
      const { store: s, maintenance: m } = open();
      let flushFault: FaultInfo | undefined;
      if (req.count > 0) {
        try {
          if (req.slots) for (let k = 0; k < req.slots.length; k++) ring.other.set(req.slots[k], req.values![k]);
          ensureDeclared(s);
          s.writeBatch(ring, series, req.from, req.count);
        } catch (err) {
          flushFault = faultInfo(err);
          // The size cap (max_page_count) was hit before retention caught up: trim first.
          if (flushFault.code === "SQLITE_FULL") m.full();
          if (isDamage(err)) damagedNow(err);
        }
        ring.other.clear();
      }
      if (store === undefined) return { reply: { flushed: 0, flushFault, faults: [], retained: 0, staged: 0 } };
      // Each step on its own: a full disk failing one must not keep the others (which make
      // room) from running.
      const faults: FaultInfo[] = [];
      try {
        m.compactStep(req.now);
      } catch (err) {
        faults.push(faultInfo(err));
        if (isDamage(err)) damagedNow(err);
      }
      let retained = 0;
      if (store !== undefined) {
        try {
          retained = m.retain(req.now, req.holdAge);
        } catch (err) {
          faults.push(faultInfo(err));
          if (isDamage(err)) damagedNow(err);
        }
      }
      return { reply: { flushed: flushFault ? 0 : req.count, flushFault, faults, retained, staged: store?.staged ?? 0 } };
    }
    case "compact": {
      const s = open().store;
      try {
        s.compact();
      } catch (err) {
        if (isDamage(err)) damagedNow(err);
        throw err;
      }
      return { reply: { staged: s.staged } };
    }
    case "close":
      if (store !== undefined) {
        try {
          store.compact();
        } finally {
          store.close();
        }
      }
      return { reply: { staged: 0 }, last: true };
  }
}

/**
 * Stores the records of an earlier run's spool `file` in one transaction, then removes it (a
 * record a crash cut short goes with it); a file that does not read as records is moved aside
 * once its whole records are stored. Some of its samples may have been stored already (the run
 * ended between a worker's commit and the file's removal): the same rows again (store.ts keeps
 * one row per series and millisecond). Returns the samples stored.
 */
function replaySpool(s: HistoryStore, file: string): number {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw err;
  }
  const contents = readSpool(bytes);
  const byIndex: (Series | undefined)[] = [];
  for (const [index, name] of contents.names) byIndex[index] = s.ensureSeriesKey(name);
  let replayed = 0;
  s.transaction(() => {
    for (const r of contents.records) {
      s.writeBatch(r.ring, byIndex, 0, r.ring.capacity);
      replayed += r.ring.capacity;
    }
  });
  if (contents.problem !== undefined) note(moveAside(file, SPOOL_FILE, contents.problem, { lost: `what it held after byte ${contents.end} (${bytes.length - contents.end} bytes)` }));
  else unlinkSync(file);
  return replayed;
}

// A request that fails answers with its fault; reports made meanwhile go with the next answer.
serveLink<WriteRequest & { readonly seq: number }>(parentPort!, data, (req) => {
  const out = handle(req);
  return damaged.length > 0 ? { ...out, reply: { ...out.reply, damaged: damaged.splice(0) } } : out;
});
