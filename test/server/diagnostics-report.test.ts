// The opt-in diagnostics report (heap and GC pauses for the bench): off unless asked, one
// parseable line per SIGUSR2, GC totals that only grow.
import { afterEach, describe, expect, it } from "vitest";
import { diagnosticsRequested, installDiagnosticsReport, parseDiagnosticsLine, type DiagnosticsReport } from "../../src/server/diagnostics-report.js";

let report: DiagnosticsReport | undefined;
afterEach(() => {
  report?.uninstall();
  report = undefined;
});

describe("diagnostics report", () => {
  it("is requested only by FIELDGATE_DIAGNOSTICS=1 or true", () => {
    expect(diagnosticsRequested({})).toBe(false);
    expect(diagnosticsRequested({ FIELDGATE_DIAGNOSTICS: "0" })).toBe(false);
    expect(diagnosticsRequested({ FIELDGATE_DIAGNOSTICS: "1" })).toBe(true);
    expect(diagnosticsRequested({ FIELDGATE_DIAGNOSTICS: "true" })).toBe(true);
  });

  it("prints one parseable line per SIGUSR2 with heap figures and growing GC totals", async () => {
    const lines: string[] = [];
    report = installDiagnosticsReport((l) => lines.push(l));
    expect(installDiagnosticsReport(() => {})).toBe(report);
    process.emit("SIGUSR2", "SIGUSR2");
    // Garbage for a few scavenges; the observer reports them asynchronously.
    let keep = 0;
    for (let i = 0; i < 200_000; i++) keep += { i, s: `x${i}` }.s.length;
    expect(keep).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 50));
    process.emit("SIGUSR2", "SIGUSR2");
    expect(lines).toHaveLength(2);
    const [a, b] = lines.map((l) => parseDiagnosticsLine(l));
    expect(a?.seq).toBe(1);
    expect(b?.seq).toBe(2);
    expect(b!.reason).toBe("signal");
    expect(b!.heapUsedBytes).toBeGreaterThan(0);
    expect(b!.heapTotalBytes).toBeGreaterThanOrEqual(b!.heapUsedBytes);
    expect(b!.rssBytes).toBeGreaterThan(0);
    expect(b!.gcCount).toBeGreaterThanOrEqual(a!.gcCount);
    expect(b!.gcPauseMs).toBeGreaterThanOrEqual(a!.gcPauseMs);
    expect(b!.gcCount).toBeGreaterThan(0);
  });

  it("stops answering after uninstall, and ignores other lines", () => {
    const lines: string[] = [];
    report = installDiagnosticsReport((l) => lines.push(l));
    report.uninstall();
    report = undefined;
    // With no listener left Node would end the process on a real SIGUSR2: only emit to our own.
    expect(process.listenerCount("SIGUSR2")).toBe(0);
    expect(lines).toEqual([]);
    expect(parseDiagnosticsLine("fieldgate: listening on opc.tcp://x:1")).toBeNull();
    expect(parseDiagnosticsLine("diagnostics: {broken")).toBeNull();
  });
});
