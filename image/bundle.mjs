#!/usr/bin/env node
// The builder's side of update bundles (the gateway's side, which verifies and installs them,
// is src/update/). Plain Node, no dependencies: image/build.sh runs it on the build machine and
// image/test.sh to restamp bundles.
//
//   node image/bundle.mjs keygen --key FILE              Ed25519 signing key (PKCS#8 PEM, 0600)
//                                                         and FILE.pub (the public key, SPKI PEM)
//   node image/bundle.mjs create --key FILE --out F.fgu --arch amd64|arm64 --version V
//        --rootfs ROOT.ext4 --kernel VMLINUZ --initrd INITRD --cmdline "..." [--history V:R]
//   node image/bundle.mjs extract --bundle F.fgu --payload rootfs|kernel|initrd --out FILE
//   node image/bundle.mjs show --bundle F.fgu             prints the manifest
//
// Format 1 (src/update/bundle-format.ts reads it; keep the two in step):
//   "FGBUNDLE"  u32le format (1)  u32le manifest length  u32le signature length
//   manifest    UTF-8 JSON (version, arch, payload offsets, sizes and SHA-256)
//   signature   Ed25519 over the manifest's bytes exactly as stored
//   payloads    at manifest.payloads[i].offset from the end of the signature, back to back
// The signature covers the manifest and the manifest covers every payload by its hash, so a
// gateway checks everything it will write before it writes anything.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign } from "node:crypto";
import { closeSync, createReadStream, createWriteStream, existsSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { pipeline } from "node:stream/promises";
import { Transform } from "node:stream";
import { createGunzip, createGzip } from "node:zlib";
import { parseArgs } from "node:util";

const MAGIC = "FGBUNDLE";
const FORMAT = 1;
const HEADER = 20;

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    key: { type: "string" },
    out: { type: "string" },
    arch: { type: "string" },
    version: { type: "string" },
    rootfs: { type: "string" },
    kernel: { type: "string" },
    initrd: { type: "string" },
    cmdline: { type: "string", default: "" },
    history: { type: "string", default: "1:1" },
    bundle: { type: "string" },
    payload: { type: "string" },
    level: { type: "string", default: "6" },
  },
});

function need(name) {
  const v = values[name];
  if (v === undefined || v === "") fail(`--${name} is required`);
  return v;
}
function fail(message) {
  console.error(`bundle.mjs: ${message}`);
  process.exit(2);
}

/** Hashes (and counts) what streams through. */
function hasher() {
  const hash = createHash("sha256");
  let size = 0;
  const t = new Transform({
    transform(chunk, _enc, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  return { stream: t, result: () => ({ size, sha256: hash.digest("hex") }) };
}

function keygen() {
  const file = need("key");
  if (existsSync(file)) fail(`${file} exists; not overwriting a signing key`);
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  writeFileSync(file, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
  writeFileSync(`${file}.pub`, publicKey.export({ type: "spki", format: "pem" }), { mode: 0o644 });
  console.log(`bundle.mjs: signing key ${file}, public key ${file}.pub (key id ${keyId(publicKey)})`);
}

/** First 16 hex digits of the SHA-256 of the public key's DER: names the key in manifests. */
function keyId(publicKey) {
  return createHash("sha256").update(publicKey.export({ type: "spki", format: "der" })).digest("hex").slice(0, 16);
}

async function create() {
  const out = need("out");
  const arch = need("arch");
  if (arch !== "amd64" && arch !== "arm64") fail("--arch must be amd64 or arm64");
  const version = need("version");
  if (!/^[0-9A-Za-z][0-9A-Za-z.+~_-]{0,63}$/.test(version)) fail(`--version ${version}: letters, digits and . + ~ _ - only`);
  const history = /^(\d+):(\d+)$/.exec(values.history);
  if (!history || Number(history[2]) > Number(history[1])) fail(`--history ${values.history}: expected VERSION:READABLE_FROM with READABLE_FROM <= VERSION`);
  const privateKey = createPrivateKey(readFileSync(need("key")));
  if (privateKey.asymmetricKeyType !== "ed25519") fail("the signing key must be an Ed25519 key (bundle.mjs keygen)");
  const publicKey = createPublicKey(privateKey);
  const level = Number(values.level);

  // Payloads first, into one temporary file; the manifest (with their offsets and hashes) and the
  // signature are then written in front of them.
  const body = `${out}.payloads.tmp`;
  const payloads = [];
  let offset = 0;
  const sink = createWriteStream(body);
  for (const [name, file, gzip] of [["rootfs", need("rootfs"), true], ["kernel", need("kernel"), false], ["initrd", need("initrd"), false]]) {
    const content = hasher();
    const stored = hasher();
    const stages = [createReadStream(file), content.stream];
    if (gzip) stages.push(createGzip({ level, memLevel: 9 }));
    stages.push(stored.stream);
    await pipeline(...stages, async function* (source) {
      for await (const chunk of source) if (!sink.write(chunk)) await new Promise((r) => sink.once("drain", r));
    });
    const c = content.result();
    const s = stored.result();
    payloads.push({ name, offset, size: s.size, sha256: s.sha256, encoding: gzip ? "gzip" : "none", contentSize: c.size, contentSha256: c.sha256 });
    offset += s.size;
  }
  await new Promise((resolve, reject) => sink.end((err) => (err ? reject(err) : resolve())));

  const manifest = {
    format: FORMAT,
    product: "fieldgate",
    arch,
    version,
    built: new Date().toISOString(),
    layout: "fieldgate-ab-1",
    cmdline: values.cmdline,
    historySchema: { version: Number(history[1]), readableFrom: Number(history[2]) },
    keyId: keyId(publicKey),
    payloads,
  };
  const manifestBytes = Buffer.from(JSON.stringify(manifest, null, 1), "utf8");
  const signature = sign(null, manifestBytes, privateKey);
  const header = Buffer.alloc(HEADER);
  header.write(MAGIC, 0, "latin1");
  header.writeUInt32LE(FORMAT, 8);
  header.writeUInt32LE(manifestBytes.length, 12);
  header.writeUInt32LE(signature.length, 16);

  const tmp = `${out}.tmp`;
  writeFileSync(tmp, Buffer.concat([header, manifestBytes, signature]));
  await pipeline(createReadStream(body), createWriteStream(tmp, { flags: "a" }));
  renameSync(tmp, out);
  rmSync(body);
  const rootfs = payloads[0];
  console.log(
    `bundle.mjs: ${out}: fieldgate ${version} for ${arch}, ${(statSync(out).size / 1048576).toFixed(1)} MiB ` +
      `(root file system ${(rootfs.contentSize / 1048576).toFixed(0)} MiB -> ${(rootfs.size / 1048576).toFixed(1)} MiB gzip), key ${manifest.keyId}`,
  );
}

/** Header and manifest, unverified (this is the builder's tool; the gateway verifies). */
function readHead(file) {
  const fd = openSync(file, "r");
  try {
    const header = Buffer.alloc(HEADER);
    readSync(fd, header, 0, HEADER, 0);
    if (header.toString("latin1", 0, 8) !== MAGIC) fail(`${file} is not a fieldgate update bundle`);
    const m = header.readUInt32LE(12);
    const s = header.readUInt32LE(16);
    const manifestBytes = Buffer.alloc(m);
    readSync(fd, manifestBytes, 0, m, HEADER);
    return { manifest: JSON.parse(manifestBytes.toString("utf8")), payloadStart: HEADER + m + s };
  } finally {
    closeSync(fd);
  }
}

async function extract() {
  const file = need("bundle");
  const { manifest, payloadStart } = readHead(file);
  const p = manifest.payloads.find((x) => x.name === values.payload);
  if (!p) fail(`no payload ${values.payload} in ${file} (has ${manifest.payloads.map((x) => x.name).join(", ")})`);
  const stages = [createReadStream(file, { start: payloadStart + p.offset, end: payloadStart + p.offset + p.size - 1 })];
  if (p.encoding === "gzip") stages.push(createGunzip());
  await pipeline(...stages, createWriteStream(need("out")));
}

switch (positionals[0]) {
  case "keygen":
    keygen();
    break;
  case "create":
    await create();
    break;
  case "extract":
    await extract();
    break;
  case "show":
    console.log(JSON.stringify(readHead(need("bundle")).manifest, null, 2));
    break;
  default:
    fail("usage: bundle.mjs keygen|create|extract|show (see the top of image/bundle.mjs)");
}
