// `fieldgate update BUNDLE` as the operator runs it (the built CLI, spawned), on a folder that
// stands for the appliance: what a good bundle writes (slot B, its kernel, a boot entry with one
// trial boot, the state), and every refusal with its message and nothing written.
import { readFileSync, readdirSync, writeFileSync, openSync, writeSync, closeSync, existsSync, renameSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fieldgateUpdate, keygen, makeFixture, type Fixture } from "./update-fixture.js";

let f: Fixture;
afterEach(() => f?.cleanup());

const entries = (): string[] => readdirSync(join(f.root, "efi/loader/entries")).sort();
const state = (): { pending?: { slot: string; version: string }; last?: { result: string; message: string } } =>
  JSON.parse(readFileSync(join(f.root, "data/update/state.json"), "utf8"));

describe("fieldgate update BUNDLE", () => {
  it("verifies, writes slot B and its kernel, adds a boot entry for one trial boot, and reboots as asked", () => {
    f = makeFixture("1.0");
    const bundle = f.bundle({ version: "1.1", size: 3 << 20 });
    const r = fieldgateUpdate(f, [bundle, "--reboot", "now"]);
    expect(r.out).toMatch(/signature good/);
    expect(r.out).toMatch(/payloads match their signed hashes/);
    expect(r.out).toMatch(/read back and matching its signed hash/);
    expect(r.status, r.out).toBe(0);
    // The root file system is in slot B, byte for byte; slot A is untouched.
    const rootfs = readFileSync(join(f.dir, "rootfs-1.ext4"));
    expect(readFileSync(f.slotB).subarray(0, rootfs.length).equals(rootfs)).toBe(true);
    expect(readFileSync(f.slotA).every((b) => b === 0xaa)).toBe(true);
    expect(entries()).toEqual(["fieldgate-a.conf", "fieldgate-b+1.conf"]);
    const entry = readFileSync(join(f.root, "efi/loader/entries/fieldgate-b+1.conf"), "utf8");
    expect(entry).toMatch(/^title fieldgate 1\.1 \(B\)$/m);
    expect(entry).toMatch(/^sort-key fieldgate$/m);
    expect(entry).toMatch(/^version 2$/m);
    expect(entry).toMatch(/^options root=PARTLABEL=fieldgate-rootB ro quiet$/m);
    expect(readFileSync(join(f.root, "efi/fieldgate-b/vmlinuz"), "utf8")).toBe("kernel 1");
    expect(readFileSync(join(f.root, "efi/fieldgate-b/initrd.img"), "utf8")).toBe("initrd 1");
    expect(state().pending).toMatchObject({ slot: "B", version: "1.1" });
    expect(state().last).toMatchObject({ result: "installed" });
    expect(readFileSync(join(f.root, "run/fieldgate-reboot"), "utf8")).toBe("systemctl reboot\n");
    expect(readFileSync(join(f.root, "data/update/update.log"), "utf8")).toMatch(/boot entry fieldgate-b\+1\.conf/);
    // status tells the same
    const s = fieldgateUpdate(f, ["status"]);
    expect(s.out).toMatch(/running: +fieldgate 1\.0 from slot A/);
    expect(s.out).toMatch(/slot B: +fieldgate 1\.1 \(B\), entry fieldgate-b\+1\.conf, install 2: installed, its trial boot is next/);
  });

  it("--reboot window plans the reboot as a transient timer; manual leaves it to the operator", () => {
    f = makeFixture("1.0");
    // A window that started a minute ago and is not over would reboot now: one 12 hours away does not.
    const at = new Date(Date.now() + 12 * 3600_000);
    const hh = (d: Date) => `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
    writeFileSync(f.config, `update:\n  window: ${hh(at)}-${hh(new Date(at.getTime() + 3600_000))}\n`);
    const r = fieldgateUpdate(f, [f.bundle({ version: "1.1" })]);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toMatch(/reboot planned for \d{4}-\d\d-\d\d \d\d:\d\d:00 \(maintenance window/);
    const cmds = readFileSync(join(f.root, "run/fieldgate-reboot"), "utf8");
    expect(cmds).toMatch(/^systemd-run --unit=fieldgate-update-reboot --on-calendar=\d{4}-\d\d-\d\d \d\d:\d\d:00 .* \/usr\/bin\/systemctl reboot$/m);
    expect(cmds).not.toMatch(/^systemctl reboot$/m);
    const m = fieldgateUpdate(f, [f.bundle({ version: "1.2" }), "--reboot", "manual"]);
    expect(m.status, m.out).toBe(0);
    expect(m.out).toMatch(/starts at the next reboot/);
    // The second install replaced the first one's slot and entry: still one above slot A's.
    expect(entries()).toEqual(["fieldgate-a.conf", "fieldgate-b+1.conf"]);
    const entry = readFileSync(join(f.root, "efi/loader/entries/fieldgate-b+1.conf"), "utf8");
    expect(entry).toMatch(/^title fieldgate 1\.2 \(B\)$/m);
    expect(entry).toMatch(/^version 2$/m);
  });

  const refusals: [string, (f: Fixture) => string[], RegExp][] = [
    ["a bundle signed with another key", (x) => [x.bundle({ version: "1.1", key: keygen(join(x.dir, "other.pem")) })], /bad signature: not signed by a key this gateway trusts/],
    ["a bundle for another architecture", (x) => [x.bundle({ version: "1.1", arch: process.arch === "arm64" ? "amd64" : "arm64" })], /for (amd64|arm64); this gateway is (arm64|amd64); nothing was written/],
    ["an older version", (x) => [x.bundle({ version: "0.9" })], /older than the running 1\.0; refused \(--force installs it anyway\)/],
    ["the running version", (x) => [x.bundle({ version: "1.0" })], /the version running now/],
    ["a root file system larger than the slot", (x) => [x.bundle({ version: "1.1", size: 9 << 20 })], /is larger than the slot \(8\.0 MiB\)/],
    ["a history schema the running version could not read", (x) => [x.bundle({ version: "1.1", history: "3:2" })], /migrates the history database to schema 3, which builds before schema 2 cannot read/],
    ["a bundle whose payload was altered after signing", (x) => {
      const b = x.bundle({ version: "1.1" });
      const fd = openSync(b, "r+");
      writeSync(fd, Buffer.from([0x42]), 0, 1, readFileSync(b).length - 40);
      closeSync(fd);
      return [b];
    }, /payload initrd does not match its signed hash|payload rootfs does not match its signed hash/],
    ["a truncated bundle", (x) => {
      const b = x.bundle({ version: "1.1" });
      writeFileSync(b, readFileSync(b).subarray(0, readFileSync(b).length - 1000));
      return [b];
    }, /truncated or appended to/],
    ["a file that is not a bundle", (x) => {
      const b = join(x.dir, "notes.fgu");
      writeFileSync(b, "hello");
      return [b];
    }, /is not a fieldgate update bundle/],
  ];
  for (const [what, make, message] of refusals) {
    it(`refuses ${what}, with nothing written`, () => {
      f = makeFixture("1.0");
      const args = make(f);
      const before = f.written();
      const r = fieldgateUpdate(f, [...args, "--reboot", "now"]);
      expect(r.out).toMatch(message);
      expect(r.status, r.out).toBe(1);
      expect(f.written()).toBe(before);
      expect(existsSync(join(f.root, "run/fieldgate-reboot"))).toBe(false);
      expect(state().last).toMatchObject({ result: "refused" });
      expect(state().last!.message).toMatch(message);
    });
  }

  it("--force installs an older version", () => {
    f = makeFixture("1.0");
    const r = fieldgateUpdate(f, [f.bundle({ version: "0.9" }), "--force", "--reboot", "manual"]);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toMatch(/not newer than the running 1\.0: installing it because of --force/);
  });

  it("refuses while the running version is on its trial boot, and outside the appliance", () => {
    f = makeFixture("1.0");
    expect(fieldgateUpdate(f, [f.bundle({ version: "1.1" }), "--reboot", "manual"]).status).toBe(0);
    // The boot loader started B and counted the try.
    renameSync(join(f.root, "efi/loader/entries/fieldgate-b+1.conf"), join(f.root, "efi/loader/entries/fieldgate-b+0-1.conf"));
    f.boot("B", "boot-2", "1.1");
    const before = f.written();
    const r = fieldgateUpdate(f, [f.bundle({ version: "1.2" })]);
    expect(r.out).toMatch(/the running version is on its trial boot \(fieldgate-b\+0-1\.conf\)/);
    expect(r.status).toBe(1);
    expect(f.written()).toBe(before);
    writeFileSync(join(f.root, "proc/cmdline"), "root=/dev/sda2 ro\n");
    const off = fieldgateUpdate(f, [f.bundle({ version: "1.2" })]);
    expect(off.out).toMatch(/did not boot from a fieldgate A\/B slot/);
    expect(off.status).toBe(1);
  });

  it("says how to call it", () => {
    f = makeFixture("1.0");
    const r = fieldgateUpdate(f, []);
    expect(r.status).toBe(2);
    expect(r.out).toMatch(/fieldgate update BUNDLE\|URL/);
    expect(fieldgateUpdate(f, ["x.fgu", "--reboot", "later"]).out).toMatch(/--reboot: expected now, window or manual, got "later"/);
    expect(fieldgateUpdate(f, [join(f.dir, "missing.fgu")]).out).toMatch(/missing\.fgu: no such file/);
  });
});
