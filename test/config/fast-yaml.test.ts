// The fast parser (src/config/fast-yaml.ts) against the yaml library: wherever it takes a file,
// its tree must be the one the library composes (structure, values, offsets of collections); where it
// declines, the library parses as before. Hand-written cases, every YAML file of the repo, and
// generated files from a grammar of the lines config files are made of (longer runs with another
// seed: FIELDGATE_FUZZ_RUNS=100000 npx vitest run test/config/fast-yaml.test.ts).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseDocument } from "yaml";
import { deviceMapYaml } from "../../bench/targets/fieldgate-config.js";
import { fromDocument, kindOf, NodeKind, scalarValue, type ConfigNode } from "../../src/config/config-tree.js";
import { parseFast } from "../../src/config/fast-yaml.js";
import { fuzzRuns, fuzzSeed, fuzzTimeout } from "../hostile/arbitraries.js";

const repo = join(import.meta.dirname, "../..");

/** The library's tree, or "error" when it refuses the text. */
function library(text: string): ConfigNode | null | "error" {
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: false });
  return doc.errors.length > 0 ? "error" : fromDocument(doc);
}

/**
 * A plain picture of a tree: structure, values and the offsets of collections. The fast tree
 * keeps no position or source for scalars (messages come from the library's tree), so scalars
 * are compared by value.
 */
function picture(node: ConfigNode | null | undefined): unknown {
  if (node === null || node === undefined) return null;
  if (kindOf(node) === NodeKind.Scalar) {
    const v = scalarValue(node);
    return typeof v === "number" && (Number.isNaN(v) || Object.is(v, -0)) ? `number:${String(v)}/${Object.is(v, -0)}` : v;
  }
  const n = node as Exclude<ConfigNode, string | number | boolean>;
  switch (n.kind) {
    case NodeKind.Map:
      return { at: n.offset, map: n.items.map(picture) };
    case NodeKind.Seq:
      return { at: n.offset, seq: n.items.map(picture) };
    default:
      return { alias: (n as { source: string }).source };
  }
}

/** Asserts that the fast parser either declines `text` or agrees with the library; returns whether it took it. */
function agrees(text: string): boolean {
  const fast = parseFast(text);
  if (fast === undefined) return false;
  const lib = library(text);
  if (lib === "error") throw new Error(`the fast parser took a text the yaml library refuses:\n${text}`);
  expect(picture(fast), text).toEqual(picture(lib));
  return true;
}

describe("the fast YAML parser", () => {
  it.each([
    ["block mapping", "a: 1\nb: two\nc: true\n"],
    ["nested", "server:\n  port: 4840\n  host: 0.0.0.0\nlimits:\n  maxSessions: 10\n"],
    ["sequence of mappings", "devices:\n  - name: a\n    driver: simulator\n  - name: b\n    tags:\n      - { name: t, address: \"holding:1\" }\n"],
    ["sequence at the key's indentation", "a:\n- 1\n- 2\nb: x\n"],
    ["flow collections", "r: [0, 100]\ne: []\nm: {}\nf: { a: 1, b: [x, y], c: { d: e } }\n"],
    ["trailing comma", "r: [0, 100, ]\nm: { a: 1, }\n"],
    ["comments everywhere", "# head\na: 1 # one\n\n  # indented comment\nb: # nothing\n  c: d\n"],
    ["empty values", "a:\nb:\n  c:\nd: 1\n"],
    ["empty sequence entry", "a:\n  -\n  - x\n"],
    ["quoted", "a: \"x: y # z\"\nb: 'it''s'\nc: \"\\u00b0C \\x41\\n\\\\\"\n\"d e\": 1\n'f': 2\n"],
    ["core schema", "a: ~\nb: null\nc: True\nd: FALSE\ne: 0o17\nf: -012\ng: 0x1F\nh: .inf\ni: -.Inf\nj: .NaN\nk: 1e3\nl: -1.5\nm: .5\nn: 1.\no: yes\np: +7\nq: 0.0\nr: -0\n"],
    ["plain scalars with punctuation", "a: http://x:80/y\nb: a, b [c] {d}\nc: holding:100.3\nd: a#b\ne: -5\nf: °C\ng: x - y\n"],
    ["number keys", "1: a\n2.5: b\ntrue: c\n"],
    ["CRLF", "a: 1\r\nb:\r\n  - x\r\n"],
    ["root sequence", "- a\n- b: 1\n  c: 2\n"],
    ["root scalar", "just text\n"],
    ["indented root", "  a: 1\n  b: 2\n"],
    ["deeper first indentation", "a:\n      b: 1\n      c: 2\nd: 3\n"],
    // Runs of one-line flow mappings (a device map's tags), in every spelling of the subset.
    ["a run of flow entries", "tags:\n  - { name: t0, address: \"holding:100\", type: uint16 }\n  - {name: t1,address: \"\", scale: -0.5e-3 ,history: true}\n  - { a: false, b: 0, c: -0, d: 12.50, e: 1E3, f: m/s, g: v1.2-x, h: trueish, i: _x }\n"],
    ["flow entries the native reading leaves", "t:\n  - { a: 1 }\n  - { a: True }\n  - { a: null }\n  - { a: 0x10, b: .5 }\n  - { a: 'q' }\n  - { a: \"x, y\" }\n  - { a: [0, 1] }\n  - { true: 1 }\n  - { a: 1 }\n  - { a: \"\\u00b0\" }\n  - { a: 007 }\n  - { a: b c }\n  - {}\n  - { a: 1 }\n"],
    ["flow entries with comments and blank lines", "t:\n  # first\n  - { a: 1 } # one\n\n  - { a: two }   \n  # between\n  - { a: \"3#\" }\nu: 1\n"],
    ["flow entries with CRLF", "t:\r\n  - { a: 1, b: c }\r\n  - { a: 2, b: d }\r\n"],
    ["a flow entry then a block one", "t:\n  - { a: 1 }\n  - a: 2\n    b: 3\n  - { a: 4 }\n"],
    ["duplicate keys in a flow entry", "t:\n  - { a: 1, a: 2 }\n"],
  ])("takes %s", (_name, text) => {
    expect(agrees(text)).toBe(true);
  });

  it.each([
    ["anchors and aliases", "a: &x 1\nb: *x\n"],
    ["tags", "a: !!str 1\n"],
    ["block scalars", "a: |\n  text\n"],
    ["multi-line plain", "a: one\n  two\n"],
    ["multi-line flow", "a: [1,\n  2]\n"],
    ["multi-line quoted", "a: \"one\n  two\"\n"],
    ["a document marker", "---\na: 1\n"],
    ["two documents", "a: 1\n---\nb: 2\n"],
    ["a directive", "%YAML 1.2\n---\na: 1\n"],
    ["tabs", "a:\n\tb: 1\n"],
    ["explicit keys", "? a\n: 1\n"],
    ["nested compact sequence", "- - a\n"],
    ["a mapping in a value", "a: b: c\n"],
    ["a bad indentation", "a:\n    b: 1\n  c: 2\n"],
    ["a scalar where a key belongs", "a: 1\nb\n"],
    ["an empty file", ""],
    ["only comments", "# nothing\n"],
    ["flow entries without values", "a: { b }\nc: { d: }\n"],
    ["a key with spaces before its colon", "a : 1\n"],
    ["a BOM", "\ufeffa: 1\n"],
    ["a reserved character", "a: @b\n"],
    ["a flow entry followed by a deeper line", "t:\n  - { a: 1 }\n    b: 2\n"],
    ["text after a flow entry", "t:\n  - { a: 1 } x\n"],
  ])("leaves %s to the library", (_name, text) => {
    expect(parseFast(text)).toBeUndefined();
  });

  it("agrees on every YAML file of the repository that it takes", () => {
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.name === "node_modules" || e.name === "dist" || e.name.startsWith(".")) continue;
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.ya?ml$/.test(e.name)) files.push(p);
      }
    };
    for (const d of ["config", "test", "image", "bench"]) walk(join(repo, d));
    let taken = 0;
    for (const f of files) if (agrees(readFileSync(f, "utf8"))) taken++;
    // The shipped gateway.yaml and device map are in the subset: they start fast.
    expect(agrees(readFileSync(join(repo, "config/gateway.yaml"), "utf8"))).toBe(true);
    expect(agrees(readFileSync(join(repo, "config/devices.yaml"), "utf8"))).toBe(true);
    expect(taken).toBeGreaterThanOrEqual(2);
  });

  it("reads long runs of flow entries, with comments, wider spacing and quotes among them, as the library does", () => {
    const entry = (i: number) => `    - { name: t${i}, address: "holding:${i}", scale: ${i % 7 === 0 ? "0.5" : "1"}, unit: m/s }`;
    const lines = Array.from({ length: 2600 }, (_, i) => entry(i));
    lines[1500] = `${lines[1500]} # a comment`;
    lines[1501] = lines[1501]!.replace("- {", "-   {");
    lines[1502] = "    - { name: odd, address: 'q' }";
    lines.splice(1800, 0, "", "    # between");
    expect(agrees(`devices:\n  - name: d\n    tags:\n${lines.join("\n")}\n  - name: e\n    tags: []\n`)).toBe(true);
    // The last line of the text without a line break, and CRLF lines.
    expect(agrees("t:\n  - { a: 1 }\n  - { a: 2 }")).toBe(true);
    expect(agrees(`t:\r\n${lines.slice(0, 1100).join("\r\n")}\r\n`)).toBe(true);
  });

  it("takes the bench's 10,000-tag map", () => {
    expect(agrees(deviceMapYaml(2000))).toBe(true);
  });

  it("agrees with the library on generated files", () => {
    // Lines of the kinds config files hold, at random indentations, with the characters that
    // change what a line means; most texts are not valid YAML, which is the point.
    const line = fc.tuple(fc.integer({ min: 0, max: 6 }), fc.constantFrom("", "- ", "-", "  "), fc.oneof(scalarText, fc.constant("")), fc.constantFrom(": ", ":", " : ", ""), fc.oneof(scalarText, flowText, fc.constant(""), fc.constant("# c")), fc.constantFrom("", " # note", "#x", "  "));
    const text = fc.array(line, { minLength: 1, maxLength: 8 }).map((lines) => lines.map(([indent, dash, key, colon, v, tail]) => `${" ".repeat(indent)}${dash}${key}${colon}${v}${tail}`).join("\n") + "\n");
    fc.assert(fc.property(text, (t) => void agrees(t)), { numRuns: fuzzRuns(3000), seed: fuzzSeed() });
  }, fuzzTimeout());

  it("takes generated files in block style and agrees, and agrees on them with one character changed", () => {
    const runs = fuzzRuns(1500);
    let taken = 0;
    fc.assert(
      fc.property(documentText, fc.nat(), fc.constantFrom("", " ", "-", ":", "#", "\n", "'", '"', "[", "{", ",", "x", "  "), fc.boolean(), (t, at, ch, drop) => {
        if (agrees(t)) taken++;
        const i = at % (t.length + 1);
        agrees(t.slice(0, i) + ch + t.slice(drop ? i + 1 : i));
      }),
      { numRuns: runs, seed: fuzzSeed() },
    );
    // The texts are valid YAML in the subset's own style: nearly all of them must be taken.
    expect(taken).toBeGreaterThan(runs * 0.93);
  }, fuzzTimeout());
});

// ---- generators -----------------------------------------------------------------------------

const words = ["a", "name", "tag1", "b c", "x.y", "-5", "1e3", "0x1F", "0o7", "~", "null", "True", "yes", ".5", "1.", "+1", "°C", "a#b", "h:1", "http://h:1", "-", "?", ":", "&a", "*a", "!t", "|", ">", "@", "%", "`", "[", "]", "{", "}", ","];
const scalarText = fc.oneof(fc.constantFrom(...words), fc.constantFrom('"a b"', '"x: y"', '"\\u00b0"', '"\\q"', "'it''s'", "''", '""', '"unclosed', "'a'b"));
const flowText = fc
  .array(fc.tuple(scalarText, fc.option(scalarText, { nil: undefined })), { maxLength: 3 })
  .chain((entries) =>
    fc.constantFrom(
      `{ ${entries.map(([k, v]) => (v === undefined ? k : `${k}: ${v}`)).join(", ")} }`,
      `[${entries.map(([k]) => k).join(", ")}]`,
      `[${entries.map(([k]) => k).join(",")},]`,
    ),
  );

/** Scalars that are valid anywhere a value goes, as plain or quoted text. */
const safeScalar = fc.constantFrom("a", "tag1", "b c", "x.y", "-5", "1e3", "0x1F", "0o7", "~", "null", "True", "false", "yes", ".5", "1.", "+1", "°C", "a#b", "holding:100", "http://h:1/x", "12", "-0", ".inf", '"a b"', '"x: y # z"', '"\\u00b0C\\n"', "'it''s'", "''", '""', '"[1]"');
const safeKey = fc.constantFrom("a", "name", "tag1", "b c", "x.y", "1", "2.5", "true", "null", "°C", '"q k"', "'s'", "a-b", "_x");
const flowLeaf = fc.oneof(
  safeScalar.filter((v) => !/^[^"'].*[,[\]{}#]/.test(v)),
  fc.array(safeScalar.filter((v) => !/[,[\]{}#:]/.test(v) || /^["']/.test(v)), { maxLength: 3 }).map((xs) => `[${xs.join(", ")}]`),
);

type Tree = { kind: "scalar"; text: string } | { kind: "flow"; text: string } | { kind: "map"; entries: [string, Tree | null][] } | { kind: "seq"; items: (Tree | null)[] };
const tree: fc.Arbitrary<Tree> = fc.letrec<{ node: Tree }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    safeScalar.map((text) => ({ kind: "scalar" as const, text })),
    fc.array(fc.tuple(safeKey, flowLeaf), { maxLength: 3 }).map((es) => ({ kind: "flow" as const, text: `{ ${es.map(([k, v]) => `${k}: ${v}`).join(", ")} }` })),
    fc.array(fc.tuple(safeKey, fc.option(tie("node"), { nil: null })), { minLength: 1, maxLength: 4 }).map((entries) => ({ kind: "map" as const, entries })),
    fc.array(fc.option(tie("node"), { nil: null }), { minLength: 1, maxLength: 4 }).map((items) => ({ kind: "seq" as const, items })),
  ),
})).node;

/** Block-style text of a tree: indentation steps of 1 to 4, comments here and there. */
const documentText = fc.tuple(tree, fc.integer({ min: 1, max: 4 }), fc.boolean(), fc.boolean()).map(([root, step, comments, crlf]) => {
  const lines: string[] = [];
  const note = (i: number) => (comments && i % 3 === 0 ? " # note" : "");
  let n = 0;
  const inline = (t: Tree | null): string | undefined => (t === null ? "" : t.kind === "scalar" || t.kind === "flow" ? t.text : undefined);
  const emit = (t: Tree, indent: number, first: string | undefined): void => {
    // `first` is the start of the first line (a "- " of the parent sequence) when the node continues it.
    const pad = " ".repeat(indent);
    if (t.kind === "scalar" || t.kind === "flow") {
      lines.push(`${first ?? pad}${t.text}${note(n++)}`);
      return;
    }
    if (t.kind === "map") {
      t.entries.forEach(([k, v], i) => {
        const start = i === 0 && first !== undefined ? first : pad;
        const text = inline(v);
        if (text !== undefined) lines.push(`${start}${k}:${text === "" ? "" : ` ${text}`}${note(n++)}`);
        else {
          lines.push(`${start}${k}:${note(n++)}`);
          emit(v!, indent + step, undefined);
        }
      });
      return;
    }
    t.items.forEach((v, i) => {
      const start = i === 0 && first !== undefined ? first : pad;
      const text = inline(v);
      if (text !== undefined) lines.push(`${start}-${text === "" ? "" : ` ${text}`}${note(n++)}`);
      else if (v!.kind === "map") emit(v!, indent + 2, `${start}- `);
      else {
        lines.push(`${start}-${note(n++)}`);
        emit(v!, indent + step, undefined);
      }
    });
  };
  if (comments) lines.push("# a file");
  emit(root, 0, undefined);
  return lines.join(crlf ? "\r\n" : "\n") + "\n";
});
