// The HistoryRead worker thread (read-thread.ts is its other half): a read-only connection to the
// history database, beside the writer's (WAL lets it read while the other writes). It runs one
// job at a time: reads the nodes, encodes each node's HistoryData body, and hands the bodies
// back as transferred memory (not copied); the main thread copies them into the response.
import { parentPort, workerData } from "node:worker_threads";
import { BinaryWriter } from "../ua/binary-writer.js";
import { runReadJob } from "./read-job.js";
import type { ReadRequest, ReadWorkerData } from "./read-thread.js";
import { HistoryStore } from "./store.js";
import { serveLink, type LinkData } from "./thread.js";

const data = workerData as ReadWorkerData & LinkData;
const store = new HistoryStore(data.file, { readonly: true, cacheSize: data.cacheSize });
// Grows to the largest body read; bounded above what a client could be sent.
const writer = new BinaryWriter(Buffer.allocUnsafe(1 << 20), 1 << 30);

serveLink<ReadRequest & { readonly seq: number }>(parentPort!, data, (req) => {
  if (req.op === "close") {
    store.close();
    return { reply: {}, last: true };
  }
  // One snapshot for the whole job, as when the reads ran between two flushes on one thread.
  const results = store.transaction(() => runReadJob(store, req.job, writer));
  const transfer: ArrayBuffer[] = [];
  for (const r of results) if (r.historyData) transfer.push(r.historyData.buffer as ArrayBuffer);
  return { reply: { results }, transfer };
});
