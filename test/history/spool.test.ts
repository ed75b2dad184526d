// The history's spool (spool.ts) and the writer that uses it (write-thread.ts): records read back
// as written (a wrapped batch, values kept as bytes, series named once per file), a file cut
// short ends at its last whole record and anything else is damage; the writer spools a light
// history without its thread, a HistoryRead starts none (slow-writer.test.ts: it reads the spool
// itself) while a read of this thread's store (tools) has one store them first, the thread ends
// once it lingered, and a process killed while samples sat in the spool gets them stored by its
// next run.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { BuiltinType, scalar } from "../../src/ua/builtins.js";
import { SampleRing, ValueForm } from "../../src/history/sample-ring.js";
import { readSpool, spoolFileOf, spoolRecord } from "../../src/history/spool.js";
import { HistoryStore, TIME_MAX, TIME_MIN } from "../../src/history/store.js";
import { HistoryWriteThread } from "../../src/history/write-thread.js";
import { distFile, missingBuild, requirePeers, skipWithout } from "../helpers/built.js";
import { T0, dbl, node } from "./helpers.js";

const unbuilt = missingBuild("src/history/write-worker.js", "src/history/write-thread.js", "src/history/store.js", "src/history/spool.js");

const text = new TextEncoder();

describe("spool records", () => {
  it("reads back a batch that wraps the ring, its values kept as bytes, and the series it names", () => {
    const ring = new SampleRing(8);
    for (let i = 0; i < 8; i++) ring.putNumber(i, i % 2, T0 + i, 0, BuiltinType.Double, i * 1.5);
    // Slot 7 and slot 1 hold values of the Other forms (as a worker's ring keeps them: bytes).
    ring.put(7, 2, T0 + 7, 0, scalar(BuiltinType.String, "seven"), (v) => text.encode(String(v.value)));
    ring.put(1, 0, T0 + 9, 0x80000000, scalar(BuiltinType.String, "one"), (v) => text.encode(String(v.value)));
    const series = [{ key: "ns=1;s=a" }, { key: "ns=1;s=b" }, { key: "ns=1;s=c" }];
    // Slots 6, 7, 0, 1: every series named in the first record; the second names none again.
    const first = spoolRecord(ring, 6, 4, series, 0);
    const second = spoolRecord(ring, 2, 2, series, 3);
    const read = readSpool(Buffer.concat([first, second]));
    expect(read.problem).toBeUndefined();
    expect(read.end).toBe(first.length + second.length);
    expect([...read.names]).toEqual([
      [0, "ns=1;s=a"],
      [1, "ns=1;s=b"],
      [2, "ns=1;s=c"],
    ]);
    expect(read.records.map((r) => r.offset)).toEqual([0, first.length]);
    const a = read.records[0]!.ring;
    expect(a.capacity).toBe(4);
    expect([...a.ts]).toEqual([T0 + 6, T0 + 7, T0 + 0, T0 + 9]);
    expect([...a.series]).toEqual([0, 2, 0, 0]);
    expect(a.num[0]).toBe(9);
    expect(a.num[2]).toBe(0);
    expect([...a.form]).toEqual([ValueForm.Number, ValueForm.OtherScalar, ValueForm.Number, ValueForm.OtherScalar]);
    expect(a.status[3]).toBe(0x80000000);
    expect(new TextDecoder().decode(a.other.get(1) as Uint8Array)).toBe("seven");
    expect(new TextDecoder().decode(a.other.get(3) as Uint8Array)).toBe("one");
    expect(a.other.size).toBe(2);
    const b = read.records[1]!.ring;
    expect([...b.ts]).toEqual([T0 + 2, T0 + 3]);
    expect([...b.num]).toEqual([3, 4.5]);
    expect(b.other.size).toBe(0);
  });

  it("ends a file cut short at its last whole record, and calls anything else damage", () => {
    const ring = new SampleRing(4);
    for (let i = 0; i < 4; i++) ring.putNumber(i, 0, T0 + i, 0, BuiltinType.Double, i);
    const one = spoolRecord(ring, 0, 2, [{ key: "k" }], 0);
    const two = spoolRecord(ring, 2, 2, [{ key: "k" }], 1);
    const whole = Buffer.concat([one, two]);
    // A crash during the second append: the first record is whole, no damage.
    const cut = readSpool(whole.subarray(0, whole.length - 5));
    expect(cut.records).toHaveLength(1);
    expect(cut.end).toBe(one.length);
    expect(cut.problem).toBeUndefined();
    // Bytes that are not a record after the first one: damage, named by its offset.
    const junk = Buffer.concat([one, Buffer.from("not a spool record at all")]);
    const damaged = readSpool(junk);
    expect(damaged.records).toHaveLength(1);
    expect(damaged.problem).toBe(`not a spool record at byte ${one.length}`);
    // A record whose samples name a series the file never named.
    const unnamed = readSpool(two);
    expect(unnamed.records).toHaveLength(0);
    expect(unnamed.problem).toMatch(/^a sample of series 0, which the file does not name at byte 0$/);
  });
});

describe.skipIf(skipWithout(unbuilt))("the writer with a spool", () => {
  beforeAll(() => requirePeers(unbuilt));
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("spools a light history without its thread, stores it for a read of this thread's store, and ends the thread once it lingered", async () => {
    let now = T0;
    const dir = mkdtempSync(join(tmpdir(), "fieldgate-spool-"));
    dirs.push(dir);
    const file = join(dir, "history.db");
    new HistoryStore(file).close();
    const spool = spoolFileOf(file);
    const w = new HistoryWriteThread({ file, spool, now: () => now, flushInterval: 1000, flushCount: 1000, queueSize: 10_000, linger: 5000, drainInterval: 60_000 });
    const reader = new HistoryStore(file, { readonly: true, beforeRead: () => w.prepareReadSync() });
    try {
      w.declare(node("t"));
      for (let i = 0; i < 3; i++) w.record(node("t"), dbl(i, T0 + i));
      w.timerTick();
      await w.spoolSettled();
      expect(w.threads).toBe(0);
      expect(w.spooled).toBe(3);
      const onDisk = readSpool(readFileSync(spool));
      expect(onDisk.records.map((r) => r.ring.capacity)).toEqual([3]);
      expect([...onDisk.names.values()]).toEqual(["ns=1;s=t"]);
      // A second tick appends only what came since.
      w.record(node("t"), dbl(3, T0 + 3));
      now += 1000;
      w.timerTick();
      await w.spoolSettled();
      expect(readSpool(readFileSync(spool)).records.map((r) => r.ring.capacity)).toEqual([3, 1]);
      expect(w.stats.flushed).toBe(0);
      // A HistoryRead's prepare starts no thread: the read looks at the spool (read-overlay.ts).
      expect(await w.prepareRead()).toBe(false);
      expect(w.threads).toBe(0);
      // A read of this thread's store: a worker stores the spooled samples first (and makes the
      // series: no thread ran yet), and the spool is emptied.
      reader.readyToRead();
      const rows = reader.read(reader.find(node("t"))!, TIME_MIN, TIME_MAX, true, 100);
      expect(rows.map((r) => r.value?.value)).toEqual([0, 1, 2, 3]);
      expect(w.threads).toBe(1);
      expect(w.spooled).toBe(0);
      expect(w.stats).toMatchObject({ recorded: 4, flushed: 4, dropped: 0 });
      w.timerTick();
      await w.spoolSettled();
      expect(existsSync(spool)).toBe(false);
      // Needed less than `linger` ago: the thread stays; past it, the next tick ends it.
      now += 4000;
      w.timerTick();
      expect(w.threads).toBe(1);
      now += 2000;
      w.tickNow();
      expect(w.threads).toBe(0);
      // What comes next is spooled again, and stored by close().
      w.record(node("t"), dbl(4, T0 + 4));
      w.timerTick();
      await w.spoolSettled();
      expect(w.spooled).toBe(1);
      await w.close();
      expect(existsSync(spool)).toBe(false);
      expect(w.stats).toMatchObject({ recorded: 5, flushed: 5, dropped: 0 });
      expect(reader.read(reader.find(node("t"))!, TIME_MIN, TIME_MAX, true, 100).map((r) => r.value?.value)).toEqual([0, 1, 2, 3, 4]);
    } finally {
      reader.close();
      await w.close();
    }
  }, 60_000);

  it("starts its thread once flushCount samples wait, and keeps it while samples come that fast", async () => {
    let now = T0;
    const dir = mkdtempSync(join(tmpdir(), "fieldgate-spool-"));
    dirs.push(dir);
    const file = join(dir, "history.db");
    new HistoryStore(file).close();
    const w = new HistoryWriteThread({ file, spool: spoolFileOf(file), now: () => now, flushInterval: 1000, flushCount: 10, queueSize: 1000, linger: 1000, drainInterval: 60_000 });
    try {
      w.declare(node("t"));
      let i = 0;
      for (; i < 9; i++) w.record(node("t"), dbl(i, T0 + i));
      w.timerTick();
      await w.spoolSettled();
      expect(w.threads).toBe(0);
      // Ten a second: the thread would start again well within drainInterval, so it stays.
      for (let round = 0; round < 5; round++) {
        for (let n = 0; n < 10; n++, i++) w.record(node("t"), dbl(i, T0 + i));
        now += 1000;
        w.tickNow();
        expect(w.threads).toBe(1);
      }
      w.flushAll();
      expect(w.stats.flushed).toBe(i);
      expect(w.stats.dropped).toBe(0);
    } finally {
      await w.close();
    }
  }, 60_000);

  it("a spool that does not read as records is moved aside once its whole records are stored", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fieldgate-spool-"));
    dirs.push(dir);
    const file = join(dir, "history.db");
    new HistoryStore(file).close();
    const ring = new SampleRing(2);
    ring.putNumber(0, 0, T0, 0, BuiltinType.Double, 1);
    ring.putNumber(1, 0, T0 + 1, 0, BuiltinType.Double, 2);
    writeFileSync(spoolFileOf(file), Buffer.concat([spoolRecord(ring, 0, 2, [{ key: "ns=1;s=t" }], 0), Buffer.from("garbage where a record header should be")]));
    const damaged: string[] = [];
    const w = new HistoryWriteThread({ file, spool: spoolFileOf(file), flushInterval: 1000, flushCount: 1000, queueSize: 100, onDamaged: (d) => damaged.push(d.movedTo) });
    w.start();
    await w.close();
    expect(existsSync(spoolFileOf(file))).toBe(false);
    expect(damaged).toHaveLength(1);
    expect(readdirSync(dir).some((f) => damaged[0]!.endsWith(f))).toBe(true);
    const store = new HistoryStore(file, { readonly: true });
    try {
      expect(store.read(store.find(node("t"))!, TIME_MIN, TIME_MAX, true, 10).map((r) => r.value?.value)).toEqual([1, 2]);
    } finally {
      store.close();
    }
  }, 60_000);
});

/**
 * The child: a light history (5 samples each 10 ms, flushCount far away) that prints what it
 * spooled, its threads and what its thread stored (the thread runs from start() until it lingered).
 */
function childSource(file: string): string {
  const url = (f: string) => JSON.stringify(pathToFileURL(distFile(`src/history/${f}`)).href);
  return `
import { HistoryStore } from ${url("store.js")};
import { HistoryWriteThread } from ${url("write-thread.js")};
import { spoolFileOf } from ${url("spool.js")};
const file = ${JSON.stringify(file)};
new HistoryStore(file).close();
const w = new HistoryWriteThread({ file, spool: spoolFileOf(file), flushInterval: 20, flushCount: 1000000, queueSize: 1000000, drainInterval: 600000, linger: 100 });
const id = { namespace: 1, idType: 1, value: "t" };
w.declare(id);
w.start();
let i = 0;
let reported = 0;
setInterval(() => {
  for (let n = 0; n < 5; n++, i++) w.record(id, { value: { dataType: 11, arrayType: 0, value: i * 0.5 }, sourceTimestamp: ${T0} + i });
  if (w.spooled !== reported) { reported = w.spooled; process.stdout.write("S " + reported + " " + w.threads + " " + w.stats.flushed + "\\n"); }
}, 10);
`;
}

describe.skipIf(skipWithout(unbuilt))("a crash with samples in the spool", () => {
  beforeAll(() => requirePeers(unbuilt));
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("SIGKILL: the next run stores every sample the spool held, and removes it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fieldgate-spool-crash-"));
    dirs.push(dir);
    const file = join(dir, "history.db");
    const child = spawn(process.execPath, ["--input-type=module", "-e", childSource(file)], { stdio: ["ignore", "pipe", "inherit"] });
    let spooled = 0;
    let threads = -1;
    let flushed = -1;
    let buffer = "";
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        fail(new Error(`the child reported only ${spooled} spooled samples`));
      }, 20_000);
      child.stdout!.on("data", (chunk: Buffer) => {
        buffer += chunk.toString();
        const lines = buffer.split("\n");
        buffer = lines.pop()!;
        for (const line of lines) if (line.startsWith("S ")) [spooled, threads, flushed] = line.slice(2).split(" ").map(Number) as [number, number, number];
        if (spooled >= 200 && child.exitCode === null && !child.killed) child.kill("SIGKILL");
      });
      child.on("exit", () => {
        clearTimeout(timer);
        done();
      });
    });
    expect(child.signalCode).toBe("SIGKILL");
    // Its thread had ended: the samples since were only in the spool.
    expect(threads).toBe(0);
    expect(existsSync(spoolFileOf(file))).toBe(true);
    const info: string[] = [];
    const w = new HistoryWriteThread({ file, spool: spoolFileOf(file), flushInterval: 1000, flushCount: 1000, queueSize: 100, untilFirstSeries: true, info: (m) => info.push(m) });
    w.start();
    // A spool left over starts the thread though no series is declared yet.
    expect(w.threads).toBe(1);
    await w.close();
    expect(existsSync(spoolFileOf(file))).toBe(false);
    expect(info.join("\n")).toMatch(/history: stored \d+ sample\(s\) that the last run had spooled/);
    const store = new HistoryStore(file, { readonly: true });
    try {
      const rows = store.read(store.find(node("t"))!, TIME_MIN, TIME_MAX, true, 1_000_000);
      // Every sample the thread stored and every one spooled after, in order, without gaps.
      const upTo = flushed + spooled;
      expect(rows.length).toBeGreaterThanOrEqual(upTo);
      for (let i = 0; i < upTo; i++) expect(rows[i]?.sourceTimestamp).toBe(T0 + i);
      expect(rows[upTo - 1]!.value?.value).toBe((upTo - 1) * 0.5);
    } finally {
      store.close();
    }
  }, 30_000);
});
