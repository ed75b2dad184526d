// An indentation mistake is named at the line and column where it is, in our words (issue 15):
// the yaml library points at the line before a key indented too far ("Nested mappings are not
// allowed in compact mappings") and at column 1 of one indented too little.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseDocument, stringify } from "yaml";
import { mapSchema } from "../helpers/map.js";
import { gatewaySchema } from "../../src/config/gateway-config.js";
import { formatIssue, validateYaml } from "../../src/config/load.js";
import { findIndentationIssue } from "../../src/config/yaml-indent.js";

function issues(text: string, schema: typeof gatewaySchema | typeof mapSchema = gatewaySchema): string[] {
  const r = validateYaml(schema, text, "gateway.yaml");
  return r.ok ? [] : r.issues.map(formatIssue);
}

describe("indentation mistakes", () => {
  it("a key indented too far under a key that has a value", () => {
    expect(issues("server:\n  host: 127.0.0.1\n   port: 4840\n")).toEqual([
      'gateway.yaml:3:4: indentation: "port" is indented 3 spaces, more than "host" on line 2, which has a value already and cannot hold keys: indent it 2 spaces like "host" to make it a key of "server"',
    ]);
    expect(issues("server:\n  host: 127.0.0.1\nlimits:\n  maxSessions: 10\n    maxChannels: 5\n")).toEqual([
      'gateway.yaml:5:5: indentation: "maxChannels" is indented 4 spaces, more than "maxSessions" on line 4, which has a value already and cannot hold keys: indent it 2 spaces like "maxSessions" to make it a key of "limits"',
    ]);
  });

  it("a key indented too little, lining up with nothing", () => {
    expect(issues("server:\n  host: 127.0.0.1\n port: 4840\n")).toEqual([
      'gateway.yaml:3:2: indentation: "port" is indented 1 space, which lines up with no key above it: "host" (line 2) is at 2 spaces, "server" (line 1) is at 0 spaces; indent it like the keys it belongs with',
    ]);
  });

  it("in a device map's list of tags", () => {
    const map = "devices:\n  - name: a\n    driver: simulator\n    tags:\n      - name: x\n        address: input:0\n       type: uint16\n";
    expect(issues(map, mapSchema)).toEqual([
      'gateway.yaml:7:8: indentation: "type" is indented 7 spaces, which lines up with no key above it: "address" (line 6) is at 8 spaces, "tags" (line 4) is at 4 spaces, "devices" (line 1) is at 0 spaces; indent it like the keys it belongs with',
    ]);
    // A second item's key indented too far after an item key with a value.
    const item = "devices:\n  - name: a\n    driver: simulator\n    tags:\n      - name: x\n          address: input:0\n";
    expect(issues(item, mapSchema)[0]).toMatch(/^gateway\.yaml:6:11: indentation: "address" is indented 10 spaces, more than "name" on line 5, .*indent it 8 spaces like "name"/);
  });

  it("leaves other syntax errors in the library's words", () => {
    expect(issues("server:\n\tport: 1\n")).toEqual(["gateway.yaml:2:1: YAML syntax error: a tab is used for indentation; YAML indents with spaces only"]);
    expect(issues('server:\n  host: "127.0.0.1\n')[0]).toMatch(/YAML syntax error/);
  });

  it("finds nothing in valid YAML: block scalars, multi-line plain scalars, sequences at the key's indent, comments anywhere", () => {
    const valid = [
      "a:\n- 1\n- 2\nb: 3\n",
      "description: |\n  text: with a colon\n    more: indented\nnext: 1\n",
      "items:\n  - note: >-\n      folded: text\n    name: x\n",
      "text: a long value\n  that goes on\nother: 2\n",
      "server:\n    # a comment at any indent\n  host: x\n",
      "list:\n  - - nested\n    - seq\n  - { flow: map }\n",
      'quoted: "a # not a comment"\nkey: 1\n',
      "anchor: &a\n  x: 1\nref: *a\n",
    ];
    for (const text of valid) {
      expect(parseDocument(text).errors, text).toEqual([]);
      expect(findIndentationIssue(text), text).toBeUndefined();
    }
  });

  // Values of the shapes config files have: mappings of identifiers to scalars, lists and mappings.
  const key = fc.stringMatching(/^[a-z][a-zA-Z0-9]{0,8}$/);
  const scalar = fc.oneof(fc.integer(), fc.boolean(), fc.stringMatching(/^[a-z][a-z0-9 .:/-]{0,12}$/));
  const { tree } = fc.letrec((tie) => ({
    tree: fc.oneof({ depthSize: "small" }, scalar, fc.array(tie("tree"), { maxLength: 3 }), fc.dictionary(key, tie("tree"), { maxKeys: 4 })),
  }));
  const document = fc.dictionary(key, tree, { minKeys: 1, maxKeys: 5 });

  it("never reports valid YAML, in block styles the yaml library writes", () => {
    fc.assert(
      fc.property(document, fc.constantFrom(2, 4), (value, indent) => {
        const text = stringify(value, { indent, indentSeq: indent === 4 });
        expect(findIndentationIssue(text)).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it("names the line of a key moved by one column, when the library refuses the file", () => {
    let explained = 0;
    fc.assert(
      fc.property(document, fc.nat(), fc.constantFrom(-1, 1), (value, pick, shift) => {
        const lines = stringify(value).split("\n");
        const keyLines = lines.map((l, i) => [l, i] as const).filter(([l, i]) => i > 0 && /^ +[a-z][a-zA-Z0-9]*:( |$)/.test(l));
        if (keyLines.length === 0) return;
        const [line, at] = keyLines[pick % keyLines.length]!;
        lines[at] = shift > 0 ? ` ${line}` : line.slice(1);
        const text = lines.join("\n");
        const errors = parseDocument(text, { uniqueKeys: false, prettyErrors: true }).errors;
        if (errors.length === 0) return; // still valid YAML (a new nesting)
        const libraryLine = errors[0]!.linePos?.[0]?.line ?? NaN;
        const found = issues(text);
        const ours = found.filter((f) => f.includes("indentation:"));
        // When the scan explains the refusal, it names a line from the moved one on (the lines
        // above are unchanged, valid YAML), within a line of the library's, at the column where
        // that line's key starts.
        for (const f of ours) {
          const [, l, c] = /^gateway\.yaml:(\d+):(\d+): /.exec(f)!.map(Number);
          const shown = lines[l! - 1]!;
          expect(l, `${f}\n${text}`).toBeGreaterThanOrEqual(at + 1);
          expect(Math.abs(l! - libraryLine)).toBeLessThanOrEqual(1);
          expect(c).toBe(shown.length - shown.trimStart().length + 1);
        }
        if (ours.length > 0) explained++;
      }),
      { numRuns: 300 },
    );
    // Most such moves are explained in our words (some are still valid YAML, or another error comes first).
    expect(explained).toBeGreaterThan(30);
  });
});
