// The history of a gateway: the store and its writer built from the `history:` config, and
// what the HistoryRead service needs of them (HistoryBackend).
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { BuiltinType, numericNodeId, scalar, type DataValue, type NodeId } from "../ua/builtins.js";
import { VariableIds } from "../ua/generated/node-ids.js";
import type { AggregateConfiguration } from "../ua/generated/types.js";
import { DEFAULT_AGGREGATE_CONFIGURATION } from "./aggregates.js";
import type { HistoryConfig } from "./config.js";
import { HistoryStore, type Series } from "./store.js";
import { HistoryWriter } from "./writer.js";

/** What services/history.ts reads history through. */
export interface HistoryBackend {
  readonly store: HistoryStore;
  /** The stored series of a node, or undefined when nothing was ever recorded for it. */
  series(nodeId: NodeId): Series | undefined;
  readonly maxNodesPerRead: number;
  readonly maxContinuationPoints: number;
  readonly maxValuesPerRead: number;
  readonly aggregateDefaults: AggregateConfiguration;
}

export class GatewayHistory implements HistoryBackend {
  readonly store: HistoryStore;
  readonly writer: HistoryWriter;
  readonly maxNodesPerRead: number;
  readonly maxContinuationPoints: number;
  readonly maxValuesPerRead: number;
  readonly aggregateDefaults = DEFAULT_AGGREGATE_CONFIGURATION;

  private lastWarning = -Infinity;
  private suppressed = 0;

  /** `warn` receives write errors, at most one message a minute (a full disk fails every flush). */
  constructor(config: HistoryConfig, dataDir: string, warn?: (message: string) => void) {
    const file = config.database ?? join(dataDir, "history.db");
    mkdirSync(dirname(file), { recursive: true });
    this.store = new HistoryStore(file, { maxSize: config.retention.maxSize, cacheSize: config.cacheSize });
    this.writer = new HistoryWriter(this.store, {
      flushInterval: config.flushInterval,
      flushCount: config.flushCount,
      queueSize: config.queueSize,
      maxAge: config.retention.maxAge,
      storage: { onChangeOnly: config.storage.mode === "change", deadband: config.storage.deadband },
      onError: warn && ((err) => this.warn(warn, err)),
    });
    this.maxNodesPerRead = config.maxNodesPerRead;
    this.maxContinuationPoints = config.maxContinuationPoints;
    this.maxValuesPerRead = config.maxValuesPerRead;
  }

  private warn(warn: (message: string) => void, err: unknown): void {
    const now = Date.now();
    if (now - this.lastWarning < 60_000) {
      this.suppressed++;
      return;
    }
    const more = this.suppressed > 0 ? ` (and ${this.suppressed} more since the last message)` : "";
    this.lastWarning = now;
    this.suppressed = 0;
    warn(`history: ${err instanceof Error ? err.message : String(err)}${more}; queued samples are kept until the queue is full`);
  }

  series(nodeId: NodeId): Series | undefined {
    return this.writer.seriesOf(nodeId) ?? this.store.find(nodeId);
  }

  start(): void {
    this.writer.start();
  }

  close(): void {
    this.writer.close();
  }
}

/**
 * Publishes the history limits in ServerCapabilities (Part 5 §6.3.2 MaxHistoryContinuationPoints,
 * §6.3.11 OperationLimits.MaxNodesPerHistoryReadData).
 */
export function publishHistoryCapabilities(ns0: { setValue(nodeId: NodeId, value: DataValue): void }, h: HistoryBackend): void {
  const t = Date.now();
  ns0.setValue(numericNodeId(VariableIds.Server_ServerCapabilities_MaxHistoryContinuationPoints), {
    value: scalar(BuiltinType.UInt16, Math.min(h.maxContinuationPoints, 0xffff)),
    sourceTimestamp: t,
  });
  ns0.setValue(numericNodeId(VariableIds.Server_ServerCapabilities_OperationLimits_MaxNodesPerHistoryReadData), {
    value: scalar(BuiltinType.UInt32, h.maxNodesPerRead),
    sourceTimestamp: t,
  });
}
