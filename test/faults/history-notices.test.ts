// What the history says in the log when the disk is full (src/history/write-notices.ts), seen
// the way disk-full.test.ts sees the full disk: the gateway (dist/) in a child process inside a
// private mount namespace (`unshare -m`, root only; skipped with a note elsewhere), its dataDir on
// a 4 MiB tmpfs that the child fills on command. With a queue of 100 samples and 8 tags polled
// every 50 ms the queue is full within a second of the disk: the log says how many samples were
// dropped since its last line and in all; once the space is back it says that history is written
// again, after how many failed writes.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DIST, privateTmpfsMissing, spawnOnTmpfs } from "./private-tmpfs.js";

const missing = privateTmpfsMissing();

/** The child: the gateway with the real Logger, and commands on stdin answered with one JSON line each (on fd 3). */
function childSource(config: string): string {
  return `
import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { loadGatewayConfig } from ${JSON.stringify(join(DIST, "src/config/load.js"))};
import { FieldgateServer } from ${JSON.stringify(join(DIST, "src/server/server.js"))};
import { Logger } from ${JSON.stringify(join(DIST, "src/log.js"))};
const out = (o) => writeSync(3, JSON.stringify(o) + "\\n");
const config = loadGatewayConfig(${JSON.stringify(config)});
const server = new FieldgateServer(config, new Logger({ journal: false }));
await server.start();
out({ ready: true });
const filler = join(config.dataDir, "filler");
for await (const line of createInterface({ input: process.stdin })) {
  if (line === "fill") {
    const fd = openSync(filler, "w");
    const block = Buffer.alloc(16384, 1);
    try { for (;;) writeSync(fd, block); } catch (err) { out({ code: err.code }); }
    closeSync(fd);
  } else if (line === "free") {
    rmSync(filler);
    out({ freed: true });
  } else if (line === "stats") {
    out({ ...server.history.writer.stats, queued: server.history.writer.queued });
  } else if (line === "stop") {
    await server.stop();
    out({ stopped: true });
    process.exit(0);
  }
}
`;
}

let dir: string;
let child: ChildProcess | undefined;
let log = "";
const answers: Record<string, unknown>[] = [];

async function until<T>(what: string, get: () => T | undefined, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > end || child?.exitCode !== null) throw new Error(`${what}: not within ${ms} ms; log:\n${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function command(c: string): Promise<Record<string, unknown>> {
  const n = answers.length;
  child!.stdin!.write(`${c}\n`);
  await until(`answer to ${c}`, () => (answers.length > n ? true : undefined));
  return answers[n]!;
}

beforeAll(async () => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), "fieldgate-history-notices-"));
  const data = join(dir, "data");
  mkdirSync(data);
  const tags = Array.from({ length: 8 }, (_, i) => `      - { name: t${i}, address: "input:${i}", history: true }`);
  writeFileSync(join(dir, "devices.yaml"), ["devices:", "  - name: sim", "    driver: simulator", "    rate: 50ms", "    tags:", ...tags, ""].join("\n"));
  const config = join(dir, "gateway.yaml");
  writeFileSync(
    config,
    "server:\n  host: 127.0.0.1\n  port: 0\n  testNamespace: false\ndataDir: ./data\ndevices: ./devices.yaml\nsecurity:\n  securityPolicies: [None]\nhistory:\n  flushInterval: 100ms\n  queueSize: 100\n",
  );
  child = spawnOnTmpfs(data, childSource(config), ["pipe", "pipe", "pipe", "pipe"]);
  child.stdout!.on("data", (d: Buffer) => (log += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (log += d.toString()));
  createInterface({ input: child.stdio[3] as NodeJS.ReadableStream }).on("line", (l) => answers.push(JSON.parse(l) as Record<string, unknown>));
  await until("the gateway's start", () => (answers.length > 0 ? true : undefined), 30_000);
}, 60_000);

afterAll(async () => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(missing !== "")(`the history's log lines on a full disk (${missing || "private tmpfs"})`, () => {
  it("says how many samples it dropped (since its last line, in all), and that it writes again once there is room", async () => {
    for (;;) {
      const s = await command("stats");
      if ((s.flushed as number) > 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(log).not.toMatch(/dropped|writing again/);
    expect((await command("fill")).code).toBe("ENOSPC");
    const drop = await until("a drop line", () => /history: (\d+) sample\(s\) dropped unwritten since the last message \((\d+) in all\): writes to the database fail and the queue \(history\.queueSize: 100\) is full/.exec(log) ?? undefined);
    // The first line: all that were dropped so far are new, and the writer counted at least as many.
    expect(Number(drop[1])).toBeGreaterThan(0);
    expect(drop[2]).toBe(drop[1]);
    expect(((await command("stats")).dropped as number) >= Number(drop[2])).toBe(true);
    // One line, not one per dropped sample.
    expect(log.match(/dropped unwritten/g)).toHaveLength(1);
    const failedBefore = (await command("stats")).failedFlushes as number;
    expect(failedBefore).toBeGreaterThan(0);
    await command("free");
    const back = await until("the writing-again line", () => /history: writing again after (\d+) failed write\(s\) over ([\d.]+) s; (\d+) queued sample\(s\) still to write/.exec(log) ?? undefined);
    expect(Number(back[1])).toBeGreaterThanOrEqual(failedBefore);
    const after = await command("stats");
    expect(after.failing).toBe(false);
    expect(Number(back[1])).toBeLessThanOrEqual(after.failedFlushes as number);
    expect((await command("stop")).stopped).toBe(true);
  }, 60_000);
});
