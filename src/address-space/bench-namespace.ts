// The benchmark namespace (issue 3), at index 1 in a config without devices
// (`server.benchNamespace: N`):
// - N UInt64 counters, `Counter<k>`, whose value goes up by one each time the server samples it
//   for a monitored item: the OPC UA sampling test. A client subscribing to them at 10 ms and
//   reading the counter's growth sees how many samples the server really took.
// - 100 writable Int32 variables `BenchmarkValue<i>` at ns=1;i=1001..1100, for read and write
//   load clients.
//
// Decision (the issue asks for both id ranges): counters are numbered i=1..N but skip the ids
// 1001..1100 of the BenchmarkValues, so counter k has id k up to 1000 and k+100 after that;
// `counterNodeId(k)` gives it.
//
// Counters are sampled through DirectSampler: the sampling pass increments a Float64Array slot
// and hands the number to the item (exact up to 2^53, i.e. millions of years at 100 Hz), with no
// DataValue or bigint per sample. Read gets a proper UInt64 DataValue.
import { BuiltinType, IdType, VariantArrayType, numericNodeId, type DataValue, type NodeId } from "../ua/builtins.js";
import { AttributeIds, ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { DirectSampler, SampleSink } from "../subscriptions/sample-sink.js";
import { MemoryNamespace, type Role } from "./memory-namespace.js";
import type { NamespaceRegistry, ReferenceTarget } from "./namespace-registry.js";
import type { AttributeRead, AttributeWrite, NodeManager, NodeReference, NodeSummary, RequestContext } from "./node-manager.js";
import { AccessLevel } from "./ua-node.js";

export const BENCH_NAMESPACE_URI = "urn:fieldgate:bench";
export const BENCHMARK_VALUE_FIRST = 1001;
export const BENCHMARK_VALUE_COUNT = 100;
const ANYONE: readonly Role[] = ["viewer", "operator", "admin"];

/** The numeric id of counter k (1-based). */
export function counterId(k: number): number {
  return k < BENCHMARK_VALUE_FIRST ? k : k + BENCHMARK_VALUE_COUNT;
}

export function counterNodeId(k: number, namespaceIndex = 1): NodeId {
  return numericNodeId(counterId(k), namespaceIndex);
}

export class BenchNamespace implements NodeManager, ReferenceTarget, DirectSampler {
  readonly namespaceIndex: number;
  readonly counterCount: number;
  private readonly memory: MemoryNamespace;
  /** counts[k] is counter k's value (index 0 unused). */
  private readonly counts: Float64Array;
  /** When each counter was last sampled (its source timestamp), ms since 1970. */
  private readonly sampledAt: Float64Array;

  constructor(namespaceIndex: number, registry: NamespaceRegistry, counters: number) {
    this.namespaceIndex = namespaceIndex;
    this.counterCount = counters;
    this.memory = new MemoryNamespace(namespaceIndex, registry);
    this.counts = new Float64Array(counters + 1);
    this.sampledAt = new Float64Array(counters + 1).fill(Date.now());
  }

  /** Builds the nodes (after registration, so that the folder can hang under Objects). */
  populate(): void {
    const m = this.memory;
    const root = m.addFolder({ nodeId: "Bench", browseName: "Bench", parent: numericNodeId(ObjectIds.ObjectsFolder) }).nodeId;
    const counters = m.addFolder({ nodeId: "Bench.Counters", browseName: "Counters", parent: root }).nodeId;
    for (let k = 1; k <= this.counterCount; k++) {
      m.addVariable({
        nodeId: counterNodeId(k, this.namespaceIndex),
        browseName: `Counter${k}`,
        parent: counters,
        dataType: BuiltinType.UInt64,
        description: "Goes up by one each time the server samples it for a monitored item.",
        value: { value: { dataType: BuiltinType.UInt64, arrayType: VariantArrayType.Scalar, value: 0n } },
      });
    }
    const values = m.addFolder({ nodeId: "Bench.Values", browseName: "Values", parent: root }).nodeId;
    for (let i = BENCHMARK_VALUE_FIRST; i < BENCHMARK_VALUE_FIRST + BENCHMARK_VALUE_COUNT; i++) {
      m.addVariable({
        nodeId: numericNodeId(i, this.namespaceIndex),
        browseName: `BenchmarkValue${i}`,
        parent: values,
        dataType: BuiltinType.Int32,
        accessLevel: AccessLevel.CurrentRead | AccessLevel.CurrentWrite,
        writeRoles: ANYONE,
        value: { value: { dataType: BuiltinType.Int32, arrayType: VariantArrayType.Scalar, value: 0 }, sourceTimestamp: Date.now() },
      });
    }
  }

  /** Counter k of a NodeId, or 0 when it is not a counter. */
  counterOf(nodeId: NodeId): number {
    if (nodeId.namespace !== this.namespaceIndex || nodeId.idType !== IdType.Numeric) return 0;
    const id = nodeId.value as number;
    const k = id < BENCHMARK_VALUE_FIRST ? id : id - BENCHMARK_VALUE_COUNT;
    if (id >= BENCHMARK_VALUE_FIRST && id < BENCHMARK_VALUE_FIRST + BENCHMARK_VALUE_COUNT) return 0;
    return k >= 1 && k <= this.counterCount ? k : 0;
  }

  /** A counter's current value (for tests and diagnostics). */
  count(k: number): number {
    return this.counts[k];
  }

  // ---- DirectSampler ------------------------------------------------------------------------

  bindSample(nodeId: NodeId, attributeId: number): number | undefined {
    if (attributeId !== AttributeIds.Value) return undefined;
    const k = this.counterOf(nodeId);
    return k === 0 ? undefined : k;
  }

  sampleInto(handles: readonly number[], sinks: readonly SampleSink[], count: number, now: number): void {
    const counts = this.counts;
    const at = this.sampledAt;
    for (let i = 0; i < count; i++) {
      const k = handles[i];
      const v = counts[k] + 1;
      counts[k] = v;
      at[k] = now;
      sinks[i].offerNumber(BuiltinType.UInt64, v, StatusCodes.Good, now, now);
    }
  }

  // ---- NodeManager --------------------------------------------------------------------------

  read(ctx: RequestContext, items: readonly AttributeRead[], results: DataValue[], indices?: readonly number[]): void {
    this.memory.read(ctx, items, results, indices);
    const n = indices ? indices.length : items.length;
    for (let j = 0; j < n; j++) {
      const i = indices ? indices[j] : j;
      const item = items[i];
      if (item.attributeId !== AttributeIds.Value) continue;
      const k = this.counterOf(item.nodeId);
      if (k === 0) continue;
      results[i] = {
        value: { dataType: BuiltinType.UInt64, arrayType: VariantArrayType.Scalar, value: BigInt(this.counts[k]) },
        sourceTimestamp: this.sampledAt[k],
      };
    }
  }

  write(ctx: RequestContext, items: readonly AttributeWrite[], results: number[], indices?: readonly number[]): void | Promise<void> {
    return this.memory.write(ctx, items, results, indices);
  }

  references(nodeId: NodeId): readonly NodeReference[] | undefined {
    return this.memory.references(nodeId);
  }

  summary(nodeId: NodeId): NodeSummary | undefined {
    return this.memory.summary(nodeId);
  }

  addReference(sourceId: NodeId, referenceTypeId: NodeId, targetId: NodeId, isForward?: boolean): void {
    this.memory.addReference(sourceId, referenceTypeId, targetId, isForward);
  }
}

/** Registers `urn:fieldgate:bench` (the server does so right after namespace 0: index 1) and fills it. */
export function createBenchNamespace(registry: NamespaceRegistry, counters: number): BenchNamespace {
  let ns: BenchNamespace | undefined;
  registry.register(BENCH_NAMESPACE_URI, (index) => (ns = new BenchNamespace(index, registry, counters)));
  ns!.populate();
  return ns!;
}
