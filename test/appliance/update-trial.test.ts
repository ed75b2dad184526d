// After an install: the trial boot (confirmed when healthy, recorded and left when not), the
// boot after a trial that failed (the failure recorded, the used-up slot freed), and the guard
// script systemd/fieldgate-trial that turns an unconfirmed trial into a reboot whatever state
// the new version's code is in. The boot loader's part (renaming +1 to +0-1, starting the other
// slot) is the image test's: here the fixture renames as systemd-boot does.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { confirm, TRIAL_FAILED } from "../../src/update/confirm.js";
import { waitHealthy, type HealthDeps, type UnitState } from "../../src/update/health.js";
import { Layout } from "../../src/update/layout.js";
import { UpdateStore } from "../../src/update/state.js";
import { readUpdateStatus } from "../../src/update/status.js";
import { fieldgateUpdate, makeFixture, repo, type Fixture } from "./update-fixture.js";

let f: Fixture;
afterEach(() => f?.cleanup());

const entries = (): string[] => readdirSync(join(f.root, "efi/loader/entries")).sort();

/** Installs 1.1 into B from a gateway running 1.0 in A, then boots B as systemd-boot would (its try counted). */
function installAndBootB(): { layout: Layout; store: UpdateStore } {
  f = makeFixture("1.0");
  const r = fieldgateUpdate(f, [f.bundle({ version: "1.1" }), "--reboot", "manual"]);
  expect(r.status, r.out).toBe(0);
  renameSync(join(f.root, "efi/loader/entries/fieldgate-b+1.conf"), join(f.root, "efi/loader/entries/fieldgate-b+0-1.conf"));
  f.boot("B", "boot-2", "1.1");
  return { layout: new Layout(f.root), store: new UpdateStore(join(f.root, "data/update")) };
}

const health = { host: "127.0.0.1", port: 4840, timeoutMs: 60_000 };

describe("the trial boot", () => {
  it("healthy: the entry is confirmed (its counter removed), the result recorded", async () => {
    const { layout, store } = installAndBootB();
    const lines: string[] = [];
    const rc = await confirm(layout, store, { health, log: (l) => lines.push(l), check: async () => ({ ok: true, detail: "fine" }) });
    expect(rc).toBe(0);
    expect(entries()).toEqual(["fieldgate-a.conf", "fieldgate-b.conf"]);
    expect(store.read().pending).toBeUndefined();
    expect(store.read().last).toMatchObject({ result: "succeeded", version: "1.1" });
    const status = await readUpdateStatus(layout);
    expect(status).toMatchObject({ runningVersion: "1.1", rootSlot: "B" });
    expect(status.lastResult).toMatch(/^succeeded: 1\.1 runs from slot B \(was 1\.0 in slot A\); its trial boot was healthy/);
    expect(lines.join("\n")).toMatch(/trial boot of 1\.1 in slot B \(fieldgate-b\+0-1\.conf\)/);
    // The next update goes to A, above B.
    const next = fieldgateUpdate(f, [f.bundle({ version: "1.2" }), "--reboot", "manual"]);
    expect(next.status, next.out).toBe(0);
    expect(entries()).toEqual(["fieldgate-a+1.conf", "fieldgate-b.conf"]);
    expect(readFileSync(join(f.root, "efi/loader/entries/fieldgate-a+1.conf"), "utf8")).toMatch(/^version 3$/m);
  });

  it("unhealthy: TRIAL_FAILED with the reason recorded; the next boot (slot A again) records the fall-back and frees slot B", async () => {
    const { layout, store } = installAndBootB();
    const rc = await confirm(layout, store, { health, log: () => {}, check: async () => ({ ok: false, reason: "fieldgate.service did not start: failed (exit-code), restarted 3 times" }) });
    expect(rc).toBe(TRIAL_FAILED);
    expect(entries()).toEqual(["fieldgate-a.conf", "fieldgate-b+0-1.conf"]);
    expect(store.read().last?.result).toBe("failed");
    // systemd-boot: B has no tries left, sorts last; A boots.
    f.boot("A", "boot-3", "1.0");
    const lines: string[] = [];
    expect(await confirm(layout, store, { health, log: (l) => lines.push(l) })).toBe(0);
    expect(entries()).toEqual(["fieldgate-a.conf"]);
    expect(existsSync(join(f.root, "efi/fieldgate-b"))).toBe(false);
    expect(store.read().pending).toBeUndefined();
    const status = await readUpdateStatus(layout);
    expect(status).toMatchObject({ runningVersion: "1.0", rootSlot: "A" });
    expect(status.lastResult).toMatch(/^failed: 1\.1 in slot B failed its trial boot: fieldgate\.service did not start: .*; the boot loader went back to 1\.0 in slot A by itself/);
    expect(readFileSync(join(f.root, "data/update/update.log"), "utf8")).toMatch(/installed 1\.1 in slot B/);
    expect(lines[0]).toMatch(/failed its trial boot/);
  });

  it("a trial that never ran its check (the new version did not boot far enough) is recorded from the guard's note or as such", async () => {
    const { layout, store } = installAndBootB();
    f.boot("A", "boot-3", "1.0");
    writeFileSync(join(f.root, "data/update/trial-failure"), "the trial boot's check of slot B did not run to its end (exit status 1)\n");
    await confirm(layout, store, { health, log: () => {} });
    expect(store.read().last?.message).toMatch(/failed its trial boot: the trial boot's check of slot B did not run to its end \(exit status 1\)/);
    expect(existsSync(join(f.root, "data/update/trial-failure"))).toBe(false);
    // Without any note:
    const r = fieldgateUpdate(f, [f.bundle({ version: "1.1" }), "--reboot", "manual"]);
    expect(r.status, r.out).toBe(0);
    f.boot("A", "boot-4", "1.0");
    await confirm(layout, store, { health, log: () => {} });
    expect(store.read().last?.message).toMatch(/it did not confirm its trial boot \(it did not start, hung, or the power went before it was healthy\)/);
  });

  it("before the reboot nothing is concluded", async () => {
    f = makeFixture("1.0");
    expect(fieldgateUpdate(f, [f.bundle({ version: "1.1" }), "--reboot", "manual"]).status).toBe(0);
    const store = new UpdateStore(join(f.root, "data/update"));
    expect(await confirm(new Layout(f.root), store, { health, log: () => {} })).toBe(0);
    expect(store.read().pending?.version).toBe("1.1");
    expect(entries()).toEqual(["fieldgate-a.conf", "fieldgate-b+1.conf"]);
  });
});

describe("waitHealthy", () => {
  function fake(states: UnitState[], probeOk: (i: number) => boolean): HealthDeps & { calls: number } {
    let t = 0;
    let i = 0;
    const d = {
      calls: 0,
      unit: async () => states[Math.min(i++, states.length - 1)],
      probe: async () => {
        d.calls++;
        if (!probeOk(d.calls)) throw new Error("connect ECONNREFUSED");
        return ["None", "Basic256Sha256"];
      },
      sleep: async (ms: number) => void (t += ms),
      now: () => t,
    };
    return d;
  }
  const active = (pid: number): UnitState => ({ active: "active", sub: "running", mainPid: pid, restarts: 0, result: "success" });

  it("is healthy when the service stays active in one process and its endpoint keeps answering", async () => {
    const h = await waitHealthy({ host: "h", port: 1, timeoutMs: 60_000 }, fake([active(7)], () => true));
    expect(h).toEqual({ ok: true, detail: expect.stringMatching(/active in one process \(pid 7\) and its endpoint answering for 1\d s/) });
  });

  it("starts over when the process changes (a crash and restart) or the endpoint stops answering", async () => {
    const d = fake([active(7), active(7), active(8), active(8), active(8), active(8), active(8), active(8), active(8), active(8)], (n) => n !== 3);
    const h = await waitHealthy({ host: "h", port: 1, timeoutMs: 120_000 }, d);
    expect(h.ok).toBe(true);
    expect(h.ok && h.detail).toMatch(/pid 8/);
  });

  it("fails after three failed starts, or at the deadline", async () => {
    const failed: UnitState = { active: "activating", sub: "auto-restart", mainPid: 0, restarts: 3, result: "exit-code" };
    expect(await waitHealthy({ host: "h", port: 1, timeoutMs: 60_000 }, fake([failed], () => true))).toEqual({
      ok: false,
      reason: expect.stringMatching(/fieldgate\.service did not start: fieldgate\.service is activating \(auto-restart, last result exit-code\), restarted 3 times/),
    });
    const never = await waitHealthy({ host: "h", port: 1, timeoutMs: 30_000 }, fake([active(9)], () => false));
    expect(never).toEqual({ ok: false, reason: expect.stringMatching(/not healthy within 30 s: fieldgate\.service active but its endpoint does not answer: connect ECONNREFUSED/) });
  });
});

describe("systemd/fieldgate-trial (the guard)", () => {
  /** Runs the script with a fake fieldgate that exits with `code`, and a fake reboot. */
  function guard(slot: "A" | "B", entry: string | undefined, code: number, pending = true): { status: number | null; rebooted: boolean; called: boolean; note: string | undefined; out: string } {
    f = makeFixture("1.0");
    f.boot(slot, "boot-2", "1.1");
    if (entry) writeFileSync(join(f.root, "efi/loader/entries", entry), "title x\n");
    if (pending) writeFileSync(join(f.root, "data/update/state.json"), JSON.stringify({ format: 1, pending: { slot: "B" } }));
    const bin = join(f.dir, "fieldgate");
    writeFileSync(bin, `#!/bin/sh\necho called > ${f.dir}/called\nexit ${code}\n`);
    chmodSync(bin, 0o755);
    const r = spawnSync("sh", [join(repo, "systemd/fieldgate-trial")], {
      encoding: "utf8",
      timeout: 30_000,
      env: {
        PATH: process.env.PATH,
        FIELDGATE_ESP: join(f.root, "efi"),
        FIELDGATE_CMDLINE: join(f.root, "proc/cmdline"),
        FIELDGATE_UPDATE_STATE: join(f.root, "data/update"),
        FIELDGATE_CONFIG: f.config,
        FIELDGATE_BIN: bin,
        FIELDGATE_REBOOT: `touch ${f.dir}/rebooted`,
      },
    });
    const note = join(f.root, "data/update/trial-failure");
    return {
      status: r.status,
      rebooted: existsSync(join(f.dir, "rebooted")),
      called: existsSync(join(f.dir, "called")),
      note: existsSync(note) ? readFileSync(note, "utf8") : undefined,
      out: `${r.stdout}${r.stderr}`,
    };
  }

  it("is valid sh", () => {
    const r = spawnSync("sh", ["-n", join(repo, "systemd/fieldgate-trial")], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
  });

  it("a boot without a trial and without an install starts no Node.js and never reboots", () => {
    const r = guard("A", undefined, 3, false);
    expect(r).toMatchObject({ status: 0, called: false, rebooted: false });
  });

  it("a boot after an install runs the check to record, and never reboots, even when it fails", () => {
    expect(guard("A", undefined, 0)).toMatchObject({ status: 0, called: true, rebooted: false });
    expect(guard("A", undefined, 1)).toMatchObject({ status: 0, called: true, rebooted: false });
  });

  it("a confirmed trial boot: no reboot", () => {
    expect(guard("B", "fieldgate-b+0-1.conf", 0)).toMatchObject({ status: 0, called: true, rebooted: false, note: undefined });
  });

  it("an unhealthy trial boot (status 3): reboot, the reason was recorded by the check", () => {
    const r = guard("B", "fieldgate-b+0-1.conf", 3);
    expect(r).toMatchObject({ status: 1, rebooted: true, note: undefined });
    expect(r.out).toMatch(/slot B was not confirmed healthy; rebooting/);
  });

  it("a trial boot whose check cannot run (the new code is broken): reboot, with a note for the next boot", () => {
    const r = guard("B", "fieldgate-b+0-1.conf", 1);
    expect(r).toMatchObject({ status: 1, rebooted: true });
    expect(r.note).toMatch(/the trial boot's check of slot B did not run to its end \(exit status 1\)/);
  });
});
