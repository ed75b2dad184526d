// Scenario `slowloris` (issue 28): how long a real visitor waits for the status page while one
// address holds the page's port. The gateway (HTTPS page, --tags simulator tags) is started per
// target; a visitor in this process, logged in, asks for the page (GET /, on a connection of its
// own each time) 5 times before the attack, then every --every ms during it, then 3 times after.
// The attacker (slowloris-load.ts, in the load process) opens --connections sockets from
// --from (127.0.0.2), --silent of them never starting their TLS handshake, the others sending a
// header line every --interval ms and never the end of the headers, and reopens what is closed.
//
// Figures: the visitor's times (p50, max) per phase and its failures; the requests-per-second
// column counts the visitor's answered requests during the attack. Compare two checkouts in one
// run with `--peer fieldgate@DIR` (rounds alternate).
import { parseArgs } from "node:util";
import { Histogram } from "../client/histogram.js";
import { IDLE_SETTLE_MS } from "../harness/case.js";
import { runModuleLoad } from "../harness/load-process.js";
import { cpuTimeMicros } from "../harness/proc.js";
import type { CaseResult } from "../harness/report.js";
import { COMMON_OPTIONS, COMMON_USAGE, commonFrom, positive, sleep, type BenchContext, type CommonOptions, type Scenario } from "../harness/scenario.js";
import type { ServerTarget } from "../harness/target.js";
import type { SlowlorisAttackParams, SlowlorisAttackResult } from "./slowloris-load.js";
import { drain, loginCookie, send } from "./web-pages.js";
import { PASSWORD, USER, pageConfig, pageUrl } from "./web.js";

export interface SlowlorisScenarioOptions extends CommonOptions {
  connections: number;
  silent: number;
  intervalMs: number;
  from: string;
  attackSeconds: number;
  everyMs: number;
  tags: number;
}

const USAGE = `npm run bench -- slowloris [options]
  --connections N     attacker sockets (default 200)
  --silent N          of them, sockets that never start their TLS handshake (default 50)
  --interval MS       between two header lines of an attacker socket (default 1000)
  --from ADDR         the attacker's source address (default 127.0.0.2)
  --attack S          seconds of attack (default 30)
  --every MS          between two of the visitor's requests during the attack (default 1000)
  --tags N            simulator tags of the gateway (default 1000)
${COMMON_USAGE}`;

export function parseSlowlorisOptions(argv: readonly string[]): SlowlorisScenarioOptions | null {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...COMMON_OPTIONS,
      connections: { type: "string" },
      silent: { type: "string" },
      interval: { type: "string" },
      from: { type: "string" },
      attack: { type: "string" },
      every: { type: "string" },
      tags: { type: "string" },
    },
  });
  if (values.help) return null;
  const connections = positive("connections", values.connections, 200);
  const silent = values.silent === "0" ? 0 : positive("silent", values.silent, 50);
  if (silent > connections) throw new Error(`--silent: expected at most --connections (${connections}), got ${silent}`);
  return {
    ...commonFrom(values),
    connections,
    silent,
    intervalMs: positive("interval", values.interval, 1000),
    from: values.from ?? "127.0.0.2",
    attackSeconds: positive("attack", values.attack, 30, false),
    everyMs: positive("every", values.every, 1000),
    tags: positive("tags", values.tags, 1000),
  };
}

/** How long GET / took on a fresh connection (ms), or why it failed. */
async function visit(base: string, cookie: string): Promise<{ ms: number; failure?: string }> {
  const t0 = performance.now();
  try {
    const res = await send(new URL("/", base), { headers: { cookie }, agent: false, signal: AbortSignal.timeout(30_000) });
    await drain(res);
    const ms = performance.now() - t0;
    return res.statusCode === 200 ? { ms } : { ms, failure: `HTTP ${res.statusCode}` };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { ms: performance.now() - t0, failure: e.name === "TimeoutError" || e.name === "AbortError" ? "no answer within 30 s" : (e.code ?? e.message) };
  }
}

const fmt = (ms: number): string => (Number.isFinite(ms) ? ms.toFixed(ms < 100 ? 1 : 0) : "-");

async function runSlowlorisCase(ctx: BenchContext, target: ServerTarget, o: SlowlorisScenarioOptions, config: string): Promise<CaseResult> {
  const label = `slowloris/${target.name}`;
  const server = await target.start({ cpu: ctx.serverCpu, config });
  const notes: string[] = [];
  try {
    await sleep(IDLE_SETTLE_MS);
    const base = pageUrl(server);
    const cookie = await loginCookie(base, USER, PASSWORD);
    const phases = { before: new Histogram(), during: new Histogram(), after: new Histogram() };
    const failures = { before: 0, during: 0, after: 0 };
    const failureKinds: Record<string, number> = {};
    const trace: string[] = [];
    const record = (phase: keyof typeof phases, r: { ms: number; failure?: string }): void => {
      if (r.failure === undefined) phases[phase].record(Math.round(r.ms * 1000));
      else {
        failures[phase]++;
        failureKinds[r.failure] = (failureKinds[r.failure] ?? 0) + 1;
      }
    };
    for (let i = 0; i < 5; i++) record("before", await visit(base, cookie));

    const url = new URL(base);
    const params: SlowlorisAttackParams = {
      host: url.hostname,
      port: Number(url.port),
      tls: url.protocol === "https:",
      localAddress: o.from,
      connections: o.connections,
      silent: o.silent,
      intervalMs: o.intervalMs,
      durationSeconds: o.attackSeconds,
    };
    ctx.log(`${label}: ${o.attackSeconds} s of attack by ${o.connections} sockets from ${o.from}`);
    const cpu0 = cpuTimeMicros(server.pid);
    let attacking = true;
    const attackRun = runModuleLoad<SlowlorisAttackParams, SlowlorisAttackResult>(import.meta.url.replace(/slowloris\.(js|ts)$/, "slowloris-load.$1"), "runSlowlorisAttack", params, ctx.load).finally(() => {
      attacking = false;
    });
    const t0 = performance.now();
    let firstAnswer = NaN;
    while (attacking) {
      const at = performance.now() - t0;
      const r = await visit(base, cookie);
      if (!attacking) break;
      record("during", r);
      if (r.failure === undefined && Number.isNaN(firstAnswer)) firstAnswer = at + r.ms;
      trace.push(`${(at / 1000).toFixed(1)}s ${r.failure === undefined ? fmt(r.ms) : "X"}`);
      await sleep(Math.max(0, o.everyMs - r.ms));
    }
    const attack = (await attackRun).result;
    const attackCpu = cpuTimeMicros(server.pid) - cpu0;
    await sleep(1000);
    for (let i = 0; i < 3; i++) record("after", await visit(base, cookie));

    const p = (h: Histogram, q: number): number => (h.count ? h.percentile(q) / 1000 : NaN);
    const max = (h: Histogram): number => (h.count ? h.max / 1000 : NaN);
    notes.push(
      `visitor GET / ms p50/max: before ${fmt(p(phases.before, 50))}/${fmt(max(phases.before))}, during ${fmt(p(phases.during, 50))}/${fmt(max(phases.during))} (${phases.during.count} answered, ${failures.during} failed), after ${fmt(p(phases.after, 50))}/${fmt(max(phases.after))}`,
      `first answer during the attack ${fmt(firstAnswer)} ms after it began; failures ${JSON.stringify(failureKinds)}`,
      `attacker: ${attack.opened} sockets opened, ${attack.up} came up, ${attack.failed} failed before, ${attack.closedByServer} closed by the server after; up at once ${attack.openMin}-${attack.openMax}, ${attack.openAtEnd} at the end`,
      `visits during the attack (s since it began, ms or X): ${trace.join(", ")}`,
    );
    for (const n of notes) ctx.log(`${label}: ${n}`);
    const h = phases.during;
    const failed = failures.before + failures.during + failures.after;
    return {
      scenario: "slowloris",
      case: `${o.connections} sockets from ${o.from}`,
      target: target.name,
      unit: "visits/s",
      figures: {
        requests: h.count,
        windowSeconds: o.attackSeconds,
        requestsPerSecond: h.count / o.attackSeconds,
        latencyMicros: { p50: h.percentile(50), p90: h.percentile(90), p99: h.percentile(99), p999: h.percentile(99.9), max: h.count ? h.max : NaN, mean: h.mean() },
        serverCpuMicrosPerRequest: NaN,
        serverCpuShare: attackCpu / (o.attackSeconds * 1e6),
        loadCpuShare: NaN,
        serverRssIdleBytes: NaN,
        serverRssEndBytes: NaN,
        serverPeakRssBytes: NaN,
        serverHeapIdleBytes: NaN,
        serverHeapUsedEndBytes: NaN,
        serverHeapTotalEndBytes: NaN,
        gcPauseMs: NaN,
        gcCount: NaN,
        gcPausePerSecondMs: NaN,
        startToListeningMs: server.startToListeningMs,
        errors: failed,
        errorsTotal: failed,
        channelFaults: 0,
        lostInFlight: 0,
        verifiedResponses: 0,
      },
      conditions: {
        connections: o.connections,
        silent: o.silent,
        intervalMs: o.intervalMs,
        from: o.from,
        everyMs: o.everyMs,
        tags: o.tags,
        visitBeforeP50Ms: p(phases.before, 50),
        visitDuringP50Ms: p(phases.during, 50),
        visitDuringMaxMs: max(phases.during),
        visitDuringFailed: failures.during,
        firstAnswerMs: firstAnswer,
        attackerUpAtOnceMin: attack.openMin,
        warmupSeconds: 0,
        durationSeconds: o.attackSeconds,
        serverCpu: server.pinnedCpu ?? null,
        loadCpu: ctx.load.cpu ?? null,
        loadInline: ctx.load.inline === true,
        idleRssAfterMs: IDLE_SETTLE_MS,
      },
      errorKinds: failureKinds,
      notes,
    };
  } finally {
    const exit = await server.stop();
    if (exit.code !== 0) notes.push(`server stopped with exit code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ""} (expected 0 on SIGTERM)`);
  }
}

export const slowlorisScenario: Scenario<SlowlorisScenarioOptions> = {
  name: "slowloris",
  summary: "How long a visitor waits for the status page while one address holds its port (slowloris)",
  usage: USAGE,
  parse: parseSlowlorisOptions,
  smokeArgs: ["--connections", "20", "--silent", "5", "--attack", "2", "--every", "500", "--tags", "100"],
  async run(ctx, options) {
    const config = await pageConfig(ctx.root, options.tags, 1, true);
    const results: CaseResult[] = [];
    for (const target of ctx.targets) results.push(await runSlowlorisCase(ctx, target, options, config));
    return results;
  },
};
