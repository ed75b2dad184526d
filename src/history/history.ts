// The history of a gateway: the store and its writer built from the `history:` config, and
// what the HistoryRead service needs of them (HistoryBackend).
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { BuiltinType, numericNodeId, scalar, type DataValue, type NodeId } from "../ua/builtins.js";
import { ExceptionDeviationFormat } from "../ua/generated/enums.js";
import { VariableIds } from "../ua/generated/node-ids.js";
import type { AggregateConfiguration } from "../ua/generated/types.js";
import { DEFAULT_AGGREGATE_CONFIGURATION } from "./aggregates.js";
import type { HistoryConfig } from "../config/history-config.js";
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

/** What the address space says about the history it serves (publishHistoryCapabilities). */
export interface HistoryDescription extends HistoryBackend {
  /** Smallest numeric change stored (history.storage.deadband; 0: every change). */
  readonly exceptionDeviation: number;
  /** ms of samples kept by age (history.retention.maxAge; 0: no age limit). */
  readonly maxAge: number;
}

export class GatewayHistory implements HistoryDescription {
  readonly store: HistoryStore;
  readonly writer: HistoryWriter;
  readonly maxNodesPerRead: number;
  readonly maxContinuationPoints: number;
  readonly maxValuesPerRead: number;
  readonly aggregateDefaults = DEFAULT_AGGREGATE_CONFIGURATION;
  readonly exceptionDeviation: number;
  readonly maxAge: number;

  private lastWarning = -Infinity;
  private suppressed = 0;

  /**
   * `warn` receives write errors, at most one message a minute (a full disk fails every flush),
   * and the clock notices. `clockSynchronized`: see HistoryWriterOptions (absent: the clock is
   * trusted).
   */
  constructor(config: HistoryConfig, dataDir: string, warn?: (message: string) => void, options: { readonly clockSynchronized?: () => boolean } = {}) {
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
      clockSynchronized: options.clockSynchronized,
      clockSyncWait: config.clockSyncWait,
      log: warn,
    });
    this.maxNodesPerRead = config.maxNodesPerRead;
    this.maxContinuationPoints = config.maxContinuationPoints;
    this.maxValuesPerRead = config.maxValuesPerRead;
    this.exceptionDeviation = config.storage.deadband;
    this.maxAge = config.retention.maxAge;
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

/** [VariableId, type, value] of the history capabilities of a server with this history. */
function historyCapabilities(h: HistoryDescription): Array<[number, BuiltinType, unknown]> {
  const cfg = h.aggregateDefaults;
  const B = BuiltinType.Boolean;
  return [
    [VariableIds.Server_ServerCapabilities_MaxHistoryContinuationPoints, BuiltinType.UInt16, Math.min(h.maxContinuationPoints, 0xffff)],
    [VariableIds.Server_ServerCapabilities_OperationLimits_MaxNodesPerHistoryReadData, BuiltinType.UInt32, h.maxNodesPerRead],
    // Part 11 §5.4.2: raw, processed and at-time reads of data; no events, no HistoryUpdate
    // (the service table has none: BadServiceUnsupported), so no insert/replace/update/delete.
    [VariableIds.HistoryServerCapabilities_AccessHistoryDataCapability, B, true],
    [VariableIds.HistoryServerCapabilities_AccessHistoryEventsCapability, B, false],
    // Per request over all its nodes, so also the most one node can get.
    [VariableIds.HistoryServerCapabilities_MaxReturnDataValues, BuiltinType.UInt32, h.maxValuesPerRead],
    [VariableIds.HistoryServerCapabilities_MaxReturnEventValues, BuiltinType.UInt32, 0],
    [VariableIds.HistoryServerCapabilities_InsertDataCapability, B, false],
    [VariableIds.HistoryServerCapabilities_ReplaceDataCapability, B, false],
    [VariableIds.HistoryServerCapabilities_UpdateDataCapability, B, false],
    [VariableIds.HistoryServerCapabilities_DeleteRawCapability, B, false],
    [VariableIds.HistoryServerCapabilities_DeleteAtTimeCapability, B, false],
    [VariableIds.HistoryServerCapabilities_InsertEventCapability, B, false],
    [VariableIds.HistoryServerCapabilities_ReplaceEventCapability, B, false],
    [VariableIds.HistoryServerCapabilities_UpdateEventCapability, B, false],
    [VariableIds.HistoryServerCapabilities_DeleteEventCapability, B, false],
    [VariableIds.HistoryServerCapabilities_InsertAnnotationCapability, B, false],
    // The store keeps one timestamp per sample, the source timestamp (store.ts). What
    // TimestampsToReturn Server/Both return is that same time (the gateway stamps samples as it
    // polls them), not a stored server timestamp.
    [VariableIds.HistoryServerCapabilities_ServerTimestampSupported, B, false],
    // Part 11 §5.7.3: no tag references a configuration of its own, so this one applies to all.
    [VariableIds.DefaultHAConfiguration_AggregateConfiguration_TreatUncertainAsBad, B, cfg.treatUncertainAsBad],
    [VariableIds.DefaultHAConfiguration_AggregateConfiguration_PercentDataBad, BuiltinType.Byte, cfg.percentDataBad],
    [VariableIds.DefaultHAConfiguration_AggregateConfiguration_PercentDataGood, BuiltinType.Byte, cfg.percentDataGood],
    [VariableIds.DefaultHAConfiguration_AggregateConfiguration_UseSlopedExtrapolation, B, cfg.useSlopedExtrapolation],
    // Numbers are interpolated sloped; Booleans and non-numeric values always stepped (aggregates.ts).
    [VariableIds.DefaultHAConfiguration_Stepped, B, false],
    [VariableIds.DefaultHAConfiguration_ExceptionDeviation, BuiltinType.Double, h.exceptionDeviation],
    [VariableIds.DefaultHAConfiguration_ExceptionDeviationFormat, BuiltinType.Int32, ExceptionDeviationFormat.AbsoluteValue],
    [VariableIds.DefaultHAConfiguration_ServerTimestampSupported, B, false],
    [VariableIds.DefaultHAConfiguration_MaxTimeStoredValues, BuiltinType.Double, h.maxAge],
  ];
}

/**
 * Publishes what the history offers in namespace 0: the limits in ServerCapabilities (Part 5
 * §6.3.2 MaxHistoryContinuationPoints, §6.3.11 OperationLimits.MaxNodesPerHistoryReadData),
 * HistoryServerCapabilities (Part 11 §5.4.2) and DefaultHAConfiguration (Part 11 §5.7.3). The
 * AggregateFunctions folders are generated with the aggregates of SUPPORTED_AGGREGATES.
 */
export function publishHistoryCapabilities(ns0: { setValue(nodeId: NodeId, value: DataValue): void }, h: HistoryDescription): void {
  const t = Date.now();
  for (const [id, type, value] of historyCapabilities(h)) ns0.setValue(numericNodeId(id), { value: scalar(type, value), sourceTimestamp: t });
}
