// A monitored item's queue as a ring (src/subscriptions/monitored-item.ts), driven directly
// with an owner whose publishing cycle opens and closes by hand: the ring grows to twice the
// queue size while a cycle holds what it took, and keeps that size; an overflow afterwards, with
// no cycle holding anything, must still keep the newest notifications in order (Part 4
// §5.12.1.5: discardOldest drops the oldest and sets the Overflow bit on the next).
import { describe, expect, it } from "vitest";
import { MonitoredItem, type ItemOwner } from "../../src/subscriptions/monitored-item.js";
import { DEFAULT_CHANGE_FILTER } from "../../src/subscriptions/data-change.js";
import { BuiltinType, numericNodeId } from "../../src/ua/builtins.js";
import { MonitoringMode, TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { AttributeIds } from "../../src/ua/generated/node-ids.js";

class Owner implements ItemOwner {
  cycle = 0;
  cycleOpen = false;
  overflows = 0;
  readonly stats = { queueOverflows: 0, lateQueueOverflows: 0 };
  notify(item: MonitoredItem): void {
    item.inNotifyList = true;
    item.listedIn = this.cycle;
  }
  overflowed(n: number): void {
    this.overflows += n;
  }
}

function itemOf(owner: Owner, queueSize: number, discardOldest: boolean): MonitoredItem {
  return new MonitoredItem({
    id: 1,
    owner,
    read: { nodeId: numericNodeId(1, 1), attributeId: AttributeIds.Value },
    clientHandle: 1,
    mode: MonitoringMode.Reporting,
    timestamps: TimestampsToReturn.Both,
    samplingInterval: 10,
    followsPublishing: false,
    queueSize,
    discardOldest,
    filter: DEFAULT_CHANGE_FILTER,
  });
}

/** Offers the counter values from..to, one sample each. */
function offer(item: MonitoredItem, from: number, to: number): void {
  for (let v = from; v <= to; v++) item.offerNumber(BuiltinType.UInt64, v, 0, v * 10, v * 10);
}

/** What the item would send now: [value, overflow] from the oldest. */
function queued(item: MonitoredItem): [number, boolean][] {
  return Array.from({ length: item.count }, (_, k) => [item.peekAt(k).num, item.peekAt(k).overflow]);
}

/** A message that took the whole queue went out: what commit does. */
function sendAll(item: MonitoredItem): void {
  for (let n = item.count; n > 0; n--) item.shift();
  item.inNotifyList = false;
}

describe("a monitored item's queue ring", () => {
  for (const discardOldest of [true, false]) {
    it(`keeps the overflow policy after the ring grew for a cycle's hold (discardOldest ${discardOldest})`, () => {
      const owner = new Owner();
      const item = itemOf(owner, 3, discardOldest);
      offer(item, 1, 3);
      // A cycle begins and takes the three; four samples come before its part is sent: the ring
      // grows to six, the last sample overflows the queue of the samples since.
      owner.cycle = 1;
      owner.cycleOpen = true;
      offer(item, 4, 7);
      expect(queued(item).map(([v]) => v)).toEqual(discardOldest ? [1, 2, 3, 5, 6, 7] : [1, 2, 3, 4, 5, 7]);
      sendAll(item);
      owner.cycleOpen = false;
      // No cycle holds anything now: a plain queue of three in the grown ring, overflowing.
      for (let last = 10; last <= 30; last++) {
        offer(item, last, last);
        if (last < 10 + 2) continue;
        const expected: [number, boolean][] = discardOldest
          ? [
              [last - 2, last > 12],
              [last - 1, false],
              [last, false],
            ]
          : [
              [10, false],
              [11, false],
              [last, last > 12],
            ];
        expect({ last, queue: queued(item) }).toEqual({ last, queue: expected });
      }
      expect(owner.overflows).toBe(1 + 30 - 12);
    });
  }
});
