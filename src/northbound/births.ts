// Birth certificates (Sparkplug 3.0 §4.2.1.1 NBIRTH, §4.2.2.1 DBIRTH, §6.4.19, §6.4.20): every
// metric with its name, alias, datatype, properties, current value and quality.
//
// A DBIRTH of a device of 10,000 tags is one MQTT message of about a megabyte. It is encoded
// into the writer in the gateway's slices (the writer keeps its position), so polling keeps its
// deadlines; the message goes out once complete.
import type { Slicer } from "../sampling/slices.js";
import type { ValueCache } from "../values/value-cache.js";
import type { DeviceRecord } from "./device-records.js";
import { qualityOf, writeSlotValue } from "./metrics.js";
import type { NodeMetric } from "./node-metrics.js";
import { DataType, Quality, type PayloadWriter } from "./sparkplug-codec.js";

/** Names Sparkplug gives meaning to (§6.4.19, §5.17 tck-id-operational-behavior-data-commands-rebirth-*). */
export const BDSEQ = "bdSeq";
export const REBIRTH = "Node Control/Rebirth";

/** The will registered with every CONNECT (§6.4.25): only the bdSeq, Int64, no seq. */
export function encodeNDeath(w: PayloadWriter, bdSeq: number, now: number): Buffer {
  w.reset();
  w.timestamp(now);
  const m = w.beginMetric();
  w.name(BDSEQ);
  w.metricTimestamp(now);
  w.datatype(DataType.Int64);
  w.numberValue(DataType.Int64, bdSeq);
  w.endMetric(m);
  return w.finish();
}

/**
 * The NBIRTH (seq 0, tck-id-payloads-nbirth-seq): bdSeq as in the will of this CONNECT,
 * Node Control/Rebirth false without an alias (tck-id-operational-behavior-data-commands-
 * rebirth-name-aliases), then the node metrics with aliases from `firstAlias` on. Returns the
 * next free alias.
 */
export function encodeNBirth(w: PayloadWriter, bdSeq: number, now: number, nodeMetrics: readonly NodeMetric[], firstAlias: number): number {
  w.reset();
  w.timestamp(now);
  let m = w.beginMetric();
  w.name(BDSEQ);
  w.metricTimestamp(now);
  w.datatype(DataType.Int64);
  w.numberValue(DataType.Int64, bdSeq);
  w.endMetric(m);
  m = w.beginMetric();
  w.name(REBIRTH);
  w.metricTimestamp(now);
  w.datatype(DataType.Boolean);
  w.numberValue(DataType.Boolean, 0);
  w.endMetric(m);
  let alias = firstAlias;
  for (const nm of nodeMetrics) {
    nm.alias = alias++;
    m = w.beginMetric();
    w.name(nm.name);
    w.alias(nm.alias);
    nm.write(w, now, true);
    w.endMetric(m);
  }
  w.seq(0);
  return alias;
}

/**
 * Encodes the metrics of `rec` from tag `from` on until the slicer's clock has reached `end`;
 * returns the index to go on from (rec.tags.length when done). Aliases are assigned
 * from `rec.aliases` (set by the caller). Each tag's value becomes the reported one.
 */
export function encodeDBirthSlice(w: PayloadWriter, rec: DeviceRecord, values: ValueCache, from: number, now: number, slicer: Slicer, end: number): number {
  const tags = rec.tags;
  let i = from;
  for (; i < tags.length; i++) {
    if ((i & 63) === 0 && i !== from && slicer.now() >= end) break;
    const slot = rec.slots[i]!;
    if (slot < 0) continue;
    const t = tags[i]!;
    const type = rec.type(i);
    const m = w.beginMetric();
    w.name(t.name);
    w.alias(rec.aliases[i]!);
    const ts = values.sourceTimestampOf(slot);
    w.metricTimestamp(ts > 0 ? ts : now);
    w.datatype(type);
    const p = w.beginProperties();
    // Properties of a tag (§6.4.8): Ignition's and most hosts' names for unit and range.
    if (t.unit !== undefined) w.stringProperty("engUnit", t.unit.displayName);
    if (t.range !== undefined) {
      w.numberProperty("engLow", DataType.Double, t.range[0]!);
      w.numberProperty("engHigh", DataType.Double, t.range[1]!);
    }
    w.numberProperty("readOnly", DataType.Boolean, t.access === "readwrite" ? 0 : 1);
    const status = values.statusOf(slot);
    const quality = qualityOf(status);
    if (quality !== Quality.Good) w.numberProperty("Quality", DataType.Int32, quality);
    w.endProperties(p);
    writeSlotValue(w, values, slot, type);
    w.endMetric(m);
    rec.forced[i] = 0;
    rec.takeChange(i, values, now);
  }
  return i;
}
