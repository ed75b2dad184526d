// The history writer's worker thread (write-thread.ts is its other half): the one connection that
// writes the history database. It reads each batch straight from the ring the main thread fills
// (shared memory), commits it in one transaction, then runs a step of compaction and retention,
// and answers with what it did. It never holds samples itself: until it answers that a batch is
// committed, the batch stays in the ring, so a worker that fails or dies loses nothing.
import { parentPort, workerData } from "node:worker_threads";
import { StoreMaintenance } from "./maintenance.js";
import { SampleRing } from "./sample-ring.js";
import { HistoryStore, type Series } from "./store.js";
import { serveLink } from "../worker-serve.js";
import { faultInfo, type FaultInfo, type LinkData } from "../worker-link.js";
import type { WriteRequest, WriteWorkerData } from "./write-thread.js";

const data = workerData as WriteWorkerData & LinkData;
const store = new HistoryStore(data.file, data.store);
const maintenance = new StoreMaintenance(store, data.maintenance, Date.now());
const ring = new SampleRing(data.capacity, data.ring);
/** Declared series by the main thread's index; a key without its series failed to be created. */
const keys: string[] = [];
const series: (Series | undefined)[] = [];

/** Creates the series whose declaration failed (a full disk): a batch needs all of them. */
function ensureDeclared(): void {
  for (let i = 0; i < keys.length; i++) if (series[i] === undefined && keys[i] !== undefined) series[i] = store.ensureSeriesKey(keys[i]);
}

serveLink<WriteRequest & { readonly seq: number }>(parentPort!, data, (req) => {
  switch (req.op) {
    case "declare":
      keys[req.index] = req.key;
      series[req.index] = store.ensureSeriesKey(req.key);
      return { reply: {} };
    case "tick": {
      let flushFault: FaultInfo | undefined;
      if (req.count > 0) {
        try {
          if (req.slots) for (let k = 0; k < req.slots.length; k++) ring.other.set(req.slots[k], req.values![k]);
          ensureDeclared();
          store.writeBatch(ring, series, req.from, req.count);
        } catch (err) {
          flushFault = faultInfo(err);
          // The size cap (max_page_count) was hit before retention caught up: trim first.
          if (flushFault.code === "SQLITE_FULL") maintenance.full();
        }
        ring.other.clear();
      }
      // Each step on its own: a full disk failing one must not keep the others (which make
      // room) from running.
      const faults: FaultInfo[] = [];
      try {
        maintenance.compactStep(req.now);
      } catch (err) {
        faults.push(faultInfo(err));
      }
      let retained = 0;
      try {
        retained = maintenance.retain(req.now, req.holdAge);
      } catch (err) {
        faults.push(faultInfo(err));
      }
      return { reply: { flushed: flushFault ? 0 : req.count, flushFault, faults, retained, staged: store.staged } };
    }
    case "compact":
      store.compact();
      return { reply: { staged: store.staged } };
    case "close":
      try {
        store.compact();
      } finally {
        store.close();
      }
      return { reply: { staged: 0 }, last: true };
  }
});
