// Everything that decides whether a bundle may be installed on this gateway, checked before
// anything is written: the signature, what it is for (product, layout, architecture), its
// version against the running one, the history database's schema, the sizes against the slot
// and the boot partition, and the hash of every payload (one read of the whole file).
import { createHash } from "node:crypto";
import { closeSync, createReadStream, fstatSync, openSync, readSync } from "node:fs";
import { arch as nodeArch } from "node:process";
import { HISTORY_SCHEMA_VERSION } from "../history/schema-version.js";
import { LAYOUT, MAX_MANIFEST, HEADER_SIZE, UpdateRefused, bundleSize, parseHead, payload, trustedKeys, verifyHead, type Manifest, type TrustedKey } from "./bundle-format.js";
import { compareVersions } from "./version.js";

/** Debian's name of this machine's architecture, as bundles carry it. */
export function debianArch(): string {
  return nodeArch === "x64" ? "amd64" : nodeArch === "arm64" ? "arm64" : nodeArch;
}

export interface VerifyContext {
  readonly keysDir: string;
  readonly running: string;
  readonly arch: string;
  /** Bytes of the slot the bundle would be written to. */
  readonly slotSize: number;
  /** Bytes the boot partition has for the slot's kernel and initramfs. */
  readonly espRoom: number;
  /** Install a version that is not newer than the running one. */
  readonly force?: boolean;
  readonly log?: (line: string) => void;
}

export interface VerifiedBundle {
  readonly file: string;
  readonly manifest: Manifest;
  readonly key: TrustedKey;
  readonly payloadStart: number;
}

const MiB = (n: number): string => `${(n / 1048576).toFixed(1)} MiB`;

/** Reads the head of a bundle file: header, manifest and signature. */
export function readHeadOf(file: string): { head: ReturnType<typeof parseHead>; size: number } {
  const fd = openSync(file, "r");
  try {
    const size = fstatSync(fd).size;
    const buf = Buffer.alloc(Math.min(size, HEADER_SIZE + MAX_MANIFEST + 64));
    readSync(fd, buf, 0, buf.length, 0);
    return { head: parseHead(buf, file), size };
  } finally {
    closeSync(fd);
  }
}

/** Checks the head: signature first, then what the signed manifest says against this gateway. */
export function checkHead(file: string, head: ReturnType<typeof parseHead>, fileSize: number | undefined, ctx: VerifyContext): VerifiedBundle {
  const log = ctx.log ?? (() => {});
  const { manifest: m, key } = verifyHead(head, trustedKeys(ctx.keysDir), file);
  log(`signature good (key ${key.id}, ${key.file}): fieldgate ${m.version} for ${m.arch}, built ${m.built}`);
  if (m.product !== "fieldgate" || m.layout !== LAYOUT) {
    throw new UpdateRefused("format", `${file} is a bundle of ${m.product} for the layout ${m.layout}; this gateway is fieldgate with layout ${LAYOUT}`);
  }
  if (m.arch !== ctx.arch) throw new UpdateRefused("arch", `${file} is fieldgate ${m.version} for ${m.arch}; this gateway is ${ctx.arch}; nothing was written`);
  const order = compareVersions(m.version, ctx.running);
  if (order <= 0 && !ctx.force) {
    throw new UpdateRefused(
      "version",
      `${file} is fieldgate ${m.version}, ${order === 0 ? "the version running now" : `older than the running ${ctx.running}`}; refused (--force installs it anyway); nothing was written`,
    );
  }
  if (order <= 0) log(`version ${m.version} is not newer than the running ${ctx.running}: installing it because of --force`);
  // The version we run now is the one a failed trial falls back to: it must still read the
  // history database after the new version migrated it (src/history/schema-version.ts).
  if (m.historySchema.readableFrom > HISTORY_SCHEMA_VERSION) {
    throw new UpdateRefused(
      "history",
      `${file} migrates the history database to schema ${m.historySchema.version}, which builds before schema ${m.historySchema.readableFrom} cannot read; ` +
        `this gateway (${ctx.running}, schema ${HISTORY_SCHEMA_VERSION}) could not fall back to itself; refused: install an intermediate version first`,
    );
  }
  const rootfs = payload(m, "rootfs");
  if (rootfs.contentSize > ctx.slotSize) {
    throw new UpdateRefused("size", `${file}: its root file system (${MiB(rootfs.contentSize)}) is larger than the slot (${MiB(ctx.slotSize)}); nothing was written`);
  }
  const boot = payload(m, "kernel").contentSize + payload(m, "initrd").contentSize;
  if (boot + (1 << 20) > ctx.espRoom) {
    throw new UpdateRefused("size", `${file}: its kernel and initramfs (${MiB(boot)}) do not fit on the boot partition (${MiB(ctx.espRoom)} free for the slot); nothing was written`);
  }
  const expected = bundleSize(m, head.payloadStart);
  if (fileSize !== undefined && fileSize !== expected) {
    throw new UpdateRefused("payload", `${file} is ${fileSize} bytes; its manifest describes ${expected} (truncated or appended to); nothing was written`);
  }
  return { file, manifest: m, key, payloadStart: head.payloadStart };
}

/** Hashes every payload as stored: a bundle whose hashes do not match is refused here, before writing. */
export async function checkPayloads(b: VerifiedBundle, log: (line: string) => void = () => {}): Promise<void> {
  for (const p of b.manifest.payloads) {
    const digest = await sha256Of(b.file, b.payloadStart + p.offset, p.size);
    if (digest !== p.sha256) {
      throw new UpdateRefused("payload", `${b.file}: payload ${p.name} does not match its signed hash (corrupted in transfer, or altered); nothing was written`);
    }
  }
  const r = payload(b.manifest, "rootfs");
  log(`payloads match their signed hashes: root file system ${MiB(r.contentSize)} (${MiB(r.size)} stored), kernel ${MiB(payload(b.manifest, "kernel").size)}, initramfs ${MiB(payload(b.manifest, "initrd").size)}`);
}

export async function sha256Of(file: string, start: number, length: number): Promise<string> {
  const hash = createHash("sha256");
  if (length > 0) {
    for await (const chunk of createReadStream(file, { start, end: start + length - 1, highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  }
  return hash.digest("hex");
}

/** The whole check of a bundle file. */
export async function verifyBundle(file: string, ctx: VerifyContext): Promise<VerifiedBundle> {
  const { head, size } = readHeadOf(file);
  const b = checkHead(file, head, size, ctx);
  await checkPayloads(b, ctx.log);
  return b;
}
