// The update bundle (image/bundle.mjs writes it; keep the two in step). Format 1:
//   "FGBUNDLE"  u32le format (1)  u32le manifest length  u32le signature length
//   manifest    UTF-8 JSON: product, arch, version, layout, kernel command line, history schema,
//               and each payload's offset, size and SHA-256 (stored and uncompressed)
//   signature   Ed25519 over the manifest's bytes as stored
//   payloads    rootfs (an ext4 image, gzip), kernel, initrd; offsets from the end of the signature
// The signature covers the manifest, the manifest covers the payloads by their hashes: a bundle
// is checked whole before anything of it is written.
import { createHash, createPublicKey, verify, type KeyObject } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

export const BUNDLE_MAGIC = "FGBUNDLE";
export const BUNDLE_FORMAT = 1;
export const HEADER_SIZE = 20;
/** A manifest is a few KiB; anything near this is not one. */
export const MAX_MANIFEST = 64 * 1024;
const ED25519_SIGNATURE = 64;
/** The partition and boot-entry scheme of image/build.sh that bundles are made for. */
export const LAYOUT = "fieldgate-ab-1";

/** A bundle that must not be installed, with the reason for the person who tried. */
export class UpdateRefused extends Error {
  constructor(
    readonly code: "format" | "signature" | "arch" | "version" | "history" | "size" | "payload" | "state" | "source",
    message: string,
  ) {
    super(message);
    this.name = "UpdateRefused";
  }
}

export interface Payload {
  readonly name: "rootfs" | "kernel" | "initrd";
  readonly offset: number;
  readonly size: number;
  readonly sha256: string;
  readonly encoding: "gzip" | "none";
  readonly contentSize: number;
  readonly contentSha256: string;
}

export interface Manifest {
  readonly format: number;
  readonly product: string;
  readonly arch: string;
  readonly version: string;
  readonly built: string;
  readonly layout: string;
  readonly cmdline: string;
  readonly historySchema: { readonly version: number; readonly readableFrom: number };
  readonly keyId: string;
  readonly payloads: readonly Payload[];
}

/** The parts of a bundle's head, before the signature is checked. */
export interface BundleHead {
  readonly manifestBytes: Buffer;
  readonly signature: Buffer;
  /** File offset of the first payload. */
  readonly payloadStart: number;
}

/**
 * Splits the first bytes of a bundle (at least the header, manifest and signature) into its
 * parts; the manifest is not trusted yet. `what` names the bundle in messages.
 */
export function parseHead(bytes: Buffer, what: string): BundleHead {
  if (bytes.length < HEADER_SIZE || bytes.toString("latin1", 0, 8) !== BUNDLE_MAGIC) {
    throw new UpdateRefused("format", `${what} is not a fieldgate update bundle (no FGBUNDLE header)`);
  }
  const format = bytes.readUInt32LE(8);
  if (format !== BUNDLE_FORMAT) {
    throw new UpdateRefused("format", `${what} is a bundle of format ${format}; this version reads format ${BUNDLE_FORMAT} (update in steps, or with a newer image)`);
  }
  const m = bytes.readUInt32LE(12);
  const s = bytes.readUInt32LE(16);
  if (m === 0 || m > MAX_MANIFEST || s !== ED25519_SIGNATURE) {
    throw new UpdateRefused("format", `${what}: a manifest of ${m} bytes with a signature of ${s} bytes is not a valid bundle head`);
  }
  if (bytes.length < HEADER_SIZE + m + s) throw new UpdateRefused("format", `${what} is truncated: it ends inside its manifest`);
  return {
    manifestBytes: bytes.subarray(HEADER_SIZE, HEADER_SIZE + m),
    signature: bytes.subarray(HEADER_SIZE + m, HEADER_SIZE + m + s),
    payloadStart: HEADER_SIZE + m + s,
  };
}

export interface TrustedKey {
  readonly id: string;
  readonly file: string;
  readonly key: KeyObject;
}

/** The public keys the image trusts (every *.pem of the folder): a new image may add one to rotate. */
export function trustedKeys(dir: string): TrustedKey[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith(".pem")).sort();
  } catch {
    return [];
  }
  const keys: TrustedKey[] = [];
  for (const f of files) {
    const file = join(dir, f);
    try {
      const key = createPublicKey(readFileSync(file));
      if (key.asymmetricKeyType !== "ed25519") continue;
      keys.push({ id: keyId(key), file, key });
    } catch {
      // A file that is not a public key is not a key.
    }
  }
  return keys;
}

/** First 16 hex digits of the SHA-256 of the key's DER (SubjectPublicKeyInfo), as bundle.mjs names it. */
export function keyId(key: KeyObject): string {
  return createHash("sha256").update(key.export({ type: "spki", format: "der" })).digest("hex").slice(0, 16);
}

/**
 * Checks the signature against every trusted key (the manifest's keyId is only a hint, it is
 * not signed yet when read) and only then parses the manifest. Returns it and the key used.
 */
export function verifyHead(head: BundleHead, keys: readonly TrustedKey[], what: string): { manifest: Manifest; key: TrustedKey } {
  if (keys.length === 0) throw new UpdateRefused("signature", `${what}: this image has no update key (usr/share/fieldgate/update-keys): it cannot check a signature`);
  const key = keys.find((k) => verify(null, head.manifestBytes, k.key, head.signature));
  if (key === undefined) {
    let claimed = "";
    try {
      claimed = String((JSON.parse(head.manifestBytes.toString("utf8")) as { keyId?: unknown }).keyId ?? "");
    } catch {
      // Unsigned and unreadable: nothing more to say.
    }
    throw new UpdateRefused(
      "signature",
      `${what}: bad signature: not signed by a key this gateway trusts (trusted: ${keys.map((k) => k.id).join(", ")}${claimed ? `; the bundle names key ${claimed}` : ""}); nothing was written`,
    );
  }
  return { manifest: checkManifest(JSON.parse(head.manifestBytes.toString("utf8")), what), key };
}

/** The manifest is signed, but its shape is still checked: a signed bundle of another format must not crash the installer. */
function checkManifest(m: unknown, what: string): Manifest {
  const bad = (field: string): never => {
    throw new UpdateRefused("format", `${what}: the manifest's ${field} is missing or malformed`);
  };
  if (typeof m !== "object" || m === null) return bad("body");
  const o = m as Record<string, unknown>;
  for (const k of ["product", "arch", "version", "layout", "cmdline", "built"] as const) if (typeof o[k] !== "string") bad(k);
  const hs = o.historySchema as Record<string, unknown> | undefined;
  if (!hs || !Number.isInteger(hs.version) || !Number.isInteger(hs.readableFrom)) bad("historySchema");
  if (!/^[0-9A-Za-z][0-9A-Za-z.+~_-]{0,63}$/.test(o.version as string)) bad("version");
  if (!Array.isArray(o.payloads)) bad("payloads");
  let expected = 0;
  for (const name of ["rootfs", "kernel", "initrd"] as const) {
    const p = (o.payloads as Record<string, unknown>[]).find((x) => x?.name === name);
    if (!p) bad(`payload ${name}`);
    const q = p as Record<string, unknown>;
    for (const k of ["offset", "size", "contentSize"] as const) if (!Number.isSafeInteger(q[k]) || (q[k] as number) < 0) bad(`${name}.${k}`);
    for (const k of ["sha256", "contentSha256"] as const) if (typeof q[k] !== "string" || !/^[0-9a-f]{64}$/.test(q[k] as string)) bad(`${name}.${k}`);
    if (q.encoding !== "gzip" && q.encoding !== "none") bad(`${name}.encoding`);
    if (q.offset !== expected) bad(`${name}.offset`);
    expected += q.size as number;
  }
  return m as Manifest;
}

export function payload(m: Manifest, name: Payload["name"]): Payload {
  return m.payloads.find((p) => p.name === name)!;
}

/** Bytes of the whole bundle the manifest describes (head and payloads back to back). */
export function bundleSize(m: Manifest, payloadStart: number): number {
  return payloadStart + m.payloads.reduce((n, p) => n + p.size, 0);
}
