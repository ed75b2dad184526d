// Temp databases for the history tests.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BuiltinType, scalar, stringNodeId, type DataValue, type NodeId } from "../../src/ua/builtins.js";
import { HistoryStore, type HistoryStoreOptions } from "../../src/history/store.js";
import { HistoryWriter, type HistoryWriterOptions } from "../../src/history/writer.js";

export interface TempHistory {
  dir: string;
  file: string;
  store: HistoryStore;
  writer: HistoryWriter;
  cleanup(): void;
}

export function tempHistory(writer: Partial<HistoryWriterOptions> = {}, store: HistoryStoreOptions = {}): TempHistory {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-history-"));
  const file = join(dir, "history.db");
  const s = new HistoryStore(file, store);
  const w = new HistoryWriter(s, { flushInterval: 1000, flushCount: 1000, queueSize: 10_000, ...writer });
  return {
    dir,
    file,
    store: s,
    writer: w,
    cleanup() {
      w.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const T0 = Date.UTC(2024, 0, 1);

export function node(name: string): NodeId {
  return stringNodeId(name, 1);
}

export function dbl(x: number, t: number, statusCode?: number): DataValue {
  return { value: scalar(BuiltinType.Double, x), sourceTimestamp: t, statusCode };
}
