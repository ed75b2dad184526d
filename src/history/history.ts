// The history of a gateway: the database built from the `history:` config, its writer and its
// reader, each with a worker thread of its own (src/worker-link.ts), and what the HistoryRead service
// needs of them (HistoryBackend).
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { BuiltinType, numericNodeId, scalar, type DataValue, type NodeId } from "../ua/builtins.js";
import { ExceptionDeviationFormat } from "../ua/generated/enums.js";
import { VariableIds } from "../ua/generated/node-ids.js";
import type { AggregateConfiguration } from "../ua/generated/types.js";
import { DEFAULT_AGGREGATE_CONFIGURATION } from "./aggregates.js";
import type { HistoryConfig } from "../config/history-config.js";
import type { HistoryReadJob, NodeReadResult } from "./read-job.js";
import { HistoryReadThread } from "./read-thread.js";
import { HISTORY_FILE, HistoryStore, type Series } from "./store.js";
import { spoolFileOf } from "./spool.js";
import { HistoryWriteThread } from "./write-thread.js";
import { UaStatusError } from "../ua/errors.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { DamagedFile } from "../storage/damaged.js";
import { openOrMoveAside } from "../storage/sqlite-check.js";

/** What services/history.ts reads history through. */
export interface HistoryBackend {
  readonly maxNodesPerRead: number;
  readonly maxContinuationPoints: number;
  readonly maxValuesPerRead: number;
  readonly aggregateDefaults: AggregateConfiguration;
  /**
   * Reads the job's nodes, off the event loop; one result per node, in order. Rejects with a
   * UaStatusError that answers the whole request (BadServerTooBusy, BadShutdown, ...).
   * `abandoned` tells whether anyone still waits for the answer. The results' bodies may be
   * views of memory the backend reuses: valid for the turn they come in, or with `hold` until
   * releaseBodies (the backend then reads nothing else before it).
   */
  read(job: HistoryReadJob, abandoned?: () => boolean, hold?: boolean): Promise<readonly NodeReadResult[]>;
  /**
   * The bodies of `results` (what a read with `hold` resolved to) are no longer needed: the
   * memory they are views of may be reused. Absent: the backend's bodies are not reused.
   */
  releaseBodies?(results: readonly NodeReadResult[]): void;
}

/** What the address space says about the history it serves (publishHistoryCapabilities). */
export interface HistoryDescription extends HistoryBackend {
  /** Smallest numeric change stored (history.storage.deadband; 0: every change). */
  readonly exceptionDeviation: number;
  /** ms of samples kept by age (history.retention.maxAge; 0: no age limit). */
  readonly maxAge: number;
}

export class GatewayHistory implements HistoryDescription {
  /** The database file. */
  readonly file: string;
  /** The HistorySink the device tags feed. */
  readonly writer: HistoryWriteThread;
  readonly reader: HistoryReadThread;
  readonly maxNodesPerRead: number;
  readonly maxContinuationPoints: number;
  readonly maxValuesPerRead: number;
  readonly aggregateDefaults = DEFAULT_AGGREGATE_CONFIGURATION;
  readonly exceptionDeviation: number;
  readonly maxAge: number;

  /**
   * Why there is no history (the database could not be opened for a reason that is not damage:
   * no permission, a newer schema); undefined while it is kept. The live values do not need it.
   */
  readonly unavailable: string | undefined;
  private local: HistoryStore | undefined;
  private lastWarning = -Infinity;
  private suppressed = 0;
  private readonly onDamaged: ((d: DamagedFile) => void) | undefined;

  /**
   * `warn` receives write errors, at most one message a minute (a full disk fails every flush),
   * dropped samples (as often) and the clock notices; `options.info` the return of writing after
   * failures. `clockSynchronized`: see SampleQueueOptions (absent: the clock is trusted).
   * `onDamaged`: a damaged database was moved aside and a new one started (storage/damaged.ts).
   */
  constructor(
    config: HistoryConfig,
    dataDir: string,
    warn?: (message: string) => void,
    options: { readonly clockSynchronized?: () => boolean; readonly info?: (message: string) => void; readonly onDamaged?: (d: DamagedFile) => void } = {},
  ) {
    const file = config.database ?? join(dataDir, "history.db");
    this.file = file;
    this.onDamaged = options.onDamaged;
    const storeOptions = { maxSize: config.retention.maxSize, cacheSize: config.cacheSize };
    // Its series counted here, read-only (a damaged file is never written before the writer's
    // check judges it): a database without any starts no writer thread until a series comes.
    // A file SQLite refuses is moved aside at once; one that opens is checked through by the
    // writer (write-worker.ts), off the event loop. Any other failure leaves the gateway
    // without history, not without its live values.
    let empty = true;
    try {
      mkdirSync(dirname(file), { recursive: true });
      empty = openOrMoveAside(file, HISTORY_FILE, () => seriesIn(file, storeOptions), (d) => this.damaged(d)) === 0;
    } catch (err) {
      this.unavailable = `history database ${file} could not be opened (${err instanceof Error ? err.message : String(err)}); no history is kept until it can be`;
      warn?.(`history: ${this.unavailable}`);
    }
    const onError = warn && ((err: unknown) => this.warn(warn, err));
    const spool = spoolFileOf(file);
    this.writer = new HistoryWriteThread({
      file,
      store: storeOptions,
      flushInterval: config.flushInterval,
      flushCount: config.flushCount,
      queueSize: config.queueSize,
      maxAge: config.retention.maxAge,
      storage: { onChangeOnly: config.storage.mode === "change", deadband: config.storage.deadband },
      onError,
      clockSynchronized: options.clockSynchronized,
      clockSyncWait: config.clockSyncWait,
      log: warn,
      info: options.info,
      untilFirstSeries: empty,
      onDamaged: (d) => this.damaged(d),
      // The writer's thread runs when it is needed, not for a few rows a second (write-thread.ts).
      spool,
    });
    // Without a database nothing is queued (closed: records are ignored, not counted as dropped).
    if (this.unavailable !== undefined) void this.writer.close();
    // Reads see what waits in the spool without the writer's thread (read-overlay.ts).
    this.reader = new HistoryReadThread({ file, maxQueued: config.maxQueuedReads, prepare: () => this.writer.prepareRead(), spool, onError });
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

  read(job: HistoryReadJob, abandoned?: () => boolean, hold?: boolean): Promise<readonly NodeReadResult[]> {
    if (this.unavailable !== undefined) return Promise.reject(new UaStatusError(StatusCodes.BadResourceUnavailable, this.unavailable));
    return this.reader.read(job, abandoned, hold);
  }

  /** A damaged database went aside: no connection of this process may stay on the moved file. */
  private damaged(d: DamagedFile): void {
    this.local?.close();
    this.local = undefined;
    // The reader is made in the constructor after the first open: not there yet on that one.
    this.reader?.reopen();
    this.onDamaged?.(d);
  }

  releaseBodies(results: readonly NodeReadResult[]): void {
    this.reader.releaseBodies(results);
  }

  /**
   * A read-only connection of this thread, for tools and tests: its reads block the event loop
   * (and wait for the writer to move what it staged), so the services never use it.
   */
  get store(): HistoryStore {
    // A damaged file the writer moves aside closes it (damaged()): the next use opens the new one.
    this.local ??= new HistoryStore(this.file, { readonly: true, beforeRead: () => this.writer.prepareReadSync() });
    return this.local;
  }

  /** The stored series of a node (through `store`), or undefined when it has none yet. */
  series(nodeId: NodeId): Series | undefined {
    return this.store.find(nodeId);
  }

  start(): void {
    if (this.unavailable === undefined) this.writer.start();
  }

  /** Ends the reader (what waits is refused), then writes what is queued and ends the writer. */
  async close(): Promise<void> {
    this.local?.close();
    this.local = undefined;
    await this.reader.stop();
    await this.writer.close();
  }
}

/** The series of the database at `file`, on a read-only connection; a new file is created (empty). */
function seriesIn(file: string, options: { maxSize: number; cacheSize?: number }): number {
  const store = existsSync(file) ? new HistoryStore(file, { readonly: true }) : new HistoryStore(file, options);
  const n = store.seriesCount;
  store.close();
  return n;
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
