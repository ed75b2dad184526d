// Temp databases for the history tests, written by the gateway's writer (write-thread.ts, its
// worker from dist/) and read on a read-only connection that has the writer move what it
// staged first, as GatewayHistory.store does.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { BuiltinType, scalar, stringNodeId, type DataValue, type NodeId } from "../../src/ua/builtins.js";
import { HistoryStore, type HistoryStoreOptions } from "../../src/history/store.js";
import { HistoryWriteThread, type WriteThreadOptions } from "../../src/history/write-thread.js";
import { missingBuild } from "../helpers/built.js";

/** The built writer worker tempHistory needs ("" when it is there). */
export const HISTORY_UNBUILT = missingBuild("src/history/write-worker.js");

export interface TempHistory {
  dir: string;
  file: string;
  /** A read-only connection: a read first has the writer move the staged samples. */
  store: HistoryStore;
  writer: HistoryWriteThread;
  cleanup(): Promise<void>;
}

export function tempHistory(writer: Partial<WriteThreadOptions> = {}, store: Pick<HistoryStoreOptions, "maxSize" | "cacheSize"> = {}): TempHistory {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-history-"));
  const file = join(dir, "history.db");
  // The writer's caller creates the database (GatewayHistory does).
  new HistoryStore(file, store).close();
  const w = new HistoryWriteThread({ file, store, flushInterval: 1000, flushCount: 1000, queueSize: 10_000, ...writer });
  const reader = new HistoryStore(file, { readonly: true, beforeRead: () => w.prepareReadSync() });
  return {
    dir,
    file,
    store: reader,
    writer: w,
    async cleanup() {
      reader.close();
      await w.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Rows of the database's staging table: flushed, not yet moved to their tags' tables. */
export function stagedRows(file: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM staging").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

export const T0 = Date.UTC(2024, 0, 1);

export function node(name: string): NodeId {
  return stringNodeId(name, 1);
}

export function dbl(x: number, t: number, statusCode?: number): DataValue {
  return { value: scalar(BuiltinType.Double, x), sourceTimestamp: t, statusCode };
}
