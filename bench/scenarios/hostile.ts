// Scenario `hostile` (issue 14): the server's memory and a normal client's service under an
// attack, and whether the memory comes back once the attackers leave. Three phases on one fresh
// server: before (--before s, nobody but the normal client), during (--attack s: --flooders
// connections flooding intermediate chunks without a final one, and --slow-readers sessions
// sending Reads of --read-nodes nodes and never reading their socket; hostile-load.ts, in the
// load process), after (--after s, the attackers gone). Throughout, a normal client (in this
// process, not the attackers') reads Server_ServerStatus every 100 ms, and the server's RSS is
// read from /proc every 250 ms.
//
// Figures: RSS at the end of "before" (the baseline, median of its last half), the highest RSS
// during the attack and after, RSS at the end of "after" (against the baseline), the normal
// client's ServerStatus latency per phase (p50, p99, max) and its failures, and how the server
// ended the attackers' connections.
import { parseArgs } from "node:util";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { AttributeIds, ObjectIds, VariableIds } from "../../src/ua/generated/node-ids.js";
import { numericNodeId } from "../../src/ua/builtins.js";
import { decodeReadResponse, encodeReadRequest } from "../../src/ua/generated/types.js";
import type { UaClientChannel } from "../client/channel.js";
import { Histogram } from "../client/histogram.js";
import { IDLE_SETTLE_MS } from "../harness/case.js";
import { runModuleLoad } from "../harness/load-process.js";
import { cpuTimeMicros, memoryOf } from "../harness/proc.js";
import type { CaseResult } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, sleep, type BenchContext, type CommonOptions, type Scenario } from "../harness/scenario.js";
import type { RunningServer, ServerTarget } from "../harness/target.js";
import type { HostileAttackParams, HostileAttackResult } from "./hostile-load.js";
import { openSession } from "./service-load.js";

export interface HostileScenarioOptions extends CommonOptions {
  flooders: number;
  slowReaders: number;
  readNodes: number;
  beforeSeconds: number;
  attackSeconds: number;
  afterSeconds: number;
}

const USAGE = `npm run bench -- hostile [options]
  --flooders N        connections flooding intermediate chunks (default 50)
  --slow-readers N    sessions sending Reads and never reading their socket (default 20)
  --read-nodes N      nodes per Read of a slow reader (default 10000)
  --before S          seconds before the attack (default 20)
  --attack S          seconds of attack (default 30)
  --after S           seconds after the attackers have left (default 60)
${COMMON_USAGE}`;

export function parseHostileOptions(argv: readonly string[]): HostileScenarioOptions | null {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...COMMON_OPTIONS,
      flooders: { type: "string" },
      "slow-readers": { type: "string" },
      "read-nodes": { type: "string" },
      before: { type: "string" },
      attack: { type: "string" },
      after: { type: "string" },
    },
  });
  if (values.help) return null;
  return {
    ...commonFrom(values),
    flooders: positive("flooders", values.flooders, 50),
    slowReaders: positive("slow-readers", values["slow-readers"], 20),
    readNodes: positive("read-nodes", values["read-nodes"], 10_000),
    // 20 s: the baseline (the last half) comes after the start's own memory-reducer GC, ~8 s in
    // (66 -> 62 MB); with 10 s it straddled that step and the baseline read ~4 MB high.
    beforeSeconds: positive("before", values.before, 20, false),
    attackSeconds: positive("attack", values.attack, 30, false),
    afterSeconds: positive("after", values.after, 60, false),
  };
}

const enum Phase {
  Before = 0,
  During = 1,
  After = 2,
}
const PHASES = ["before", "during", "after"] as const;
const PROBE_INTERVAL_MS = 100;
const RSS_INTERVAL_MS = 250;

/** The normal client: one ServerStatus Read at a time, every 100 ms, latency per phase. */
class Prober {
  readonly latency = [new Histogram(), new Histogram(), new Histogram()];
  readonly failures = [0, 0, 0];
  readonly failureKinds: Record<string, number> = {};
  phase = Phase.Before;
  /** Reads of 10 ms or more after the attack: seconds since the attackers left, and ms (the first 20). */
  readonly slowAfter: string[] = [];
  afterStart = 0;
  private stopped = false;
  private done: Promise<void> | null = null;

  constructor(private readonly channel: UaClientChannel) {}

  start(): void {
    this.done = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }

  private async loop(): Promise<void> {
    const c = this.channel;
    const node = { nodeId: numericNodeId(VariableIds.Server_ServerStatus), attributeId: AttributeIds.Value, indexRange: undefined, dataEncoding: { namespaceIndex: 0, name: "" } };
    while (!this.stopped) {
      const phase = this.phase;
      const t0 = performance.now();
      try {
        const r = await c.call(
          "Read",
          ObjectIds.ReadRequest_Encoding_DefaultBinary,
          encodeReadRequest,
          { requestHeader: c.requestHeader(10_000), maxAge: 0, timestampsToReturn: TimestampsToReturn.Both, nodesToRead: [node] },
          ObjectIds.ReadResponse_Encoding_DefaultBinary,
          decodeReadResponse,
        );
        if (r.results?.length !== 1 || (r.results[0].statusCode ?? 0) >>> 30 !== 0) throw new Error("ServerStatus read without a Good value");
        const took = performance.now() - t0;
        this.latency[phase].record(took * 1000);
        // When they come tells what they are: the memory reducer's GCs some seconds after the
        // attack, or the sessions the attackers left timing out minutes later.
        if (phase === Phase.After && took >= 10 && this.slowAfter.length < 20) this.slowAfter.push(`${((t0 - this.afterStart) / 1000).toFixed(1)}s ${took.toFixed(1)}`);
      } catch (err) {
        this.failures[phase]++;
        const kind = (err as Error).message;
        this.failureKinds[kind] = (this.failureKinds[kind] ?? 0) + 1;
        if (c.closed) return;
      }
      const wait = PROBE_INTERVAL_MS - (performance.now() - t0);
      if (wait > 0) await sleep(wait);
    }
  }
}

/** RSS of the server every 250 ms, with the phase it was read in. */
class RssSampler {
  readonly samples: { t: number; phase: Phase; rss: number }[] = [];
  phase = Phase.Before;
  private readonly timer: NodeJS.Timeout;
  private readonly t0 = performance.now();

  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), RSS_INTERVAL_MS);
    this.sample();
  }

  sample(): void {
    const rss = memoryOf(this.pid).rss;
    if (Number.isFinite(rss)) this.samples.push({ t: (performance.now() - this.t0) / 1000, phase: this.phase, rss });
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }

  of(phase: Phase): number[] {
    return this.samples.filter((s) => s.phase === phase).map((s) => s.rss);
  }
}

const MB = 2 ** 20;
const ms = (micros: number): string => (Number.isFinite(micros) ? (micros / 1000).toFixed(1) : "-");

function medianOf(xs: readonly number[]): number {
  const v = [...xs].sort((a, b) => a - b);
  return v.length === 0 ? NaN : v[v.length >> 1];
}

async function runHostileCase(ctx: BenchContext, target: ServerTarget, o: HostileScenarioOptions): Promise<CaseResult> {
  const caseName = `${o.flooders} flooders + ${o.slowReaders} slow readers x ${o.readNodes} nodes`;
  const label = `hostile on ${target.name}`;
  ctx.log(`${label}: starting the server`);
  const server: RunningServer = await target.start({ cpu: ctx.serverCpu });
  const notes: string[] = [];
  let prober: Prober | undefined;
  let sampler: RssSampler | undefined;
  let healthy: UaClientChannel | undefined;
  try {
    await sleep(IDLE_SETTLE_MS);
    const idleRss = memoryOf(server.pid).rss;
    healthy = await openSession({ host: server.host, port: server.port, endpointUrl: server.endpointUrl }, "bench-hostile-normal-client");
    prober = new Prober(healthy);
    sampler = new RssSampler(server.pid);
    prober.start();
    ctx.log(`${label}: ${o.beforeSeconds} s before, ${o.attackSeconds} s of attack, ${o.afterSeconds} s after`);
    await sleep(o.beforeSeconds * 1000);
    const baselineSamples = sampler.of(Phase.Before);
    const baseline = medianOf(baselineSamples.slice(baselineSamples.length >> 1));
    prober.phase = sampler.phase = Phase.During;
    const cpu0 = cpuTimeMicros(server.pid);
    const params: HostileAttackParams = {
      host: server.host,
      port: server.port,
      endpointUrl: server.endpointUrl,
      flooders: o.flooders,
      slowReaders: o.slowReaders,
      readNodes: o.readNodes,
      durationSeconds: o.attackSeconds,
    };
    const attack = (await runModuleLoad<HostileAttackParams, HostileAttackResult>(import.meta.url.replace(/hostile\.(js|ts)$/, "hostile-load.$1"), "runHostileAttack", params, ctx.load)).result;
    const attackCpu = cpuTimeMicros(server.pid) - cpu0;
    prober.afterStart = performance.now();
    prober.phase = sampler.phase = Phase.After;
    ctx.log(`${label}: the attackers have left; ${o.afterSeconds} s after`);
    await sleep(o.afterSeconds * 1000);
    await prober.stop();
    sampler.stop();
    const during = sampler.of(Phase.During);
    const after = sampler.of(Phase.After);
    const peak = Math.max(...during, ...after);
    const end = after[after.length - 1] ?? NaN;
    const lat = prober.latency.map((h) => ({ p50: h.percentile(50), p99: h.percentile(99), max: h.count ? h.max : NaN, n: h.count }));
    const failures = prober.failures[0] + prober.failures[1] + prober.failures[2];
    for (const [kind, n] of Object.entries(prober.failureKinds)) notes.push(`normal client: ${n} x ${kind}`);
    if (healthy.closed) notes.push("the normal client's channel was closed");
    const trace = sampler.samples.filter((_, i) => i % 20 === 0).map((s) => `${s.t.toFixed(0)}s ${(s.rss / MB).toFixed(0)}`);
    notes.push(
      `RSS baseline ${(baseline / MB).toFixed(1)} MB, peak ${(peak / MB).toFixed(1)} MB (+${((peak - baseline) / MB).toFixed(1)}), ${o.afterSeconds} s after ${(end / MB).toFixed(1)} MB (${end >= baseline ? "+" : ""}${((end - baseline) / MB).toFixed(1)})`,
      `normal client ServerStatus ms p50/p99/max: ${PHASES.map((p, i) => `${p} ${ms(lat[i].p50)}/${ms(lat[i].p99)}/${ms(lat[i].max)} (${lat[i].n})`).join(", ")}`,
      `flooders: ${attack.flood.connections} connections, ${(attack.flood.bytesSent / MB).toFixed(0)} MB sent, ended ${JSON.stringify(attack.flood.endings)}`,
      `slow readers: ${attack.slow.connections} connections, ${attack.slow.requests} Reads, ended ${JSON.stringify(attack.slow.endings)}, closed ${ms(Histogram.from(attack.slow.closeAfterStallMicros).percentile(50))}/${ms(Histogram.from(attack.slow.closeAfterStallMicros).max)} ms (p50/max) after they stalled, ${attack.slow.openAtEnd} still open at the end`,
      `RSS trace (s MB): ${trace.join(", ")}`,
      `normal client reads of 10 ms or more after the attack (s after, ms): ${prober.slowAfter.join(", ") || "none"}`,
    );
    for (const n of notes) ctx.log(`${label}: ${n}`);
    const h = prober.latency[Phase.During];
    return {
      scenario: "hostile",
      case: caseName,
      target: target.name,
      unit: "probes/s",
      figures: {
        requests: h.count,
        windowSeconds: attack.durationSeconds,
        requestsPerSecond: h.count / attack.durationSeconds,
        // The normal client during the attack.
        latencyMicros: { p50: h.percentile(50), p90: h.percentile(90), p99: h.percentile(99), p999: h.percentile(99.9), max: h.count ? h.max : NaN, mean: h.mean() },
        serverCpuMicrosPerRequest: NaN,
        serverCpuShare: attackCpu / (attack.durationSeconds * 1e6),
        loadCpuShare: NaN,
        serverRssIdleBytes: baseline,
        serverRssEndBytes: end,
        serverPeakRssBytes: peak,
        serverHeapIdleBytes: NaN,
        serverHeapUsedEndBytes: NaN,
        serverHeapTotalEndBytes: NaN,
        gcPauseMs: NaN,
        gcCount: NaN,
        gcPausePerSecondMs: NaN,
        startToListeningMs: server.startToListeningMs,
        errors: failures,
        errorsTotal: failures,
        channelFaults: healthy.closed ? 1 : 0,
        lostInFlight: 0,
        verifiedResponses: 0,
      },
      conditions: {
        flooders: o.flooders,
        slowReaders: o.slowReaders,
        readNodes: o.readNodes,
        beforeSeconds: o.beforeSeconds,
        attackSeconds: o.attackSeconds,
        afterSeconds: o.afterSeconds,
        rssIdleMB: idleRss / MB,
        rssBaselineMB: baseline / MB,
        rssPeakAboveBaselineMB: (peak - baseline) / MB,
        rssAfterAboveBaselineMB: (end - baseline) / MB,
        probeBeforeP99Ms: lat[0].p99 / 1000,
        probeBeforeMaxMs: lat[0].max / 1000,
        probeDuringP99Ms: lat[1].p99 / 1000,
        probeDuringMaxMs: lat[1].max / 1000,
        probeAfterP99Ms: lat[2].p99 / 1000,
        probeAfterMaxMs: lat[2].max / 1000,
        slowReadersOpenAtEnd: attack.slow.openAtEnd,
        warmupSeconds: o.beforeSeconds,
        durationSeconds: o.attackSeconds,
        serverCpu: server.pinnedCpu ?? null,
        loadCpu: ctx.load.cpu ?? null,
        loadInline: ctx.load.inline === true,
        idleRssAfterMs: IDLE_SETTLE_MS,
      },
      errorKinds: {},
      notes,
    };
  } finally {
    sampler?.stop();
    await prober?.stop();
    healthy?.destroy();
    const exit = await server.stop();
    if (exit.code !== 0) notes.push(`server stopped with exit code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ""} (expected 0 on SIGTERM)`);
  }
}

export const hostileScenario: Scenario<HostileScenarioOptions> = {
  name: "hostile",
  summary: "RSS and a normal client's ServerStatus latency under chunk floods and slow readers, and RSS after",
  usage: USAGE,
  parse: parseHostileOptions,
  smokeArgs: ["--flooders", "3", "--slow-readers", "2", "--read-nodes", "1000", "--before", "0.5", "--attack", "1", "--after", "0.5"],
  reportRuns: [{ title: "Hostile clients: 50 chunk flooders and 20 slow readers (issue 14)", args: ["--rounds", "1"] }],
  async run(ctx, options) {
    const results: CaseResult[] = [];
    for (const target of ctx.targets) results.push(await runHostileCase(ctx, target, options));
    return results;
  },
};
