// The plug point between sampling and node managers whose values are computed when sampled
// (the bench counters, later maybe device values held in typed arrays). A manager that
// implements DirectSampler hands numbers straight to the monitored items: no DataValue, Variant
// or bigint is made per sample (DESIGN: no per-value allocations on hot paths). Managers that do
// not implement it are sampled through NodeManager.read in batches.
import type { BuiltinType, DataValue, NodeId } from "../ua/builtins.js";

/** What a sampler writes one sample into (a MonitoredItem). */
export interface SampleSink {
  /**
   * A numeric scalar of `type` (Boolean as 0/1; Int64/UInt64 exact up to 2^53). `sourceTimestamp`
   * and `serverTimestamp` are ms since 1970.
   */
  offerNumber(type: BuiltinType, value: number, status: number, sourceTimestamp: number, serverTimestamp: number): void;
  /** Any other value; the DataValue is kept by reference, not copied: the manager must not mutate it. */
  offerDataValue(value: DataValue, serverTimestamp: number): void;
}

export interface DirectSampler {
  /**
   * A handle for sampling attribute `attributeId` of `nodeId` directly, or undefined to be
   * sampled through read(). Called once when a monitored item is created.
   */
  bindSample(nodeId: NodeId, attributeId: number): number | undefined;
  /** Samples `count` bound handles into their sinks (`sinks[k]` gets `handles[k]`). */
  sampleInto(handles: readonly number[], sinks: readonly SampleSink[], count: number, now: number): void;
}

export function isDirectSampler(m: object): m is DirectSampler {
  return typeof (m as Partial<DirectSampler>).bindSample === "function" && typeof (m as Partial<DirectSampler>).sampleInto === "function";
}
