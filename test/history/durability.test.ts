// Durability and bounds of the gateway's history writer (write-thread.ts and its worker): a
// process killed with SIGKILL mid-stream leaves a database that opens, passes integrity_check and
// holds every sample the writer reported as flushed; a database capped at a size stays under it
// (file + WAL) while samples keep coming; retention by age and by size goes in bounded steps.
// The crash child and the writer's worker run the compiled code in dist/ (`npm test` builds it).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { HistoryStore, TIME_MAX, TIME_MIN } from "../../src/history/store.js";
import { HistoryWriteThread } from "../../src/history/write-thread.js";
import { distFile, missingBuild, requirePeers, skipWithout } from "../helpers/built.js";
import { T0, dbl, node, tempHistory, type TempHistory } from "./helpers.js";

const unbuilt = missingBuild("src/history/write-worker.js", "src/history/write-thread.js", "src/history/store.js");

let h: TempHistory | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

const TAGS = 10;

/** The child: records TAGS tags round-robin, flushes every 5 ms, prints the committed count. */
function childSource(file: string): string {
  const url = (f: string) => JSON.stringify(pathToFileURL(distFile(`src/history/${f}`)).href);
  return `
import { HistoryStore } from ${url("store.js")};
import { HistoryWriteThread } from ${url("write-thread.js")};
const file = ${JSON.stringify(file)};
new HistoryStore(file).close();
const w = new HistoryWriteThread({ file, flushInterval: 5, flushCount: 2000, queueSize: 1000000 });
const ids = [];
for (let k = 0; k < ${TAGS}; k++) { ids.push({ namespace: 1, idType: 1, value: "tag" + k }); w.declare(ids[k]); }
w.start();
let i = 0;
let reported = 0;
setInterval(() => {
  for (let n = 0; n < 100; n++, i++) for (let k = 0; k < ${TAGS}; k++) w.record(ids[k], { value: { dataType: 11, arrayType: 0, value: i * 0.5 }, sourceTimestamp: ${T0} + i });
  if (w.stats.flushed !== reported) { reported = w.stats.flushed; process.stdout.write("F " + reported + "\\n"); }
}, 1);
`;
}

describe.skipIf(skipWithout(unbuilt))("crash safety", () => {
  beforeAll(() => requirePeers(unbuilt));
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("SIGKILL mid-stream loses nothing the writer reported flushed and never corrupts the database", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fieldgate-history-crash-"));
    dirs.push(dir);
    const file = join(dir, "history.db");
    const child = spawn(process.execPath, ["--input-type=module", "-e", childSource(file)], { stdio: ["ignore", "pipe", "inherit"] });
    let flushed = 0;
    let buffer = "";
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        fail(new Error(`the child reported only ${flushed} flushed samples`));
      }, 20_000);
      child.stdout!.on("data", (chunk: Buffer) => {
        buffer += chunk.toString();
        const lines = buffer.split("\n");
        buffer = lines.pop()!;
        for (const line of lines) if (line.startsWith("F ")) flushed = Number(line.slice(2));
        // Enough flushes behind us: kill it while it keeps writing.
        if (flushed >= 60_000 && child.exitCode === null && !child.killed) child.kill("SIGKILL");
      });
      child.on("exit", () => {
        clearTimeout(timer);
        done();
      });
    });
    expect(child.signalCode).toBe("SIGKILL");
    expect(existsSync(`${file}-wal`)).toBe(true); // it died without a clean close
    const db = new Database(file);
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    } finally {
      db.close();
    }
    const store = new HistoryStore(file);
    try {
      const perTag = Math.floor(flushed / TAGS);
      let total = 0;
      for (let k = 0; k < TAGS; k++) {
        const rows = store.read(store.find(node(`tag${k}`))!, TIME_MIN, TIME_MAX, true, 10_000_000);
        total += rows.length;
        // Every sample up to the last reported flush, in order, without gaps.
        for (let i = 0; i < perTag; i++) expect(rows[i]?.sourceTimestamp).toBe(T0 + i);
        expect(rows[perTag - 1].value?.value).toBe((perTag - 1) * 0.5);
      }
      expect(total).toBeGreaterThanOrEqual(flushed);
    } finally {
      store.close();
    }
  }, 30_000);
});

function onDisk(file: string): number {
  const wal = `${file}-wal`;
  return statSync(file).size + (existsSync(wal) ? statSync(wal).size : 0);
}

describe.skipIf(skipWithout(unbuilt))("retention", () => {
  beforeAll(() => requirePeers(unbuilt));

  it("keeps the database and its WAL under maxSize while samples keep coming", () => {
    const maxSize = 1 << 20;
    h = tempHistory({ flushCount: 2000, queueSize: 10_000 }, { maxSize });
    for (let k = 0; k < 8; k++) h.writer.declare(node(`t${k}`));
    let largest = 0;
    let i = 0;
    // ~200k samples: about four times what fits in 1 MiB.
    for (let round = 0; round < 100; round++) {
      for (let n = 0; n < 250; n++, i++) for (let k = 0; k < 8; k++) h.writer.record(node(`t${k}`), dbl(Math.sin(i / 50) * 100, T0 + i * 1000));
      h.writer.tickNow(); // a flush, a move of staged samples when due, a retention step
      largest = Math.max(largest, onDisk(h.file));
    }
    expect(largest).toBeLessThanOrEqual(maxSize);
    expect(h.writer.stats.retained).toBeGreaterThan(100_000);
    expect(h.writer.stats.dropped).toBe(0);
    expect(h.writer.stats.flushed).toBe(i * 8);
    // The newest samples survive; the oldest went, for every tag alike.
    for (let k = 0; k < 8; k++) {
      const s = h.store.find(node(`t${k}`))!;
      expect(h.store.newest(s)).toBe(T0 + (i - 1) * 1000);
      expect(h.store.oldest(s)).toBeGreaterThan(T0 + (i - 10_000) * 1000);
    }
    expect(h.store.integrityCheck()).toBe("ok");
  }, 60_000);

  it("shrinks a database reopened with a smaller maxSize, in bounded steps", async () => {
    h = tempHistory({ flushCount: 5000, queueSize: 10_000 });
    for (let k = 0; k < 4; k++) h.writer.declare(node(`t${k}`));
    for (let i = 0; i < 25_000; i++) {
      for (let k = 0; k < 4; k++) h.writer.record(node(`t${k}`), dbl(i * 0.1, T0 + i * 1000));
      if (i % 1000 === 999) h.writer.flushAll();
    }
    h.store.close();
    await h.writer.close();
    const before = statSync(h.file).size;
    const maxSize = 512 << 10;
    expect(before).toBeGreaterThan(2 * maxSize);
    const writer = new HistoryWriteThread({ file: h.file, store: { maxSize }, flushInterval: 1000, flushCount: 1000, queueSize: 1000, retentionBudget: 5000, now: () => T0 });
    try {
      let steps = 0;
      while (onDisk(h.file) > maxSize && steps < 500) {
        writer.tickNow();
        steps++;
      }
      expect(onDisk(h.file)).toBeLessThanOrEqual(maxSize);
      expect(steps).toBeGreaterThan(1); // not in one go
      expect(writer.stats.retained).toBeGreaterThan(0);
    } finally {
      await writer.close();
    }
    const store = new HistoryStore(h.file, { readonly: true });
    try {
      expect(store.integrityCheck()).toBe("ok");
    } finally {
      store.close();
    }
  }, 60_000);

  it("deletes samples older than maxAge, a bounded number per step", () => {
    let now = T0;
    h = tempHistory({ maxAge: 60_000, retentionBudget: 50, now: () => now });
    h.writer.declare(node("a"));
    h.writer.declare(node("b"));
    for (let i = 0; i < 120; i++) {
      h.writer.record(node("a"), dbl(i, T0 + i * 1000));
      h.writer.record(node("b"), dbl(i, T0 + i * 1000));
    }
    h.writer.flushAll();
    // Retention works on the tags' tables, after the staged samples moved (a read moves them).
    h.writer.prepareReadSync();
    expect(h.writer.stats.retained).toBe(0);
    now = T0 + 120_000;
    const retained: number[] = [];
    for (let k = 0; k < 4; k++) {
      h.writer.tickNow();
      retained.push(h.writer.stats.retained);
    }
    expect(retained).toEqual([50, 100, 120, 120]);
    for (const name of ["a", "b"]) expect(h.store.oldest(h.store.find(node(name))!)).toBe(T0 + 60_000);
  });
});
