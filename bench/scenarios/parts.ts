// Scenario `parts`: what each part of the gateway costs in memory at rest. The gateway runs the
// shipped config (the target's own config/gateway.yaml and config/devices.yaml, as `npm start`
// runs them; only dataDir and the ports are the case's), once as shipped and once with each part
// off or used, a fresh process pinned to the server core for every case, left alone --settle
// seconds (after its action, when it has one) before it is read. Bare Node with the gateway's
// flags is the floor. Per case: RssAnon (the anonymous part of the RSS: V8's heaps, malloc's
// arenas, thread stacks; what the gateway's own memory is), the RSS (with the pages of the node
// binary and the libraries it touched), the main thread's V8 heap (the server's own report),
// the threads, and the load average when the case started.
//
// Cases (--only NAME picks some, by a part of the name):
//   node floor              idle-floor.js with this checkout's flags and environment (fieldgate only)
//   shipped                 config/gateway.yaml and its device map: the simulator, one tag with
//                           history, the status page, the signing security policies
//   without the page        web.enabled: false
//   without history         the map's `history: true` removed: the history writer never starts
//   without devices         no device map (no simulator, no history)
//   without policies        securityPolicies: [None] (no PKI, no node-opcua-crypto)
//   core                    no device map, no page, None only
//   with the northbound     a Sparkplug B edge node to a mosquitto of the case's own
//   after a HistoryRead     one HistoryRead of simulator.temperature, then settled: its reader's thread
//   after a reload          SIGHUP (the map validated on a worker, applied), then settled
//   with the page open      the page and /api/status fetched once, then settled
//   N tags                  the shipped config with a map of --tags simulator tags polled every second
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { parseDocument, type Document } from "yaml";
import { requestReport } from "../harness/case.js";
import { Broker } from "../harness/broker.js";
import { memoryOf, pinnedCommand, type MemoryFigures } from "../harness/proc.js";
import { figuresWithoutRequests, type CaseResult } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, sleep, type BenchContext, type CommonOptions, type Scenario } from "../harness/scenario.js";
import type { RunningServer, ServerTarget } from "../harness/target.js";
import { GATEWAY_ENV, GATEWAY_NODE_FLAGS } from "../../src/runtime-flags.js";
import { deviceMapYaml } from "../targets/fieldgate-config.js";
import { HISTORY_READ_LOAD, type HistoryReadLoadParams } from "./history-read-load.js";

export interface PartsScenarioOptions extends CommonOptions {
  settleSeconds: number;
  tags: number;
  /** Cases whose name contains one of these (all when empty). */
  only: string[];
}

const USAGE = `npm run bench -- parts [options]
  --settle S          seconds a case is left alone before it is read (default 15; after its
                      action again)
  --tags N            tags of the "N tags" case (default 10000)
  --only TEXT         only the cases whose name contains TEXT (repeatable): floor, shipped,
                      page, history, devices, policies, core, northbound, HistoryRead, reload,
                      tags
${COMMON_USAGE}`;

export function parsePartsOptions(argv: readonly string[]): PartsScenarioOptions | null {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: { ...COMMON_OPTIONS, settle: { type: "string" }, tags: { type: "string" }, only: { type: "string", multiple: true } },
  });
  if (values.help) return null;
  return {
    ...commonFrom(values),
    settleSeconds: positive("settle", values.settle, 15, false),
    tags: positive("tags", values.tags, 10_000),
    only: values.only ?? [],
  };
}

/** What a case changes in the shipped config, and does once the gateway runs. */
interface PartCase {
  readonly name: string;
  /** The device map: the shipped one, without its `history: true`, none, or --tags generated tags. */
  readonly map?: "shipped" | "no history" | "none" | "tags";
  readonly page?: boolean;
  readonly policiesNone?: boolean;
  readonly northbound?: boolean;
  /** Done after the first settle; the case settles again before it is read. */
  readonly action?: (server: RunningServer, ctx: BenchContext) => Promise<void>;
}

function cases(tags: number): PartCase[] {
  return [
    { name: "shipped" },
    { name: "without the page", page: false },
    { name: "without history", map: "no history" },
    { name: "without devices", map: "none" },
    { name: "without policies", policiesNone: true },
    { name: "core", map: "none", page: false, policiesNone: true },
    { name: "with the northbound", northbound: true },
    { name: "after a HistoryRead", action: historyRead },
    { name: "after a reload", action: reload },
    { name: "with the page open", action: openPage },
    { name: `${tags} tags`, map: "tags" },
  ];
}

export const partsScenario: Scenario<PartsScenarioOptions> = {
  name: "parts",
  summary: "memory at rest of the shipped config with each part on and off (RssAnon, RSS, heap), bare Node as the floor",
  usage: USAGE,
  parse: parsePartsOptions,
  smokeArgs: ["--settle", "1", "--only", "floor", "--only", "shipped", "--only", "reload"],
  async run(ctx, options) {
    const results: CaseResult[] = [];
    const picked = (name: string): boolean => options.only.length === 0 || options.only.some((o) => name.toLowerCase().includes(o.toLowerCase()));
    for (const target of ctx.targets) {
      if (!target.name.startsWith("fieldgate")) {
        ctx.log(`parts: ${target.name} has no parts; skipped`);
        continue;
      }
      if (target.name === "fieldgate" && picked("node floor")) results.push(await floorCase(ctx, options));
      for (const c of cases(options.tags)) {
        if (!picked(c.name)) continue;
        results.push(await partCase(ctx, target, options, c));
      }
    }
    return results;
  },
};

/** The checkout a target runs: this one, or DIR of fieldgate@DIR. */
function rootOf(target: ServerTarget, ctx: BenchContext): string {
  return target.name.startsWith("fieldgate@") ? resolve(target.name.slice("fieldgate@".length)) : ctx.root;
}

function memoryResult(name: string, target: string, mem: MemoryFigures, heap: { used: number; total: number }, start: number, settleSeconds: number, cpu: number | undefined, notes: string[]): CaseResult {
  return {
    withoutRequests: true,
    scenario: "parts",
    case: name,
    target,
    figures: figuresWithoutRequests({
      serverRssIdleBytes: mem.rss,
      serverRssEndBytes: mem.rss,
      serverPeakRssBytes: mem.peakRss,
      serverRssAnonIdleBytes: mem.rssAnon,
      serverHeapIdleBytes: heap.used,
      serverHeapUsedEndBytes: heap.used,
      serverHeapTotalEndBytes: heap.total,
      startToListeningMs: start,
    }),
    conditions: { settleSeconds, threads: mem.threads, warmupSeconds: 0, durationSeconds: 0, serverCpu: cpu ?? null, loadCpu: null, loadInline: false, idleRssAfterMs: settleSeconds * 1000 },
    errorKinds: {},
    notes,
  };
}

function loadNote(): string {
  return `load average ${loadavg()[0]!.toFixed(2)} (1 min) at the start, ${new Date().toISOString()}`;
}

async function floorCase(ctx: BenchContext, options: PartsScenarioOptions): Promise<CaseResult> {
  const notes = [loadNote()];
  const entry = fileURLToPath(new URL("../targets/idle-floor.js", import.meta.url));
  const cmd = pinnedCommand(ctx.serverCpu, process.execPath, [...GATEWAY_NODE_FLAGS, entry]);
  ctx.log("parts: node floor");
  const child = spawn(cmd.command, cmd.args, { env: { ...process.env, ...GATEWAY_ENV }, stdio: "ignore" });
  try {
    await sleep(options.settleSeconds * 1000);
    const mem = memoryOf(child.pid!);
    notes[0] += `; ${mem.threads} threads`;
    return memoryResult("node floor", "node", mem, { used: NaN, total: NaN }, NaN, options.settleSeconds, cmd.pinned ? ctx.serverCpu : undefined, notes);
  } finally {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
}

async function partCase(ctx: BenchContext, target: ServerTarget, options: PartsScenarioOptions, c: PartCase): Promise<CaseResult> {
  const root = rootOf(target, ctx);
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-bench-parts-"));
  const notes = [loadNote()];
  let broker: Broker | undefined;
  try {
    if (c.northbound) {
      broker = await Broker.inDir(dir, ctx.load.cpu);
      await broker.start();
    }
    const config = writeCaseConfig(root, dir, c, options.tags, broker?.url);
    ctx.log(`parts: ${c.name} on ${target.name}`);
    const server = await target.start({ cpu: ctx.serverCpu, config, startTimeoutMs: 120_000 });
    try {
      await sleep(options.settleSeconds * 1000);
      if (c.action) {
        await c.action(server, ctx);
        await sleep(options.settleSeconds * 1000);
      }
      const mem = memoryOf(server.pid);
      const report = await requestReport(server);
      if (server.exited) notes.push("the server exited while idle");
      notes[0] += `; ${mem.threads} threads`;
      return memoryResult(c.name, target.name, mem, { used: report?.heapUsedBytes ?? NaN, total: report?.heapTotalBytes ?? NaN }, server.startToListeningMs, options.settleSeconds, server.pinnedCpu, notes);
    } finally {
      const exit = await server.stop();
      if (exit.code !== 0) notes.push(`server stopped with exit code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ""} (expected 0 on SIGTERM)`);
    }
  } finally {
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The target's config/gateway.yaml with the case's changes, in `dir`, with its dataDir there. */
function writeCaseConfig(root: string, dir: string, c: PartCase, tags: number, broker: string | undefined): string {
  const doc = parseDocument(readFileSync(join(root, "config", "gateway.yaml"), "utf8")) as Document;
  doc.setIn(["dataDir"], join(dir, "data"));
  doc.setIn(["server", "port"], 0);
  doc.setIn(["web", "port"], 0);
  if (c.page === false) doc.setIn(["web", "enabled"], false);
  if (c.policiesNone) doc.setIn(["security", "securityPolicies"], ["None"]);
  const shippedMap = readFileSync(join(root, "config", "devices.yaml"), "utf8");
  const map = c.map ?? "shipped";
  if (map === "none") doc.deleteIn(["devices"]);
  else {
    const file = join(dir, "devices.yaml");
    writeFileSync(file, map === "tags" ? deviceMapYaml(tags, "1s") : map === "no history" ? shippedMap.replace(/^\s*history:\s*true\s*$/gm, "") : shippedMap);
    doc.setIn(["devices"], file);
  }
  if (broker !== undefined) doc.setIn(["northbound"], { sparkplug: { broker, groupId: "bench", edgeNodeId: "gw" } });
  const file = join(dir, "gateway.yaml");
  writeFileSync(file, doc.toString());
  return file;
}

/** One HistoryRead of the shipped map's historized tag over the last hour (its reader's thread starts). */
async function historyRead(server: RunningServer): Promise<void> {
  const { runHistoryReadLoad } = (await import(HISTORY_READ_LOAD)) as typeof import("./history-read-load.js");
  const now = Date.now();
  const params: HistoryReadLoadParams = {
    host: server.host,
    port: server.port,
    endpointUrl: server.endpointUrl,
    node: "ns=1;s=simulator.temperature",
    startTime: now - 3_600_000,
    endTime: now + 60_000,
    valuesPerRead: 1000,
    warmupSeconds: 0,
    durationSeconds: 0.2,
  };
  const r = await runHistoryReadLoad(params);
  if (r.reads === 0 || r.errorsTotal > 0) throw new Error(`parts: the HistoryRead failed (${r.reads} reads, ${r.errorsTotal} errors: ${JSON.stringify(r.errorKinds)})`);
}

/** SIGHUP: the gateway config and the device map read again (a worker validates the map), then applied. */
async function reload(server: RunningServer): Promise<void> {
  process.kill(server.pid, "SIGHUP");
  const until = Date.now() + 30_000;
  for (;;) {
    const log = server.outputTail();
    const at = log.lastIndexOf("SIGHUP: reloading");
    if (at >= 0 && log.indexOf("device map: ", at) >= 0) return;
    if (Date.now() > until) throw new Error(`parts: no reload seen in the log:\n${log}`);
    await sleep(50);
  }
}

/** The status page and its state fetched once (https with the gateway's own certificate, as shipped). */
async function openPage(server: RunningServer): Promise<void> {
  const m = /status page on (https?):\/\/[^:/]+:(\d+)\//.exec(server.outputTail());
  if (m === null) throw new Error(`parts: no status page line in the log:\n${server.outputTail()}`);
  const port = Number(m[2]);
  const request = m[1] === "https" ? httpsRequest : httpRequest;
  for (const path of ["/", "/api/state"]) {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, path, rejectUnauthorized: false }, (res) => {
        res.resume();
        res.once("end", () => resolve(res.statusCode ?? 0));
      });
      req.once("error", reject);
      req.end();
    });
    if (status !== 200) throw new Error(`parts: GET ${path} of the status page answered ${status}`);
  }
}
