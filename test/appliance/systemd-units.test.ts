// The units of systemd/ as systemd itself reads them: `systemd-analyze verify` and the offline
// `systemd-analyze security` in a scratch root holding this machine's unit tree, plus sysusers
// and tmpfiles applied to that root. Needs systemd-analyze (Debian: systemd); skips without it.
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requirePeers, skipWithout } from "../helpers/ci.js";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const unitsDir = join(repo, "systemd");
const UNITS = [
  "fieldgate.service",
  "fieldgate-firstboot.service",
  "fieldgate-settings.service",
  "fieldgate-trial.service",
  "fieldgate-update.service",
  "fieldgate-update.path",
  "fieldgate-update.timer",
  "fieldgate-network-request.path",
  "fieldgate-network-request.service",
];

function which(cmd: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;
}
const systemUnits = ["/usr/lib/systemd/system", "/lib/systemd/system"].find((d) => existsSync(join(d, "sysinit.target")));
const haveAnalyze = which("systemd-analyze") && systemUnits !== undefined;
if (!haveAnalyze) console.warn("systemd unit checks skipped: systemd-analyze or the system unit folder is missing (Debian: apt-get install systemd)");

function run(cmd: string, args: string[]): { status: number | null; out: string } {
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 30_000 });
  return { status: r.status, out: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

/** Absolute paths of the programs that the units' Exec lines start. */
function execPaths(unitText: string): string[] {
  const paths: string[] = [];
  for (const line of unitText.split("\n")) {
    const m = /^Exec[A-Za-z]*=[-@:+!]*(\/\S+)/.exec(line.trim());
    if (m) paths.push(m[1]);
  }
  return paths;
}

const analyzeMissing = haveAnalyze ? "" : "systemd-analyze and the system unit folder (Debian: apt-get install systemd)";

describe.skipIf(skipWithout(analyzeMissing))("systemd units", () => {
  let root = "";

  beforeAll(() => {
    requirePeers(analyzeMissing);
    root = mkdtempSync(join(tmpdir(), "fieldgate-units-"));
    const target = join(root, "usr/lib/systemd/system");
    mkdirSync(target, { recursive: true });
    // verify resolves dependencies (sysinit.target, ...) and Exec paths inside --root.
    cpSync(systemUnits as string, target, { recursive: true, dereference: false });
    for (const unit of UNITS) {
      const text = readFileSync(join(unitsDir, unit), "utf8");
      writeFileSync(join(target, unit), text);
      for (const p of execPaths(text)) {
        mkdirSync(join(root, dirname(p)), { recursive: true });
        writeFileSync(join(root, p), "#!/bin/sh\n");
        chmodSync(join(root, p), 0o755);
      }
    }
  });

  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("every Exec line names a program the image installs", () => {
    const installed = new Set(["/usr/bin/fieldgate", "/usr/libexec/fieldgate/firstboot", "/usr/libexec/fieldgate/settings", "/usr/libexec/fieldgate/trial", "/bin/kill"]);
    for (const unit of UNITS) {
      for (const p of execPaths(readFileSync(join(unitsDir, unit), "utf8"))) expect(installed, `${unit}: ${p}`).toContain(p);
    }
  });

  for (const unit of UNITS) {
    it(`systemd-analyze verify ${unit}`, () => {
      const r = run("systemd-analyze", ["verify", "--man=no", `--root=${root}`, unit]);
      expect(r.out).toBe("");
      expect(r.status).toBe(0);
    });
  }

  it("fieldgate.service: the offline security review rates it OK or better", () => {
    const r = run("systemd-analyze", ["security", "--offline=yes", `--root=${root}`, "--no-pager", "fieldgate.service"]);
    const m = /Overall exposure level for fieldgate\.service: ([0-9.]+) (\S+)/.exec(r.out);
    expect(m, r.out).not.toBeNull();
    const score = Number(m?.[1]);
    console.log(`systemd-analyze security fieldgate.service: ${score} ${m?.[2]}`);
    // 1.7 when written; a unit that loses its hardening climbs past 2 (MEDIUM starts at 5).
    expect(score).toBeLessThanOrEqual(2.0);
  });

  it("the service runs unprivileged, notifies, has a watchdog and restarts on failure", () => {
    const text = readFileSync(join(unitsDir, "fieldgate.service"), "utf8");
    for (const line of [
      "Type=notify",
      "NotifyAccess=all",
      "User=fieldgate",
      "SupplementaryGroups=dialout",
      "Restart=on-failure",
      "ProtectSystem=strict",
      "ReadWritePaths=/var/lib/fieldgate",
      "CapabilityBoundingSet=",
      "NoNewPrivileges=yes",
      "PrivateTmp=yes",
      "ProtectHome=yes",
      "ExecReload=/bin/kill -HUP $MAINPID",
    ]) {
      expect(text.split("\n"), line).toContain(line);
    }
    expect(text).toMatch(/^WatchdogSec=\d+s$/m);
  });

  it("sysusers creates the user in dialout, tmpfiles its folders with their owners", () => {
    const etc = join(root, "etc");
    mkdirSync(etc, { recursive: true });
    writeFileSync(join(etc, "passwd"), "root:x:0:0:root:/root:/bin/sh\n");
    writeFileSync(join(etc, "group"), "root:x:0:\ndialout:x:20:\n");
    const conf = join(root, "usr/lib/sysusers.d");
    mkdirSync(conf, { recursive: true });
    cpSync(join(unitsDir, "sysusers.conf"), join(conf, "fieldgate.conf"));
    const su = run("systemd-sysusers", [`--root=${root}`]);
    expect(su.status, su.out).toBe(0);
    const passwd = readFileSync(join(etc, "passwd"), "utf8");
    const user = /^fieldgate:x:(\d+):(\d+):[^:]*:\/var\/lib\/fieldgate:\/usr\/sbin\/nologin$/m.exec(passwd);
    expect(user, passwd).not.toBeNull();
    expect(Number(user?.[1])).toBeLessThan(1000);
    expect(readFileSync(join(etc, "group"), "utf8")).toMatch(/^dialout:x:20:fieldgate$/m);

    const tmpConf = join(root, "usr/lib/tmpfiles.d");
    mkdirSync(tmpConf, { recursive: true });
    cpSync(join(unitsDir, "tmpfiles.conf"), join(tmpConf, "fieldgate.conf"));
    const tf = run("systemd-tmpfiles", [`--root=${root}`, "--create", "fieldgate.conf"]);
    expect(tf.status, tf.out).toBe(0);
    const state = statSync(join(root, "var/lib/fieldgate"));
    expect(state.uid).toBe(Number(user?.[1]));
    expect(state.mode & 0o777).toBe(0o750);
    expect(statSync(join(root, "var/lib/fieldgate/pki")).mode & 0o777).toBe(0o700);
    expect(statSync(join(root, "etc/fieldgate")).uid).toBe(0);
  });

  it("journald keeps the journal in RAM with a cap", () => {
    const text = readFileSync(join(unitsDir, "journald.conf"), "utf8");
    expect(text).toMatch(/^\[Journal\]$/m);
    expect(text).toMatch(/^Storage=volatile$/m);
    expect(text).toMatch(/^RuntimeMaxUse=\d+M$/m);
  });

  it("the first-boot script is valid sh", () => {
    const r = run("sh", ["-n", join(unitsDir, "fieldgate-firstboot")]);
    expect(r.status, r.out).toBe(0);
  });

  it("the first boot never resizes through the by-partlabel link, and runs at every boot", () => {
    const script = readFileSync(join(unitsDir, "fieldgate-firstboot"), "utf8");
    const code = script.split("\n").filter((l) => !l.trim().startsWith("#")).join("\n");
    expect(code).not.toMatch(/by-partlabel/);
    expect(code).toMatch(/findmnt -n -o MAJ:MIN/);
    expect(code).toMatch(/udevadm settle/);
    expect(readFileSync(join(unitsDir, "fieldgate-firstboot.service"), "utf8")).not.toMatch(/^ConditionPathExists=/m);
  });

  it("the settings unit: before networkd reads its files, before the gateway and sshd, after the data partition", () => {
    const text = readFileSync(join(unitsDir, "fieldgate-settings.service"), "utf8");
    const before = /^Before=(.*)$/m.exec(text)?.[1].split(/\s+/) ?? [];
    for (const u of ["network-pre.target", "fieldgate.service", "ssh.service", "fieldgate-firstboot.service"]) expect(before, u).toContain(u);
    expect(text).toMatch(/^Wants=network-pre\.target$/m);
    expect(text).toMatch(/^RequiresMountsFor=.*\/etc\/fieldgate/m);
    expect(text).toMatch(/^ExecStart=\/usr\/libexec\/fieldgate\/settings$/m);
    const r = run("systemd-analyze", ["verify", "--man=no", `--root=${root}`, "fieldgate-settings.service", "fieldgate.service", "systemd-networkd.service"]);
    expect(r.out).not.toMatch(/ordering cycle/i);
    // The gateway's network requests: its folder watched, carried out by root.
    expect(readFileSync(join(unitsDir, "fieldgate-network-request.path"), "utf8")).toMatch(/^PathExists=\/var\/lib\/fieldgate\/network-request\/request\.json$/m);
    expect(readFileSync(join(unitsDir, "fieldgate-network-request.service"), "utf8")).toMatch(/^ExecStart=\/usr\/bin\/fieldgate network serve$/m);
    expect(readFileSync(join(unitsDir, "tmpfiles.conf"), "utf8")).toMatch(/^d \/var\/lib\/fieldgate\/network-request 0750 fieldgate fieldgate -$/m);
  });

  it("the update units: the trial check after the gateway, the inbox watched, the URL looked at now and then", () => {
    const trial = readFileSync(join(unitsDir, "fieldgate-trial.service"), "utf8");
    expect(trial).toMatch(/^After=fieldgate\.service/m);
    expect(trial).toMatch(/^ExecStart=\/usr\/libexec\/fieldgate\/trial$/m);
    expect(readFileSync(join(unitsDir, "fieldgate-update.path"), "utf8")).toMatch(/^PathExistsGlob=\/data\/update\/inbox\/\*\.fgu$/m);
    expect(readFileSync(join(unitsDir, "fieldgate-update.service"), "utf8")).toMatch(/^ExecStart=\/usr\/bin\/fieldgate update check --config \/etc\/fieldgate\/gateway\.yaml$/m);
    expect(readFileSync(join(unitsDir, "fieldgate-update.timer"), "utf8")).toMatch(/^OnUnitInactiveSec=/m);
    expect(readFileSync(join(unitsDir, "system.conf"), "utf8")).toMatch(/^RuntimeWatchdogSec=\d+s$/m);
  });
});
