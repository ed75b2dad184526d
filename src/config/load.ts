// Reads a YAML config file and validates it against a schema. Every failure (missing file,
// YAML syntax, schema) comes out the same way: ConfigIssue[] with file:line:column, so that
// `fieldgate validate` and start-up print them identically.
import { dirname, resolve } from "node:path";
import type { YAMLError } from "yaml";
import { fromDocument, TOO_DEEP, yamlLibrary, type LinePositions } from "./config-tree.js";
import { parseBounded } from "./nesting.js";
import { readConfigText } from "./config-text.js";
import { ConfigError, type ConfigIssue } from "./errors.js";
import { parseFast } from "./fast-yaml.js";
import { findIndentationIssue } from "./yaml-indent.js";
import { gatewaySchema, type GatewayConfig } from "./gateway-config.js";
import type { Infer, Schema } from "./schema.js";
import { validateDocument, type ValidationResult } from "./validate.js";

export { ConfigError, formatIssue, type ConfigIssue } from "./errors.js";

/**
 * Validates YAML text as if it were the file `file` (shown in messages; its folder anchors
 * relative paths unless `dir` names another: the FAT drive's import checks a file under the
 * name it has there, with paths as they will resolve where it goes). Used by the loaders below,
 * the import and tests.
 *
 * Two passes at most: the fast parser (fast-yaml.ts) for files in its plain subset, and when
 * it declines the file, or the file has any issue, the yaml library's Document, whose positions
 * and syntax errors are the ones every message has always been given from. A valid device map
 * of 10,000 tags is read in the first pass alone; a bad one is worth the second.
 */
export function validateYaml<S extends Schema>(schema: S, text: string, file: string, dir = dirname(resolve(file))): ValidationResult<Infer<S>> {
  const root = parseFast(text);
  if (root !== undefined) {
    const fast = validateDocument(schema, { root, lines: NO_LINES, file, dir });
    if (fast.ok) return fast;
  }
  const { LineCounter } = yamlLibrary();
  const lines = new LineCounter();
  const parsed = parseBounded(text, lines);
  if ("tooDeep" in parsed) {
    const { line, col } = lines.linePos(parsed.tooDeep.offset);
    return { ok: false, issues: [{ file, line, column: col, path: parsed.tooDeep.path, message: TOO_DEEP }] };
  }
  const doc = parsed.doc;
  if (doc.errors.length > 0) {
    const issues = doc.errors.map((e) => syntaxIssue(e, file, lines));
    // An indentation mistake: said where it is, in our words (yaml-indent.ts).
    const indent = findIndentationIssue(text);
    if (indent !== undefined && Math.abs(indent.line - issues[0]!.line) <= 1) {
      return { ok: false, issues: [{ file, line: indent.line, column: indent.column, path: "", message: `indentation: ${indent.message}` }] };
    }
    return { ok: false, issues };
  }
  return validateDocument(schema, { root: fromDocument(doc), lines, file, dir });
}

/** The fast pass's issues are never shown (the second pass gives them): no line table for it. */
const NO_LINES: LinePositions = { linePos: () => ({ line: 0, col: 0 }) };

/** Reads and validates `file`; the issues are empty when it is valid. */
export function validateFile<S extends Schema>(schema: S, file: string): ValidationResult<Infer<S>> {
  const read = readConfigText(file);
  if (!read.ok) return { ok: false, issues: [read.issue] };
  return validateYaml(schema, read.text, file);
}

/** Reads and validates `file`, or throws ConfigError with every issue found. */
export function loadFile<S extends Schema>(schema: S, file: string): Infer<S> {
  const result = validateFile(schema, file);
  if (!result.ok) throw new ConfigError(result.issues);
  return result.value;
}

export function loadGatewayConfig(file: string): GatewayConfig {
  return loadFile(gatewaySchema, file);
}

/** For `fieldgate validate`: every issue of the gateway config, none when it is valid. */
export function validateConfigFile(file: string): ConfigIssue[] {
  return [...validateFile(gatewaySchema, file).issues];
}

// The parser's wording for the mistakes people make most, in the words of the person editing.
const SYNTAX_MESSAGES: Partial<Record<string, string>> = {
  TAB_AS_INDENT: "a tab is used for indentation; YAML indents with spaces only",
  MULTIPLE_DOCS: "the file holds more than one YAML document (a second ---); a config file holds one",
};

function syntaxIssue(err: YAMLError, file: string, lines: LinePositions): ConfigIssue {
  const { line, col } = lines.linePos(err.pos[0]);
  const text = SYNTAX_MESSAGES[err.code] ?? err.message.replace(/\.$/, "");
  return { file, line, column: col, path: "", message: `YAML syntax error: ${text}` };
}
