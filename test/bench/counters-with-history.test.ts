// The counters scenario with `--with history` (issue 13's third target) against the built gateway:
// the fieldgate target stores the values before the server starts and gives the server the node
// to read (bench/targets/fieldgate-history.ts), a client reads them in a loop while the counters
// client samples. It checks that every HistoryRead returned all the stored values, checked in
// full, and that the case's folder is gone afterwards; never how fast anything is.
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { missingBuild, requirePeers, skipWithout } from "../helpers/built.js";
import type { BenchContext } from "../../bench/harness/scenario.js";
import type { ServerTarget } from "../../bench/harness/target.js";
import { countersScenario } from "../../bench/scenarios/counters.js";
import { FieldgateTarget } from "../../bench/targets/fieldgate.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const dataDir = mkdtempSync(join(tmpdir(), "fieldgate-bench-counters-history-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const unbuilt = missingBuild("src/cli.js");

function context(target: ServerTarget): BenchContext {
  return { root, targets: [target], serverCpu: undefined, load: { inline: true }, notes: [], log: () => {} };
}

/** The case folders of fieldgate-config.ts ($TMPDIR/fieldgate-bench-*, a gateway.yaml) that hold a history database (other tests' dataDirs have no gateway.yaml). */
function caseFoldersWithHistory(): string[] {
  return readdirSync(tmpdir())
    .filter((d) => d.startsWith("fieldgate-bench-"))
    .filter((d) => existsSync(join(tmpdir(), d, "gateway.yaml")) && existsSync(join(tmpdir(), d, "history.db")));
}

describe.skipIf(skipWithout(unbuilt))("counters --with history", () => {
  beforeAll(() => requirePeers(unbuilt));
  it("reads every stored value in each HistoryRead while the counters are sampled, then removes the case's database", async () => {
    const before = new Set(caseFoldersWithHistory());
    const options = countersScenario.parse([
      "--items", "50", "--publishing", "100", "--warmup", "0.5", "--duration", "1.5",
      "--with", "history", "--history-values", "5000", "--inline",
    ]);
    expect(options).not.toBeNull();
    const [result] = await countersScenario.run(context(new FieldgateTarget({ root, dataDir })), options!);
    expect(result.case).toBe("50 items @ 10 ms, publishing 100 ms, with HistoryRead of 5,000 values in a loop");
    expect(result.figures.errorsTotal).toBe(0);
    expect(result.figures.channelFaults).toBe(0);
    expect(result.figures.requests).toBeGreaterThan(0);
    const c = result.conditions;
    expect(c.with).toBe("history");
    expect(c.historyValues).toBe(5000);
    // A read that returned fewer than the 5,000 values, or values that failed the full decode's
    // checks (order, range, status), counts as an error of the load.
    expect(c.historyReadErrors).toBe(0);
    expect(c.historyReadsPerSecond as number).toBeGreaterThan(0);
    const note = result.notes.find((n) => n.startsWith("the third client's HistoryReads of 5,000 values"));
    expect(note).toMatch(/ ms; 0 errors, \d+ responses decoded in full and checked$/);
    expect(result.notes.some((n) => /^load average \d+\.\d\d \(1 min\) at the start, \d+\.\d\d at the end$/.test(n))).toBe(true);
    expect(caseFoldersWithHistory().filter((d) => !before.has(d))).toEqual([]);
  }, 60_000);

  it("is refused for a target without stored history, and for a config given as it is", async () => {
    const options = countersScenario.parse(["--items", "10", "--with", "history"])!;
    const other: ServerTarget = { name: "node-opcua", start: () => Promise.reject(new Error("not started")) };
    await expect(countersScenario.run(context(other), options)).rejects.toThrow("--with history: node-opcua has no stored history to read (fieldgate targets only)");
    const given = new FieldgateTarget({ root, dataDir, config: join(root, "config", "gateway.yaml") });
    await expect(countersScenario.run(context(given), options)).rejects.toThrow("a case with stored history runs on a config derived for it: leave out --config");
  });
});
