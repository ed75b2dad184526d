// History on a full disk (issue 9). The gateway runs in a child process inside a private mount
// namespace (`unshare -m`, root only; skipped with a note elsewhere) with its dataDir on a 4 MiB
// tmpfs. The child fills the tmpfs on command, so the history database's writes fail
// (SQLITE_FULL): the gateway keeps serving live device values, the System object reports
// HistoryWriting false with a Bad status, the samples wait in the bounded queue, and once the
// space returns they are written and HistoryWriting is true again. After stop the database
// passes PRAGMA integrity_check and holds every sample the writer reported stored.
// The child runs the compiled code in dist/ (`npm test` builds it first).
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DIST, privateTmpfsMissing, spawnOnTmpfs } from "./private-tmpfs.js";
import { IdType } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import type { ReadResponse } from "../../src/ua/generated/types.js";
import { ServiceClient } from "../server/service-client.js";

const missing = privateTmpfsMissing();

interface Sample {
  writing: boolean | null;
  writingStatus: number;
  recorded: number;
  stored: number;
  queued: number;
  dropped: number;
  failedFlushes: number;
}

/** The child: the gateway from the config, and commands on stdin answered with one JSON line each. */
function childSource(config: string): string {
  return `
import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import Database from "better-sqlite3";
import { loadGatewayConfig } from ${JSON.stringify(join(DIST, "src/config/load.js"))};
import { FieldgateServer } from ${JSON.stringify(join(DIST, "src/server/server.js"))};
const out = (o) => process.stdout.write(JSON.stringify(o) + "\\n");
const config = loadGatewayConfig(${JSON.stringify(config)});
const server = new FieldgateServer(config, { info() {}, warn(m) { process.stderr.write(m + "\\n"); } });
await server.start();
out({ ready: true, port: server.port });
const filler = join(config.dataDir, "filler");
for await (const line of createInterface({ input: process.stdin })) {
  if (line === "fill") {
    const fd = openSync(filler, "w");
    const block = Buffer.alloc(16384, 1);
    let bytes = 0;
    try { for (;;) { writeSync(fd, block); bytes += block.length; } } catch (err) { out({ filled: bytes, code: err.code }); }
    closeSync(fd);
  } else if (line === "free") {
    rmSync(filler);
    out({ freed: true });
  } else if (line === "sample") {
    await server.system.sample();
    const v = (n) => server.system.variable(n).value;
    const num = (n) => Number(v(n).value?.value ?? -1);
    const w = v("HistoryWriting");
    out({ writing: w.value?.value ?? null, writingStatus: w.statusCode ?? 0, recorded: num("HistoryRecorded"), stored: num("HistoryStored"),
      queued: num("HistoryQueued"), dropped: num("HistoryDropped"), failedFlushes: num("HistoryFailedFlushes") });
  } else if (line === "stop") {
    await server.stop();
    const stats = { ...server.history.writer.stats };
    const db = new Database(join(config.dataDir, "history.db"), { readonly: true });
    const integrity = db.prepare("PRAGMA integrity_check").get().integrity_check;
    let rows = 0;
    // Samples live in per-tag tables (and any staging table): every table but the series list.
    for (const t of db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'series' AND name NOT LIKE 'sqlite_%'").all()) rows += db.prepare('SELECT count(*) AS n FROM "' + t.name + '"').get().n;
    db.close();
    out({ integrity, rows, stats });
    process.exit(0);
  }
}
`;
}

let dir: string;
let child: ChildProcess | undefined;
let port = 0;
const lines: Record<string, unknown>[] = [];
let waiters: (() => void)[] = [];
let stderr = "";

async function nextLine(timeoutMs = 15_000): Promise<Record<string, unknown>> {
  const end = Date.now() + timeoutMs;
  while (lines.length === 0) {
    if (Date.now() > end || child?.exitCode !== null) throw new Error(`no answer from the gateway child; stderr: ${stderr}`);
    await new Promise<void>((r) => {
      const t = setTimeout(r, 100);
      waiters.push(() => {
        clearTimeout(t);
        r();
      });
    });
  }
  return lines.shift()!;
}

async function command(c: string): Promise<Record<string, unknown>> {
  child!.stdin!.write(`${c}\n`);
  return nextLine();
}

async function sampleUntil(what: string, ok: (s: Sample) => boolean, ms = 15_000): Promise<Sample> {
  const end = Date.now() + ms;
  for (;;) {
    const s = (await command("sample")) as unknown as Sample;
    if (ok(s)) return s;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms (last ${JSON.stringify(s)})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), "fieldgate-diskfull-"));
  const data = join(dir, "data");
  mkdirSync(data);
  writeFileSync(
    join(dir, "devices.yaml"),
    [
      "devices:",
      "  - name: sim",
      "    driver: simulator",
      "    rate: 100ms",
      "    tags:",
      ...["ramp:input:0:uint16", "level:input:1:uint16", "temp:input:2:float32", "count:input:4:uint32"].map((t) => {
        const [name, area, off, type] = t.split(":");
        return `      - { name: ${name}, address: "${area}:${off}", type: ${type}, history: true }`;
      }),
      "",
    ].join("\n"),
  );
  const config = join(dir, "gateway.yaml");
  writeFileSync(
    config,
    "server:\n  host: 127.0.0.1\n  port: 0\n  testNamespace: false\ndataDir: ./data\ndevices: ./devices.yaml\nsecurity:\n  securityPolicies: [None]\nhistory:\n  flushInterval: 100ms\n  queueSize: 100000\n",
  );
  child = spawnOnTmpfs(data, childSource(config), ["pipe", "pipe", "pipe"]);
  createInterface({ input: child.stdout! }).on("line", (l) => {
    try {
      lines.push(JSON.parse(l) as Record<string, unknown>);
    } catch {
      return;
    }
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  });
  child.stderr!.on("data", (d: Buffer) => {
    if (stderr.length < 4000) stderr += d.toString();
  });
  const ready = await nextLine(30_000);
  port = ready.port as number;
}, 60_000);

afterAll(async () => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function liveValue(c: ServiceClient): Promise<{ status: number; source: number }> {
  const r = (await c.read([{ nodeId: { namespace: 1, idType: IdType.String, value: "sim.ramp" }, attributeId: 13, dataEncoding: { namespaceIndex: 0, name: "" } }])) as ReadResponse;
  const dv = r.results![0];
  return { status: dv.statusCode ?? StatusCodes.Good, source: dv.sourceTimestamp ?? 0 };
}

describe.skipIf(missing !== "")(`history on a full disk (${missing || "private tmpfs"})`, () => {
  it("fails its writes, keeps serving live values, says so in diagnostics, resumes when space returns; the database stays intact", async () => {
    const c = await ServiceClient.open(port);
    try {
      await c.createSession();
      await c.activate();
      const first = await sampleUntil("storing", (s) => s.writing === true && s.stored > 0);
      expect(first.writingStatus).toBe(StatusCodes.Good);

      const filled = await command("fill");
      expect(filled.code).toBe("ENOSPC");
      const failing = await sampleUntil("writes failing", (s) => s.writing === false);
      expect(failing.writingStatus).toBe(StatusCodes.BadResourceUnavailable);
      expect(failing.failedFlushes).toBeGreaterThan(0);
      // Samples keep coming and wait in the queue.
      const later = await sampleUntil("queue growing", (s) => s.queued > failing.queued && s.recorded > failing.recorded);
      expect(later.writing).toBe(false);
      // Live values are served, Good and fresh, while the disk is full.
      const a = await liveValue(c);
      let b = a;
      const end = Date.now() + 5000;
      while (b.source <= a.source && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 100));
        b = await liveValue(c);
      }
      expect(a.status).toBe(StatusCodes.Good);
      expect(b.status).toBe(StatusCodes.Good);
      expect(b.source).toBeGreaterThan(a.source);

      await command("free");
      const back = await sampleUntil("storing again", (s) => s.writing === true && s.stored >= later.recorded - s.dropped);
      expect(back.writingStatus).toBe(StatusCodes.Good);
      // The queue was big enough for the outage: nothing was dropped.
      expect(back.dropped).toBe(0);

      const end2 = (await command("stop")) as { integrity: string; rows: number; stats: { flushed: number; recorded: number; dropped: number } };
      expect(end2.integrity).toBe("ok");
      // Every sample reported stored is in the database; at stop the queue was flushed too.
      expect(end2.rows).toBeGreaterThanOrEqual(back.stored);
      expect(end2.rows).toBe(end2.stats.flushed);
      expect(end2.stats.flushed).toBe(end2.stats.recorded - end2.stats.dropped);
    } finally {
      c.close();
    }
  }, 90_000);
});
