// The soak run (issue 9): `npm run soak -- --minutes N`.
//
// The gateway runs as `fieldgate run` in a process of its own (as on the appliance), polling 50
// simulated Modbus TCP devices (drivers/simulator, modbus-serial's ServerTCP, in this process)
// every second, two tags of each historized. Five node-opcua clients subscribe to every device's
// tags, read and write; on a schedule a few devices vanish (their slave closes) and come back.
// Every `--sample` seconds the run records:
//   - the gateway's RSS and V8 heap, and its active handles and timers by kind, from its own
//     diagnostics report (FIELDGATE_DIAGNOSTICS=1, one line per SIGUSR2);
//   - poll lateness (p50/p99/max) and poll slots, and the history counters (recorded, stored,
//     queued, dropped, failed flushes), from the System object over OPC UA;
//   - the clients' notifications, reads, writes and channel faults (connection lost,
//     reconnections, subscriptions terminated).
// At the end: a least-squares trend of RSS and heap after warm-up (the issue asks for flat
// memory), the history database's rows against what the writer reported stored, and whether
// every outage was seen going Bad and coming back by a client. Prints a report in Markdown and
// writes the samples as JSON (--out).
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import {
  deviceMap,
  Gateway,
  gatewayYaml,
  HISTORIZED,
  newCounters,
  Plant,
  sleep,
  SoakClient,
  type ClientCounters,
  type DeviceView,
} from "./soak-parts.js";

interface Options {
  minutes: number;
  devices: number;
  clients: number;
  sampleSeconds: number;
  /** Seconds between outages; each takes `outageDevices` devices down for `outageSeconds`. */
  outageEvery: number;
  outageSeconds: number;
  outageDevices: number;
  warmupFraction: number;
  /** history.cacheSize for the gateway ("1MiB"), or undefined for its default. */
  historyCache: string | undefined;
  out: string | undefined;
}

const USAGE = `npm run soak -- [options]
  --minutes N          length of the run (default 30)
  --devices N          simulated Modbus TCP devices, 5 tags each at 1 s, 2 historized (default 50)
  --clients N          node-opcua clients subscribing, reading and writing (default 5)
  --sample S           seconds between samples of memory, handles and counters (default 30)
  --outage-every S     seconds between device outages (default 60)
  --outage-seconds S   how long a device stays away (default 20)
  --outage-devices N   devices taken away at each outage (default 5)
  --warmup F           fraction of the run left out of the memory trend (default 0.2)
  --history-cache SIZE the gateway's history.cacheSize (default: its own, 8 MiB here). SQLite's
                       page cache fills as the database grows, so with the default it is still
                       growing for the first ~70 min of this load; a smaller cache is full
                       within the warm-up and leaves any other growth visible
  --out FILE           write the samples and the summary as JSON`;

function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      minutes: { type: "string" },
      devices: { type: "string" },
      clients: { type: "string" },
      sample: { type: "string" },
      "outage-every": { type: "string" },
      "outage-seconds": { type: "string" },
      "outage-devices": { type: "string" },
      warmup: { type: "string" },
      "history-cache": { type: "string" },
      out: { type: "string" },
      help: { type: "boolean" },
    },
  });
  if (values.help) return null;
  const num = (v: string | undefined, def: number): number => {
    if (v === undefined) return def;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`expected a positive number, got "${v}"`);
    return n;
  };
  return {
    minutes: num(values.minutes, 30),
    devices: Math.round(num(values.devices, 50)),
    clients: Math.round(num(values.clients, 5)),
    sampleSeconds: num(values.sample, 30),
    outageEvery: num(values["outage-every"], 60),
    outageSeconds: num(values["outage-seconds"], 20),
    outageDevices: Math.round(num(values["outage-devices"], 5)),
    warmupFraction: Math.min(0.9, num(values.warmup, 0.2)),
    historyCache: values["history-cache"],
    out: values.out,
  };
}

// --- figures -------------------------------------------------------------------------------

/** Least squares slope of y over x. */
export function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  let sx = 0;
  let sy = 0;
  for (let i = 0; i < n; i++) {
    sx += xs[i];
    sy += ys[i];
  }
  const mx = sx / n;
  const my = sy / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

interface Sample {
  minute: number;
  rssMiB: number;
  heapUsedMiB: number;
  /** V8's heap as reserved from the system (used + free space kept in its pages). */
  heapTotalMiB: number;
  externalMiB: number;
  arrayBuffersMiB: number;
  /** Anonymous resident memory (heaps, SQLite's cache) and the rest (mapped files, shared). */
  anonMiB: number | null;
  fileMiB: number | null;
  /** history.db and its WAL on disk. */
  databaseMiB: number;
  gcPauseMs: number;
  activeResources: Record<string, number>;
  system: Record<string, number | null>;
  clients: ClientCounters;
  devicesDown: number;
}

const SYSTEM_NAMES = [
  "PollLatenessP50",
  "PollLatenessP99",
  "PollLatenessMax",
  "Polls",
  "HistoryWriting",
  "HistoryRecorded",
  "HistoryStored",
  "HistoryQueued",
  "HistoryDropped",
  "HistoryFailedFlushes",
] as const;

function sumCounters(list: readonly ClientCounters[]): ClientCounters {
  const s = newCounters();
  for (const c of list) for (const k of Object.keys(s) as (keyof ClientCounters)[]) s[k] += c[k];
  return s;
}

const mib = (b: number): number => Math.round((b / (1 << 20)) * 10) / 10;

async function main(): Promise<number> {
  let options: Options | null;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  if (options === null) {
    console.log(USAGE);
    return 0;
  }
  const o = options;
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-soak-"));
  const plant = await Plant.start(o.devices);
  writeFileSync(join(dir, "devices.yaml"), deviceMap(plant.ports));
  writeFileSync(join(dir, "gateway.yaml"), gatewayYaml(o.historyCache));
  const fileSize = (f: string): number => {
    try {
      return statSync(f).size;
    } catch {
      return 0;
    }
  };
  const databaseBytes = (): number => fileSize(join(dir, "data", "history.db")) + fileSize(join(dir, "data", "history.db-wal"));
  const gw = new Gateway(join(dir, "gateway.yaml"));
  const clients: SoakClient[] = [];
  const view: DeviceView[] = Array.from({ length: o.devices }, () => ({ good: false, lastBadAt: 0, lastGoodAt: 0, lastStatus: "" }));
  const samples: Sample[] = [];
  const outages: { device: number; downAt: number; upAt: number; sawBad: boolean; sawGood: boolean }[] = [];
  let exitCode: number | null = null;
  const started = Date.now();
  try {
    await gw.ready();
    console.log(`soak: gateway ${gw.url}, ${o.devices} devices, ${o.clients} clients, ${o.minutes} min`);
    for (let i = 0; i < o.clients; i++) {
      const c = new SoakClient(i, o.devices, i === 0 ? view : undefined);
      await c.start(gw.url);
      clients.push(c);
    }
    const endAt = started + o.minutes * 60_000;
    let nextSample = Date.now();
    let nextOutage = Date.now() + o.outageEvery * 1000;
    let outageRound = 0;
    const pendingBack: { device: number; at: number; outage: (typeof outages)[number] }[] = [];
    while (Date.now() < endAt) {
      const now = Date.now();
      if (now >= nextOutage) {
        for (let k = 0; k < o.outageDevices; k++) {
          const d = (outageRound * o.outageDevices + k) % o.devices;
          if (plant.down.has(d)) continue;
          await plant.takeDown(d);
          const rec = { device: d, downAt: Date.now(), upAt: 0, sawBad: false, sawGood: false };
          outages.push(rec);
          pendingBack.push({ device: d, at: Date.now() + o.outageSeconds * 1000, outage: rec });
        }
        outageRound++;
        nextOutage += o.outageEvery * 1000;
      }
      for (let i = pendingBack.length - 1; i >= 0; i--) {
        const p = pendingBack[i];
        if (Date.now() >= p.at) {
          // Client 0 must have seen the device Bad while it was away.
          p.outage.sawBad = view[p.device].lastBadAt >= p.outage.downAt;
          await plant.bringBack(p.device);
          p.outage.upAt = Date.now();
          pendingBack.splice(i, 1);
        }
      }
      for (const rec of outages) if (rec.upAt > 0 && !rec.sawGood) rec.sawGood = view[rec.device].lastGoodAt >= rec.upAt;
      if (now >= nextSample) {
        nextSample += o.sampleSeconds * 1000;
        const d = await gw.snapshot();
        const kinds = gw.residentKinds();
        let system: Record<string, number | null> = {};
        try {
          system = await clients[0].system(SYSTEM_NAMES);
        } catch {
          // counted as a read error by nobody: the sample shows it empty
        }
        const s: Sample = {
          minute: Math.round(((Date.now() - started) / 60_000) * 100) / 100,
          rssMiB: mib(d.rssBytes),
          heapUsedMiB: mib(d.heapUsedBytes),
          heapTotalMiB: mib(d.heapTotalBytes),
          externalMiB: mib(d.externalBytes),
          arrayBuffersMiB: mib(d.arrayBuffersBytes),
          anonMiB: kinds ? mib(kinds.anonBytes) : null,
          fileMiB: kinds ? mib(kinds.fileBytes) : null,
          databaseMiB: mib(databaseBytes()),
          gcPauseMs: Math.round(d.gcPauseMs),
          activeResources: d.activeResources ?? {},
          system,
          clients: sumCounters(clients.map((c) => c.counters)),
          devicesDown: plant.down.size,
        };
        samples.push(s);
        const res = Object.entries(s.activeResources)
          .map(([k, v]) => `${k}=${v}`)
          .join(" ");
        console.log(
          `soak: t=${s.minute.toFixed(1)}min rss=${s.rssMiB}MiB (anon ${s.anonMiB}, file ${s.fileMiB}) heap=${s.heapUsedMiB}/${s.heapTotalMiB}MiB ext=${s.externalMiB}MiB db=${s.databaseMiB}MiB down=${s.devicesDown} lateness p50/p99/max=${system.PollLatenessP50}/${system.PollLatenessP99}/${system.PollLatenessMax}ms ` +
            `history rec/stored/queued/dropped=${system.HistoryRecorded}/${system.HistoryStored}/${system.HistoryQueued}/${system.HistoryDropped} notif=${s.clients.notifications} faults=${s.clients.connectionLost + s.clients.subscriptionsTerminated} [${res}]`,
        );
      }
      await sleep(200);
    }
    for (const p of pendingBack) {
      p.outage.sawBad = view[p.device].lastBadAt >= p.outage.downAt;
      await plant.bringBack(p.device);
      p.outage.upAt = Date.now();
    }
    // Give the last outages a moment to be seen coming back (bounded).
    const until = Date.now() + 15_000;
    while (Date.now() < until && outages.some((r) => r.upAt > 0 && !r.sawGood)) {
      for (const rec of outages) if (rec.upAt > 0 && !rec.sawGood) rec.sawGood = view[rec.device].lastGoodAt >= rec.upAt;
      await sleep(200);
    }
  } finally {
    for (const c of clients) await c.stop().catch(() => undefined);
    exitCode = await gw.stop();
    await plant.close();
  }

  // The database after the gateway flushed its queue and closed it.
  const db = new Database(join(dir, "data", "history.db"), { readonly: true });
  // Samples live in per-tag tables (and any staging table): every table but the series list.
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'series' AND name NOT LIKE 'sqlite_%'").all() as { name: string }[];
  let rows = 0;
  for (const t of tables) rows += (db.prepare(`SELECT count(*) AS n FROM "${t.name}"`).get() as { n: number }).n;
  const integrity = (db.prepare("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check;
  db.close();

  const last = samples[samples.length - 1];
  const warm = samples.filter((s) => s.minute >= o.minutes * o.warmupFraction);
  const xs = warm.map((s) => s.minute);
  const rssSlope = slope(xs, warm.map((s) => s.rssMiB));
  const heapSlope = slope(xs, warm.map((s) => s.heapUsedMiB));
  const heapTotalSlope = slope(xs, warm.map((s) => s.heapTotalMiB));
  const withKinds = warm.filter((s) => s.anonMiB !== null && s.fileMiB !== null);
  const anonSlope = slope(withKinds.map((s) => s.minute), withKinds.map((s) => s.anonMiB ?? 0));
  const fileSlope = slope(withKinds.map((s) => s.minute), withKinds.map((s) => s.fileMiB ?? 0));
  const dbSlope = slope(xs, warm.map((s) => s.databaseMiB));
  const kinds = new Set(samples.flatMap((s) => Object.keys(s.activeResources)));
  const resources = [...kinds].map((k) => ({
    kind: k,
    first: warm[0]?.activeResources[k] ?? 0,
    last: last?.activeResources[k] ?? 0,
    max: Math.max(...samples.map((s) => s.activeResources[k] ?? 0)),
  }));
  const lateP99 = samples.map((s) => s.system.PollLatenessP99).filter((v): v is number => typeof v === "number");
  const lateMax = samples.map((s) => s.system.PollLatenessMax).filter((v): v is number => typeof v === "number");
  const p50s = samples.map((s) => s.system.PollLatenessP50).filter((v): v is number => typeof v === "number").sort((a, b) => a - b);
  const c = last?.clients ?? newCounters();
  const sys = last?.system ?? {};
  const recorded = sys.HistoryRecorded ?? 0;
  const stored = sys.HistoryStored ?? 0;
  const dropped = sys.HistoryDropped ?? 0;
  const seconds = (Date.now() - started) / 1000;
  const summary = {
    minutes: Math.round((seconds / 60) * 10) / 10,
    devices: o.devices,
    clients: o.clients,
    rss: { firstAfterWarmup: warm[0]?.rssMiB, last: last?.rssMiB, max: Math.max(...samples.map((s) => s.rssMiB)), slopeMiBPerHour: Math.round(rssSlope * 60 * 10) / 10 },
    heap: { firstAfterWarmup: warm[0]?.heapUsedMiB, last: last?.heapUsedMiB, max: Math.max(...samples.map((s) => s.heapUsedMiB)), slopeMiBPerHour: Math.round(heapSlope * 60 * 10) / 10 },
    heapTotalSlopeMiBPerHour: Math.round(heapTotalSlope * 60 * 10) / 10,
    anonSlopeMiBPerHour: Math.round(anonSlope * 60 * 10) / 10,
    fileSlopeMiBPerHour: Math.round(fileSlope * 60 * 10) / 10,
    database: { lastMiB: last?.databaseMiB, slopeMiBPerHour: Math.round(dbSlope * 60 * 10) / 10 },
    historyCache: o.historyCache ?? "default",
    resources,
    lateness: { medianP50: p50s[Math.floor(p50s.length / 2)] ?? null, worstP99: Math.max(...lateP99), worstMax: Math.max(...lateMax) },
    history: {
      recordedAtLastSample: recorded,
      storedAtLastSample: stored,
      queuedAtLastSample: sys.HistoryQueued ?? 0,
      dropped,
      failedFlushes: sys.HistoryFailedFlushes ?? 0,
      rowsInDatabase: rows,
      // Nothing reported stored may be missing from the database (the gateway kept sampling
      // after the last sample, so the database holds more).
      storedButMissing: Math.max(0, stored - rows),
      integrity,
      // At every sample, each recorded sample is stored, queued or counted as dropped.
      unaccountedSamples: samples.filter((x) => (x.system.HistoryRecorded ?? 0) !== (x.system.HistoryStored ?? 0) + (x.system.HistoryQueued ?? 0) + (x.system.HistoryDropped ?? 0)).length,
      expectedAtFullHealth: Math.round(seconds * o.devices * HISTORIZED),
    },
    clientCounters: c,
    outages: {
      count: outages.length,
      seenBad: outages.filter((r) => r.sawBad).length,
      seenBack: outages.filter((r) => r.sawGood).length,
    },
    gatewayExitCode: exitCode,
    gatewayStderr: gw.warnings.slice(0, 20),
  };
  console.log(report(summary, samples));
  if (o.out) writeFileSync(o.out, `${JSON.stringify({ options: o, summary, samples }, null, 2)}\n`);
  rmSync(dir, { recursive: true, force: true });
  const ok =
    summary.history.storedButMissing === 0 &&
    summary.history.unaccountedSamples === 0 &&
    integrity === "ok" &&
    c.connectionLost === 0 &&
    c.subscriptionsTerminated === 0 &&
    summary.outages.seenBad === summary.outages.count &&
    summary.outages.seenBack === summary.outages.count;
  return ok ? 0 : 1;
}

function report(s: ReturnType<typeof JSON.parse>, samples: readonly Sample[]): string {
  const lines = [
    `## Soak: ${s.minutes} min, ${s.devices} devices, ${s.clients} clients`,
    "",
    "| minute | RSS MiB | anon / file MiB | heap MiB | database MiB | handles/timers | poll p99 ms | history recorded / stored / queued / dropped | notifications | faults |",
    "|---:|---:|---|---:|---:|---|---:|---|---:|---:|",
    ...samples.map(
      (x) =>
        `| ${x.minute.toFixed(1)} | ${x.rssMiB} | ${x.anonMiB ?? "-"} / ${x.fileMiB ?? "-"} | ${x.heapUsedMiB} | ${x.databaseMiB} | ${Object.entries(x.activeResources)
          .map(([k, v]) => `${k} ${v}`)
          .join(", ")} | ${x.system.PollLatenessP99 ?? "-"} | ${x.system.HistoryRecorded} / ${x.system.HistoryStored} / ${x.system.HistoryQueued} / ${x.system.HistoryDropped} | ${x.clients.notifications} | ${x.clients.connectionLost + x.clients.subscriptionsTerminated} |`,
    ),
    "",
    `RSS after warm-up ${s.rss.firstAfterWarmup} -> ${s.rss.last} MiB (max ${s.rss.max}), trend ${s.rss.slopeMiBPerHour} MiB/h (anonymous ${s.anonSlopeMiBPerHour}, files ${s.fileSlopeMiBPerHour}); heap ${s.heap.firstAfterWarmup} -> ${s.heap.last} MiB (max ${s.heap.max}), trend ${s.heap.slopeMiBPerHour} MiB/h (V8's reserved heap ${s.heapTotalSlopeMiBPerHour} MiB/h)`,
    `history cache ${s.historyCache}; database ${s.database.lastMiB} MiB at the end, growing ${s.database.slopeMiBPerHour} MiB/h`,
    `handles/timers (after warm-up -> last, max): ${s.resources.map((r: { kind: string; first: number; last: number; max: number }) => `${r.kind} ${r.first}->${r.last} (${r.max})`).join(", ")}`,
    `poll lateness: median p50 ${s.lateness.medianP50} ms, worst p99 ${s.lateness.worstP99} ms, worst max ${s.lateness.worstMax} ms`,
    `history: recorded ${s.history.recordedAtLastSample}, stored ${s.history.storedAtLastSample}, dropped ${s.history.dropped}, failed flushes ${s.history.failedFlushes}; ${s.history.rowsInDatabase} rows in the database after stop (${s.history.storedButMissing} reported stored but missing), integrity ${s.history.integrity}; recorded = stored + queued + dropped at every sample but ${s.history.unaccountedSamples}; ${s.history.expectedAtFullHealth} samples if every device had answered every second`,
    `clients: ${s.clientCounters.notifications} notifications (${s.clientCounters.badNotifications} Bad), ${s.clientCounters.reads} reads (${s.clientCounters.readErrors} failed), ${s.clientCounters.writes} writes (${s.clientCounters.writesGood} Good, ${s.clientCounters.writeErrors} failed); channel faults: ${s.clientCounters.connectionLost} connections lost, ${s.clientCounters.reconnections} reconnections, ${s.clientCounters.subscriptionsTerminated} subscriptions terminated, ${s.clientCounters.sessionClosedByServer} sessions closed`,
    `outages: ${s.outages.count}, seen going Bad ${s.outages.seenBad}, seen coming back ${s.outages.seenBack}`,
    `gateway exit code ${s.gatewayExitCode}`,
  ];
  return lines.join("\n");
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error("soak:", err);
    process.exit(1);
  },
);
