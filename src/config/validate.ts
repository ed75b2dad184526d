// Checks a parsed config file (config-tree.ts) against a schema (schema.ts), walking the parsed
// nodes rather than plain JS values so that every issue carries the line and column of the bad
// value. It never stops at the first problem: a person fixing a file wants the whole list at once.
import { kindOf, MAX_NESTING, NodeKind, offsetOf, scalarValue, TOO_DEEP, type ConfigNode, type LinePositions, type MapNode, type SeqNode } from "./config-tree.js";
import type { ConfigIssue } from "./errors.js";
import {
  formatDuration,
  formatSize,
  parseDuration,
  parseSize,
  resolvePath,
  textProblem,
  type ArraySpec,
  type Checker,
  type Infer,
  type ObjectSpec,
  type RecordSpec,
  type RelativePath,
  type Schema,
  type SchemaContext,
  type SchemaSpec,
  type VariantSpec,
} from "./schema.js";

export interface DocumentSource extends SchemaContext {
  /** The file's root node; null for a file without one (empty, or comments only). */
  readonly root: ConfigNode | null;
  readonly lines: LinePositions;
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
  const root = src.root;
  let value: Out = INVALID;
  if (root === null || isNull(root)) {
    v.issue(root ?? undefined, [], `the file is empty; expected ${expected(schema)}`);
  } else {
    value = v.check(schema, root, undefined);
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
    else out += `[${quoted(seg)}]`;
  }
  return out;
}

/** The keys of each object schema, listed once rather than on every mapping checked. */
const KEYS = new WeakMap<ObjectSpec, readonly string[]>();

function keysOf(schema: ObjectSpec): readonly string[] {
  let keys = KEYS.get(schema);
  if (!keys) KEYS.set(schema, (keys = Object.keys(schema.shape)));
  return keys;
}

const NO_ENTRIES: ReadonlyMap<string, number> = new Map();

/**
 * Walks the tree. The path of the node being checked is one stack (`path`), pushed and popped
 * around each child, and copied only into an issue: a valid file of 10,000 tags allocates no
 * path per key.
 */
class Validator implements Checker {
  readonly issues: ConfigIssue[] = [];
  private readonly path: PathSeg[] = [];
  /** The object an object schema's `check` is running on (see report/given). */
  private checking: { node: ConfigNode | undefined; here: ConfigNode | undefined } = { node: undefined, here: undefined };

  constructor(private readonly src: DocumentSource) {}

  /** Records an issue at `node`, with `path` (default: the current path). */
  issue(node: ConfigNode | null | undefined, path: readonly PathSeg[] | undefined, message: string): void {
    const offset = offsetOf(node);
    const { line, col } = this.src.lines.linePos(offset);
    this.issues.push({ file: this.src.file, line, column: col, path: formatPath(path ?? this.path), message });
  }

  /** Checker.report for an object schema's check. */
  report(at: RelativePath, message: string): void {
    const rel = typeof at === "string" ? [at] : at;
    const found = this.checking.node === undefined ? undefined : locate(this.checking.node, rel);
    this.issue(found ?? this.checking.here, [...this.path, ...rel], message);
  }

  /** Checker.given for an object schema's check. */
  given(at: RelativePath): boolean {
    const rel = typeof at === "string" ? [at] : at;
    return this.checking.node !== undefined && locate(this.checking.node, rel) !== undefined;
  }

  /**
   * Checks `node` at the current path. `node` undefined means the key is absent; `anchor` is
   * then where a missing required key is reported (the parent mapping).
   */
  check(schema: SchemaSpec, node: ConfigNode | undefined, anchor: ConfigNode | undefined): Out {
    if (node !== undefined && typeof node === "object" && node.kind === NodeKind.Alias) {
      if (!node.target) {
        this.issue(node, undefined, `unknown alias *${node.source}`);
        return INVALID;
      }
      node = node.target;
    }
    if (node === undefined) return this.missing(schema, anchor);
    if (schema.kind === "optional") return this.check(schema.inner, node, anchor);
    // The walk follows the schema, which nests a few levels; through aliases a schema that nests
    // itself could still follow a file deeper than it is written (the parsers bound that).
    if (this.path.length >= MAX_NESTING && schema.kind !== "custom" && kindOf(node) !== NodeKind.Scalar) {
      this.issue(node, undefined, TOO_DEEP);
      return INVALID;
    }
    switch (schema.kind) {
      case "object":
        return this.object(schema, node);
      case "record":
        return this.record(schema, node);
      case "array":
        return this.array(schema, node);
      case "variant":
        return this.variant(schema, node);
      default:
        break;
    }
    if (kindOf(node) !== NodeKind.Scalar) return this.refuse(schema, node);
    const raw = scalarValue(node);
    switch (schema.kind) {
      case "string": {
        if (typeof raw !== "string") return this.refuse(schema, node);
        const tooShort = raw.length < (schema.minLength ?? 0);
        const tooLong = schema.maxLength !== undefined && raw.length > schema.maxLength;
        if (schema.text !== undefined) {
          // What is wrong, said: which character and where, or how long it is.
          const problem = textProblem(raw, schema.text);
          if (problem !== undefined) return this.refuse(schema, node, problem);
          if (tooLong) return this.refuse(schema, node, `it has ${raw.length} characters`);
        }
        // A text's pattern (for editors) says what textProblem found already.
        if (tooShort || tooLong || (schema.text === undefined && schema.pattern && !schema.pattern.test(raw))) return this.refuse(schema, node);
        return raw;
      }
      case "integer":
      case "number": {
        if (typeof raw !== "number" || !Number.isFinite(raw)) return this.refuse(schema, node);
        if (schema.kind === "integer" && !Number.isInteger(raw)) return this.refuse(schema, node);
        if (!inRange(raw, schema.min, schema.max)) return this.refuse(schema, node);
        return raw;
      }
      case "boolean":
        if (typeof raw === "boolean") return raw;
        return this.refuse(schema, node, YES_NO.has(String(raw).toLowerCase()) ? "YAML 1.2 reads only true and false as booleans" : "");
      case "enum": {
        // The schema's own value, not the parsed copy: 10,000 tags share one "uint16".
        const at = typeof raw === "string" || typeof raw === "number" ? schema.values.indexOf(raw) : -1;
        if (at >= 0) return schema.values[at];
        const near = typeof raw === "string" ? suggest(raw, schema.values.map(String)) : undefined;
        const notes = [near ? `did you mean "${near}"?` : "", schema.hint ?? ""].filter((s) => s !== "").join("; ");
        return this.refuse(schema, node, notes);
      }
      case "duration":
      case "size": {
        const r = schema.kind === "duration" ? parseDuration(raw) : parseSize(raw);
        if (!r.ok) return this.refuse(schema, node, r.message);
        if (!inRange(r.value, schema.min, schema.max)) return this.refuse(schema, node);
        return r.value;
      }
      case "path":
        if (typeof raw !== "string" || raw.trim() === "") return this.refuse(schema, node);
        return resolvePath(this.src.dir, raw);
      case "custom": {
        const r = schema.parse(raw, this.src);
        if (!r.ok) return this.refuse(schema, node, r.message);
        return r.value;
      }
    }
  }

  private missing(schema: SchemaSpec, anchor: ConfigNode | undefined): Out {
    if (schema.kind === "optional") return undefined;
    if (schema.default) return schema.default.value(this.src);
    // An absent section is an empty one: its keys take their defaults.
    if (schema.kind === "object") return this.object(schema, undefined, anchor);
    this.issue(anchor, undefined, `missing required key; expected ${expected(schema)}`);
    return INVALID;
  }

  private refuse(schema: SchemaSpec, node: ConfigNode, note = ""): typeof INVALID {
    this.issue(node, undefined, `expected ${expected(schema)}, got ${describe(node)}${note ? `; ${note}` : ""}`);
    return INVALID;
  }

  /** The index in `items` of each key of a mapping, with non-string and duplicate keys reported. */
  private entries(node: MapNode): Map<string, number> {
    const out = new Map<string, number>();
    const items = node.items;
    for (let i = 0; i < items.length; i += 2) {
      const key = items[i]!;
      const k = key === null || kindOf(key) !== NodeKind.Scalar ? undefined : scalarValue(key);
      const name = typeof k === "string" || typeof k === "number" ? String(k) : undefined;
      if (name === undefined) {
        this.issue(key, undefined, `expected a key name, got ${describe(key)}`);
        continue;
      }
      const first = out.get(name);
      if (first !== undefined) {
        const at = this.src.lines.linePos(offsetOf(items[first]));
        this.issue(key, [...this.path, name], `duplicate key; first given at line ${at.line}`);
        continue;
      }
      out.set(name, i);
    }
    return out;
  }

  /**
   * A mapping checked by the variant its key names. Naming none (the key missing, or not one of
   * the variants), the key's issue is reported with those of the keys all variants share; the
   * others cannot be judged without knowing the variant.
   */
  private variant(schema: VariantSpec, node: ConfigNode): Out {
    if (kindOf(node) !== NodeKind.Map) return this.refuse(schema, node);
    const named = scalarAt((node as MapNode).items, schema.key);
    const chosen = typeof named === "string" ? schema.variants.get(named) : undefined;
    if (chosen !== undefined) return this.object(chosen, node);
    this.object(schema.common, node, undefined, true);
    return INVALID;
  }

  /** `open`: keys the schema does not know are let be (a variant's, when none is named). */
  private object(schema: ObjectSpec, node: ConfigNode | undefined, anchor?: ConfigNode, open = false): Out {
    // A section whose keys are all commented out is an empty value: treat it as an empty mapping.
    const empty = node === undefined || isNull(node);
    if (!empty && kindOf(node) !== NodeKind.Map) return this.refuse(schema, node);
    const here = empty ? (node ?? anchor) : node;
    const known = keysOf(schema);
    // A small mapping of distinct known keys (every tag of a device map) is searched in place;
    // anything else goes through `entries`, which reports what is wrong with its keys.
    const items = empty ? undefined : (node as MapNode).items;
    const entries = items === undefined ? NO_ENTRIES : plainKeys(items, schema) ? undefined : this.entries(node as MapNode);
    let ok = true;
    if (entries !== undefined && entries.size > 0) {
      for (const [name, at] of entries) {
        if (Object.hasOwn(schema.shape, name) || open) continue;
        ok = false;
        const near = suggest(name, known);
        this.issue(items![at], [...this.path, name], `unknown key${near ? `; did you mean "${near}"?` : `; expected one of ${known.join(", ")}`}`);
      }
    }
    const value: Record<string, unknown> = {};
    const path = this.path;
    for (const name of known) {
      const at = entries !== undefined ? entries.get(name) : findKey(items!, name);
      const spec = schema.shape[name]!;
      if (at === undefined) {
        // Absent: what `missing` gives, without the walk (13 keys of every tag, most absent).
        if (spec.kind === "optional") continue;
        if (spec.default) {
          value[name] = spec.default.value(this.src);
          continue;
        }
      }
      const child = at === undefined ? undefined : valueAt(items!, at);
      path.push(name);
      const v = this.check(spec, child, here);
      path.pop();
      if (v === INVALID) ok = false;
      else if (v !== undefined) value[name] = v;
    }
    if (!ok) return INVALID;
    if (schema.check) {
      const outer = this.checking;
      this.checking = { node: empty ? undefined : node, here };
      const before = this.issues.length;
      try {
        schema.check(value, this);
      } finally {
        this.checking = outer;
      }
      if (this.issues.length > before) return INVALID;
    }
    schema.resolve?.(value);
    return value;
  }

  private record(schema: RecordSpec, node: ConfigNode): Out {
    if (isNull(node)) return {};
    if (kindOf(node) !== NodeKind.Map) return this.refuse(schema, node);
    const items = (node as MapNode).items;
    const value: Record<string, unknown> = {};
    let ok = true;
    for (const [name, at] of this.entries(node as MapNode)) {
      if (schema.keyPattern && !schema.keyPattern.test(name)) {
        this.issue(items[at], [...this.path, name], `expected ${schema.keyText ?? `a key matching ${schema.keyPattern}`}, got ${JSON.stringify(name)}`);
        ok = false;
        continue;
      }
      this.path.push(name);
      const v = this.check(schema.values, valueAt(items, at), node);
      this.path.pop();
      if (v === INVALID) ok = false;
      else value[name] = v;
    }
    return ok ? value : INVALID;
  }

  private array(schema: ArraySpec, node: ConfigNode): Out {
    if (kindOf(node) !== NodeKind.Seq) return this.refuse(schema, node);
    const items = (node as SeqNode).items;
    const count = items.length;
    if (count < (schema.minItems ?? 0) || (schema.maxItems !== undefined && count > schema.maxItems)) {
      return this.refuse(schema, node);
    }
    const value: unknown[] = [];
    let ok = true;
    for (let i = 0; i < count; i++) {
      this.path.push(i);
      const v = this.check(schema.items, items[i] ?? undefined, node);
      this.path.pop();
      if (v === INVALID) ok = false;
      else value.push(v);
    }
    if (ok && schema.uniqueItems) {
      const seen = new Set<string>();
      value.forEach((v, i) => {
        const k = JSON.stringify(v);
        if (seen.has(k)) {
          this.issue(items[i], [...this.path, i], `duplicate entry ${describe(items[i])}`);
          ok = false;
        }
        seen.add(k);
      });
    }
    return ok ? value : INVALID;
  }
}

function isNull(node: ConfigNode): boolean {
  return kindOf(node) === NodeKind.Scalar && scalarValue(node) === null;
}

/** Whether every key of a mapping's items is a distinct string the object schema knows (at most 16 of them). */
function plainKeys(items: readonly (ConfigNode | null)[], schema: ObjectSpec): boolean {
  if (items.length > 32) return false;
  for (let i = 0; i < items.length; i += 2) {
    const key = items[i]!;
    if (typeof key !== "string" || !Object.hasOwn(schema.shape, key)) return false;
    for (let j = 0; j < i; j += 2) if (items[j] === key) return false;
  }
  return true;
}

/** Index of the key `name` in the items of a mapping whose keys are plain (plainKeys). */
function findKey(items: readonly (ConfigNode | null)[], name: string): number | undefined {
  for (let i = 0; i < items.length; i += 2) if (items[i] === name) return i;
  return undefined;
}

/** The value of the pair whose key is at `at`; a pair without one is located at its key. */
function valueAt(items: readonly (ConfigNode | null)[], at: number): ConfigNode | undefined {
  return items[at + 1] ?? items[at] ?? undefined;
}

/** The scalar value of the key `name` of a mapping's items (through an alias); undefined without one. */
function scalarAt(items: readonly (ConfigNode | null)[], name: string): unknown {
  for (let i = 0; i < items.length; i += 2) {
    const key = items[i]!;
    if (key === null || kindOf(key) !== NodeKind.Scalar || String(scalarValue(key)) !== name) continue;
    let v: ConfigNode | undefined = items[i + 1] ?? undefined;
    if (v !== undefined && typeof v === "object" && v.kind === NodeKind.Alias) v = v.target;
    return v !== undefined && kindOf(v) === NodeKind.Scalar ? scalarValue(v) : undefined;
  }
  return undefined;
}

/** The node at a relative path below `node`, or undefined if the file does not have it. */
function locate(node: ConfigNode, rel: readonly PathSeg[]): ConfigNode | undefined {
  let cur: ConfigNode | undefined = node;
  for (const seg of rel) {
    if (cur !== undefined && typeof cur === "object" && cur.kind === NodeKind.Alias) cur = cur.target;
    if (cur === undefined || typeof cur !== "object") return undefined;
    if (typeof seg === "number") {
      cur = cur.kind === NodeKind.Seq ? (cur.items[seg] ?? undefined) : undefined;
    } else if (cur.kind === NodeKind.Map) {
      const items = cur.items;
      let at = -1;
      for (let i = 0; i < items.length && at < 0; i += 2) {
        const key = items[i]!;
        if (key !== null && kindOf(key) === NodeKind.Scalar && String(scalarValue(key)) === seg) at = i;
      }
      cur = at < 0 ? undefined : valueAt(items, at);
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
      if (schema.text !== undefined) {
        const length = schema.minLength ? `${schema.minLength} to ${schema.maxLength}` : `at most ${schema.maxLength}`;
        return `a text of ${length} characters without control characters${schema.text === "lines" ? " (line breaks and tabs allowed)" : ""}`;
      }
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
      return keys.length <= 12 ? `a mapping (${keys.join(", ")})` : "a mapping";
    }
    case "record":
    case "variant":
      return "a mapping";
    case "optional":
      return expected(schema.inner);
    case "custom":
      return schema.expected;
  }
}

/** How a value is quoted after "got". */
function describe(node: ConfigNode | null | undefined): string {
  if (node === null || node === undefined) return "nothing";
  if (typeof node !== "object") return typeof node === "string" ? quote(node) : String(node);
  if (node.kind === NodeKind.Map) return "a mapping";
  if (node.kind === NodeKind.Seq) {
    const n = node.items.length;
    return n === 0 ? "an empty list" : `a list of ${n} item${n === 1 ? "" : "s"}`;
  }
  if (node.kind === NodeKind.Alias) return `*${node.source}`;
  if (node.kind === NodeKind.Scalar) {
    const v = node.value;
    if (v === null) return "an empty value";
    if (typeof v === "string") return quote(v);
    // The source text ("1e3", "0x10") is what the person wrote, not what JS prints.
    return node.source ?? String(v);
  }
  return "an unsupported value";
}

/**
 * A string as a message quotes it: shortened, and with the characters that would act on the
 * terminal or reorder the line (C1 controls, bidirectional controls, line separators) escaped as
 * JSON escapes C0 ones, so that the message reads as what it is.
 */
function quote(s: string): string {
  return quoted(s.length > 60 ? `${s.slice(0, 57)}...` : s);
}

function quoted(s: string): string {
  return JSON.stringify(s).replace(/[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
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
