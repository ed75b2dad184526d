// The HistoryRead worker thread (read-thread.ts is its other half): a read-only connection to the
// history database, beside the writer's (WAL lets it read while the other writes). It runs one
// job at a time: reads the nodes and encodes each node's HistoryData body into memory it shares
// with the main thread, which copies the bodies from there into the response. Shared, not
// transferred: a transferred buffer is a new allocation of the main thread's heap for every
// read, collected there (1.8 MB per read of 100,000 values); the shared one is allocated once and
// grows (a new one, handed over once) only for a job bigger than any before.
//
// A job sent with `overlay` (the writer has not moved every flushed sample into the tags' tables,
// read-thread.ts) also reads the staging table and the spool file (read-overlay.ts).
import { parentPort, workerData } from "node:worker_threads";
import { BinaryWriter } from "../ua/binary-writer.js";
import { runReadJob } from "./read-job.js";
import type { ReadRequest, ReadWorkerData } from "./read-thread.js";
import { HistoryStore } from "./store.js";
import { buildOverlay, readSpoolFile } from "./read-overlay.js";
import { serveLink } from "../worker-serve.js";
import type { LinkData } from "../worker-link.js";

const data = workerData as ReadWorkerData & LinkData;
const store = new HistoryStore(data.file, { readonly: true, cacheSize: data.cacheSize });
let shared = data.bodies;
// Bounded above what a client could be sent; past the shared memory it grows as a plain Buffer.
let writer = new BinaryWriter(Buffer.from(shared), 1 << 30);

serveLink<ReadRequest & { readonly seq: number }>(parentPort!, data, (req) => {
  if (req.op === "close") {
    store.close();
    return { reply: {}, last: true };
  }
  // The spool before the snapshot (read-overlay.ts says why).
  const spool = req.overlay ? readSpoolFile(data.spool) : undefined;
  // One snapshot for the whole job, as when the reads ran between two flushes on one thread.
  const results = store.transaction(() => {
    if (!req.overlay) return runReadJob(store, req.job, writer);
    store.overlay = buildOverlay(store, spool, req.job.nodes.map((n) => n.key));
    try {
      return runReadJob(store, req.job, writer);
    } finally {
      store.overlay = undefined;
    }
  });
  if (writer.buffer.buffer === shared) return { reply: { results } };
  // The job outgrew the shared memory: a bigger one, with the bodies in it, for this job and on.
  const grown = new SharedArrayBuffer(writer.buffer.length);
  Buffer.from(grown).set(writer.buffer.subarray(0, writer.pos));
  shared = grown;
  writer = new BinaryWriter(Buffer.from(shared), 1 << 30);
  return { reply: { results, bodies: shared } };
});
