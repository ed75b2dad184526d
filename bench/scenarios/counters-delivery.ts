// Where the counters scenario's lost samples went, on the path a client sees (counters-load.ts).
// Each counter counts the samples the server took of it, so between two notifications of an item
// that the subscriber received, value - previous - 1 samples were taken and not received. Part 4
// §5.12.1.5: when a full queue discards a notification, the server sets the Overflow InfoBit on
// the oldest one it keeps (discardOldest), the notification right after the gap: such a gap was
// lost in the item's queue; a gap without it was lost some other way (a lost message). Samples
// not taken at all are the counter's shortfall against the sampling interval.
//
// The server's side, where it has them (fieldgate's diagnostics namespace): its queue overflows,
// those of them while the subscription waited for a Publish request the client had not sent
// (Part 4 §5.13.1.2, Late), and how long subscriptions waited so, or for a channel busy with a
// large response. The namespace refreshes once a second: each reading carries the time of its
// refresh, so the window's deltas are over the server's own span between two refreshes.
import type { DataValue } from "../../src/ua/builtins.js";
import type { UaClientChannel } from "../client/channel.js";
import { readValues, resolveNodes, valueReadOf } from "../client/nodes.js";

/** Part 4 §7.39.1: InfoType DataValue (bits 10-11 = 01) and its Overflow bit (7). */
export function hasOverflowBit(status: number): boolean {
  return (status & 0x0c00) === 0x0400 && (status & 0x0080) !== 0;
}

/** Per-item counts of the samples between received notifications that the subscriber did not get. */
export class GapCounts {
  /** Gaps closed by a notification with the Overflow InfoBit: lost in the item's queue. */
  readonly overflow: Uint32Array;
  /** Gaps closed by one without it. */
  readonly other: Uint32Array;
  /** Notifications received with the Overflow InfoBit. */
  overflowBits = 0;
  /** Notifications whose counter was not above the item's previous one: out of order, or repeated. */
  outOfOrder = 0;

  constructor(items: number) {
    this.overflow = new Uint32Array(items + 1);
    this.other = new Uint32Array(items + 1);
  }

  /** The samples between an item's previous notification received (`previous`) and this one (`value`). */
  add(handle: number, previous: number, value: number, overflow: boolean): void {
    if (overflow) this.overflowBits++;
    const gap = value - previous - 1;
    if (gap < 0) this.outOfOrder++;
    if (!(gap > 0)) return;
    if (overflow) this.overflow[handle] += gap;
    else this.other[handle] += gap;
  }
}

/** A share of the expected samples: the mean over the items, and the largest of one item. */
export interface Share {
  mean: number;
  worst: number;
}

export interface Delivery {
  /** Not taken by the server (its counter's shortfall). */
  sampling: Share;
  /** Taken and lost in the item's queue (a gap before an Overflow InfoBit). */
  queue: Share;
  /** Taken and lost with no InfoBit to say so. */
  other: Share;
  overflowBits: number;
  itemsWithOverflow: number;
  /** Notifications not above their item's previous counter (Part 4 §5.12.1.5: a queue delivers in order). */
  outOfOrder: number;
}

/**
 * What each item lost and where, as shares of its expected samples (span between its first and
 * last notification / interval). A queue of one replaces its value without the Overflow bit
 * (Part 4 §5.12.1.5): its gaps are all the queue's.
 */
export function deliveryOf(
  t: { readonly firstTs: Float64Array; readonly lastTs: Float64Array; readonly firstValue: Float64Array; readonly lastValue: Float64Array; readonly gaps: GapCounts },
  items: number,
  samplingIntervalMs: number,
  queueSize: number,
): Delivery {
  const gaps = t.gaps;
  const sampling = { mean: 0, worst: 0 };
  const queue = { mean: 0, worst: 0 };
  const other = { mean: 0, worst: 0 };
  let itemsWithOverflow = 0;
  const add = (s: Share, x: number) => {
    s.mean += x / items;
    if (x > s.worst) s.worst = x;
  };
  for (let k = 1; k <= items; k++) {
    const expected = (t.lastTs[k] - t.firstTs[k]) / samplingIntervalMs;
    if (gaps.overflow[k] > 0) itemsWithOverflow++;
    if (!(expected > 0)) {
      // An item without two notifications in the window lost everything, where is not known.
      add(other, 1);
      continue;
    }
    add(sampling, Math.max(0, 1 - (t.lastValue[k] - t.firstValue[k]) / expected));
    const inQueue = queueSize === 1 ? gaps.overflow[k] + gaps.other[k] : gaps.overflow[k];
    add(queue, inQueue / expected);
    add(other, (gaps.overflow[k] + gaps.other[k] - inQueue) / expected);
  }
  return { sampling, queue, other, overflowBits: gaps.overflowBits, itemsWithOverflow, outOfOrder: gaps.outOfOrder };
}

/** The server's delivery counters at one refresh of its diagnostics namespace; NaN where it has none. */
export interface ServerDelivery {
  /** When the namespace was refreshed (the values' source timestamp), ms since the epoch. */
  at: number;
  queueOverflows: number;
  lateQueueOverflows: number;
  latePublishMs: number;
  channelWaitMs: number;
  latePublishes: number;
}

const SUBS = "nsu=urn:fieldgate:diagnostics;s=Subscriptions.";
const NAMES = ["QueueOverflows", "LateQueueOverflows", "LatePublishTime", "ChannelWaitTime", "LatePublishes"] as const;

function numberOf(dv: DataValue | undefined): number {
  const v = dv?.value?.value;
  if ((dv?.statusCode ?? 0) >>> 30 !== 0) return NaN;
  return typeof v === "bigint" ? Number(v) : typeof v === "number" ? v : NaN;
}

/** Reads the server's delivery counters (a server without them, or without the namespace, gives NaN). */
export async function readServerDelivery(ch: UaClientChannel): Promise<ServerDelivery> {
  const none: ServerDelivery = { at: NaN, queueOverflows: NaN, lateQueueOverflows: NaN, latePublishMs: NaN, channelWaitMs: NaN, latePublishes: NaN };
  try {
    const nodes = await resolveNodes(ch, NAMES.map((n) => `${SUBS}${n}`));
    const values = await readValues(ch, nodes.map(valueReadOf));
    return {
      at: values[0]?.sourceTimestamp ?? NaN,
      queueOverflows: numberOf(values[0]),
      lateQueueOverflows: numberOf(values[1]),
      latePublishMs: numberOf(values[2]),
      channelWaitMs: numberOf(values[3]),
      latePublishes: numberOf(values[4]),
    };
  } catch {
    return none;
  }
}

/** The counters' change from `a` to `b`, over the server's span between their refreshes. */
export function serverDelta(a: ServerDelivery, b: ServerDelivery): ServerDelivery {
  return {
    at: b.at - a.at,
    queueOverflows: b.queueOverflows - a.queueOverflows,
    lateQueueOverflows: b.lateQueueOverflows - a.lateQueueOverflows,
    latePublishMs: b.latePublishMs - a.latePublishMs,
    channelWaitMs: b.channelWaitMs - a.channelWaitMs,
    latePublishes: b.latePublishes - a.latePublishes,
  };
}

const pct = (x: number) => `${(x * 100).toFixed(2)} %`;

/**
 * The verdict: the mean item's samples lost in sampling, in the queue, and waiting for Publish
 * (the queue's losses split by the share of the server's overflows that happened while the
 * subscription waited for a request; without the server's counts, all of them "in the queue").
 */
export function verdictOf(d: Delivery, server: ServerDelivery): { sampling: number; queue: number; publish: number; other: number; text: string } {
  const lateShare = server.queueOverflows > 0 && Number.isFinite(server.lateQueueOverflows) ? server.lateQueueOverflows / server.queueOverflows : 0;
  const publish = d.queue.mean * lateShare;
  const queue = d.queue.mean - publish;
  const parts = [`lost in sampling ${pct(d.sampling.mean)}`, `lost in the queue ${pct(queue)}`, `lost waiting for Publish ${pct(publish)}`];
  if (d.other.mean > 0) parts.push(`lost otherwise ${pct(d.other.mean)}`);
  const split = Number.isFinite(server.lateQueueOverflows) ? "" : " (the server does not say which overflows waited for Publish)";
  return { sampling: d.sampling.mean, queue, publish, other: d.other.mean, text: `${parts.join(" / ")} (mean per item)${split}` };
}
