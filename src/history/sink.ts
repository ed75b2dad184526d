// Where sampled values go to be stored: a historized tag's HistoryFeed (feed.ts) hands every
// new sample of its value cache slot to a HistorySink, which must never block or wait on the disk (DESIGN: History).
import type { DataValue, NodeId } from "../ua/builtins.js";

export interface HistorySink {
  /** Declares a historized node once (at start or reload); returns nothing, may be called again. */
  declare(nodeId: NodeId, options?: { readonly deadband?: number; readonly onChangeOnly?: boolean }): void;
  /** Queues one sample; returns at once. The sink may drop and count when its bounded queue is full. */
  record(nodeId: NodeId, value: DataValue): void;
}
