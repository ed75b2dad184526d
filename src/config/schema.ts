// A small schema DSL for the YAML files a person edits (gateway.yaml, later the device map).
// One schema is read by two interpreters: validate.ts checks a parsed YAML document against it
// (with positions), json-schema.ts turns it into the JSON Schema that editors use. The static
// type of a validated value is inferred from the schema, so a new section (devices, buses,
// tags) is one more `object({...})` and its type follows.
//
// Descriptors are plain data; the phantom `[OUTPUT]` member carries the output type only at
// compile time. Defaults are written in the form a person would write them in YAML ("10s",
// "64KiB", "../data") so that the JSON Schema shows them the same way.

import { resolve } from "node:path";

declare const OUTPUT: unique symbol;

/** Compile-time only: the type a schema validates to. */
export interface Typed<T> {
  readonly [OUTPUT]?: T;
}

/** Where a value is being validated; what a default or a path needs to know. */
export interface SchemaContext {
  /** The file that holds the value, as shown in messages. */
  readonly file: string;
  /** Absolute folder of that file: relative paths resolve against it. */
  readonly dir: string;
}

export interface Default {
  /** The default as written in YAML, shown in the JSON Schema; absent when it is derived. */
  readonly json?: unknown;
  /** The default's validated value (for a path: resolved against the file's folder). */
  readonly value: (ctx: SchemaContext) => unknown;
}

interface Common {
  readonly description?: string;
  readonly default?: Default;
}

export interface StringSpec extends Common {
  readonly kind: "string";
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: RegExp;
  /** What the pattern means to a person, e.g. "a URI such as urn:host:fieldgate". */
  readonly patternText?: string;
  /**
   * Text a person wrote (text()): refused with the character and where it is when it holds a
   * control character; "lines" lets line breaks and tabs through (a description).
   */
  readonly text?: "line" | "lines";
}

export interface NumberSpec extends Common {
  readonly kind: "integer" | "number";
  readonly min?: number;
  readonly max?: number;
}

export interface BooleanSpec extends Common {
  readonly kind: "boolean";
}

export interface EnumSpec extends Common {
  readonly kind: "enum";
  readonly values: readonly (string | number)[];
  /** Added to the message when a value is refused, e.g. which values later versions add. */
  readonly hint?: string;
}

export interface DurationSpec extends Common {
  readonly kind: "duration";
  /** Milliseconds. */
  readonly min?: number;
  readonly max?: number;
}

export interface SizeSpec extends Common {
  readonly kind: "size";
  /** Bytes. */
  readonly min?: number;
  readonly max?: number;
}

export interface PathSpec extends Common {
  readonly kind: "path";
}

export interface ArraySpec extends Common {
  readonly kind: "array";
  readonly items: Schema;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly uniqueItems?: boolean;
}

/** A key of the object being checked, or a path below it (["tags", 3, "name"]). */
export type RelativePath = string | readonly (string | number)[];

/** What a cross-field check gets to report with. */
export interface Checker {
  /** Reports `message` at the value of `at` (at the object's mapping when the file omits it). */
  report(at: RelativePath, message: string): void;
  /** Whether the file gives `at`, so that a check can blame the key the person wrote. */
  given(at: RelativePath): boolean;
}

export interface ObjectSpec extends Common {
  readonly kind: "object";
  readonly shape: Readonly<Record<string, Schema>>;
  /** Runs only when every key of the object validated, on the value with defaults filled in. */
  readonly check?: (value: Readonly<Record<string, unknown>>, c: Checker) => void;
  /**
   * Runs after a check that found nothing: fills in, once, what depends on several keys (a
   * tag's rate from its device's), so that nothing downstream works it out again.
   */
  readonly resolve?: (value: Record<string, unknown>) => void;
}

/** A mapping whose keys the user chooses (bus names, ...), each value of one schema. */
export interface RecordSpec extends Common {
  readonly kind: "record";
  readonly values: Schema;
  readonly keyPattern?: RegExp;
  readonly keyText?: string;
}

export interface OptionalSpec extends Common {
  readonly kind: "optional";
  readonly inner: Schema;
}

export type ParseResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

/** A scalar with its own syntax (a tag's address in its driver's words, ...). */
export interface CustomSpec extends Common {
  readonly kind: "custom";
  /** Used in messages: "expected <expected>, got ...". */
  readonly expected: string;
  readonly jsonSchema: Readonly<Record<string, unknown>>;
  /** Gets the scalar's JS value (string, number, boolean or null). */
  readonly parse: (raw: unknown, ctx: SchemaContext) => ParseResult<unknown>;
}

/**
 * A mapping whose keys depend on the value of one of them, `key` (a device's on its `driver`):
 * each value of `key` names the object schema the mapping is checked against.
 */
export interface VariantSpec extends Common {
  readonly kind: "variant";
  readonly key: string;
  /** The object schema of each value of `key`, in the order messages list the values. */
  readonly variants: ReadonlyMap<string, ObjectSpec>;
  /**
   * The keys every variant has alike, `key` among them (an enum of the variants' names):
   * checked, and the others let be, when the mapping names no variant.
   */
  readonly common: ObjectSpec;
}

export type SchemaSpec =
  | StringSpec
  | NumberSpec
  | BooleanSpec
  | EnumSpec
  | DurationSpec
  | SizeSpec
  | PathSpec
  | ArraySpec
  | ObjectSpec
  | RecordSpec
  | OptionalSpec
  | VariantSpec
  | CustomSpec;

export type Schema<T = unknown> = SchemaSpec & Typed<T>;
export type Infer<S> = S extends Typed<infer T> ? T : never;

export type Shape = Readonly<Record<string, Schema>>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};
type OptionalKeys<S extends Shape> = { [K in keyof S]: S[K] extends { kind: "optional" } ? K : never }[keyof S];
export type ObjectValue<S extends Shape> = Simplify<
  { readonly [K in Exclude<keyof S, OptionalKeys<S>>]: Infer<S[K]> } & {
    readonly [K in OptionalKeys<S>]?: Infer<S[K]>;
  }
>;

interface Described {
  description?: string;
}

function constant(json: unknown, value: unknown = json): Default {
  return { json, value: () => value };
}

// ---- constructors ----

export function string(
  opts: Described & {
    default?: string | ((ctx: SchemaContext) => string);
    minLength?: number;
    maxLength?: number;
    pattern?: RegExp;
    patternText?: string;
    text?: "line" | "lines";
  } = {},
): Schema<string> {
  const { default: def, ...rest } = opts;
  const spec: StringSpec = {
    kind: "string",
    ...rest,
    ...(def === undefined ? {} : { default: typeof def === "function" ? { value: def } : constant(def) }),
  };
  if (typeof def === "string") checkDefault(spec, def);
  return spec;
}

/** Longest host name or address: 253 characters (RFC 1035 §2.3.4: 255 octets on the wire). */
export const MAX_HOST = 253;
/** Longest file path Linux takes (PATH_MAX). */
export const MAX_PATH = 4096;

/**
 * Characters no text of a config file holds (besides a line break and a tab in "lines" text):
 * C0 and C1 controls and DEL (Unicode general category Cc), and the bidirectional embeddings,
 * overrides and isolates (U+202A-202E, U+2066-2069), which make a text show other than it reads
 * in a client's tree or on the status page. As class ranges, also for the JSON Schema's pattern.
 */
const NOT_IN_LINE = "\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069";
const NOT_IN_LINES = "\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069";
const REFUSED_IN_LINE = new RegExp(`[${NOT_IN_LINE}]|\\p{Cs}`, "u");
const REFUSED_IN_LINES = new RegExp(`[${NOT_IN_LINES}]|\\p{Cs}`, "u");

/**
 * What is wrong with `s` as text of its kind, in words: the first refused character, by its code
 * point and place; undefined when there is none. A lone surrogate (a "\uD800" escape in a
 * double-quoted YAML string) is refused too: no UTF-8 encodes it.
 */
export function textProblem(s: string, kind: "line" | "lines"): string | undefined {
  const bad = (kind === "line" ? REFUSED_IN_LINE : REFUSED_IN_LINES).exec(s);
  if (bad === null) return undefined;
  const code = bad[0].codePointAt(0)!;
  const what = code >= 0xd800 && code <= 0xdfff ? "a lone surrogate" : code >= 0x202a ? "a bidirectional control character" : "a control character";
  return `${what} (U+${code.toString(16).toUpperCase().padStart(4, "0")}) at character ${[...s.slice(0, bad.index)].length + 1}`;
}

/**
 * Text shown to people (a description, the server's name): a string of at most `maxLength`
 * characters without control characters (textProblem), checked like a name is. `lines`: line
 * breaks and tabs are text too (a description written as a YAML block scalar).
 */
export function text(opts: Described & { default?: string; minLength?: number; maxLength: number; lines?: boolean }): Schema<string> {
  const { lines, ...rest } = opts;
  return string({ ...rest, pattern: new RegExp(`^[^${lines ? NOT_IN_LINES : NOT_IN_LINE}]*$`), text: lines ? "lines" : "line" });
}

export function integer(opts: Described & { default?: number; min?: number; max?: number } = {}): Schema<number> {
  const { default: def, ...rest } = opts;
  const spec: NumberSpec = { kind: "integer", ...rest, ...(def === undefined ? {} : { default: constant(def) }) };
  if (def !== undefined) checkDefault(spec, def);
  return spec;
}

export function number(opts: Described & { default?: number; min?: number; max?: number } = {}): Schema<number> {
  const { default: def, ...rest } = opts;
  const spec: NumberSpec = { kind: "number", ...rest, ...(def === undefined ? {} : { default: constant(def) }) };
  if (def !== undefined) checkDefault(spec, def);
  return spec;
}

export function boolean(opts: Described & { default?: boolean } = {}): Schema<boolean> {
  const { default: def, ...rest } = opts;
  return { kind: "boolean", ...rest, ...(def === undefined ? {} : { default: constant(def) }) };
}

export function enumOf<const V extends readonly (string | number)[]>(
  values: V,
  opts: Described & { default?: V[number]; hint?: string } = {},
): Schema<V[number]> {
  const { default: def, ...rest } = opts;
  const spec: EnumSpec = { kind: "enum", values, ...rest, ...(def === undefined ? {} : { default: constant(def) }) };
  if (def !== undefined) checkDefault(spec, def);
  return spec;
}

/** Milliseconds in the output; "500ms", "10s", "5m", "1h", "1h30m" or a number of ms in YAML. */
export function duration(
  opts: Described & { default?: string | number; min?: string | number; max?: string | number } = {},
): Schema<number> {
  const { default: def, min, max, ...rest } = opts;
  const spec: DurationSpec = {
    kind: "duration",
    ...rest,
    ...(min === undefined ? {} : { min: mustParse(parseDuration, min) }),
    ...(max === undefined ? {} : { max: mustParse(parseDuration, max) }),
    ...(def === undefined ? {} : { default: constant(def, mustParse(parseDuration, def)) }),
  };
  if (def !== undefined) checkDefault(spec, def);
  return spec;
}

/** Bytes in the output; "64KiB", "16MiB", "1GiB" or a number of bytes in YAML. */
export function size(
  opts: Described & { default?: string | number; min?: string | number; max?: string | number } = {},
): Schema<number> {
  const { default: def, min, max, ...rest } = opts;
  const spec: SizeSpec = {
    kind: "size",
    ...rest,
    ...(min === undefined ? {} : { min: mustParse(parseSize, min) }),
    ...(max === undefined ? {} : { max: mustParse(parseSize, max) }),
    ...(def === undefined ? {} : { default: constant(def, mustParse(parseSize, def)) }),
  };
  if (def !== undefined) checkDefault(spec, def);
  return spec;
}

/** An absolute path in the output, resolved against the folder of the file that holds it. */
export function path(opts: Described & { default?: string } = {}): Schema<string> {
  const { default: def, ...rest } = opts;
  return {
    kind: "path",
    ...rest,
    ...(def === undefined ? {} : { default: { json: def, value: (ctx: SchemaContext) => resolvePath(ctx.dir, def) } }),
  };
}

export function array<I extends Schema>(
  items: I,
  opts: Described & { default?: readonly unknown[]; minItems?: number; maxItems?: number; uniqueItems?: boolean } = {},
): Schema<readonly Infer<I>[]> {
  const { default: def, ...rest } = opts;
  const spec: ArraySpec = { kind: "array", items, ...rest, ...(def === undefined ? {} : { default: constant(def) }) };
  if (def !== undefined) checkDefault(spec, def);
  return spec;
}

export function object<S extends Shape>(
  shape: S,
  opts?: Described & { check?: (value: ObjectValue<S>, c: Checker) => void },
): Schema<ObjectValue<S>> & { readonly shape: S };
export function object<S extends Shape, R>(
  shape: S,
  opts: Described & { check?: (value: ObjectValue<S>, c: Checker) => void; resolve: (value: ObjectValue<S>) => R },
): Schema<R> & { readonly shape: S };
export function object<S extends Shape>(
  shape: S,
  opts: Described & { check?: (value: ObjectValue<S>, c: Checker) => void; resolve?: (value: ObjectValue<S>) => unknown } = {},
): Schema & { readonly shape: S } {
  // The check sees the value this schema produced, so widening its parameter is sound; resolve
  // fills that value in place, making it the type it returns.
  const check = opts.check as ObjectSpec["check"];
  const resolve = opts.resolve as ObjectSpec["resolve"];
  return {
    kind: "object",
    shape,
    ...(opts.description === undefined ? {} : { description: opts.description }),
    ...(check === undefined ? {} : { check }),
    ...(resolve === undefined ? {} : { resolve }),
  } as Schema & { readonly shape: S };
}

export function record<V extends Schema>(
  values: V,
  opts: Described & { keyPattern?: RegExp; keyText?: string; default?: Readonly<Record<string, unknown>> } = {},
): Schema<Readonly<Record<string, Infer<V>>>> {
  const { default: def, ...rest } = opts;
  return { kind: "record", values, ...rest, ...(def === undefined ? {} : { default: constant(def) }) };
}

/** A mapping checked by the object schema its `key`'s value names (VariantSpec); T is what every variant gives. */
export function variant<T>(key: string, variants: ReadonlyMap<string, Schema>, common: Schema, opts: Described = {}): Schema<T> {
  const objects = new Map<string, ObjectSpec>();
  for (const [name, s] of variants) objects.set(name, asObject(s, name));
  return { kind: "variant", key, variants: objects, common: asObject(common, key), ...(opts.description === undefined ? {} : { description: opts.description }) };
}

function asObject(s: Schema, what: string): ObjectSpec {
  if (s.kind !== "object") throw new Error(`schema: the variant "${what}" is not an object schema`);
  return s;
}

/** The key may be left out; the value is then `undefined` (and the key optional in the type). */
export function optional<I extends Schema>(inner: I, opts: Described = {}): OptionalSpec & Typed<Infer<I> | undefined> {
  const description = opts.description ?? inner.description;
  return { kind: "optional", inner, ...(description === undefined ? {} : { description }) };
}

export function custom<T>(opts: {
  expected: string;
  jsonSchema: Readonly<Record<string, unknown>>;
  parse: (raw: unknown, ctx: SchemaContext) => ParseResult<T>;
  description?: string;
}): Schema<T> {
  return { kind: "custom", ...opts };
}

// ---- durations and sizes ----

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION_PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;

/** "500ms", "1s", "5m", "1h", "1h30m" or a number of ms → whole milliseconds. */
export function parseDuration(raw: unknown): ParseResult<number> {
  if (typeof raw === "number") {
    return Number.isInteger(raw) && raw >= 0
      ? { ok: true, value: raw }
      : { ok: false, message: "a number of milliseconds must be a whole number, 0 or more" };
  }
  if (typeof raw !== "string") return { ok: false, message: "" };
  const text = raw.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return { ok: false, message: `add a unit, e.g. "${text}ms" or "${text}s"` };
  let total = 0;
  DURATION_PART.lastIndex = 0;
  let matched = 0;
  while (DURATION_PART.lastIndex < text.length) {
    const start = DURATION_PART.lastIndex;
    const m = DURATION_PART.exec(text);
    if (!m || m.index !== start) return { ok: false, message: "" };
    total += Number(m[1]) * (DURATION_UNITS[m[2]!] ?? 0);
    matched++;
  }
  if (matched === 0) return { ok: false, message: "" };
  if (!Number.isInteger(total)) return { ok: false, message: "a duration must come to whole milliseconds" };
  return { ok: true, value: total };
}

export function formatDuration(ms: number): string {
  for (const [unit, factor] of [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1000]] as const) {
    if (ms >= factor && ms % factor === 0) return `${ms / factor}${unit}`;
  }
  return `${ms}ms`;
}

const SIZE_UNITS: Readonly<Record<string, number>> = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, TiB: 1024 ** 4 };
// People write decimal-looking units and mean binary ones; refusing them with the fix avoids
// a silent 2.4% (KB) to 7.4% (GB) difference in a limit.
const SIZE_LOOKALIKE: Readonly<Record<string, string>> = {
  k: "KiB", kb: "KiB", kib: "KiB", m: "MiB", mb: "MiB", mib: "MiB", g: "GiB", gb: "GiB", gib: "GiB", t: "TiB", tb: "TiB", tib: "TiB", b: "B",
};

/** "64KiB", "16MiB", "1GiB", "512B" or a number of bytes → whole bytes. */
export function parseSize(raw: unknown): ParseResult<number> {
  if (typeof raw === "number") {
    return Number.isInteger(raw) && raw >= 0
      ? { ok: true, value: raw }
      : { ok: false, message: "a number of bytes must be a whole number, 0 or more" };
  }
  if (typeof raw !== "string") return { ok: false, message: "" };
  const m = /^(\d+(?:\.\d+)?)\s*([A-Za-z]*)$/.exec(raw.trim());
  if (!m) return { ok: false, message: "" };
  const amount = Number(m[1]);
  const unit = m[2]!;
  const factor = SIZE_UNITS[unit];
  if (factor === undefined) {
    const fix = SIZE_LOOKALIKE[unit.toLowerCase()];
    return { ok: false, message: fix ? `sizes use binary units: did you mean "${m[1]}${fix}"?` : unit === "" ? `add a unit, e.g. "${m[1]}KiB"` : "" };
  }
  const bytes = amount * factor;
  if (!Number.isInteger(bytes)) return { ok: false, message: "a size must come to whole bytes" };
  return { ok: true, value: bytes };
}

export function formatSize(bytes: number): string {
  for (const [unit, factor] of [["TiB", 1024 ** 4], ["GiB", 1024 ** 3], ["MiB", 1024 ** 2], ["KiB", 1024]] as const) {
    if (bytes >= factor && bytes % factor === 0) return `${bytes / factor}${unit}`;
  }
  return `${bytes}B`;
}

export function resolvePath(dir: string, p: string): string {
  return resolve(dir, p);
}

function mustParse(parse: (raw: unknown) => ParseResult<number>, raw: string | number): number {
  const r = parse(raw);
  if (!r.ok) throw new Error(`schema: invalid literal ${JSON.stringify(raw)} ${r.message}`);
  return r.value;
}

/** A default that its own schema would refuse is a bug in the schema, caught at load time. */
function checkDefault(spec: SchemaSpec, def: unknown): void {
  const bad = (why: string): never => {
    throw new Error(`schema: default ${JSON.stringify(def)} ${why}`);
  };
  switch (spec.kind) {
    case "integer":
    case "number":
      if (typeof def !== "number" || (spec.kind === "integer" && !Number.isInteger(def))) bad(`is not an ${spec.kind}`);
      if ((spec.min !== undefined && (def as number) < spec.min) || (spec.max !== undefined && (def as number) > spec.max)) bad("is out of range");
      return;
    case "duration":
    case "size": {
      const v = mustParse(spec.kind === "duration" ? parseDuration : parseSize, def as string | number);
      if ((spec.min !== undefined && v < spec.min) || (spec.max !== undefined && v > spec.max)) bad("is out of range");
      return;
    }
    case "enum":
      if (!spec.values.includes(def as string | number)) bad("is not one of the values");
      return;
    case "array":
      if (!Array.isArray(def)) bad("is not a list");
      return;
    case "string":
      if (spec.pattern && !spec.pattern.test(def as string)) bad("does not match the pattern");
      return;
    default:
      return;
  }
}
