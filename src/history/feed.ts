// A historized tag's subscription to the value cache (DESIGN: value cache -> history writer):
// every value and status change of the tag's slot goes to the HistorySink as a DataValue. The
// cache makes that DataValue once per change (Read shares it), so a historized sample costs the
// writer's queue entry and nothing else here.
import type { DataValue, NodeId } from "../ua/builtins.js";
import type { ValueCache } from "../values/value-cache.js";
import type { SlotSubscriber } from "../values/value-sink.js";
import type { HistorySink } from "./sink.js";

export class HistoryFeed implements SlotSubscriber {
  constructor(
    private readonly sink: HistorySink,
    readonly nodeId: NodeId,
    private readonly values: ValueCache,
    readonly slot: number,
  ) {}

  offerNumber(): void {
    this.sink.record(this.nodeId, this.values.get(this.slot));
  }

  offerDataValue(value: DataValue): void {
    this.sink.record(this.nodeId, value);
  }

  /** A released slot ends the feed (the namespace unsubscribes it with its node). */
  sourceChanged(): void {}
}
