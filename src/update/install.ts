// Installing a verified bundle into the inactive slot, in the order that keeps every moment
// safe to lose power in: the slot's boot entry goes first (the slot is then never started),
// the root file system is written and read back, then the kernel and initramfs, and the new
// boot entry, with one trial boot, comes last. The running slot is never written.
import { closeSync, constants, createReadStream, fsyncSync, openSync, readSync, writeSync } from "node:fs";
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { createGunzip } from "node:zlib";
import { Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { UpdateRefused, payload, type Payload } from "./bundle-format.js";
import { entryOf, espRoomFor, nextGeneration, removeSlot, writeKernel, writeTrialEntry } from "./boot-entries.js";
import { otherSlot, type Layout, type Slot } from "./layout.js";
import type { UpdateStore } from "./state.js";
import { checkPayloads, readHeadOf, checkHead, debianArch, type VerifiedBundle } from "./verify.js";
import { runningVersion } from "./version.js";

export interface InstallOptions {
  readonly force?: boolean;
  /** Where the bundle came from, for the log and the state ("command line", "inbox", a URL). */
  readonly source: string;
  readonly log: (line: string) => void;
}

export interface Installed {
  readonly version: string;
  readonly slot: Slot;
  readonly from: string;
  readonly entry: string;
}

const MiB = (n: number): string => `${(n / 1048576).toFixed(1)} MiB`;

/** The slot to write and the checks that do not need the bundle: where we run, and that it is settled. */
export function targetSlot(layout: Layout): { running: Slot; target: Slot } {
  const running = layout.bootedSlot();
  if (running === undefined) {
    throw new UpdateRefused("state", "this system did not boot from a fieldgate A/B slot (no root=PARTLABEL=fieldgate-rootA|B on its command line): updates apply to the appliance image only");
  }
  const mine = entryOf(layout.esp, running);
  if (mine?.triesLeft !== undefined) {
    throw new UpdateRefused("state", `the running version is on its trial boot (${mine.file}): it is confirmed or left first (fieldgate update status); nothing was written`);
  }
  return { running, target: otherSlot(running) };
}

/** Verifies `file` against this gateway and installs it; throws UpdateRefused before writing anything when it must not be. */
export async function install(layout: Layout, store: UpdateStore, file: string, opts: InstallOptions): Promise<Installed> {
  const log = opts.log;
  const { running, target } = targetSlot(layout);
  const { version: current } = runningVersion(layout.osRelease);
  const device = layout.slotDevice(target);
  const runningDevice = layout.slotDevice(running);
  if (device.path === runningDevice.path) throw new UpdateRefused("state", `slots A and B are the same device ${device.path}; nothing was written`);
  const { head, size } = readHeadOf(file);
  log(`verifying ${file} (${MiB(size)}, from ${opts.source}); running ${current} from slot ${running}`);
  const bundle = checkHead(file, head, size, {
    keysDir: layout.keysDir,
    running: current,
    arch: debianArch(),
    slotSize: device.size,
    espRoom: espRoomFor(layout.esp, target),
    force: opts.force,
    log,
  });
  await checkPayloads(bundle, log);
  const m = bundle.manifest;

  // From here on the inactive slot is written. First it is made unbootable.
  removeSlot(layout.esp, target);
  store.update((s) => {
    const { pending: _, ...rest } = s;
    return rest;
  });
  log(`slot ${target} (${device.path}, ${MiB(device.size)}): its boot entry removed; writing the root file system`);
  const t0 = Date.now();
  await writeRootfs(bundle, payload(m, "rootfs"), device);
  log(`slot ${target}: ${MiB(payload(m, "rootfs").contentSize)} written in ${((Date.now() - t0) / 1000).toFixed(1)} s, read back and matching its signed hash`);

  const kernel = readPayload(bundle, payload(m, "kernel"));
  const initrd = readPayload(bundle, payload(m, "initrd"));
  writeKernel(layout.esp, target, kernel, initrd);
  const generation = nextGeneration(layout.esp);
  const entry = writeTrialEntry(layout.esp, target, generation, m.version, m.cmdline);
  log(`boot partition: kernel and initramfs of slot ${target} written; boot entry ${entry} (version ${generation}, one trial boot)`);
  store.record("installed", `${m.version} installed in slot ${target} from ${opts.source}, waiting for its trial boot (running ${current} from slot ${running})`, m.version, (s) => ({
    ...s,
    pending: { slot: target, version: m.version, from: current, fromSlot: running, installedAt: new Date().toISOString(), bootId: layout.bootId(), source: opts.source },
  }));
  return { version: m.version, slot: target, from: current, entry };
}

/** A payload small enough for memory (kernel, initramfs), checked once more against its hash as read. */
function readPayload(b: VerifiedBundle, p: Payload): Buffer {
  const buf = Buffer.alloc(p.size);
  const fd = openSync(b.file, "r");
  try {
    let done = 0;
    while (done < p.size) {
      const n = readSync(fd, buf, done, p.size - done, b.payloadStart + p.offset + done);
      if (n === 0) break;
      done += n;
    }
  } finally {
    closeSync(fd);
  }
  if (createHash("sha256").update(buf).digest("hex") !== p.sha256) {
    throw new UpdateRefused("payload", `${b.file}: payload ${p.name} changed since it was verified; slot left without a boot entry`);
  }
  return buf;
}

/**
 * Streams the root file system into the slot: the stored bytes are hashed again on the way (the
 * file may have changed since it was verified), the written bytes are synced, dropped from the
 * page cache and read back from the device against the signed hash of the content.
 */
async function writeRootfs(b: VerifiedBundle, p: Payload, device: { path: string; block: boolean }): Promise<void> {
  // O_EXCL on a block device fails with EBUSY while it is mounted: the running root cannot be opened so.
  const fd = openSync(device.path, constants.O_WRONLY | constants.O_EXCL);
  const stored = createHash("sha256");
  const content = createHash("sha256");
  let position = 0;
  try {
    const sink = new Writable({
      highWaterMark: 1 << 20,
      write(chunk: Buffer, _enc, done) {
        try {
          content.update(chunk);
          let off = 0;
          while (off < chunk.length) off += writeSync(fd, chunk, off, chunk.length - off, position + off);
          position += chunk.length;
          done();
        } catch (err) {
          done(err as Error);
        }
      },
    });
    const source = createReadStream(b.file, { start: b.payloadStart + p.offset, end: b.payloadStart + p.offset + p.size - 1, highWaterMark: 1 << 20 });
    const hashStored = new Transform({
      transform(chunk: Buffer, _enc, done) {
        stored.update(chunk);
        done(null, chunk);
      },
    });
    if (p.encoding === "gzip") await pipeline(source, hashStored, createGunzip({ chunkSize: 1 << 20 }), sink);
    else await pipeline(source, hashStored, sink);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  if (stored.digest("hex") !== p.sha256 || position !== p.contentSize || content.digest("hex") !== p.contentSha256) {
    throw new UpdateRefused("payload", `${b.file}: the root file system changed since it was verified (or does not unpack to its signed content); slot left without a boot entry`);
  }
  if (device.block) spawnSync("blockdev", ["--flushbufs", device.path], { stdio: "ignore" });
  const back = createHash("sha256");
  const buf = Buffer.allocUnsafe(1 << 20);
  const rfd = openSync(device.path, "r");
  try {
    for (let pos = 0; pos < p.contentSize; ) {
      const n = readSync(rfd, buf, 0, Math.min(buf.length, p.contentSize - pos), pos);
      if (n === 0) break;
      back.update(buf.subarray(0, n));
      pos += n;
    }
  } finally {
    closeSync(rfd);
  }
  if (back.digest("hex") !== p.contentSha256) {
    throw new Error(`slot ${device.path}: what was read back differs from what was written (a failing card?); the slot has no boot entry, the running system is untouched`);
  }
}
