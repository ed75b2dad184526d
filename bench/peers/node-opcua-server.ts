// The node-opcua peer: what a user would pick instead of fieldgate, exposing the nodes the bench
// scenarios use, started like the gateway (its own process, one "listening" line on stdout).
// `node [--import dist/bench/peers/diagnostics-preload.js] dist/bench/peers/node-opcua-server.js
//    [--port N] [--bench-values N] [--counters N] [--tags N] [--pki DIR]`
//
// Nodes, with the NodeIds fieldgate gives them:
// - urn:fieldgate:test (fieldgate's test namespace): `s=Scalar.<Type>` for the scalar types the
//   read scenarios use, writable, and `s=ReadOnly.Int32`;
// - urn:fieldgate:bench (fieldgate's `server.benchNamespace`): --bench-values (default 100)
//   writable Int32 `BenchmarkValue<i>` at i=1001..; --counters UInt64 `Counter<k>` at i=k (k+100
//   past 1000, as fieldgate numbers them) that count their reads, so each sample sees the next
//   value;
// - urn:fieldgate:devices: --tags device-like UInt16 tags under Objects/Devices, 1000 per device,
//   `s=plc<d>.tag<t>` (fieldgate's `<device>.<tag>` form).
// The server runs with SecurityPolicy None and anonymous access, like the bench's fieldgate
// config, and with its session and operation limits raised so that no limit of node-opcua's
// defaults, rather than its speed, decides a figure.
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { OPCUACertificateManager } from "node-opcua-certificate-manager";
import { nodesets } from "node-opcua-nodesets";
import { OPCUAServer } from "node-opcua-server";
import { DataType, Variant, VariantArrayType } from "node-opcua-variant";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    "bench-values": { type: "string", default: "100" },
    counters: { type: "string", default: "0" },
    tags: { type: "string", default: "0" },
    pki: { type: "string" },
    "max-sessions": { type: "string", default: "1000" },
  },
});

function count(name: string, text: string | undefined): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name}: expected a non-negative integer, got "${text}"`);
  return n;
}

const port = count("port", values.port);
const benchValues = count("bench-values", values["bench-values"]);
const counters = count("counters", values.counters);
const tags = count("tags", values.tags);
const maxSessions = count("max-sessions", values["max-sessions"]);
// A PKI kept across runs: the peer's certificate is made once, as fieldgate's is (first start),
// so that start-to-listening compares starts with an existing certificate on both sides.
const pkiRoot = values.pki ?? join(tmpdir(), "fieldgate-bench-node-opcua-pki");
mkdirSync(pkiRoot, { recursive: true });

const SCALARS: ReadonlyArray<readonly [string, DataType, unknown]> = [
  ["Boolean", DataType.Boolean, false],
  ["SByte", DataType.SByte, 0],
  ["Byte", DataType.Byte, 0],
  ["Int16", DataType.Int16, 0],
  ["UInt16", DataType.UInt16, 0],
  ["Int32", DataType.Int32, 0],
  ["UInt32", DataType.UInt32, 0],
  ["Float", DataType.Float, 0],
  ["Double", DataType.Double, 0],
  ["String", DataType.String, ""],
  ["DateTime", DataType.DateTime, new Date(Date.UTC(2024, 0, 1))],
];

const server = new OPCUAServer({
  port,
  hostname: "127.0.0.1",
  nodeset_filename: [nodesets.standard],
  maxConnectionsPerEndpoint: maxSessions,
  serverCapabilities: {
    maxSessions,
    operationLimits: {
      maxNodesPerRead: 10000,
      maxNodesPerWrite: 10000,
      maxNodesPerBrowse: 1000,
    },
  },
  allowAnonymous: true,
  // SecurityPolicy None, MessageSecurityMode None (1): the mode the bench measures on both sides.
  securityPolicies: ["http://opcfoundation.org/UA/SecurityPolicy#None" as never],
  securityModes: [1 as never],
  // node-opcua makes its own certificate under this folder on first start.
  serverCertificateManager: new OPCUACertificateManager({ rootFolder: pkiRoot, automaticallyAcceptUnknownCertificate: true }),
});

await server.initialize();
const addressSpace = server.engine.addressSpace;
if (!addressSpace) throw new Error("node-opcua: no address space after initialize()");
const test = addressSpace.registerNamespace("urn:fieldgate:test");
const objects = addressSpace.rootFolder.objects;
const testFolder = test.addFolder(objects, { browseName: "Test", nodeId: "s=Test" });
const scalarFolder = test.addFolder(testFolder, { browseName: "Scalar", nodeId: "s=Scalar" });
const RW = "CurrentRead | CurrentWrite";

for (const [name, dataType, initial] of SCALARS) {
  test.addVariable({
    organizedBy: scalarFolder,
    browseName: name,
    nodeId: `s=Scalar.${name}`,
    dataType: DataType[dataType],
    accessLevel: RW,
    userAccessLevel: RW,
    minimumSamplingInterval: 0,
    value: new Variant({ dataType, value: initial }),
  });
}
test.addVariable({
  organizedBy: testFolder,
  browseName: "ReadOnlyInt32",
  nodeId: "s=ReadOnly.Int32",
  dataType: "Int32",
  minimumSamplingInterval: 0,
  value: new Variant({ dataType: DataType.Int32, value: 42 }),
});
const bench = addressSpace.registerNamespace("urn:fieldgate:bench");
const benchFolder = bench.addFolder(objects, { browseName: "Bench", nodeId: "s=Bench" });
const BENCHMARK_VALUE_FIRST = 1001;
for (let i = BENCHMARK_VALUE_FIRST; i < BENCHMARK_VALUE_FIRST + benchValues; i++) {
  bench.addVariable({
    organizedBy: benchFolder,
    browseName: `BenchmarkValue${i}`,
    nodeId: `i=${i}`,
    dataType: "Int32",
    accessLevel: RW,
    userAccessLevel: RW,
    minimumSamplingInterval: 0,
    value: new Variant({ dataType: DataType.Int32, value: 0 }),
  });
}
for (let k = 1; k <= counters; k++) {
  let n = 0;
  bench.addVariable({
    organizedBy: benchFolder,
    browseName: `Counter${k}`,
    nodeId: `i=${k < BENCHMARK_VALUE_FIRST ? k : k + benchValues}`,
    dataType: "UInt64",
    // 10 ms: the sampling rate of the capacity search (node-opcua warns about getters at 0).
    minimumSamplingInterval: 10,
    // UInt64 as [high, low] words, node-opcua's representation.
    value: { get: () => new Variant({ dataType: DataType.UInt64, arrayType: VariantArrayType.Scalar, value: [0, ++n >>> 0] }) },
  });
}
if (tags > 0) {
  const devicesNs = addressSpace.registerNamespace("urn:fieldgate:devices");
  const devices = devicesNs.addFolder(objects, { browseName: "Devices", nodeId: "s=Devices" });
  const perDevice = 1000; // as bench/targets/fieldgate-config.ts TAGS_PER_DEVICE
  for (let d = 0; d * perDevice < tags; d++) {
    const device = devicesNs.addObject({ organizedBy: devices, browseName: `plc${d}`, nodeId: `s=plc${d}` });
    for (let t = 0; t < perDevice && d * perDevice + t < tags; t++) {
      devicesNs.addVariable({
        componentOf: device,
        browseName: `tag${t}`,
        nodeId: `s=plc${d}.tag${t}`,
        dataType: "UInt16",
        minimumSamplingInterval: 100,
        value: new Variant({ dataType: DataType.UInt16, value: t }),
      });
    }
  }
}

await server.start();
const actualPort = server.endpoints[0]?.port ?? port;
console.log(`node-opcua: listening on opc.tcp://127.0.0.1:${actualPort}`);

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  server.shutdown(0).then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
