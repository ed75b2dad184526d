// The one interface through which values leave the value cache (DESIGN: poll group -> value
// cache -> monitored items / history / northbound). A sink takes numbers as numbers, so a
// counter polled at 100 Hz reaches a monitored item without a DataValue, Variant or bigint
// being made per sample; values that are not plain numbers (strings, 64-bit integers past 2^53,
// values of memory variables) arrive as DataValues, kept by reference: nobody mutates them.
import type { BuiltinType, DataValue, StatusCode } from "../ua/builtins.js";

export interface ValueSink {
  /**
   * A numeric scalar of `type` (Boolean as 0/1; Int64/UInt64 exact, below 2^53). Timestamps are
   * ms since 1970; `serverTimestamp` is when the value reached the cache.
   */
  offerNumber(type: BuiltinType, value: number, status: StatusCode, sourceTimestamp: number, serverTimestamp: number): void;
  /** Any other value, or a status without a value. */
  offerDataValue(value: DataValue, serverTimestamp: number): void;
}

/**
 * A sink that also hears when its slot's source changes: the tag was replaced with another
 * rate by a reload (its sampling may have to change), or removed (its slot is released).
 */
export interface SlotSubscriber extends ValueSink {
  sourceChanged(slot: number): void;
}
