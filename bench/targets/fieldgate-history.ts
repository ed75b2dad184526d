// Preload of the fieldgate target for a case that needs stored history (ScenarioNodes.history):
// `node --import <this module> <root>/dist/src/cli.js run ...`, so the gateway runs as shipped
// (its CLI, flags, signals, diagnostics) and gets, from outside, what no shipped config gives
// beside the bench namespace: one node with history to read.
//
// Before the CLI starts: the node's namespace index is asked of a server built from the same
// config that never starts (the index is the server's to give), the samples are written into
// the config's history database with fillHistory (the store's own writer, so before the
// gateway opens it: a store loads its series when it opens), and FieldgateServer.prototype.start
// of the checkout under test is wrapped to register the namespace with the node
// (BENCH_HISTORY_NODE_TEXT, Double, HistoryRead access) first. Nothing in src/ knows of it, and
// HistoryRead of the node takes the path of any historized tag: the service, its checks and the
// history backend of the checkout under test.
//
// Parameters come in FIELDGATE_BENCH_HISTORY (JSON, HistoryPreloadParams). Worker threads see the
// same environment and load preloads too: only the main thread acts.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { isMainThread } from "node:worker_threads";
import { BENCH_HISTORY_NODE, BENCH_HISTORY_URI, fillHistory } from "../scenarios/history-read-load.js";
import { serverModule } from "./server-module.js";

export const HISTORY_PRELOAD_ENV = "FIELDGATE_BENCH_HISTORY";

export interface HistoryPreloadParams {
  /** The checkout under test: its dist/ is what the CLI runs. */
  root: string;
  /** The gateway.yaml the CLI is given. */
  config: string;
  samples: number;
  startTime: number;
  intervalMs: number;
}

interface Registry {
  register(uri: string, manager?: unknown): number;
}

interface ServerLike {
  readonly registry: Registry;
  readonly history: { close(): unknown };
  start(): Promise<void>;
}

interface ServerClass {
  new (config: unknown, log: unknown): ServerLike;
  prototype: ServerLike;
}

async function prepare(p: HistoryPreloadParams): Promise<void> {
  const dist = (f: string) => pathToFileURL(join(p.root, "dist", f)).href;
  const { loadGatewayConfig } = (await import(dist("src/config/load.js"))) as {
    loadGatewayConfig(file: string): { dataDir: string; history: { database?: string } };
  };
  const { FieldgateServer } = (await import(serverModule(p.root))) as { FieldgateServer: ServerClass };
  const { MemoryNamespace } = (await import(dist("src/address-space/memory-namespace.js"))) as {
    MemoryNamespace: new (ns: number, registry: Registry) => { addVariable(o: object): unknown };
  };
  const { AccessLevel } = (await import(dist("src/address-space/ua-node.js"))) as { AccessLevel: { CurrentRead: number; HistoryRead: number } };
  const { BuiltinType } = (await import(dist("src/ua/builtins.js"))) as { BuiltinType: { Double: number } };

  const config = loadGatewayConfig(p.config);
  const quiet = { info() {}, warn: (m: string) => process.stderr.write(`bench history preload: ${m}\n`) };
  const probe = new FieldgateServer(config, quiet);
  const ns = probe.registry.register(BENCH_HISTORY_URI);
  await probe.history.close();
  await fillHistory({
    dataDir: config.dataDir,
    database: config.history.database,
    node: `ns=${ns};s=${BENCH_HISTORY_NODE}`,
    samples: p.samples,
    startTime: p.startTime,
    intervalMs: p.intervalMs,
  });

  const start = FieldgateServer.prototype.start;
  FieldgateServer.prototype.start = function (this: ServerLike): Promise<void> {
    const index = this.registry.register(BENCH_HISTORY_URI);
    if (index !== ns) throw new Error(`bench history preload: ${BENCH_HISTORY_URI} got index ${index}, the stored samples are under ${ns}`);
    const mem = new MemoryNamespace(ns, this.registry);
    this.registry.register(BENCH_HISTORY_URI, mem);
    mem.addVariable({
      nodeId: BENCH_HISTORY_NODE,
      browseName: BENCH_HISTORY_NODE,
      dataType: BuiltinType.Double,
      accessLevel: AccessLevel.CurrentRead | AccessLevel.HistoryRead,
      historizing: true,
    });
    return start.call(this);
  };
}

const text = process.env[HISTORY_PRELOAD_ENV];
if (isMainThread && text !== undefined) {
  delete process.env[HISTORY_PRELOAD_ENV];
  await prepare(JSON.parse(text) as HistoryPreloadParams);
}
