// The image scripts without building an image (that takes root and minutes: image/build.sh and
// image/test.sh, run by .ci/run where the machine allows): they parse, the overlay's initramfs
// scripts parse as the initramfs' sh will read them, and test.sh says clearly why it skips.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const image = resolve(__dirname, "../../image");

function run(cmd: string, args: string[]): { status: number | null; out: string } {
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 30_000 });
  return { status: r.status, out: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

describe("image scripts", () => {
  it.each(["build.sh", "customize.sh", "test.sh"])("%s is valid bash", (file) => {
    const r = run("bash", ["-n", join(image, file)]);
    expect(r.status, r.out).toBe(0);
  });

  it.each(["etc/initramfs-tools/scripts/local-bottom/fieldgate-data", "etc/initramfs-tools/hooks/fieldgate"])(
    "rootfs/%s is valid sh",
    (file) => {
      const r = run("sh", ["-n", join(image, "rootfs", file)]);
      expect(r.status, r.out).toBe(0);
    },
  );

  it.each(["boot-check.mjs", "update-check.mjs", "bundle.mjs", "settings-drive.mjs", "settings-check.mjs"])("%s is valid JavaScript", (file) => {
    const r = run(process.execPath, ["--check", join(image, file)]);
    expect(r.status, r.out).toBe(0);
  });

  it("test.sh skips with status 77 and says what is missing", () => {
    const empty = mkdtempSync(join(tmpdir(), "fieldgate-noimage-"));
    try {
      const r = run("bash", [join(image, "test.sh"), "--out", empty]);
      expect(r.status, r.out).toBe(77);
      expect(r.out).toMatch(/SKIPPED: (qemu-system-x86_64 is missing \(Debian: apt-get install qemu-system-x86\)|no image at .*build\.sh.*mmdebstrap)/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it("build.sh refuses an unknown architecture before doing anything", () => {
    const r = run("bash", [join(image, "build.sh"), "--arch", "mips", "--out", join(tmpdir(), "fieldgate-never")]);
    expect(r.status).toBe(2);
    expect(r.out).toMatch(/--arch must be amd64 or arm64/);
  });

  it("the partition labels agree between the layout, the initramfs, fstab and the boot entry", () => {
    const build = readFileSync(join(image, "build.sh"), "utf8");
    for (const label of ["fieldgate-boot", "fieldgate-settings", "fieldgate-rootA", "fieldgate-rootB", "fieldgate-data"]) {
      expect(build).toMatch(new RegExp(`name=${label}\\b`));
    }
    expect(build).toMatch(/root=PARTLABEL=fieldgate-rootA /);
    // The boot partition, where updates write the other slot's kernel and boot entry.
    expect(readFileSync(join(image, "rootfs/etc/fstab"), "utf8")).toMatch(/^PARTLABEL=fieldgate-boot\s+\/efi\s+vfat\s+\S*x-systemd\.automount/m);
    expect(readFileSync(join(image, "rootfs/etc/fstab"), "utf8")).toMatch(/^PARTLABEL=fieldgate-data\s+\/data\s+ext4/m);
    expect(readFileSync(join(image, "rootfs/etc/initramfs-tools/scripts/local-bottom/fieldgate-data"), "utf8")).toMatch(
      /\/dev\/disk\/by-partlabel\/fieldgate-data/,
    );
  });

  it("the settings drive: basic data (Windows gives it a letter), volume FIELDGATE, between the ESP and the root slots", () => {
    const build = readFileSync(join(image, "build.sh"), "utf8");
    // Microsoft basic data; an EFI system partition gets no drive letter on Windows.
    expect(build).toMatch(/type=EBD0A0A2-B9E5-4433-87C0-68B6B72699C7, name=fieldgate-settings/);
    expect(build).toMatch(/mkfs\.vfat -F 32 -n FIELDGATE -C "\$settings"/);
    const order = ["name=fieldgate-boot", "name=fieldgate-settings", "name=fieldgate-rootA", "name=fieldgate-rootB", "name=fieldgate-data"].map((l) => build.indexOf(l));
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    // Never in fstab: mounted only while the import runs.
    expect(readFileSync(join(image, "rootfs/etc/fstab"), "utf8")).not.toMatch(/fieldgate-settings|FIELDGATE/);
  });

  it("the drive's README.txt is plain ASCII for any Notepad, with lines a small window shows", () => {
    const text = readFileSync(join(image, "settings-drive/README.txt"), "utf8");
    expect(text).toMatch(/^[\x20-\x7e\n]*$/);
    for (const line of text.split("\n")) expect(line.length, line).toBeLessThanOrEqual(80);
    expect(text).toContain("IMPORT-RESULT.txt");
  });

  it("every file of the drive's folder is copied onto it, CRLF, and the admin password's example is plain ASCII", () => {
    const build = readFileSync(join(image, "build.sh"), "utf8");
    expect(build).toMatch(/for f in "\$here"\/settings-drive\/\*; do\n {2}crlf "\$f" "\$work\/\$\{f##\*\/\}"\n {2}mcopy -i "\$settings" "\$work\/\$\{f##\*\/\}" ::\/fieldgate\/\n/);
    expect(readdirSync(join(image, "settings-drive")).sort()).toEqual(["README.txt", "admin-password.txt.example", "authorized_keys.example"]);
    const example = readFileSync(join(image, "settings-drive/admin-password.txt.example"), "utf8");
    expect(example).toMatch(/^[\x20-\x7e\n]*$/);
    for (const line of example.split("\n")) expect(line.length, line).toBeLessThanOrEqual(80);
    expect(readFileSync(join(image, "settings-drive/README.txt"), "utf8")).toContain("admin-password.txt  the password of an admin user");
  });
});
