// The validated form of a config file, kept in dataDir so that a gateway restarted with an
// unchanged device map skips reading 10,000 tags again: JSON.parse of the cached value takes
// ~10 ms where parsing and validating the YAML takes ~100 ms on one core of a small board.
//
// A cached value is used only for the same text validated by the same code: the key hashes the
// text, the source of the modules that validate (this folder, the UNECE unit table, drivers/)
// and the names of the drivers a map may name, so an upgrade or any change to a schema or a
// check invalidates it, and the file's folder when the schema has paths (they resolve against
// it). Only valid files are cached; a file with issues is validated every time, and its messages
// are the validator's as before. One cache file per use
// (the gateway has one device map), replaced when the map changes. The text is read as the
// loaders read it (config-text.ts: UTF-8 or refused); a cache file is read by JSON.parse, whose
// parser keeps no recursion on the call stack, and what it holds nests only as deep as its
// schema (the validator wrote it), so no nesting bound is needed here beyond the loaders'.
//
// The value is trusted as it is read: it is used without validating. So the file carries a
// CRC-32 of the value's text, and a file that does not match it (cut short, pages overwritten
// on an SD card; a bit flipped inside a string would still be JSON, and an address in it would
// be polled) is damaged: moved aside when the caller takes reports (storage/damaged.ts, the
// gateway's start), else ignored; the map is validated from its YAML and kept again. A cache
// that cannot be read or written for another reason (none yet, a read-only data partition) is
// ignored the same way.
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { crc32 } from "node:zlib";
import { dirname, extname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { threadId } from "node:worker_threads";
import { readConfigText } from "./config-text.js";
import { validateYaml } from "./load.js";
import { packageRoot } from "../package-info.js";
import type { ValidationResult } from "./validate.js";
import type { Infer, Schema, SchemaSpec } from "./schema.js";
import { moveAside, type DamagedFile, type DamagedFileInfo } from "../storage/damaged.js";

/** The file: `{"key":"<64 hex>","sum":"<8 hex>","value":<value>}`, `sum` the CRC-32 of <value>'s bytes. */
const HEAD = /^\{"key":"([0-9a-f]{64})","sum":"([0-9a-f]{8})","value":/;

/** The cache as a damaged file: nothing in it is lost (it is made again from the YAML). */
const CACHE_FILE: DamagedFileInfo = {
  kind: "device-map-cache",
  what: "validated device map cache",
  advice: "nothing to do: the device map was validated from its file and is cached again; {moved} can be deleted",
};

function sumOf(bytes: string | Uint8Array): string {
  return crc32(bytes).toString(16).padStart(8, "0");
}

/**
 * The cache file's key and value; a string saying why when the file is damaged; undefined when
 * it is none of ours (a layout of an older build: replaced, not reported).
 */
function readCache(bytes: Buffer): { key: string; value: unknown } | string | undefined {
  const head = HEAD.exec(bytes.subarray(0, 128).toString("latin1"));
  if (head === null) return bytes.subarray(0, 8).toString("latin1") === '{"key":"' ? undefined : "not a cache file";
  const text = bytes.subarray(head[0].length, bytes.length - 1);
  if (bytes[bytes.length - 1] !== 0x7d || sumOf(text) !== head[2]) return "its checksum does not match: cut short or overwritten";
  try {
    return { key: head[1]!, value: JSON.parse(text.toString("utf8")) as unknown };
  } catch (err) {
    return `not JSON (${err instanceof Error ? err.message : String(err)})`;
  }
}

let fingerprint: string | null | undefined;

/**
 * A hash of the source of the validating modules (this folder, the UNECE unit table, and the
 * drivers' definitions, which give a device map its drivers' keys); null if it cannot be read
 * (no cache then).
 */
function codeFingerprint(): string | null {
  if (fingerprint !== undefined) return fingerprint;
  try {
    const here = fileURLToPath(import.meta.url);
    const ext = extname(here);
    // From the sources (vitest) the folder of this file; compiled, the compiled modules'
    // folder, also when this runs from the gateway's bundle (dist/bundle, src/build/bundle.ts).
    const dir = ext === ".ts" ? dirname(here) : join(packageRoot(), "dist", "src", "config");
    const drivers = join(dir, "..", "..", "drivers");
    const hash = createHash("sha256");
    const files = readdirSync(dir)
      .filter((f) => f.endsWith(ext))
      .sort()
      .map((f) => join(dir, f));
    files.push(join(dir, "..", "ua", "generated", `units${ext}`));
    for (const f of readdirSync(drivers, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(ext)).sort()) files.push(join(drivers, f));
    for (const f of files) hash.update(f.slice(dir.length)).update(readFileSync(f));
    fingerprint = hash.digest("hex");
  } catch {
    fingerprint = null;
  }
  return fingerprint;
}

/** Every schema `schema` is made of, itself first, each once. */
function* partsOf(schema: SchemaSpec, seen = new Set<SchemaSpec>()): Generator<SchemaSpec> {
  if (seen.has(schema)) return;
  seen.add(schema);
  yield schema;
  const inner =
    schema.kind === "object" ? Object.values(schema.shape)
    : schema.kind === "variant" ? [...schema.variants.values()]
    : schema.kind === "record" ? [schema.values]
    : schema.kind === "array" ? [schema.items]
    : schema.kind === "optional" ? [schema.inner]
    : [];
  for (const s of inner) yield* partsOf(s, seen);
}

/**
 * The key a valid result of `text` as `file` is cached under; null when no cache can be kept.
 * A map valid where a driver was registered is not valid where it is not: the names of the
 * drivers are part of the key.
 */
export function cacheKey(schema: Schema, text: string, file: string): string | null {
  const code = codeFingerprint();
  if (code === null) return null;
  const parts = [...partsOf(schema)];
  // A path resolves against the file's folder; a device map's drivers are its variants' names.
  const folder = parts.some((s) => s.kind === "path") ? dirname(resolve(file)) : "";
  const variants = parts.flatMap((s) => (s.kind === "variant" ? [...s.variants.keys()] : [])).join(",");
  return createHash("sha256").update(code).update("\0").update(variants).update("\0").update(folder).update("\0").update(text).digest("hex");
}

/** The key of the result kept in `cacheFile`, if there is one (and it is whole). */
export function cachedKey(cacheFile: string): string | undefined {
  try {
    const c = readCache(readFileSync(cacheFile));
    return typeof c === "object" ? c.key : undefined;
  } catch {
    return undefined;
  }
}

/**
 * How a newly validated value is kept: `defer` is given the write of the cache file instead of it
 * being done at once. The gateway's first start never calls it: once it listens, it has the map
 * validated and kept again by a worker (validate-off-loop.ts keepDeviceMapOffLoop).
 */
export interface CacheOptions {
  readonly defer?: (write: () => void) => void;
  /** Given, a damaged cache file is moved aside and reported here (else it is only ignored). */
  readonly onDamaged?: (d: DamagedFile) => void;
}

/**
 * validateFile(schema, file), answered from `cacheFile` when the text and the code are those of
 * the last valid result kept there. The value is the one JSON gives back: validated config
 * values are plain data (no undefined members, NaN or Infinity), which test/config checks.
 *
 * Without a cache file (a first start) the key is not made before validating: it hashes the
 * validating modules and the text (~3 ms on one core), and only the write needs it. The write
 * (JSON of a 10,000-tag map, ~10 ms) is what `options.defer` may put off.
 */
export function validateFileCached<S extends Schema>(schema: S, file: string, cacheFile: string, options: CacheOptions = {}): ValidationResult<Infer<S>> {
  const read = readConfigText(file);
  if (!read.ok) return { ok: false, issues: [read.issue] };
  const text = read.text;
  let key: string | null | undefined;
  let cached: { key: string; value: unknown } | undefined;
  let bytes: Buffer | undefined;
  try {
    bytes = readFileSync(cacheFile);
  } catch {
    // No cache yet, or one that cannot be read: validate.
  }
  const found = bytes === undefined ? undefined : readCache(bytes);
  if (typeof found === "object") cached = found;
  else if (typeof found === "string" && options.onDamaged !== undefined) {
    try {
      options.onDamaged(moveAside(cacheFile, CACHE_FILE, found));
    } catch {
      // It could not be moved (a read-only partition): ignored all the same, and replaced if it can be.
    }
  }
  if (cached !== undefined) {
    key = cacheKey(schema, text, file);
    if (key !== null && cached.key === key) return { ok: true, value: cached.value as Infer<S>, issues: [] };
  }
  const result = validateYaml(schema, text, file);
  if (result.ok && key !== null) {
    const value = result.value;
    const write = () => keep(cacheFile, key ?? cacheKey(schema, text, file), value);
    if (options.defer) options.defer(write);
    else write();
  }
  return result;
}

/** The text of a cache file keeping `value` under `key`: the layout HEAD reads, key and sum first. */
export function cacheText(key: string, value: unknown): string {
  const text = JSON.stringify(value);
  return `{"key":"${key}","sum":"${sumOf(text)}","value":${text}}`;
}

/**
 * Where keep() on thread `thread` writes before it renames: a write cut short (a worker ended)
 * leaves only this. One per thread: a reload's worker may keep a map while a first start's does.
 */
export function unfinishedCacheFile(cacheFile: string, thread = threadId): string {
  return `${cacheFile}.${process.pid}.${thread}.tmp`;
}

/** Writes `value` under `key` to `cacheFile`; nothing when no key can be made. */
function keep(cacheFile: string, key: string | null, value: unknown): void {
  if (key === null) return;
  try {
    mkdirSync(dirname(cacheFile), { recursive: true });
    const tmp = unfinishedCacheFile(cacheFile);
    writeFileSync(tmp, cacheText(key, value));
    // Whole or not at all: a crash mid-write leaves the old cache or none.
    renameSync(tmp, cacheFile);
  } catch {
    // A read-only or full data partition: validating every start is only slower.
  }
}
