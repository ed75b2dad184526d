// The store-and-forward file: rows committed in slices survive a reopen (what was reported
// stored is there), come back oldest first with their kinds, leave the store once released,
// retention by age and by size drops the oldest (counted), and bdSeq goes up across reopens.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ForwardStore, StoredKind } from "../../src/northbound/forward-store.js";

let dir: string;
const open = (o: Partial<ConstructorParameters<typeof ForwardStore>[1]> = {}) =>
  new ForwardStore(join(dir, "nb.db"), { maxAge: 86_400_000, maxSize: 1 << 30, sliceRows: 100, ...o });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "fieldgate-fwd-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("ForwardStore", () => {
  it("commits in slices, keeps every committed row across a reopen, and replays them in order", () => {
    const s = open();
    const a = s.metricId("plc", "count");
    const b = s.metricId("plc", "name");
    expect(s.metricId("plc", "count")).toBe(a);
    for (let i = 0; i < 250; i++) s.append(a, 1000 + i, 192, StoredKind.Number, i * 0.5, undefined);
    s.append(b, 2000, 500, StoredKind.String, 0, "pump 1");
    s.append(b, 2001, 0, StoredKind.Null, 0, undefined);
    s.append(a, 2002, 192, StoredKind.BigInt, 0, 2n ** 63n + 5n);
    expect(s.commit()).toBe(153);
    expect(s.stored).toBe(100);
    while (s.commit() > 0);
    expect(s.stored).toBe(253);
    expect(s.waiting).toBe(253);
    s.append(a, 3000, 192, StoredKind.Number, 42, undefined); // staged, never committed: close() commits it
    s.close();

    const r = open();
    expect(r.waiting).toBe(254);
    const rows = r.read(0, 1000);
    expect(rows.map((x) => x.time)).toEqual([...Array.from({ length: 250 }, (_, i) => 1000 + i), 2000, 2001, 2002, 3000]);
    expect(rows[3]).toMatchObject({ device: "plc", tag: "count", quality: 192, kind: StoredKind.Number, num: 1.5 });
    expect(rows[250]).toMatchObject({ tag: "name", quality: 500, kind: StoredKind.String, obj: "pump 1" });
    expect(rows[251]).toMatchObject({ kind: StoredKind.Null, quality: 0 });
    expect(rows[252]).toMatchObject({ kind: StoredKind.BigInt, obj: 2n ** 63n + 5n });
    r.release(rows[99]!.id, 100);
    expect(r.waiting).toBe(154);
    expect(r.read(0, 1)[0]!.time).toBe(1100);
    r.release(rows.at(-1)!.id, 154);
    expect(r.waiting).toBe(0);
    expect(r.replayed).toBe(254);
    // Ids only grow: new rows after a full drain are not taken for old ones.
    r.append(a, 4000, 192, StoredKind.Number, 1, undefined);
    r.commit();
    expect(r.read(0, 10)[0]!.id).toBeGreaterThan(rows.at(-1)!.id);
    r.close();
  });

  it("drops the oldest rows past maxAge and past maxSize, and counts them", () => {
    let now = 10_000_000;
    const s = open({ maxAge: 60_000, maxSize: 256 * 1024, now: () => now, sliceRows: 5000 });
    const m = s.metricId("d", "t");
    for (let i = 0; i < 1000; i++) s.append(m, now - 120_000 + i, 192, StoredKind.Number, i, undefined);
    for (let i = 0; i < 1000; i++) s.append(m, now + i, 192, StoredKind.Number, i, undefined);
    s.commit();
    expect(s.retain(300)).toBe(300);
    while (s.retain(300) > 0);
    expect(s.dropped).toBe(1000);
    expect(s.read(0, 1)[0]!.time).toBe(now);
    // Over maxSize: oldest first until under it.
    const text = "x".repeat(200);
    for (let i = 0; i < 3000; i++) s.append(m, now + 2000 + i, 192, StoredKind.String, 0, text);
    while (s.commit() > 0);
    expect(s.usedBytes()).toBeGreaterThan(256 * 1024);
    while (s.retain(500) > 0);
    expect(s.usedBytes()).toBeLessThanOrEqual(256 * 1024 * 0.95 + 64 * 1024);
    expect(s.dropped).toBeGreaterThan(1000);
    const first = s.read(0, 1)[0]!;
    expect(first.time).toBeGreaterThan(now);
    now += 1;
    s.close();
  });

  it("bounds what waits in memory when the disk takes nothing", () => {
    const s = open({ maxStaged: 50 });
    const m = s.metricId("d", "t");
    for (let i = 0; i < 80; i++) s.append(m, i, 192, StoredKind.Number, i, undefined);
    expect(s.stagedRows).toBe(50);
    expect(s.dropped).toBe(30);
    s.commit();
    expect(s.read(0, 100).map((r) => r.num)).toEqual(Array.from({ length: 50 }, (_, i) => 30 + i));
    s.close();
  });

  it("gives the next bdSeq once a CONNECT was taken, 0 after 255, and keeps it across reopens", () => {
    const s = open();
    expect(s.nextBdSeq()).toBe(0);
    expect(s.nextBdSeq()).toBe(0); // an attempt that never connected uses it again
    s.usedBdSeq(0);
    expect(s.nextBdSeq()).toBe(1);
    s.usedBdSeq(255);
    s.close();
    const r = open();
    expect(r.nextBdSeq()).toBe(0);
    r.usedBdSeq(0);
    expect(r.nextBdSeq()).toBe(1);
    r.close();
  });
});
