// Durability and bounds: a writer killed with SIGKILL mid-stream leaves a database that opens,
// passes integrity_check and holds every sample it reported as flushed; a database capped at a
// size stays under it (file + WAL) while samples keep coming; retention by age.
// The crash child runs the compiled code in dist/ (`npm test` builds it first).
import { spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { HistoryStore, TIME_MAX, TIME_MIN } from "../../src/history/store.js";
import { HistoryWriter } from "../../src/history/writer.js";
import { T0, dbl, node, tempHistory, type TempHistory } from "./helpers.js";

const DIST = resolve(dirname(fileURLToPath(import.meta.url)), "../../dist/src/history");

let h: TempHistory | undefined;
afterEach(() => {
  h?.cleanup();
  h = undefined;
});

const TAGS = 10;

/** The child: records TAGS tags round-robin, flushes every 5 ms, prints the committed count. */
function childSource(file: string): string {
  const url = (f: string) => pathToFileURL(resolve(DIST, f)).href;
  return `
import { HistoryStore } from ${JSON.stringify(url("store.js"))};
import { HistoryWriter } from ${JSON.stringify(url("writer.js"))};
const store = new HistoryStore(${JSON.stringify(file)});
const w = new HistoryWriter(store, { flushInterval: 5, flushCount: 2000, queueSize: 1000000 });
const ids = [];
for (let k = 0; k < ${TAGS}; k++) { ids.push({ namespace: 1, idType: 1, value: "tag" + k }); w.declare(ids[k]); }
const flush = w.flush.bind(w);
w.flush = () => { const n = flush(); if (n > 0) process.stdout.write("F " + w.stats.flushed + "\\n"); return n; };
w.start();
let i = 0;
setInterval(() => {
  for (let n = 0; n < 100; n++, i++) {
    for (let k = 0; k < ${TAGS}; k++) w.record(ids[k], { value: { dataType: 11, arrayType: 0, value: i * 0.5 }, sourceTimestamp: ${T0} + i });
  }
}, 1);
`;
}

describe("crash safety", () => {
  it.skipIf(!existsSync(resolve(DIST, "writer.js")))(
    "SIGKILL mid-stream loses nothing that was reported flushed and never corrupts the database",
    async () => {
      h = tempHistory();
      h.store.close();
      const child = spawn(process.execPath, ["--input-type=module", "-e", childSource(h.file)], { stdio: ["ignore", "pipe", "inherit"] });
      let flushed = 0;
      let buffer = "";
      const killed = new Promise<void>((done, fail) => {
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
      await killed;
      expect(child.signalCode).toBe("SIGKILL");
      expect(existsSync(`${h.file}-wal`)).toBe(true); // it died without a clean close
      const db = new Database(h.file);
      try {
        expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      } finally {
        db.close();
      }
      const store = new HistoryStore(h.file);
      try {
        const perTag = Math.floor(flushed / TAGS);
        let total = 0;
        for (let k = 0; k < TAGS; k++) {
          const s = store.find(node(`tag${k}`))!;
          const rows = store.read(s, TIME_MIN, TIME_MAX, true, 10_000_000);
          total += rows.length;
          // Every sample up to the last reported flush, in order, without gaps.
          for (let i = 0; i < perTag; i++) expect(rows[i]?.sourceTimestamp).toBe(T0 + i);
          expect(rows[perTag - 1].value?.value).toBe((perTag - 1) * 0.5);
        }
        expect(total).toBeGreaterThanOrEqual(flushed);
      } finally {
        store.close();
      }
    },
    30_000,
  );
});

function onDisk(file: string): number {
  const wal = `${file}-wal`;
  return statSync(file).size + (existsSync(wal) ? statSync(wal).size : 0);
}

describe("retention", () => {
  it("keeps the database and its WAL under maxSize while samples keep coming", () => {
    const maxSize = 1 << 20;
    h = tempHistory({ flushCount: 2000, queueSize: 10_000 }, { maxSize });
    for (let k = 0; k < 8; k++) h.writer.declare(node(`t${k}`));
    let largest = 0;
    let i = 0;
    // ~200k samples: about four times what fits in 1 MiB.
    for (let round = 0; round < 100; round++) {
      for (let n = 0; n < 250; n++, i++) for (let k = 0; k < 8; k++) h.writer.record(node(`t${k}`), dbl(Math.sin(i / 50) * 100, T0 + i * 1000));
      h.writer.tick(); // a flush, a move of staged samples when due, a retention step
      largest = Math.max(largest, onDisk(h.file));
    }
    expect(largest).toBeLessThanOrEqual(maxSize);
    expect(h.writer.stats.retained).toBeGreaterThan(100_000);
    expect(h.writer.stats.dropped).toBe(0);
    // The newest samples survive; the oldest went, for every tag alike.
    for (let k = 0; k < 8; k++) {
      const s = h.store.find(node(`t${k}`))!;
      expect(h.store.newest(s)).toBe(T0 + (i - 1) * 1000);
      expect(h.store.oldest(s)).toBeGreaterThan(T0 + (i - 10_000) * 1000);
    }
    expect(h.store.integrityCheck()).toBe("ok");
  }, 60_000);

  it("shrinks a database reopened with a smaller maxSize, in bounded steps", () => {
    h = tempHistory({ flushCount: 5000, queueSize: 10_000 });
    for (let k = 0; k < 4; k++) h.writer.declare(node(`t${k}`));
    for (let i = 0; i < 25_000; i++) {
      for (let k = 0; k < 4; k++) h.writer.record(node(`t${k}`), dbl(i * 0.1, T0 + i * 1000));
      if (i % 1000 === 999) h.writer.flushAll();
    }
    h.writer.close();
    const before = statSync(h.file).size;
    const maxSize = 512 << 10;
    expect(before).toBeGreaterThan(2 * maxSize);
    const store = new HistoryStore(h.file, { maxSize });
    const writer = new HistoryWriter(store, { flushInterval: 1000, flushCount: 1000, queueSize: 1000, retentionBudget: 5000 });
    try {
      let steps = 0;
      while (onDisk(h.file) > maxSize && steps < 500) {
        writer.retain(T0);
        steps++;
      }
      expect(onDisk(h.file)).toBeLessThanOrEqual(maxSize);
      expect(steps).toBeGreaterThan(1); // not in one go
      expect(store.integrityCheck()).toBe("ok");
    } finally {
      writer.close();
    }
  }, 60_000);

  it("deletes samples older than maxAge, a bounded number per step", () => {
    h = tempHistory({ maxAge: 60_000, retentionBudget: 50 });
    h.writer.declare(node("a"));
    h.writer.declare(node("b"));
    for (let i = 0; i < 120; i++) {
      h.writer.record(node("a"), dbl(i, T0 + i * 1000));
      h.writer.record(node("b"), dbl(i, T0 + i * 1000));
    }
    h.writer.flushAll();
    h.store.compact(); // retention works on the tags' tables, after the staged samples moved
    const now = T0 + 120_000;
    expect(h.writer.retain(now)).toBe(50);
    expect(h.writer.retain(now)).toBe(50);
    expect(h.writer.retain(now)).toBe(20);
    for (const name of ["a", "b"]) expect(h.store.oldest(h.store.find(node(name))!)).toBe(T0 + 60_000);
  });
});
