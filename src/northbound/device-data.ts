// A device's changes of one poll cycle (DESIGN: poll group -> value cache -> northbound): the
// value cache tells the edge node of every value a poll hands on and of the end of each device's
// cycle; the tags whose value or quality changed go out as one DDATA (Sparkplug 3.0 §4.2.2.2,
// §6.4.22: report by exception, alias only, the source timestamp of each value), or into the
// store while there is no session to publish in.
//
// Each metric carries its datatype although §6.4.6 (tck-id-payloads-metric-datatype-not-req) says
// DATA messages SHOULD NOT: Eclipse Tahu's JavaScript decoder (sparkplug-payload, under most
// Node-based host tools) reads a metric's value only through its datatype and hands out null
// without it. Two bytes per metric buy every such consumer.
import type { Slicer } from "../sampling/slices.js";
import type { ValueCache } from "../values/value-cache.js";
import type { DeviceRecord } from "./device-records.js";
import type { ForwardStore } from "./forward-store.js";
import { qualityOf, storedValueOf, writeSlotValue, writeStoredValue, type StoredValue } from "./metrics.js";
import { DataType, Quality, type PayloadWriter } from "./sparkplug-codec.js";
import { StoredKind } from "./forward-store.js";

/** Most metrics in one DDATA: a device of 10,000 changed tags sends a few messages of bounded size. */
export const MAX_DATA_METRICS = 4000;

/**
 * Encodes the changed tags of `rec`'s pending list into `w` (a DDATA body: timestamp and metrics,
 * no seq), at most MAX_DATA_METRICS, stopping early once the slicer's clock has reached `end`.
 * Returns the number of metrics written; the tags not yet looked at stay pending.
 */
export function encodeChanges(w: PayloadWriter, rec: DeviceRecord, values: ValueCache, now: number, slicer: Slicer, end: number): number {
  w.reset();
  w.timestamp(now);
  let written = 0;
  let k = 0;
  const count = rec.pendingCount;
  for (; k < count && written < MAX_DATA_METRICS; k++) {
    if ((k & 255) === 255 && slicer.now() >= end) break;
    const i = rec.pending[k]!;
    rec.marked[i] = 0;
    const slot = rec.slots[i]!;
    if (slot < 0) continue;
    const before = rec.lastStatus[i]!;
    const ts = rec.takeChange(i, values, now);
    if (ts < 0) continue;
    const m = w.beginMetric();
    w.alias(rec.aliases[i]!);
    w.metricTimestamp(ts);
    w.datatype(rec.type(i));
    const status = values.statusOf(slot);
    const quality = qualityOf(status);
    // §6.4.9.1: Quality only when not GOOD, and GOOD again once after a bad one.
    if (quality !== Quality.Good || qualityOf(before) !== Quality.Good) {
      const p = w.beginProperties();
      w.numberProperty("Quality", DataType.Int32, quality);
      w.endProperties(p);
    }
    writeSlotValue(w, values, slot, rec.type(i));
    w.endMetric(m);
    written++;
  }
  rec.dropPending(k);
  return written;
}

const scratch: StoredValue = { kind: StoredKind.Null, num: 0, obj: undefined };

/** Stages the changed tags of `rec` in the store (no session to publish them in). Returns how many. */
export function storeChanges(rec: DeviceRecord, store: ForwardStore, values: ValueCache, now: number): number {
  let n = 0;
  for (let k = 0; k < rec.pendingCount; k++) {
    const i = rec.pending[k]!;
    rec.marked[i] = 0;
    const slot = rec.slots[i]!;
    if (slot < 0) continue;
    const ts = rec.takeChange(i, values, now);
    if (ts < 0) continue;
    let id = rec.storeIds[i]!;
    if (id === 0) id = rec.storeIds[i] = store.metricId(rec.name, rec.tags[i]!.name);
    storedValueOf(values, slot, scratch);
    store.append(id, ts, qualityOf(values.statusOf(slot)), scratch.kind, scratch.num, scratch.obj);
    n++;
  }
  rec.pendingCount = 0;
  return n;
}

/** One stored change as a historical metric of a DDATA (§6.4.6 is_historical). */
export function writeHistorical(w: PayloadWriter, alias: number, type: DataType, time: number, quality: number, kind: StoredKind, num: number, obj: string | bigint | undefined): void {
  const m = w.beginMetric();
  w.alias(alias);
  w.metricTimestamp(time);
  w.datatype(type);
  w.historical();
  if (quality !== Quality.Good) {
    const p = w.beginProperties();
    w.numberProperty("Quality", DataType.Int32, quality);
    w.endProperties(p);
  }
  writeStoredValue(w, kind, num, obj, type);
  w.endMetric(m);
}
