// How deep the mappings and lists of a config file may nest, and the yaml library's reading of a
// file with that bound. The library composes a Document, and fromDocument (config-tree.ts) and
// fast-yaml.ts read one, by recursion: 100,000 nested brackets ended every one of them with
// "Maximum call stack size exceeded", without a position, in `fieldgate validate` and on a
// reload. A file beyond MAX_NESTING (config-tree.ts) is refused where it goes too deep, with the
// keys that lead there, before anything recursive reads it.
//
// The library's lexer and CST parser keep their nesting in arrays, not on the call stack: the
// file is fed to them lexeme by lexeme, the parser's stack (the collections open at that point)
// is watched, and the reading stops at the first collection past the bound. Only a file within
// it is composed, from the same tokens (no second parse).
import type { CST, Document, LineCounter } from "yaml";
import { MAX_NESTING, yamlLibrary } from "./config-tree.js";
import { formatPath } from "./validate.js";

/** Where a file nests deeper than MAX_NESTING: the offset of the collection too many, and the keys that lead to it. */
export interface TooDeep {
  readonly offset: number;
  readonly path: string;
}

/**
 * parseDocument(text, { lineCounter: lines, uniqueKeys: false }) of the yaml library (its
 * first document, with MULTIPLE_DOCS among its errors if there are more), or where `text` nests
 * deeper than MAX_NESTING.
 */
export function parseBounded(text: string, lines: LineCounter): { readonly doc: Document.Parsed } | { readonly tooDeep: TooDeep } {
  const { Composer, Lexer, Parser } = yamlLibrary();
  const parser = new Parser(lines.addNewLine);
  const tokens: CST.Token[] = [];
  lines.addNewLine(0);
  for (const lexeme of new Lexer().lex(text, false)) {
    for (const token of parser.next(lexeme)) tokens.push(token);
    // The stack holds the document, the collections open, and a scalar being read.
    if (parser.stack.length > MAX_NESTING + 1) {
      const tooDeep = deepest(parser.stack);
      if (tooDeep !== undefined) return { tooDeep };
    }
  }
  for (const token of parser.end()) tokens.push(token);
  // uniqueKeys off: validate.ts reports duplicates itself, with the key path and the first line.
  const composer = new Composer({ uniqueKeys: false });
  let doc: Document.Parsed | undefined;
  for (const d of composer.compose(tokens, true, text.length)) {
    if (doc === undefined) {
      doc = d;
    } else {
      // As parseDocument says it.
      const { YAMLParseError } = yamlLibrary();
      doc.errors.push(new YAMLParseError(d.range.slice(0, 2) as [number, number], "MULTIPLE_DOCS", "Source contains multiple documents; please use YAML.parseAllDocuments()"));
      break;
    }
  }
  return { doc: doc! };
}

/** The collection past MAX_NESTING among the parser's open tokens, with the keys to it; undefined if none. */
function deepest(stack: readonly CST.Token[]): TooDeep | undefined {
  const { CST: cst } = yamlLibrary();
  const path: (string | number)[] = [];
  let depth = 0;
  for (const token of stack) {
    if (!cst.isCollection(token)) continue;
    if (++depth > MAX_NESTING) return { offset: token.offset, path: shortPath(path) };
    // The item being read is the last one: in a list its index, in a mapping its key.
    const items = token.items;
    const item = items[items.length - 1];
    const isList = token.type === "block-seq" || (token.type === "flow-collection" && token.start.source === "[");
    if (isList) path.push(Math.max(0, items.length - 1));
    else path.push(keyText(item?.key ?? null));
  }
  return undefined;
}

/** The path of a deep node: its first keys, and how many levels follow (what leads there is what a person looks for). */
function shortPath(path: readonly (string | number)[]): string {
  const SHOWN = 8;
  return path.length <= SHOWN ? formatPath(path) : `${formatPath(path.slice(0, SHOWN))}... (${path.length - SHOWN} levels more)`;
}

/** A mapping key as a path segment: its scalar value, or "?" for a key that is itself a collection. */
function keyText(key: CST.Token | null): string {
  const { CST: cst } = yamlLibrary();
  if (key === null || !cst.isScalar(key)) return "?";
  const scalar = cst.resolveAsScalar(key);
  return scalar === null ? "?" : scalar.value;
}
