// The bench namespace (`server.benchNamespace: N`, only in a config without a device map), at
// index 1 as `urn:fieldgate:bench`, for load clients of any stack:
// - N UInt64 counters `Counter<k>` at ns=1;i=k that count their own polls: polled at the
//   fastest sampling interval the server grants (limits.minSamplingInterval, 10 ms by default),
//   so a client subscribed at that interval sees from the values how many samples the gateway
//   really took (the OPC UA sampling test);
// - 100 writable Int32 `BenchmarkValue<i>` at ns=1;i=1001..1100, for read and write loads.
// Counters skip the ids 1001..1100: counter k has id k up to 1000 and k+100 after that.
//
// They are device tags like any other: two devices of the in-process bench driver
// (drivers/bench), polled by poll groups into the value cache, served by a DeviceNamespace whose
// tags have these numeric NodeIds. So what a load client measures here is the path of a real
// device's tags (DESIGN: a benchmark path that real tags do not take proves nothing).
import { deviceMapSchema, type DeviceConfig, type DeviceMap, type MapDrivers, type TagConfig } from "../config/device-map.js";
import { validateYaml } from "../config/load.js";
import { DeviceNamespace } from "../address-space/device-namespace.js";
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import { numericNodeId, type NodeId } from "../ua/builtins.js";
import type { ValueCache } from "../values/value-cache.js";
import { BENCH_DRIVER, COUNTER_REGISTERS } from "../../drivers/bench/index.js";
import type { ModbusDevice, ModbusTag } from "../../drivers/modbus/protocol.js";

export const BENCH_NAMESPACE_URI = "urn:fieldgate:bench";
export const BENCHMARK_VALUE_FIRST = 1001;
export const BENCHMARK_VALUE_COUNT = 100;

/** The numeric id of counter k (1-based). */
export function counterId(k: number): number {
  return k < BENCHMARK_VALUE_FIRST ? k : k + BENCHMARK_VALUE_COUNT;
}

export function counterNodeId(k: number, namespaceIndex = 1): NodeId {
  return numericNodeId(counterId(k), namespaceIndex);
}

/** The counter a NodeId names (1..counters), or 0. */
export function counterOf(nodeId: NodeId, counters: number, namespaceIndex = 1): number {
  if (nodeId.namespace !== namespaceIndex || typeof nodeId.value !== "number") return 0;
  const id = nodeId.value;
  if (id >= BENCHMARK_VALUE_FIRST && id < BENCHMARK_VALUE_FIRST + BENCHMARK_VALUE_COUNT) return 0;
  const k = id < BENCHMARK_VALUE_FIRST ? id : id - BENCHMARK_VALUE_COUNT;
  return k >= 1 && k <= counters ? k : 0;
}

// One validated device and tag of each kind give every key its default; the bench map copies
// them, so it is a DeviceMap as validation makes it, without parsing 16,384 tags of YAML.
const TEMPLATE = `devices:
  - name: Counters
    driver: simulator
    description: UInt64 counters that count their own polls.
    writeRoles: [viewer, operator, admin]
    tags: [{ name: Counter1, address: input:0, type: uint64 }]
  - name: Values
    driver: simulator
    description: Int32 values anyone may write, for read and write loads.
    writeRoles: [viewer, operator, admin]
    tags: [{ name: BenchmarkValue1001, address: holding:0, type: int32, access: readwrite }]
`;

/**
 * The bench namespace's devices: `counters` counters and the 100 BenchmarkValues, polled every
 * `rate` ms; their template validated by `drivers` (the gateway's, which have the simulator).
 */
export function benchDeviceMap(counters: number, rate: number, drivers: MapDrivers): DeviceMap {
  const parsed = validateYaml(deviceMapSchema(drivers), TEMPLATE, "bench-namespace.ts");
  if (!parsed.ok) throw new Error(`bench map template: ${parsed.issues.map((i) => i.message).join("; ")}`);
  const [c, v] = parsed.value.devices as [ModbusDevice, ModbusDevice];
  const device = (d: ModbusDevice, tags: ModbusTag[]): ModbusDevice => ({
    ...d,
    // The in-process driver: one block per poll group, whatever its size.
    driver: BENCH_DRIVER,
    rate,
    maxRegistersPerRead: Number.MAX_SAFE_INTEGER,
    maxBitsPerRead: Number.MAX_SAFE_INTEGER,
    maxGap: 0,
    tags,
  });
  const ct = c.tags[0]!;
  const vt = v.tags[0]!;
  const counterTags: ModbusTag[] = new Array(counters);
  for (let k = 1; k <= counters; k++) counterTags[k - 1] = { ...ct, name: `Counter${k}`, address: { area: "input", offset: (k - 1) * COUNTER_REGISTERS }, rate };
  const valueTags: ModbusTag[] = new Array(BENCHMARK_VALUE_COUNT);
  for (let i = 0; i < BENCHMARK_VALUE_COUNT; i++) {
    valueTags[i] = { ...vt, name: `BenchmarkValue${BENCHMARK_VALUE_FIRST + i}`, address: { area: "holding", offset: 2 * i }, rate };
  }
  return { buses: {}, devices: [device(c, counterTags), device(v, valueTags)] };
}

/** The numeric NodeId of a bench tag, from its address (counter k at input:4(k-1), value i at holding:2(i-1001)). */
function benchTagNodeId(device: string, tag: TagConfig, namespaceIndex: number): NodeId {
  const offset = (tag as ModbusTag).address.offset;
  if (device === "Counters") return counterNodeId(offset / COUNTER_REGISTERS + 1, namespaceIndex);
  return numericNodeId(BENCHMARK_VALUE_FIRST + offset / 2, namespaceIndex);
}

/** Registers `urn:fieldgate:bench` (the server does so right after namespace 0: index 1) with Objects/Bench. */
export function createBenchNamespace(registry: NamespaceRegistry, values: ValueCache): DeviceNamespace {
  return new DeviceNamespace(registry, {
    values,
    uri: BENCH_NAMESPACE_URI,
    folder: { nodeId: "Bench", browseName: "Bench", description: "The bench namespace: counters and values for load clients." },
    tagNodeId: benchTagNodeId,
  });
}
