// The smaller parts of updates: version order, the maintenance window, the bundle head's checks
// (directly, without the CLI), the update: section of gateway.yaml.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { validateConfigFile, formatIssue } from "../../src/config/load.js";
import { parseHead, trustedKeys, verifyHead, UpdateRefused } from "../../src/update/bundle-format.js";
import { compareVersions } from "../../src/update/version.js";
import { inWindow, nextWindowStart, parseWindow } from "../../src/update/window.js";
import { keygen, makeFixture } from "./update-fixture.js";

const dir = mkdtempSync(join(tmpdir(), "fieldgate-update-parts-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("compareVersions", () => {
  it.each([
    ["0.1.0.202612011345", "0.1.0.202612011345.1", -1],
    ["0.1.0.202612011345.1", "0.1.0.202612021000", -1],
    ["0.1.0.9", "0.1.0.10", -1],
    ["0.1.10", "0.1.9", 1],
    ["1.0", "1.0", 0],
    ["1.0~rc1", "1.0", -1],
    ["1.0", "1.0.0", -1],
    ["1.01", "1.1", 0],
    ["2.0a", "2.0b", -1],
  ] as const)("%s vs %s", (a, b, sign) => {
    expect(Math.sign(compareVersions(a, b))).toBe(sign);
    expect(Math.sign(compareVersions(b, a)) + 0).toBe(-sign + 0);
  });
});

describe("the maintenance window", () => {
  const at = (s: string) => new Date(s); // local time, as the gateway reads it
  it("every day: inside it reboots now, outside it waits for the next start", () => {
    const w = parseWindow("03:00-05:00");
    expect(inWindow(w, at("2026-12-02T04:59:00"))).toBe(true);
    expect(inWindow(w, at("2026-12-02T05:00:00"))).toBe(false);
    expect(nextWindowStart(w, at("2026-12-02T05:00:00")).getTime()).toBe(at("2026-12-03T03:00:00").getTime());
    expect(nextWindowStart(w, at("2026-12-02T01:00:00")).getTime()).toBe(at("2026-12-02T03:00:00").getTime());
  });
  it("days, ranges of days, and windows that end the next day", () => {
    const w = parseWindow("Sat,Sun 02:00-06:00");
    // 2026-12-02 is a Wednesday.
    expect(nextWindowStart(w, at("2026-12-02T12:00:00")).getTime()).toBe(at("2026-12-05T02:00:00").getTime());
    const night = parseWindow("Mon-Fri 22:00-02:00");
    expect(inWindow(night, at("2026-12-02T23:30:00"))).toBe(true);
    expect(inWindow(night, at("2026-12-03T01:30:00"))).toBe(true); // Wednesday's window, on Thursday
    expect(inWindow(night, at("2026-12-06T01:30:00"))).toBe(false); // Sunday: Saturday has none
    expect(inWindow(night, at("2026-12-05T01:30:00"))).toBe(true); // Saturday night: Friday's
    expect(nextWindowStart(night, at("2026-12-05T12:00:00")).getTime()).toBe(at("2026-12-07T22:00:00").getTime());
    const wrap = parseWindow("Fri-Mon 01:00-02:00");
    expect(wrap.days).toEqual([true, true, false, false, false, true, true]);
  });
});

describe("the bundle head", () => {
  it("refuses a manifest changed after signing, even by one byte", () => {
    const f = makeFixture("1.0");
    try {
      const bytes = readFileSync(f.bundle({ version: "1.1" }));
      const keys = trustedKeys(join(f.root, "usr/share/fieldgate/update-keys"));
      expect(verifyHead(parseHead(bytes, "b"), keys, "b").manifest.version).toBe("1.1");
      const i = bytes.indexOf(Buffer.from('"version": "1.1"'));
      bytes[i + 13] = "9".charCodeAt(0);
      expect(() => verifyHead(parseHead(bytes, "b"), keys, "b")).toThrow(/bad signature/);
      // No trusted key at all: nothing can be checked, so nothing is installed.
      expect(() => verifyHead(parseHead(bytes, "b"), [], "b")).toThrow(/has no update key/);
    } finally {
      f.cleanup();
    }
  });

  it("refuses other formats and heads that lie about their lengths", () => {
    const head = Buffer.alloc(20);
    head.write("FGBUNDLE", 0, "latin1");
    head.writeUInt32LE(2, 8);
    expect(() => parseHead(head, "x")).toThrow(/format 2; this version reads format 1/);
    head.writeUInt32LE(1, 8);
    head.writeUInt32LE(10_000_000, 12);
    head.writeUInt32LE(64, 16);
    expect(() => parseHead(head, "x")).toThrow(UpdateRefused);
    head.writeUInt32LE(100, 12);
    expect(() => parseHead(head, "x")).toThrow(/truncated/);
  });

  it("trusts every Ed25519 *.pem of the keys folder (a new image may add a key to rotate) and nothing else", () => {
    const keys = join(dir, "keys");
    mkdirSync(keys);
    keygen(join(dir, "one.pem"));
    keygen(join(dir, "two.pem"));
    writeFileSync(join(keys, "one.pem"), readFileSync(join(dir, "one.pem.pub")));
    writeFileSync(join(keys, "two.pem"), readFileSync(join(dir, "two.pem.pub")));
    writeFileSync(join(keys, "junk.pem"), "not a key");
    writeFileSync(join(keys, "notes.txt"), readFileSync(join(dir, "one.pem.pub")));
    expect(trustedKeys(keys).map((k) => k.file.split("/").pop())).toEqual(["one.pem", "two.pem"]);
  });
});

describe("gateway.yaml update:", () => {
  const check = (yaml: string): string[] => {
    const file = join(dir, `g-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, yaml);
    return validateConfigFile(file).map(formatIssue);
  };
  it("takes the documented keys", () => {
    expect(check("update:\n  reboot: manual\n  window: Sat,Sun 02:00-06:00\n  url: https://updates.example.com/f.fgu\n  checkInterval: 1h\n  trialTimeout: 2m\n")).toEqual([]);
  });
  it("names file, line, column and key of a bad one", () => {
    const [w] = check("update:\n  window: 3am-5am\n");
    expect(w).toMatch(/g-\w+\.yaml:2:11: update\.window: expected a window such as 03:00-05:00 or Sat,Sun 02:00-06:00/);
    const [u] = check("update:\n  url: http://updates.example.com/f.fgu\n");
    expect(u).toMatch(/:2:8: update\.url: expected an https:\/\/ URL/);
    const [r] = check("update:\n  reboot: later\n");
    expect(r).toMatch(/update\.reboot/);
    const [t] = check("update:\n  trialTimeout: 1h\n");
    expect(t).toMatch(/update\.trialTimeout/);
    const [k] = check("update:\n  rebot: now\n");
    expect(k).toMatch(/reboot/);
  });
});
