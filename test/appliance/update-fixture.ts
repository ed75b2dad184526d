// A folder that stands for the appliance's root (FIELDGATE_UPDATE_ROOT, src/update/layout.ts):
// plain files as the two root partitions, the boot partition's entries as image/build.sh writes
// them, os-release with IMAGE_VERSION, the trusted key, and bundles made by image/bundle.mjs
// (the builder's own tool) with small random root file systems.
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { debianArch } from "../../src/update/verify.js";

export const repo = resolve(__dirname, "../..");
const bundleTool = join(repo, "image/bundle.mjs");

function node(args: string[]): string {
  const r = spawnSync(process.execPath, args, { encoding: "utf8", timeout: 60_000 });
  if (r.status !== 0) throw new Error(`node ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** A new Ed25519 key pair (image/bundle.mjs keygen): FILE and FILE.pub. */
export function keygen(file: string): string {
  node([bundleTool, "keygen", "--key", file]);
  return file;
}

export interface Fixture {
  readonly dir: string;
  readonly root: string;
  readonly slotA: string;
  readonly slotB: string;
  readonly key: string;
  readonly config: string;
  bundle(opts?: { version?: string; arch?: string; key?: string; size?: number; history?: string }): string;
  boot(slot: "A" | "B", bootId: string, version: string): void;
  /** A digest of what an install may write: both slots and the boot partition's files. */
  written(): string;
  cleanup(): void;
}

export function makeFixture(version = "1.0", slotMiB = 8): Fixture {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-update-"));
  const root = join(dir, "root");
  for (const d of ["proc/sys/kernel/random", "etc", "dev/disk/by-partlabel", "efi/loader/entries", "efi/fieldgate-a", "data/update/inbox", "usr/share/fieldgate/update-keys"]) {
    mkdirSync(join(root, d), { recursive: true });
  }
  const slotA = join(dir, "slotA");
  const slotB = join(dir, "slotB");
  writeFileSync(slotA, Buffer.alloc(slotMiB << 20, 0xaa));
  writeFileSync(slotB, Buffer.alloc(slotMiB << 20, 0));
  symlinkSync(slotA, join(root, "dev/disk/by-partlabel/fieldgate-rootA"));
  symlinkSync(slotB, join(root, "dev/disk/by-partlabel/fieldgate-rootB"));
  writeFileSync(join(root, "efi/fieldgate-a/vmlinuz"), "kernel A");
  writeFileSync(join(root, "efi/fieldgate-a/initrd.img"), "initrd A");
  writeFileSync(
    join(root, "efi/loader/entries/fieldgate-a.conf"),
    `title fieldgate ${version} (A)\nsort-key fieldgate\nversion 1\nlinux /fieldgate-a/vmlinuz\ninitrd /fieldgate-a/initrd.img\noptions root=PARTLABEL=fieldgate-rootA ro quiet\n`,
  );
  const key = keygen(join(dir, "key.pem"));
  writeFileSync(join(root, "usr/share/fieldgate/update-keys/update-key.pem"), readFileSync(`${key}.pub`));
  const config = join(dir, "gateway.yaml");
  writeFileSync(config, "update:\n  reboot: now\n");
  let n = 0;
  const f: Fixture = {
    dir,
    root,
    slotA,
    slotB,
    key,
    config,
    bundle(o = {}) {
      n++;
      const rootfs = join(dir, `rootfs-${n}.ext4`);
      // Half random (stored as is), half zeros (compressed away), as a real file system is.
      const size = o.size ?? 2 << 20;
      writeFileSync(rootfs, Buffer.concat([randomBytes(size >> 1), Buffer.alloc(size - (size >> 1))]));
      writeFileSync(join(dir, "vmlinuz"), `kernel ${n}`);
      writeFileSync(join(dir, "initrd"), `initrd ${n}`);
      const out = join(dir, `bundle-${n}.fgu`);
      node([bundleTool, "create", "--key", o.key ?? key, "--out", out, "--arch", o.arch ?? debianArch(), "--version", o.version ?? "1.1",
        "--rootfs", rootfs, "--kernel", join(dir, "vmlinuz"), "--initrd", join(dir, "initrd"), "--cmdline", "ro quiet", "--history", o.history ?? "1:1"]);
      return out;
    },
    boot(slot, bootId, v) {
      writeFileSync(join(root, "proc/cmdline"), `initrd=\\x root=PARTLABEL=fieldgate-root${slot} ro quiet\n`);
      writeFileSync(join(root, "proc/sys/kernel/random/boot_id"), `${bootId}\n`);
      writeFileSync(join(root, "etc/os-release"), `ID=debian\nIMAGE_ID=fieldgate\nIMAGE_VERSION=${v}\n`);
    },
    written() {
      const h = createHash("sha256").update(readFileSync(slotA)).update(readFileSync(slotB));
      const walk = (d: string): void => {
        for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
          const p = join(d, e.name);
          h.update(p);
          if (e.isDirectory()) walk(p);
          else h.update(readFileSync(p));
        }
      };
      walk(join(root, "efi"));
      return h.digest("hex");
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
  f.boot("A", "boot-1", version);
  return f;
}

/** `fieldgate update ...` against the fixture, as the operator runs it. */
export function fieldgateUpdate(f: Fixture, args: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [join(repo, "dist/src/cli.js"), "update", ...args, "--config", f.config], {
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, FIELDGATE_UPDATE_ROOT: f.root },
  });
  return { status: r.status, out: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

/** The same, without blocking this process (for tests that serve the bundle themselves). */
export function fieldgateUpdateAsync(f: Fixture, args: string[]): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(repo, "dist/src/cli.js"), "update", ...args, "--config", f.config], {
      env: { ...process.env, FIELDGATE_UPDATE_ROOT: f.root },
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => child.kill(), 60_000);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, out });
    });
  });
}
