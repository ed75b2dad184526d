// systemd/fieldgate-settings (the boot's import and network step) on a machine without the
// FIELDGATE drive: a gateway flashed before the drive existed, updated to this version. It must
// say so, import nothing and still render the network settings; `fieldgate` is a stand-in that
// records what it was asked. The drive itself (fsck, mount, import) is exercised by image/test.sh.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SETTINGS_FILES } from "../../src/settings/import-set.js";

const script = resolve(__dirname, "../../systemd/fieldgate-settings");
const dir = mkdtempSync(join(tmpdir(), "fieldgate-settings-script-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fakeSys(partitions: Record<string, string>): string {
  const sys = join(dir, `sys-${Object.keys(partitions).join("-") || "none"}`);
  for (const [dev, name] of Object.entries({ vda: "", ...partitions })) {
    mkdirSync(join(sys, "class/block", dev), { recursive: true });
    writeFileSync(join(sys, "class/block", dev, "uevent"), `MAJOR=254\nDEVNAME=${dev}\nDEVTYPE=${name ? "partition" : "disk"}\n${name ? `PARTNAME=${name}\n` : ""}`);
  }
  return sys;
}

describe("systemd/fieldgate-settings", () => {
  it("is valid sh", () => {
    const r = spawnSync("sh", ["-n", script], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
  });

  it("without the drive: nothing imported, the network still rendered for networkd, exit 0", () => {
    const calls = join(dir, "calls");
    const fake = join(dir, "fieldgate");
    writeFileSync(fake, `#!/bin/sh\necho "$*" >> ${calls}\n`);
    chmodSync(fake, 0o755);
    const r = spawnSync("sh", [script], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, FIELDGATE_BIN: fake, FIELDGATE_SYS: fakeSys({ vda1: "fieldgate-boot", vda2: "fieldgate-rootA", vda4: "fieldgate-data" }), FIELDGATE_CONFIG_DIR: "/etc/fieldgate", FIELDGATE_SETTINGS_MOUNT: join(dir, "mnt") },
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("settings: no fieldgate-settings partition on this gateway (flashed before it existed): nothing to import");
    expect(readFileSync(calls, "utf8")).toBe("network apply --config /etc/fieldgate/network.yaml --out /run/systemd/network --boot\n");
  });

  it("opens the drive for an import for every file the import reads or names as a slip, and not for the examples or the result", () => {
    // has_settings alone, taken out of the script.
    const fn = /^has_settings\(\) \{\n[\s\S]*?\n\}$/m.exec(readFileSync(script, "utf8"))![0];
    const has = (name: string): boolean => {
      const folder = join(dir, `drive-${name}`);
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, name), "");
      return spawnSync("sh", ["-c", `${fn}\nhas_settings "$1"`, "sh", folder]).status === 0;
    };
    const slips = ["devices.yaml.txt", "network.yml", "id_ed25519.pub", "authorized_keys.pub", "admin-password.txt.txt", "Admin-Password.TXT"];
    for (const name of [...SETTINGS_FILES, ...slips]) expect(has(name), name).toBe(true);
    for (const name of ["README.txt", "IMPORT-RESULT.txt", "admin-password.txt.example", "devices.yaml.example", "authorized_keys.example"]) expect(has(name), name).toBe(false);
  });
});
