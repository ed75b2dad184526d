// The edge node's own metrics (Sparkplug 3.0 §4.2.1.1: the NBIRTH carries every metric the node
// will report; §4.2.1.2 NDATA their changes): the gateway's health from Objects/System
// (`System/CpuLoad`, ...) and the northbound's counters (`Northbound/Buffered`, ...). Sampled
// at the System object's interval; only changed ones go into an NDATA.
import type { MemoryNamespace, MemoryVariable } from "../address-space/memory-namespace.js";
import { BuiltinType, numericNodeId, type DataValue } from "../ua/builtins.js";
import { ReferenceTypeIds } from "../ua/generated/node-ids.js";
import { SYSTEM_OBJECT_ID } from "../address-space/device-namespace.js";
import { dataTypeOf, qualityOf, writeObjectValue } from "./metrics.js";
import { DataType, Quality, type PayloadWriter } from "./sparkplug-codec.js";

export interface NodeMetric {
  readonly name: string;
  /** Assigned at each NBIRTH. */
  alias: number;
  /** Whether the value changed since it was last written. */
  changed(): boolean;
  /** Writes the metric's timestamp, datatype, quality (and in births its properties) and value, taking it as reported. */
  write(w: PayloadWriter, now: number, birth: boolean): void;
}

/** A variable of Objects/System as a metric. */
class VariableMetric implements NodeMetric {
  alias = 0;
  private last: DataValue | undefined = undefined;
  private readonly type: DataType;

  constructor(
    readonly name: string,
    private readonly variable: MemoryVariable,
  ) {
    this.type = dataTypeOf(variable.expectedType as BuiltinType);
  }

  changed(): boolean {
    return this.variable.value !== this.last;
  }

  write(w: PayloadWriter, now: number, birth: boolean): void {
    const dv = this.variable.value;
    this.last = dv;
    w.metricTimestamp(dv.sourceTimestamp ?? now);
    w.datatype(this.type);
    const quality = qualityOf(dv.statusCode ?? 0);
    if (quality !== Quality.Good || birth) {
      const p = w.beginProperties();
      if (birth) w.numberProperty("readOnly", DataType.Boolean, 1);
      if (quality !== Quality.Good) w.numberProperty("Quality", DataType.Int32, quality);
      w.endProperties(p);
    }
    const v = dv.value?.value;
    if (v === undefined || v === null) w.isNull();
    else writeObjectValue(w, v, this.type);
  }
}

/** A counter of the northbound itself as a UInt64 metric. */
class CounterMetric implements NodeMetric {
  alias = 0;
  private last = -1;

  constructor(
    readonly name: string,
    private readonly read: () => number,
  ) {}

  changed(): boolean {
    return this.read() !== this.last;
  }

  write(w: PayloadWriter, now: number): void {
    const n = this.read();
    this.last = n;
    w.metricTimestamp(now);
    w.datatype(DataType.UInt64);
    w.numberValue(DataType.UInt64, n);
  }
}

/** The variables of Objects/System (its HasComponent children), in browse order. */
export function systemMetrics(ns: MemoryNamespace): NodeMetric[] {
  const refs = ns.references(numericNodeId(SYSTEM_OBJECT_ID, ns.namespaceIndex)) ?? [];
  const out: NodeMetric[] = [];
  for (const r of refs) {
    if (!r.isForward || r.referenceTypeId.namespace !== 0 || r.referenceTypeId.value !== ReferenceTypeIds.HasComponent) continue;
    const v = ns.variable(r.targetId);
    if (v === undefined || dataTypeOf(v.expectedType as BuiltinType) === DataType.Unknown) continue;
    out.push(new VariableMetric(`System/${v.browseName.name}`, v));
  }
  return out;
}

export function counterMetric(name: string, read: () => number): NodeMetric {
  return new CounterMetric(name, read);
}
