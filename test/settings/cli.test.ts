// `fieldgate settings import` and `fieldgate network apply` as the boot runs them (the built CLI,
// on folders that stand for the drive, /etc/fieldgate and /run/systemd/network): exit 0 when
// applied or nothing to do, 3 when refused (an outcome the unit does not count as its failure),
// and the network files written where --out says.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const repo = resolve(__dirname, "../..");
const cli = join(repo, "dist/src/cli.js");
const dir = mkdtempSync(join(tmpdir(), "fieldgate-settings-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 30_000 });

describe.skipIf(!existsSync(cli))("the settings commands", () => {
  it("settings import: refused (3) with file:line:column, then applied (0), then nothing to do (0)", () => {
    const drive = join(dir, "drive");
    const etc = join(dir, "etc");
    for (const d of [drive, etc]) mkdirSync(d, { recursive: true });
    for (const f of ["gateway.yaml", "devices.yaml", "network.yaml"]) writeFileSync(join(etc, f), readFileSync(join(repo, "config", f)));
    const args = ["settings", "import", "--from", drive, "--to", etc, "--ssh", join(dir, "ssh"), "--status", join(dir, "status.json")];
    writeFileSync(join(drive, "network.yaml"), "ports:\n  - name: eth0\n    addresses: [10.1.2.3]\n");
    const refused = run(...args);
    expect(refused.status, refused.stderr).toBe(3);
    expect(refused.stderr).toContain('fieldgate settings: refused: network.yaml:3:17: ports[0].addresses[0]: expected an address with its prefix length');
    writeFileSync(join(drive, "network.yaml"), "ports:\n  - name: eth0\n    addresses: [10.1.2.3/8]\n");
    const applied = run(...args);
    expect(applied.status, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(/^fieldgate settings: applied network\.yaml; moved to applied\/\d{4}-\d{2}-\d{2}_\d{6} on the drive$/m);
    expect(readFileSync(join(etc, "network.yaml"), "utf8")).toContain("10.1.2.3/8");
    expect(run(...args).stdout).toContain(`fieldgate settings: nothing to import in ${drive}`);
    expect(run("settings", "status", "--status", join(dir, "status.json")).stdout).toMatch(/^fieldgate: settings from this folder, .* UTC\n\nAPPLIED\./);
  });

  it("settings import of admin-password.txt alone: applied, the file removed, nothing said to be moved", () => {
    const drive = join(dir, "drive-pw");
    const etc = join(dir, "etc-pw");
    for (const d of [drive, etc]) mkdirSync(d, { recursive: true });
    for (const f of ["gateway.yaml", "devices.yaml"]) writeFileSync(join(etc, f), readFileSync(join(repo, "config", f)));
    writeFileSync(join(drive, "admin-password.txt"), "# the first admin\r\nKessel-Haus 7\r\n");
    const r = run("settings", "import", "--from", drive, "--to", etc, "--ssh", join(dir, "ssh-pw"), "--status", join(dir, "status-pw.json"));
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^fieldgate settings: applied admin-password\.txt; admin-password\.txt removed from the drive$/m);
    expect(r.stdout + r.stderr).not.toContain("Kessel-Haus");
    expect(readdirSync(drive).sort()).toEqual(["IMPORT-RESULT.txt"]);
    expect(readFileSync(join(etc, "gateway.yaml"), "utf8")).toMatch(/^users:\n {2}admin:\n {4}role: admin\n {4}password: \$scrypt\$/m);
  });

  it("network apply: the port files into --out, timesyncd's beside them; a bad file is refused and nothing written", () => {
    const out = join(dir, "run/systemd/network");
    const file = join(dir, "network-ok.yaml");
    writeFileSync(file, "ntp: [10.0.0.1]\nports:\n  - mac: 52:54:00:12:34:56\n    addresses: [10.0.0.5/24]\n");
    const r = run("network", "apply", "--config", file, "--out", out);
    expect(r.status, r.stderr).toBe(0);
    expect(readdirSync(out)).toEqual(["10-fieldgate-00-mac-525400123456.network"]);
    expect(readFileSync(join(dir, "run/systemd/timesyncd.conf.d/fieldgate.conf"), "utf8")).toContain("NTP=10.0.0.1\n");
    const bad = join(dir, "network-bad.yaml");
    writeFileSync(bad, "ports:\n  - name: eth1\n    dhcp: maybe\n");
    const b = run("network", "apply", "--config", bad, "--out", out);
    expect(b.status).toBe(1);
    expect(b.stderr).toContain(`${bad}:3:11: ports[0].dhcp: expected yes, no, ipv4 or ipv6, got "maybe"`);
    expect(readdirSync(out)).toEqual(["10-fieldgate-00-mac-525400123456.network"]);
  });
});
