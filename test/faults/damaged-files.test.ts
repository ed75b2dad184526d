// The damaged-file mechanism (src/storage/) part by part: the move aside and its names, what
// counts as damage and what does not, the history writer's check before its first write and its
// move of a database that a statement finds corrupt later, the gateway's own certificate, and the
// report's words.
import { createHash, randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, truncateSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { HISTORY_FILE, HistoryStore, TIME_MAX, TIME_MIN } from "../../src/history/store.js";
import { HistoryWriteThread, type WriteReply, type WriteRequest, type WriteWorkerData } from "../../src/history/write-thread.js";
import { SampleRing } from "../../src/history/sample-ring.js";
import { WorkerLink } from "../../src/worker-link.js";
import { builtFile } from "../../src/worker-file.js";
import { Pki, ownCertificateFile, ownKeyFile } from "../../src/security/pki.js";
import { describeDamaged, moveAside, SQLITE_ADVICE, SQLITE_COMPANIONS, type DamagedFile } from "../../src/storage/damaged.js";
import { isDamage, openOrMoveAside, quickCheck, sqliteFileInfo } from "../../src/storage/sqlite-check.js";
import { checkOffLoop } from "../../src/storage/check-off-loop.js";
import { BuiltinType } from "../../src/ua/builtins.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { T0, dbl, node } from "../history/helpers.js";

const dirs: string[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "fieldgate-damaged-unit-"));
  dirs.push(d);
  return d;
}

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const INFO = sqliteFileInfo("history", "test database", { sql: "SELECT count(*) FROM t", unit: "row(s)" });

/** A database of 8 tags with 3,000 samples each, as the history store makes it. */
function history(file: string): void {
  const store = new HistoryStore(file);
  store.transaction(() => {
    for (let s = 0; s < 8; s++) {
      const series = store.ensureSeries(node(`t${s}`));
      const insert = store.prepare(`INSERT INTO ${series.table}(ts, v, st) VALUES (?, ?, NULL)`);
      for (let i = 0; i < 3000; i++) insert.run(T0 + i * 1000, i);
    }
  });
  store.close();
}

/** Overwrites the pages `pages` (1-based) with random bytes; returns the page size. */
function overwritePages(file: string, pages: (count: number) => number[]): number {
  const bytes = readFileSync(file);
  const pageSize = bytes.readUInt16BE(16) === 1 ? 65536 : bytes.readUInt16BE(16);
  const fd = openSync(file, "r+");
  for (const p of pages(Math.floor(bytes.length / pageSize))) writeSync(fd, randomBytes(pageSize), 0, pageSize, (p - 1) * pageSize);
  closeSync(fd);
  return pageSize;
}

const twentyPages = (count: number) => Array.from({ length: 20 }, (_, i) => 2 + Math.floor(((i + 1) * (count - 2)) / 21));

describe("moveAside", () => {
  it("renames a file and its journal files to <name>.damaged-<time>, another name when that is taken, and says what to do", () => {
    const dir = tempDir();
    const file = join(dir, "x.db");
    writeFileSync(file, "main");
    writeFileSync(`${file}-wal`, "wal");
    const at = Date.UTC(2025, 0, 2, 3, 4, 5, 678);
    const a = moveAside(file, INFO, "why", { at, lost: "3 row(s)" });
    expect(a.movedTo).toBe(`${file}.damaged-20250102T030405Z`);
    expect(a.companions).toEqual([`${file}.damaged-20250102T030405Z-wal`]);
    expect(readFileSync(a.movedTo, "utf8")).toBe("main");
    expect(readFileSync(a.companions[0]!, "utf8")).toBe("wal");
    expect(existsSync(file) || existsSync(`${file}-wal`)).toBe(false);
    writeFileSync(file, "again");
    const b = moveAside(file, INFO, "why", { at });
    expect(b.movedTo).toBe(`${file}.damaged-20250102T030405Z-2`);
    expect(b.companions).toEqual([]);
    expect(a.advice).toBe(SQLITE_ADVICE.replaceAll("{moved}", a.movedTo));
    expect(describeDamaged(a)).toBe(
      `test database ${file} is damaged (why): moved aside to ${a.movedTo} (with -wal) and started anew; lost with it: 3 row(s). What to do: ${a.advice}`,
    );
    expect(SQLITE_COMPANIONS).toEqual(["-wal", "-shm", "-journal"]);
  });
});

describe("what is damage", () => {
  it("quickCheck: nothing to say of a sound file or of none; a refused file and overwritten pages are damage, with what they held when it can be counted", () => {
    const dir = tempDir();
    const file = join(dir, "t.db");
    expect(quickCheck(file, INFO)).toBeUndefined();
    const db = new Database(file);
    db.exec("CREATE TABLE t(x)");
    db.transaction(() => {
      const ins = db.prepare("INSERT INTO t VALUES (?)");
      for (let i = 0; i < 20_000; i++) ins.run(randomBytes(100));
    })();
    db.close();
    expect(quickCheck(file, INFO)).toBeUndefined();
    overwritePages(file, (count) => [count - 1]);
    // quick_check lists what it finds, or SQLite stops it at the first broken b-tree page.
    const pages = quickCheck(file, INFO)!;
    expect(pages.problem).toMatch(/^quick_check: |malformed/);
    expect(pages.lost).toMatch(/row\(s\)/);
    writeFileSync(file, randomBytes(8192));
    expect(quickCheck(file, INFO)).toEqual({ problem: "file is not a database", lost: "an unknown number of row(s) (the file no longer says how many)" });
  });

  it("openOrMoveAside: a refused file goes aside and a new one opens; any other failure is thrown and the file left alone", () => {
    const dir = tempDir();
    const file = join(dir, "history.db");
    writeFileSync(file, randomBytes(4096));
    const before = readFileSync(file);
    const reports: DamagedFile[] = [];
    const store = openOrMoveAside(file, HISTORY_FILE, () => new HistoryStore(file), (d) => reports.push(d));
    expect(store.seriesCount).toBe(0);
    store.close();
    expect(reports).toHaveLength(1);
    expect(readFileSync(reports[0]!.movedTo).equals(before)).toBe(true);
    // A newer schema is not damage.
    const db = new Database(file);
    db.pragma(`user_version = ${(900 << 16) | 900}`);
    db.close();
    expect(() => openOrMoveAside(file, HISTORY_FILE, () => new HistoryStore(file), (d) => reports.push(d))).toThrow(/has schema 900/);
    expect(reports).toHaveLength(1);
    expect(existsSync(file)).toBe(true);
    expect(isDamage(Object.assign(new Error("x"), { code: "SQLITE_CORRUPT_INDEX" }))).toBe(true);
    expect(isDamage(Object.assign(new Error("x"), { code: "SQLITE_FULL" }))).toBe(false);
  });

  it("checkOffLoop gives the same verdict from its worker, and stops when asked", async () => {
    const dir = tempDir();
    const file = join(dir, "history.db");
    history(file);
    expect(await checkOffLoop(file, HISTORY_FILE).done).toBeUndefined();
    overwritePages(file, twentyPages);
    const verdict = await checkOffLoop(file, HISTORY_FILE).done;
    expect(verdict).toEqual(quickCheck(file, HISTORY_FILE));
    expect(verdict!.problem).toMatch(/^quick_check: /);
    const stopped = checkOffLoop(file, HISTORY_FILE);
    await stopped.stop();
    await expect(stopped.done).rejects.toThrow();
  }, 30_000);
});

describe("the history writer and a damaged database", () => {
  it("checks it before its first write: moved aside as it was, reported, and the samples go to a new one", async () => {
    const dir = tempDir();
    const file = join(dir, "history.db");
    history(file);
    overwritePages(file, twentyPages);
    const damaged = readFileSync(file);
    // It opens: only quick_check finds the damage.
    new HistoryStore(file, { readonly: true }).close();
    const reports: DamagedFile[] = [];
    const w = new HistoryWriteThread({ file, flushInterval: 60_000, flushCount: 1000, queueSize: 10_000, onDamaged: (d) => reports.push(d) });
    cleanups.push(() => w.close());
    w.declare(node("t0"));
    w.start();
    for (let i = 0; i < 10; i++) w.record(node("t0"), dbl(i, T0 + i));
    w.flushAll();
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ kind: "history", file });
    expect(reports[0]!.reason).toMatch(/^quick_check: /);
    expect(sha(readFileSync(reports[0]!.movedTo))).toBe(sha(damaged));
    await w.close();
    const fresh = new HistoryStore(file, { readonly: true });
    try {
      expect(fresh.seriesCount).toBe(1);
      expect(fresh.read(fresh.find(node("t0"))!, TIME_MIN, TIME_MAX, true, 100).map((d) => d.value?.value)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    } finally {
      fresh.close();
    }
  }, 30_000);

  it("a stop during that check waits for it at most stopCheckWait: the worker is ended, the file left as it was, the queued samples counted as dropped", async () => {
    const dir = tempDir();
    const file = join(dir, "history.db");
    history(file);
    overwritePages(file, twentyPages);
    const before = sha(readFileSync(file));
    const lines: string[] = [];
    const reports: DamagedFile[] = [];
    const w = new HistoryWriteThread({ file, flushInterval: 60_000, flushCount: 1000, queueSize: 10_000, stopCheckWait: 0, log: (m) => lines.push(m), onDamaged: (d) => reports.push(d) });
    w.declare(node("t0"));
    w.start();
    for (let i = 0; i < 10; i++) w.record(node("t0"), dbl(i, T0 + i));
    // The worker is still starting (its isolate, then the check): the stop does not wait for it.
    await w.close();
    expect(w.threads).toBe(0);
    expect(w.stats).toMatchObject({ recorded: 10, flushed: 0, dropped: 10 });
    expect(lines).toEqual(["history: stopped while the database was being checked; 10 queued sample(s) not written (counted as dropped)"]);
    expect(reports).toEqual([]);
    expect(sha(readFileSync(file))).toBe(before);
  }, 30_000);

  it("moves aside a database that a statement finds corrupt after the check (a worker started again), and writes on into a new one", async () => {
    const dir = tempDir();
    const file = join(dir, "history.db");
    history(file);
    // The root page of a tag's table overwritten: opening reads nothing of it; moving samples into it fails.
    const db = new Database(file, { readonly: true });
    const root = (db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'h1'").get() as { rootpage: number }).rootpage;
    db.close();
    overwritePages(file, () => [root]);
    const damaged = readFileSync(file);
    const capacity = 16;
    const memory = new SharedArrayBuffer(SampleRing.bytes(capacity));
    const ring = new SampleRing(capacity, memory);
    const data: WriteWorkerData = { file, store: {}, maintenance: { flushCount: 100 }, ring: memory, capacity, check: false };
    const link = new WorkerLink<WriteRequest, WriteReply>(builtFile("history/write-worker"), data, { name: "history write worker" });
    cleanups.push(() => link.terminate());
    const reports: DamagedFile[] = [];
    const call = async (r: WriteRequest): Promise<WriteReply | Error> => {
      try {
        const reply = await link.call(r);
        reports.push(...(reply.damaged ?? []));
        return reply;
      } catch (err) {
        return err as Error;
      }
    };
    expect(await call({ op: "open" })).not.toBeInstanceOf(Error);
    expect(await call({ op: "declare", index: 0, key: "ns=1;s=t0" })).not.toBeInstanceOf(Error);
    for (let i = 0; i < 4; i++) ring.putNumber(i, 0, T0 + 10_000_000 + i, StatusCodes.Good, BuiltinType.Double, i);
    expect(await call({ op: "tick", from: 0, count: 4, now: Date.now(), holdAge: false })).toMatchObject({ flushed: 4 });
    // Moving the staged samples reaches h1's broken root (the samples of t0 go to h1).
    const failed = await call({ op: "compact" });
    expect(failed).toBeInstanceOf(Error);
    expect((failed as Error & { code?: string }).code).toMatch(/^SQLITE_CORRUPT/);
    // The report comes with the next answer, and that request has a new database under it.
    for (let i = 4; i < 8; i++) ring.putNumber(i, 0, T0 + 10_000_000 + i, StatusCodes.Good, BuiltinType.Double, i);
    expect(await call({ op: "tick", from: 4, count: 4, now: Date.now(), holdAge: false })).toMatchObject({ flushed: 4 });
    expect(reports).toHaveLength(1);
    expect(reports[0]!.reason).toContain("malformed");
    expect(readdirSync(dir).filter((f) => f.startsWith("history.db.damaged-") && !/-(wal|shm)$/.test(f))).toEqual([reports[0]!.movedTo.slice(dir.length + 1)]);
    await call({ op: "close" });
    await link.ended();
    const fresh = new HistoryStore(file, { readonly: true });
    try {
      expect(fresh.read(fresh.find(node("t0"))!, TIME_MIN, TIME_MAX, true, 100).map((d) => d.value?.value)).toEqual([4, 5, 6, 7]);
    } finally {
      fresh.close();
    }
    // The moved file is the damaged one (closing its connection may have checkpointed this session's writes into it).
    expect(readFileSync(reports[0]!.movedTo).length).toBeGreaterThanOrEqual(damaged.length);
  }, 30_000);
});

describe("the gateway's own certificate", () => {
  const options = (root: string) => ({ root, applicationUri: "urn:test-host:fieldgate", applicationName: "fieldgate", certificateValidityDays: 365 });

  it("damaged, or a key of another certificate: moved aside and a new pair made when reports are taken; refused otherwise", async () => {
    const dir = tempDir();
    const root = join(dir, "pki");
    const first = await Pki.open(options(root));
    const cert = ownCertificateFile(root);
    truncateSync(cert, 100);
    const cut = readFileSync(cert);
    await expect(Pki.open(options(root))).rejects.toThrow(cert);
    const reports: DamagedFile[] = [];
    const second = await Pki.open({ ...options(root), onDamaged: (d) => reports.push(d) });
    expect(second.ownThumbprint).not.toBe(first.ownThumbprint);
    expect(reports.map((d) => [d.kind, d.file])).toEqual([
      ["certificate", cert],
      ["certificate", ownKeyFile(root)],
    ]);
    expect(readFileSync(reports[0]!.movedTo).equals(cut)).toBe(true);
    // A key that is not the certificate's (one swapped in by hand).
    const other = await Pki.open(options(join(dir, "other")));
    writeFileSync(ownKeyFile(root), other.ownPrivateKey.export({ type: "pkcs8", format: "pem" }));
    await expect(Pki.open(options(root))).rejects.toThrow("the private key is not the certificate's");
    const third = await Pki.open({ ...options(root), onDamaged: (d) => reports.push(d) });
    expect(third.ownThumbprint).not.toBe(second.ownThumbprint);
    expect(reports).toHaveLength(4);
  }, 60_000);
});
