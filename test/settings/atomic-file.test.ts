// replaceFile (src/settings/atomic-file.ts): stopped at each of its steps, as a power cut would
// stop it, the file is the old one or the new one, whole, and .previous holds what it replaced.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { previousOf, removeFile, replaceFile } from "../../src/settings/atomic-file.js";

const dir = mkdtempSync(join(tmpdir(), "fieldgate-atomic-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("replaceFile", () => {
  it.each(["written", "kept", "renamed"] as const)("stopped after %s: the file is old or new, never absent or half", (at) => {
    const file = join(dir, `devices-${at}.yaml`);
    writeFileSync(file, "old\n", { mode: 0o640 });
    writeFileSync(previousOf(file), "older\n");
    const stop = new Error("power cut");
    expect(() =>
      replaceFile(file, "new\n".repeat(1000), {
        keepPrevious: true,
        step: (s) => {
          if (s === at) throw stop;
        },
      }),
    ).toThrow(stop);
    const now = readFileSync(file, "utf8");
    expect(at === "renamed" ? "new\n".repeat(1000) : "old\n").toBe(now);
    expect(readFileSync(previousOf(file), "utf8")).toBe(at === "written" ? "older\n" : "old\n");
    // The next write goes through whatever the cut left behind.
    replaceFile(file, "newest\n", { keepPrevious: true });
    expect(readFileSync(file, "utf8")).toBe("newest\n");
    expect(readFileSync(previousOf(file), "utf8")).toBe(now);
    expect(statSync(file).mode & 0o777).toBe(0o640);
  });

  it("creates a file with the mode asked for, and leaves no temporary name behind", () => {
    const file = join(dir, "new.yaml");
    replaceFile(file, "a: 1\n", { keepPrevious: true, mode: 0o600 });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(existsSync(previousOf(file))).toBe(false);
    expect(readdirSync(dir).filter((f) => f.startsWith(".new.yaml"))).toEqual([]);
  });

  it("removeFile keeps the removed file as .previous", () => {
    const file = join(dir, "gone");
    writeFileSync(file, "key\n");
    removeFile(file, { keepPrevious: true });
    expect(existsSync(file)).toBe(false);
    expect(readFileSync(previousOf(file), "utf8")).toBe("key\n");
    removeFile(file, { keepPrevious: true });
    expect(readFileSync(previousOf(file), "utf8")).toBe("key\n");
  });
});
