// Checks a parsed YAML document against a schema (schema.ts), walking the YAML nodes rather
// than plain JS values so that every issue carries the line and column of the bad value. It
// never stops at the first problem: a person fixing a file wants the whole list at once.
import { isAlias, isMap, isScalar, isSeq, type Document, type LineCounter, type Node, type Pair } from "yaml";
import type { ConfigIssue } from "./errors.js";
import {
  formatDuration,
  formatSize,
  parseDuration,
  parseSize,
  resolvePath,
  type ArraySpec,
  type Checker,
  type Infer,
  type ObjectSpec,
  type RecordSpec,
  type RelativePath,
  type Schema,
  type SchemaContext,
  type SchemaSpec,
} from "./schema.js";

export interface DocumentSource extends SchemaContext {
  readonly doc: Document;
  readonly lines: LineCounter;
}

export type ValidationResult<T> =
  | { readonly ok: true; readonly value: T; readonly issues: readonly [] }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

type PathSeg = string | number;
const INVALID: unique symbol = Symbol("invalid");
type Out = unknown | typeof INVALID;

/** Validates the document's root against `schema`; an empty document is refused. */
export function validateDocument<S extends Schema>(schema: S, src: DocumentSource): ValidationResult<Infer<S>> {
  const v = new Validator(src);
  const root = src.doc.contents;
  let value: Out = INVALID;
  if (root === null || (isScalar(root) && root.value === null)) {
    v.issue(root ?? undefined, [], `the file is empty; expected ${expected(schema)}`);
  } else {
    value = v.check(schema, root, [], undefined);
  }
  if (v.issues.length > 0 || value === INVALID) {
    // Checks run in schema order; a person reads the file top to bottom.
    const issues = [...v.issues].sort((a, b) => a.line - b.line || a.column - b.column);
    return { ok: false, issues };
  }
  return { ok: true, value: value as Infer<S>, issues: [] };
}

/** "limits.maxNodesPerRead", "devices[2].tags[0].name", `buses["a.b"]`. */
export function formatPath(path: readonly PathSeg[]): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(seg)) out += out === "" ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

class Validator {
  readonly issues: ConfigIssue[] = [];
  constructor(private readonly src: DocumentSource) {}

  issue(node: Node | undefined, path: readonly PathSeg[], message: string): void {
    const offset = node?.range?.[0] ?? 0;
    const { line, col } = this.src.lines.linePos(offset);
    this.issues.push({ file: this.src.file, line, column: col, path: formatPath(path), message });
  }

  /**
   * `node` undefined means the key is absent; `anchor` is then where a missing required key is
   * reported (the parent mapping).
   */
  check(schema: SchemaSpec, node: Node | undefined, path: readonly PathSeg[], anchor: Node | undefined): Out {
    if (node !== undefined && isAlias(node)) {
      const target = node.resolve(this.src.doc);
      if (!target) {
        this.issue(node, path, `unknown alias *${node.source}`);
        return INVALID;
      }
      node = target;
    }
    if (node === undefined) return this.missing(schema, path, anchor);
    if (schema.kind === "optional") return this.check(schema.inner, node, path, anchor);
    switch (schema.kind) {
      case "object":
        return this.object(schema, node, path);
      case "record":
        return this.record(schema, node, path);
      case "array":
        return this.array(schema, node, path);
      default:
        break;
    }
    if (!isScalar(node)) return this.refuse(schema, node, path);
    const raw = node.value;
    switch (schema.kind) {
      case "string": {
        if (typeof raw !== "string") return this.refuse(schema, node, path);
        const tooShort = raw.length < (schema.minLength ?? 0);
        const tooLong = schema.maxLength !== undefined && raw.length > schema.maxLength;
        if (tooShort || tooLong || (schema.pattern && !schema.pattern.test(raw))) return this.refuse(schema, node, path);
        return raw;
      }
      case "integer":
      case "number": {
        if (typeof raw !== "number" || !Number.isFinite(raw)) return this.refuse(schema, node, path);
        if (schema.kind === "integer" && !Number.isInteger(raw)) return this.refuse(schema, node, path);
        if (!inRange(raw, schema.min, schema.max)) return this.refuse(schema, node, path);
        return raw;
      }
      case "boolean":
        if (typeof raw === "boolean") return raw;
        return this.refuse(schema, node, path, YES_NO.has(String(raw).toLowerCase()) ? "YAML 1.2 reads only true and false as booleans" : "");
      case "enum": {
        if ((typeof raw === "string" || typeof raw === "number") && schema.values.includes(raw)) return raw;
        const near = typeof raw === "string" ? suggest(raw, schema.values.map(String)) : undefined;
        const notes = [near ? `did you mean "${near}"?` : "", schema.hint ?? ""].filter((s) => s !== "").join("; ");
        return this.refuse(schema, node, path, notes);
      }
      case "duration":
      case "size": {
        const r = schema.kind === "duration" ? parseDuration(raw) : parseSize(raw);
        if (!r.ok) return this.refuse(schema, node, path, r.message);
        if (!inRange(r.value, schema.min, schema.max)) return this.refuse(schema, node, path);
        return r.value;
      }
      case "path":
        if (typeof raw !== "string" || raw.trim() === "") return this.refuse(schema, node, path);
        return resolvePath(this.src.dir, raw);
      case "custom": {
        const r = schema.parse(raw, this.src);
        if (!r.ok) return this.refuse(schema, node, path, r.message);
        return r.value;
      }
    }
  }

  private missing(schema: SchemaSpec, path: readonly PathSeg[], anchor: Node | undefined): Out {
    if (schema.kind === "optional") return undefined;
    if (schema.default) return schema.default.value(this.src);
    // An absent section is an empty one: its keys take their defaults.
    if (schema.kind === "object") return this.object(schema, undefined, path, anchor);
    this.issue(anchor, path, `missing required key; expected ${expected(schema)}`);
    return INVALID;
  }

  private refuse(schema: SchemaSpec, node: Node, path: readonly PathSeg[], note = ""): typeof INVALID {
    this.issue(node, path, `expected ${expected(schema)}, got ${describe(node)}${note ? `; ${note}` : ""}`);
    return INVALID;
  }

  /** Key/value pairs of a mapping, with non-string and duplicate keys reported. */
  private entries(node: Node, path: readonly PathSeg[]): Map<string, Pair> {
    const out = new Map<string, Pair>();
    if (!isMap(node)) return out;
    for (const pair of node.items) {
      const key = pair.key;
      const name = isScalar(key) && (typeof key.value === "string" || typeof key.value === "number") ? String(key.value) : undefined;
      if (name === undefined) {
        this.issue(key as Node, path, `expected a key name, got ${describe(key as Node)}`);
        continue;
      }
      const first = out.get(name);
      if (first) {
        const at = this.src.lines.linePos((first.key as Node).range?.[0] ?? 0);
        this.issue(key as Node, [...path, name], `duplicate key; first given at line ${at.line}`);
        continue;
      }
      out.set(name, pair);
    }
    return out;
  }

  private object(schema: ObjectSpec, node: Node | undefined, path: readonly PathSeg[], anchor?: Node): Out {
    // A section whose keys are all commented out is an empty value: treat it as an empty mapping.
    const empty = node === undefined || (isScalar(node) && node.value === null);
    if (!empty && !isMap(node)) return this.refuse(schema, node, path);
    const here = empty ? (node ?? anchor) : node;
    const entries = empty ? new Map<string, Pair>() : this.entries(node, path);
    const known = Object.keys(schema.shape);
    let ok = true;
    for (const [name, pair] of entries) {
      if (Object.hasOwn(schema.shape, name)) continue;
      ok = false;
      const near = suggest(name, known);
      this.issue(pair.key as Node, [...path, name], `unknown key${near ? `; did you mean "${near}"?` : `; expected one of ${known.join(", ")}`}`);
    }
    const value: Record<string, unknown> = {};
    for (const name of known) {
      const pair = entries.get(name);
      const child = pair ? valueOf(pair) : undefined;
      const v = this.check(schema.shape[name]!, child, [...path, name], here);
      if (v === INVALID) ok = false;
      else if (v !== undefined) value[name] = v;
    }
    if (!ok) return INVALID;
    if (schema.check) {
      const where = (at: RelativePath) => {
        const rel = typeof at === "string" ? [at] : at;
        return { rel, node: empty ? undefined : locate(this.src.doc, node, rel) };
      };
      const checker: Checker = {
        report: (at, message) => {
          const { rel, node: found } = where(at);
          this.issue(found ?? here, [...path, ...rel], message);
        },
        given: (at) => where(at).node !== undefined,
      };
      const before = this.issues.length;
      schema.check(value, checker);
      if (this.issues.length > before) return INVALID;
    }
    return value;
  }

  private record(schema: RecordSpec, node: Node, path: readonly PathSeg[]): Out {
    if (isScalar(node) && node.value === null) return {};
    if (!isMap(node)) return this.refuse(schema, node, path);
    const value: Record<string, unknown> = {};
    let ok = true;
    for (const [name, pair] of this.entries(node, path)) {
      if (schema.keyPattern && !schema.keyPattern.test(name)) {
        this.issue(pair.key as Node, [...path, name], `expected ${schema.keyText ?? `a key matching ${schema.keyPattern}`}, got ${JSON.stringify(name)}`);
        ok = false;
        continue;
      }
      const v = this.check(schema.values, valueOf(pair), [...path, name], node);
      if (v === INVALID) ok = false;
      else value[name] = v;
    }
    return ok ? value : INVALID;
  }

  private array(schema: ArraySpec, node: Node, path: readonly PathSeg[]): Out {
    if (!isSeq(node)) return this.refuse(schema, node, path);
    const count = node.items.length;
    if (count < (schema.minItems ?? 0) || (schema.maxItems !== undefined && count > schema.maxItems)) {
      return this.refuse(schema, node, path);
    }
    const value: unknown[] = [];
    let ok = true;
    node.items.forEach((item, i) => {
      const v = this.check(schema.items, (item ?? undefined) as Node | undefined, [...path, i], node);
      if (v === INVALID) ok = false;
      else value.push(v);
    });
    if (ok && schema.uniqueItems) {
      const seen = new Set<string>();
      value.forEach((v, i) => {
        const k = JSON.stringify(v);
        if (seen.has(k)) {
          this.issue(node.items[i] as Node, [...path, i], `duplicate entry ${describe(node.items[i] as Node)}`);
          ok = false;
        }
        seen.add(k);
      });
    }
    return ok ? value : INVALID;
  }
}

/** A pair's value node; `key:` with nothing after it is a null scalar, located at the key. */
function valueOf(pair: Pair): Node {
  if (pair.value !== null && pair.value !== undefined) return pair.value as Node;
  return pair.key as Node;
}

/** The YAML node at a relative path below `node`, or undefined if the file does not have it. */
function locate(doc: Document, node: Node | undefined, rel: readonly PathSeg[]): Node | undefined {
  let cur: Node | undefined = node;
  for (const seg of rel) {
    if (cur !== undefined && isAlias(cur)) cur = cur.resolve(doc);
    if (cur === undefined) return undefined;
    if (typeof seg === "number") {
      cur = isSeq(cur) ? ((cur.items[seg] ?? undefined) as Node | undefined) : undefined;
    } else if (isMap(cur)) {
      const pair = cur.items.find((p) => isScalar(p.key) && String(p.key.value) === seg);
      cur = pair ? valueOf(pair) : undefined;
    } else {
      return undefined;
    }
  }
  return cur;
}

const YES_NO = new Set(["yes", "no", "on", "off", "y", "n"]);

function inRange(v: number, min: number | undefined, max: number | undefined): boolean {
  return (min === undefined || v >= min) && (max === undefined || v <= max);
}

function range(min: number | undefined, max: number | undefined, fmt: (n: number) => string): string {
  if (min !== undefined && max !== undefined) return ` between ${fmt(min)} and ${fmt(max)}`;
  if (min !== undefined) return ` of at least ${fmt(min)}`;
  if (max !== undefined) return ` of at most ${fmt(max)}`;
  return "";
}

/** What a schema accepts, in words: the part after "expected". */
export function expected(schema: SchemaSpec): string {
  switch (schema.kind) {
    case "string": {
      if (schema.patternText) return schema.patternText;
      const len =
        schema.maxLength !== undefined
          ? ` of ${schema.minLength ?? 0} to ${schema.maxLength} characters`
          : schema.minLength
            ? " that is not empty"
            : "";
      return `a string${len}`;
    }
    case "integer":
      return `an integer${range(schema.min, schema.max, String)}`;
    case "number":
      return `a number${range(schema.min, schema.max, String)}`;
    case "boolean":
      return "true or false";
    case "enum":
      return schema.values.length === 1
        ? JSON.stringify(schema.values[0])
        : `one of ${schema.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "duration":
      return schema.min !== undefined || schema.max !== undefined
        ? `a duration${range(schema.min, schema.max, formatDuration)} (like 500ms, 10s, 5m, 1h)`
        : "a duration like 500ms, 10s, 5m or 1h (or a number of milliseconds)";
    case "size":
      return schema.min !== undefined || schema.max !== undefined
        ? `a size${range(schema.min, schema.max, formatSize)} (like 64KiB, 16MiB, 1GiB)`
        : "a size like 64KiB, 16MiB or 1GiB (or a number of bytes)";
    case "path":
      return "a path (relative to this file's folder, or absolute)";
    case "array": {
      const { minItems: lo, maxItems: hi } = schema;
      const items = (n: number) => `${n} item${n === 1 ? "" : "s"}`;
      const count =
        lo && hi !== undefined ? ` of ${lo} to ${items(hi)}` : lo ? ` of at least ${items(lo)}` : hi !== undefined ? ` of at most ${items(hi)}` : "";
      return `a list${count}, each ${expected(schema.items)}`;
    }
    case "object": {
      const keys = Object.keys(schema.shape);
      return keys.length <= 8 ? `a mapping (${keys.join(", ")})` : "a mapping";
    }
    case "record":
      return "a mapping";
    case "optional":
      return expected(schema.inner);
    case "custom":
      return schema.expected;
  }
}

/** How a value is quoted after "got". */
function describe(node: Node | null | undefined): string {
  if (node === null || node === undefined) return "nothing";
  if (isMap(node)) return "a mapping";
  if (isSeq(node)) {
    const n = node.items.length;
    return n === 0 ? "an empty list" : `a list of ${n} item${n === 1 ? "" : "s"}`;
  }
  if (isAlias(node)) return `*${node.source}`;
  if (isScalar(node)) {
    const v = node.value;
    if (v === null) return "an empty value";
    if (typeof v === "string") return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
    // The source text ("1e3", "0x10") is what the person wrote, not what JS prints.
    return node.source ?? String(v);
  }
  return "an unsupported value";
}

/** The closest candidate when it is plausibly a typo (case, one or two edits, or a swap). */
export function suggest(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bestDist = Infinity;
  for (const c of candidates) {
    const d = c.toLowerCase() === lower ? 0 : editDistance(lower, c.toLowerCase());
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  const limit = Math.max(1, Math.min(3, Math.floor(word.length / 4)));
  return bestDist <= limit ? best : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions, transpositions. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array<number>(rows * cols).fill(0);
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[(i - 1) * cols + j]! + 1, d[i * cols + j - 1]! + 1, d[(i - 1) * cols + j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[(i - 2) * cols + j - 2]! + 1);
      d[i * cols + j] = v;
    }
  }
  return d[rows * cols - 1]!;
}
