// Config files that would break a reader rather than a rule: nesting far deeper than any config
// (100,000 brackets, 50,000 mappings, block nesting by indentation, lists in lists), bytes that
// are not UTF-8, and text keys holding control characters or too many characters. Each is
// refused with file:line:column, the key path and a message in words, by every reader: the fast
// parser, the yaml library's path, the validator's walk and the validated cache.
import { isUtf8 } from "node:buffer";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { LineCounter } from "yaml";
import { MAX_NESTING } from "../../src/config/config-tree.js";
import { firstNonUtf8 } from "../../src/config/config-text.js";
import { mapSchema } from "../helpers/map.js";
import { parseFast } from "../../src/config/fast-yaml.js";
import { gatewaySchema } from "../../src/config/gateway-config.js";
import { formatIssue, validateFile, validateYaml } from "../../src/config/load.js";
import { parseBounded } from "../../src/config/nesting.js";
import type { RecordSpec } from "../../src/config/schema.js";
import { validateFileCached } from "../../src/config/validated-cache.js";

const dir = mkdtempSync(join(tmpdir(), "fieldgate-hostile-text-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DEEP = /^nesting deeper than 64 levels of mappings and lists inside one another/;
const sim = (description: string) => `devices:\n  - name: sim\n    driver: simulator\n    description: ${description}\n    tags:\n      - { name: a, address: input:0 }\n`;
const nested = (n: number, open = "[", close = "]", inner = "") => open.repeat(n) + inner + close.repeat(n);

describe("nesting", () => {
  it("is read to 64 levels and refused at 65, by the fast parser and by the library's path, at the 65th's opening", () => {
    // The root mapping is the first level: `a: [[...]]` with 63 brackets is 64 levels.
    for (const [text, column] of [
      [`a: ${nested(63)}\n`, 0],
      [`a: ${nested(64)}\n`, 4 + 63],
      [`a: ${nested(63, "{b: ", "}", "1")}\n`, 0],
      [`a: ${nested(64, "{b: ", "}", "1")}\n`, 4 + 4 * 63],
    ] as const) {
      const lines = new LineCounter();
      const bounded = parseBounded(text, lines);
      if (column === 0) {
        expect("doc" in bounded && bounded.doc.errors).toEqual([]);
        expect(parseFast(text)).toBeDefined();
      } else {
        expect("tooDeep" in bounded).toBe(true);
        const deep = (bounded as { tooDeep: { offset: number; path: string } }).tooDeep;
        expect(lines.linePos(deep.offset)).toEqual({ line: 1, col: column });
        expect(deep.path).toMatch(/^a(\[0\]|\.b){7}\.\.\. \(56 levels more\)$/);
        // The fast parser leaves it to the library (which says where) rather than recurse on.
        expect(parseFast(text)).toBeUndefined();
      }
    }
  });

  it.each([
    // The root, devices and the device are the first three levels: the 62nd bracket is the 65th.
    ["100,000 nested brackets", sim(nested(100_000)), 4, 18 + 61, /^devices\[0\]\.description(\[0\]){5}\.\.\. \(56 levels more\)$/],
    ["50,000 nested flow mappings", sim(nested(50_000, "{a: ", "}", "1")), 4, 18 + 4 * 61, /^devices\[0\]\.description(\.a){5}\.\.\. \(56 levels more\)$/],
    ["50,000 lists in lists on one line", sim(`\n      ${"- ".repeat(50_000)}x`), 5, 7 + 2 * 61, /^devices\[0\]\.description(\[0\]){5}\.\.\. \(56 levels more\)$/],
  ])("%s: one issue at its position with the key path, no stack overflow", (_what, text, line, column, path) => {
    const r = validateYaml(mapSchema, text, "devices.yaml");
    expect(r.ok).toBe(false);
    expect(r.issues).toHaveLength(1);
    const issue = r.issues[0]!;
    expect(issue.message).toMatch(DEEP);
    expect([issue.line, issue.column]).toEqual([line, column]);
    expect(issue.path).toMatch(path);
  });

  it("block mappings nested by indentation: refused at the line that goes too deep", () => {
    let text = "server:\n";
    for (let i = 1; i < 80; i++) text += `${" ".repeat(i + 1)}k${i}:\n`;
    text += `${" ".repeat(82)}v: 1\n`;
    // In the fast parser's subset, until it meets the depth: it declines and the library says where.
    expect(parseFast(text)).toBeUndefined();
    const r = validateYaml(gatewaySchema, text, "gateway.yaml");
    expect(r.issues.map(formatIssue)).toEqual([`gateway.yaml:65:66: server.k1.k2.k3.k4.k5.k6.k7... (56 levels more): ${r.issues[0]!.message}`]);
    expect(r.issues[0]!.message).toMatch(DEEP);
  });

  it("the validator's walk stops at the bound where aliases take a self-nesting schema deeper than the file is written", () => {
    // A record of records of ...: no schema of the gateway nests itself, this one does.
    const tree = { kind: "record" } as { kind: "record"; values: RecordSpec };
    tree.values = tree as unknown as RecordSpec;
    // Three anchors of 30 levels each, each holding the one before: 90 levels through aliases,
    // never more than 32 as written.
    const level = (name: string, inner: string) => `${name}: &${name} ${nested(30, "{x: ", "}", inner)}\n`;
    const text = level("a0", "{}") + level("a1", "*a0") + level("a2", "*a1");
    const r = validateYaml(tree as unknown as RecordSpec, text, "deep.yaml");
    expect(r.ok).toBe(false);
    expect(r.issues).toHaveLength(1);
    expect(r.issues[0]!.message).toMatch(DEEP);
    expect(r.issues[0]!.path.split(".").length).toBe(MAX_NESTING);
  });
});

describe("bytes that are not UTF-8", () => {
  it("are found where buffer.isUtf8 says there are some, at the first one", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        const at = firstNonUtf8(bytes);
        expect(at === -1).toBe(isUtf8(bytes));
        if (at >= 0) expect(isUtf8(bytes.subarray(0, at))).toBe(true);
      }),
      { numRuns: 5000 },
    );
    // Overlong, surrogate, past U+10FFFF, cut short, a stray continuation byte.
    for (const [bytes, at] of [
      [[0x61, 0xc0, 0x80], 1],
      [[0x61, 0xed, 0xa0, 0x80], 1],
      [[0xf4, 0x90, 0x80, 0x80], 0],
      [[0x61, 0x62, 0xe2, 0x82], 2],
      [[0x80], 0],
      [[0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80], -1],
    ] as const) {
      expect(firstNonUtf8(Uint8Array.from(bytes))).toBe(at);
    }
  });

  const latin1 = (s: string) => Buffer.from(s, "latin1");

  it.each([
    ["a description", "      - { name: a, address: input:0, description: Caf\xe9 }\n", 6, 54, "devices[0].tags[0].description"],
    ["a name", "      - { name: caf\xe9, address: input:0 }\n", 6, 20, "devices[0].tags[0].name"],
    // A comment belongs to no key: the mapping around it is named.
    ["a comment", "      # \xe9t\xe9\n      - { name: a, address: input:0 }\n", 6, 9, "devices[0]"],
  ])("in %s: refused at the byte, with its key", (_what, tags, line, column, path) => {
    const file = join(dir, `latin1-${line}-${column}.yaml`);
    writeFileSync(file, latin1(`devices:\n  - name: sim\n    driver: simulator\n    # ok\n    tags:\n${tags}`));
    for (const r of [validateFile(mapSchema, file), validateFileCached(mapSchema, file, join(dir, "cache.json"))]) {
      expect(r.ok).toBe(false);
      expect(r.issues).toEqual([{ file, line, column, path, message: "byte 0xE9 is not UTF-8: the file was saved in another encoding (Latin-1, Windows-1252, ...); save it as UTF-8" }]);
    }
  });

  it("a UTF-16 file is named as one; the same text in UTF-8 is read with its accents", () => {
    const text = sim("Café à l'étage");
    const utf16 = join(dir, "utf16.yaml");
    writeFileSync(utf16, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]));
    expect(validateFile(mapSchema, utf16).issues.map((i) => i.message)).toEqual(["the file is saved as UTF-16 (it begins with a UTF-16 byte order mark); save it as UTF-8"]);
    const utf8 = join(dir, "utf8.yaml");
    writeFileSync(utf8, text);
    const r = validateFile(mapSchema, utf8);
    expect(r.ok && r.value.devices[0]!.description).toBe("Café à l'étage");
  });
});

describe("text keys", () => {
  const issue = (text: string, schema: typeof mapSchema | typeof gatewaySchema = mapSchema) => {
    const r = validateYaml(schema, text, "f.yaml");
    return r.issues.map(formatIssue);
  };

  it("refuse control characters, bidirectional controls and lone surrogates, naming the character and where it is", () => {
    expect(issue(sim(`"pump \\a room"`))).toEqual([
      'f.yaml:4:18: devices[0].description: expected a text of at most 1024 characters without control characters (line breaks and tabs allowed), got "pump \\u0007 room"; a control character (U+0007) at character 6',
    ]);
    // The message quotes it escaped: a U+202E in it would turn the rest of the line around.
    expect(issue(sim(`"abc\\u202Edef"`))[0]).toMatch(/got "abc\\u202edef"; a bidirectional control character \(U\+202E\) at character 4$/);
    expect(issue(sim(`"x\\u0085"`))[0]).toMatch(/got "x\\u0085"; a control character \(U\+0085\) at character 2$/);
    expect(issue(sim(`"\\uD800"`))[0]).toMatch(/a lone surrogate \(U\+D800\) at character 1$/);
    // A description may have lines and tabs (a block scalar), a name of the server may not.
    expect(issue(sim(`|\n      two\n      \tlines`))).toEqual([]);
    expect(issue(`server:\n  applicationName: "two\\nlines"\n`, gatewaySchema)[0]).toMatch(
      /^f\.yaml:2:20: server\.applicationName: expected a text of 1 to 64 characters without control characters, got "two\\nlines"; a control character \(U\+000A\) at character 4$/,
    );
  });

  it("refuse more characters than they hold, saying how many", () => {
    expect(issue(sim("x".repeat(1025)))[0]).toMatch(/^f\.yaml:4:18: devices\[0\]\.description: expected a text of at most 1024 characters .*; it has 1025 characters$/);
    expect(issue(sim("x".repeat(1024)))).toEqual([]);
    // The server's name is its certificate's CN (RFC 5280 ub-common-name: 64).
    expect(issue(`server:\n  applicationName: ${"n".repeat(65)}\n`, gatewaySchema)[0]).toMatch(/it has 65 characters$/);
    expect(issue(`server:\n  host: "10.0.0.1\\r"\n`, gatewaySchema)[0]).toMatch(/^f\.yaml:2:9: server\.host: .*a control character \(U\+000D\) at character 9$/);
    expect(issue(`buses:\n  l: { port: "/dev/tty\\0" }\ndevices: []\n`)[0]).toMatch(/buses\.l\.port: .*a control character \(U\+0000\) at character 9$/);
  });
});
