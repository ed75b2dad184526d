// The last applied versions of a settings file (src/settings/config-versions.ts): newest first,
// the oldest beyond the bound gone, ids never reused, and a record cut short by a power cut
// (text written, record not) neither listed nor left behind.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigVersions } from "../../src/settings/config-versions.js";

const root = mkdtempSync(join(tmpdir(), "fieldgate-versions-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("ConfigVersions", () => {
  it("keeps the last N, newest first, with who, when and what changed", async () => {
    const v = new ConfigVersions(join(root, "a"), 3);
    expect(v.list()).toEqual([]);
    for (let i = 1; i <= 5; i++) await v.record(`text ${i}\n`, { user: i % 2 ? "ann" : "bob", summary: `change ${i}`, at: new Date(Date.UTC(2026, 11, 5, 14, i)) });
    const list = v.list();
    expect(list.map((x) => x.id)).toEqual([5, 4, 3]);
    expect(list[0]).toEqual({ id: 5, at: "2026-12-05T14:05:00.000Z", user: "ann", summary: "change 5", bytes: 7 });
    expect(v.text(4)).toBe("text 4\n");
    expect(v.text(2)).toBeUndefined();
    expect(readdirSync(join(root, "a")).sort()).toEqual(["000003.json", "000003.yaml", "000004.json", "000004.yaml", "000005.json", "000005.yaml"]);
    // A restore is a new version that says where it came from; ids go on counting.
    expect(await v.record("text 3\n", { user: "ann", summary: "back", restoredFrom: 3 })).toMatchObject({ id: 6, restoredFrom: 3 });
  });

  it("lists no version whose record a power cut kept from being written, and clears its text", async () => {
    const dir = join(root, "b");
    const v = new ConfigVersions(dir, 10);
    await v.record("one\n", { user: "ann", summary: "1" });
    // Cut between the text and its record.
    writeFileSync(join(dir, "000002.yaml"), "half-recorded\n");
    expect(v.list().map((x) => x.id)).toEqual([1]);
    expect(v.text(2)).toBeUndefined();
    // The next version takes a new id and clears the orphan.
    expect((await v.record("three\n", { user: "ann", summary: "3" })).id).toBe(3);
    expect(readdirSync(dir).sort()).toEqual(["000001.json", "000001.yaml", "000003.json", "000003.yaml"]);
  });

  it("ignores a record that is not JSON, or names another id", async () => {
    const dir = join(root, "c");
    const v = new ConfigVersions(dir, 10);
    await v.record("one\n", { user: "ann", summary: "1" });
    writeFileSync(join(dir, "000001.json"), "{not json");
    expect(v.list()).toEqual([]);
  });

  it("gives versions recorded at the same time ids of their own, in the order asked", async () => {
    const v = new ConfigVersions(join(root, "d"), 10);
    const ids = await Promise.all([1, 2, 3].map((i) => v.record(`text ${i}\n`, { user: "ann", summary: String(i) }).then((x) => x.id)));
    expect(ids).toEqual([1, 2, 3]);
    expect(v.text(2)).toBe("text 2\n");
  });
});
