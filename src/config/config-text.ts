// The text of a config file, read as UTF-8 (YAML 1.2 §5.2). readFileSync(file, "utf8") turns
// every byte that is not UTF-8 into U+FFFD without a word, so a description saved in Latin-1 or
// Windows-1252 reached clients as "caf\uFFFD": a file holding such a byte is refused at it, with
// its line, column and key, and what to do. Every reader of config files (load.ts,
// validated-cache.ts) reads through here.
import { isUtf8 } from "node:buffer";
import { readFileSync } from "node:fs";
import type { Document } from "yaml";
import { yamlLibrary } from "./config-tree.js";
import type { ConfigIssue } from "./errors.js";
import { parseBounded } from "./nesting.js";
import { formatPath } from "./validate.js";

export type ConfigText = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly issue: ConfigIssue };

/** The text of `file`, or why it cannot be read: a failure to read, or a byte that is not UTF-8. */
export function readConfigText(file: string): ConfigText {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    return { ok: false, issue: { file, line: 0, column: 0, path: "", message: readFailure(err) } };
  }
  if (isUtf8(bytes)) return { ok: true, text: bytes.toString("utf8") };
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    return { ok: false, issue: { file, line: 0, column: 0, path: "", message: "the file is saved as UTF-16 (it begins with a UTF-16 byte order mark); save it as UTF-8" } };
  }
  return { ok: false, issue: notUtf8(file, bytes, firstNonUtf8(bytes)) };
}

/** The issue of the byte at `at`, the first that is not UTF-8. */
function notUtf8(file: string, bytes: Buffer, at: number): ConfigIssue {
  const lineStart = bytes.lastIndexOf(0x0a, at - 1) + 1;
  let line = 1;
  for (let i = bytes.indexOf(0x0a); i >= 0 && i < at; i = bytes.indexOf(0x0a, i + 1)) line++;
  // Columns count as the yaml library's do (UTF-16 units); everything before `at` is UTF-8.
  const column = bytes.toString("utf8", lineStart, at).length + 1;
  const message =
    `byte 0x${bytes[at]!.toString(16).toUpperCase().padStart(2, "0")} is not UTF-8: the file was saved in another encoding ` +
    "(Latin-1, Windows-1252, ...); save it as UTF-8";
  return { file, line, column, path: keyPathAt(bytes.toString("utf8"), bytes.toString("utf8", 0, at).length), message };
}

/**
 * Offset of the first byte of `b` not in a well-formed UTF-8 sequence (RFC 3629 §4: no
 * overlong forms, no surrogates, nothing past U+10FFFF), or -1. Only run on a file that
 * buffer.isUtf8 refused, to say where.
 */
export function firstNonUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    // The continuation bytes a lead byte takes, and the range of the first of them.
    const n = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
    if (n === 0) return i;
    const lo = c === 0xe0 ? 0xa0 : c === 0xf0 ? 0x90 : 0x80;
    const hi = c === 0xed ? 0x9f : c === 0xf4 ? 0x8f : 0xbf;
    for (let k = 1; k <= n; k++) {
      const d = b[i + k];
      if (d === undefined || d < (k === 1 ? lo : 0x80) || d > (k === 1 ? hi : 0xbf)) return i;
    }
    i += n + 1;
  }
  return -1;
}

/** The key path of the node of `text` that holds `offset` ("" when the file cannot say). */
function keyPathAt(text: string, offset: number): string {
  const { LineCounter } = yamlLibrary();
  const parsed = parseBounded(text, new LineCounter());
  return "doc" in parsed ? pathAt(parsed.doc, offset) : "";
}

function pathAt(doc: Document.Parsed, offset: number): string {
  const { isMap, isScalar, isSeq } = yamlLibrary();
  const within = (n: unknown): boolean => {
    const range = (n as { range?: [number, number, number] } | null)?.range;
    return range !== undefined && range[0] <= offset && offset < range[2];
  };
  const path: (string | number)[] = [];
  // Down the mappings and lists that hold the offset: at most MAX_NESTING levels (parseBounded).
  let node: unknown = doc.contents;
  for (;;) {
    if (isMap(node)) {
      const pair = node.items.find((p) => within(p.key) || within(p.value));
      if (pair === undefined) break;
      path.push(isScalar(pair.key) ? String(pair.key.value) : "?");
      if (!within(pair.value)) break;
      node = pair.value;
    } else if (isSeq(node)) {
      const i = node.items.findIndex(within);
      if (i < 0) break;
      path.push(i);
      node = node.items[i];
    } else {
      break;
    }
  }
  return formatPath(path);
}

function readFailure(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case "ENOENT":
      return "file not found";
    case "EACCES":
    case "EPERM":
      return "permission denied: the gateway's user cannot read this file";
    case "EISDIR":
      return "this is a folder, expected a YAML file";
    default:
      return `cannot read the file: ${err instanceof Error ? err.message : String(err)}`;
  }
}
