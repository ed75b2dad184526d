// The line every tag of a generated or exported device map is written on,
// `- { name: t1, address: "holding:1", type: uint16 }`, read by native code: the flow mappings of
// a run of such sequence entries are checked by one regular expression each, rewritten into one
// JSON text and given to JSON.parse. On a first start the parser's own JavaScript runs cold (in
// the interpreter, then compiled by TurboFan on the main thread); JSON.parse and the regular
// expressions are native code from the start: a 10,000-tag map's first parse took 60-62 ms
// without this, 34 with it (bench/RESULTS.md, issue 14, branch h14-start).
//
// Only a subset whose JSON reading is its YAML reading (core schema) is taken: plain keys of
// letters, digits and "_" that are not null or a boolean; values that are double-quoted without
// escapes, `true` or `false`, numbers in JSON's grammar (at most 15 digits before and after the
// point), or words (a letter or "_", then letters, digits, "_", ".", "/", "-") that the core
// schema reads as strings. Anything else on the line (single quotes, escapes, nested
// collections, `null`, `True`, `0x10`, `.5`, a "," "{" "}" "[" "]" or "#" inside quotes) leaves
// the line to fast-yaml.ts's own reading, which gives it to the yaml library when it must.
import type { ConfigNode } from "./config-tree.js";

/** Words the core schema reads as null or a boolean. */
const NOT_A_STRING = "(?:[Nn]ull|NULL|[Tt]rue|TRUE|[Ff]alse|FALSE)";
const KEY = `(?!${NOT_A_STRING}:)[A-Za-z_][A-Za-z0-9_]*`;
const WORD = `(?!${NOT_A_STRING} *[,}])[A-Za-z_][A-Za-z0-9_./-]*`;
// No "," "{" "}" in quotes: the rewriting below can then never match inside a quoted value.
const QUOTED = '"[^"\\\\,{}\\[\\]#\\r\\n]*"';
const NUMBER = "-?(?:0|[1-9][0-9]{0,14})(?:\\.[0-9]{1,15})?(?:[eE][-+]?[0-9]{1,3})?";
const PAIR = `${KEY}: +(?:${QUOTED}|true|false|${NUMBER}|${WORD}) *`;

/** A flow mapping of the subset, from its "{" to its "}" (sticky: set lastIndex to the "{"). */
export const FLOW_MAP = new RegExp(`\\{ *${PAIR}(?:, *${PAIR})*\\}`, "y");

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
  const json = `[[${insides.join("],[")}]]`.replace(WORD_PAIR, '$1"$2","$3"').replace(PAIR_KEY, '$1"$2",');
  try {
    return JSON.parse(json) as ConfigNode[][];
  } catch {
    return undefined;
  }
}
