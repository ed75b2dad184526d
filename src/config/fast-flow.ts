// The line every tag of a generated or exported device map is written on,
// `- { name: t1, address: "a:1", type: uint16 }`, read by native code: a run of such
// sequence entries is checked by one regular expression, up to RUN_LINES lines at a time
// (lines it leaves, with a comment say, one mapping at a time), rewritten into one JSON text
// and given to JSON.parse. On a first start the parser's own JavaScript runs cold (in the
// interpreter, then compiled by TurboFan on the main thread); JSON.parse and the regular
// expressions are native code from the start: a 10,000-tag map's first parse took 60-62 ms
// without this, 34 with a match a line (branch h14-start), 25-32 with a match a run (issue 14).
//
// Only a subset whose JSON reading is its YAML reading (core schema) is taken: plain keys of
// letters, digits and "_" that are not null or a boolean; values that are double-quoted without
// escapes, `true` or `false`, numbers in JSON's grammar (at most 15 digits before and after the
// point), or words (a letter or "_", then letters, digits, "_", ".", "/", "-") that the core
// schema reads as strings. Anything else on the line (single quotes, escapes, nested
// collections, `null`, `True`, `0x10`, `.5`, a "," "{" "}" "[" "]" or "#" inside quotes) leaves
// the line to fast-yaml.ts's own reading, which gives it to the yaml library when it must. So
// what this reads never nests: one flow mapping of scalars per line, inside the sequence that
// fast-yaml.ts opened for it (and counted against MAX_NESTING).
import { NodeKind, type ConfigNode } from "./config-tree.js";

/** Words the core schema reads as null or a boolean. */
const NOT_A_STRING = "(?:[Nn]ull|NULL|[Tt]rue|TRUE|[Ff]alse|FALSE)";
const KEY = `(?!${NOT_A_STRING}:)[A-Za-z_][A-Za-z0-9_]*`;
const WORD = `(?!${NOT_A_STRING} *[,}])[A-Za-z_][A-Za-z0-9_./-]*`;
// No "," "{" "}" in quotes: the rewriting below can then never match inside a quoted value.
const QUOTED = '"[^"\\\\,{}\\[\\]#\\r\\n]*"';
const NUMBER = "-?(?:0|[1-9][0-9]{0,14})(?:\\.[0-9]{1,15})?(?:[eE][-+]?[0-9]{1,3})?";
const PAIR = `${KEY}: +(?:${QUOTED}|true|false|${NUMBER}|${WORD}) *`;

const FLOW = `\\{ *${PAIR}(?:, *${PAIR})*\\}`;

/** A flow mapping of the subset, from its "{" to its "}" (sticky: set lastIndex to the "{"). */
export const FLOW_MAP = new RegExp(FLOW, "y");

/** Lines one FLOW_RUN match takes at most: its backtracking stack grows with the lines matched. */
export const RUN_LINES = 1024;

/**
 * Whole lines `- { ... }` of the subset at one indentation (the backreference), "- " then the
 * mapping then only spaces: the lines of a device's tags, up to RUN_LINES of them in one native
 * match, instead of a test, a slice and a line break search in JavaScript per line (parsing a
 * 10,000-tag map, ~50 ms on a first start, most of it the per-line loop and its compilation by
 * TurboFan, twice). Sticky: set lastIndex to the first line's start. A line with a comment, or
 * more than one space after its "-", ends the match; fast-yaml.ts reads it line by line.
 */
const FLOW_RUN = new RegExp(`( *)- ${FLOW} *(?:\\r?\\n|$)(?:\\1- ${FLOW} *(?:\\r?\\n|$)){0,${RUN_LINES - 1}}`, "y");

/** One line of a FLOW_RUN match: its mapping's inside (the last "}" closes it: quoted values hold none). */
const RUN_LINE = / *- \{([^\n]*)\} *\r?(?:\n|$)/g;

// The rewriting of the mappings' insides, joined as `[[...],[...]]`: first each pair with a
// word value becomes `"key","word"` (true and false stay literals), then each remaining
// `key: ` becomes `"key",`: one flat [key, value, ...] array per mapping. Neither can match
// inside a quoted value, which holds no "," or "[". Two passes with replacement strings (no
// callback) run in native code: ~11 ms for 10,000 tags, JSON.parse ~6.
const WORD_PAIR = /([[,]) *([A-Za-z_][A-Za-z0-9_]*): +(?!(?:true|false) *[,\]])([A-Za-z_][A-Za-z0-9_./-]*)/g;
const PAIR_KEY = /([[,]) *([A-Za-z_][A-Za-z0-9_]*): +/g;

/**
 * The items ([key0, value0, key1, value1, ...]) of each flow mapping's inside in `insides`
 * (what is between the braces of a mapping FLOW_MAP matched whole); undefined if JSON.parse
 * refuses the rewrite (it never should).
 */
export function flowMapItems(insides: readonly string[]): ConfigNode[][] | undefined {
  return fromJson(`[[${insides.join("],[")}]]`);
}

/** readFlowRun's answer when JSON.parse refuses the rewrite of its lines (it never should). */
export const RUN_REFUSED = -2;

/**
 * Reads the FLOW_RUN lines from `start` (a line whose "- {" is at indentation `n`) into
 * `items`, a MapNode a line (its offset at its "{"); the offset after them, -1 if the line is
 * not one of them (nothing read), or RUN_REFUSED.
 */
export function readFlowRun(text: string, start: number, n: number, items: ConfigNode[]): number {
  FLOW_RUN.lastIndex = start;
  if (!FLOW_RUN.test(text)) return -1;
  const end = FLOW_RUN.lastIndex;
  // "[inside]," a line; the last comma becomes the closing bracket.
  const read = fromJson(`[${text.slice(start, end).replace(RUN_LINE, "[$1],").slice(0, -1)}]`);
  if (read === undefined) return RUN_REFUSED;
  let line = start;
  for (let k = 0; k < read.length; k++) {
    if (line >= end) return RUN_REFUSED;
    items.push({ kind: NodeKind.Map, offset: line + n + 2, items: read[k]! });
    const eol = text.indexOf("\n", line);
    line = eol < 0 ? text.length : eol + 1;
  }
  return line < end ? RUN_REFUSED : end;
}

function fromJson(rows: string): ConfigNode[][] | undefined {
  const json = rows.replace(WORD_PAIR, '$1"$2","$3"').replace(PAIR_KEY, '$1"$2",');
  try {
    return JSON.parse(json) as ConfigNode[][];
  } catch {
    return undefined;
  }
}
