// A parser for the plain subset of YAML that config files and device maps are written in:
// block mappings and sequences, one-line flow collections (`{ name: t1, address: "a:1" }`,
// `[0, 100]`), plain and quoted one-line scalars, comments. It builds the ConfigNode tree
// directly, one record per node, so a 10,000-tag map parses in milliseconds where composing
// the yaml library's Document takes about a second and ~50 MB of garbage on a small board.
// A sequence's run of one-line flow mappings (a device map's tags) is read by fast-flow.ts, in
// native code, when it is in that file's narrower subset.
//
// It never decides a question of YAML on its own: anything outside that subset (anchors,
// aliases, tags, block scalars, multi-line scalars or flow collections, explicit keys,
// directives, document markers, tabs, odd indentation, a byte the spec forbids, a syntax
// error, nesting deeper than MAX_NESTING) makes it answer undefined, and the caller composes the
// file with the yaml library instead (which says where it nests too deep: nesting.ts). Where it answers, the tree has the structure and values that library gives (YAML 1.2
// core schema for plain scalars), which test/config/fast-yaml.test.ts checks on generated files;
// its scalars are bare values, without position or source text (config-tree.ts says why).
import { MAX_NESTING, NodeKind, NULL_SCALAR, type BareScalar, type ConfigNode, type MapNode, type SeqNode } from "./config-tree.js";
import { FLOW_MAP, flowMapItems, readFlowRun, RUN_REFUSED } from "./fast-flow.js";

/**
 * Characters the subset leaves to the yaml library: tabs (indentation errors, or separators
 * that need its rules), C0/C1 controls, a byte-order mark or non-characters, a lone CR.
 */
// eslint-disable-next-line no-control-regex
const OUTSIDE = /[\t\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufeff\ufffe\uffff]|\r(?!\n)/;

/** Thrown inside the parser to give up; never escapes parseFast. */
const BAIL: unique symbol = Symbol("outside the fast subset");

// Scanning for the end of a scalar or key is left to regular expressions (native code) rather
// than loops over characters. Each alternative matches one character, so the match's start is
// `lastIndex - 1`.
/** Where an implicit key or a block plain scalar stops: a colon that ends a key, a comment, the line's end. */
const BLOCK_STOP = /:(?=[ \r\n]|$)| (?=#)|[\r\n]/g;
/** Where a plain scalar inside a flow collection stops. */
const FLOW_STOP = /[,[\]{}\r\n]|:(?=[ ,[\]{}\r\n]|$)| (?=#)/g;
const DQ_STOP = /[\\"\r\n]/g;
const SQ_STOP = /['\r\n]/g;

/** Slots of the parser's table of short strings (a power of two). */
const STRING_TABLE = 1024;

/** Longest implicit key YAML allows (YAML 1.2 §7.4.2: at most 1024 Unicode characters). */
const MAX_KEY = 1024;

const SPACE = 0x20;
const LF = 0x0a;
const CR = 0x0d;
const HASH = 0x23;
const COLON = 0x3a;
const DASH = 0x2d;
const DQUOTE = 0x22;
const SQUOTE = 0x27;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const COMMA = 0x2c;

/** The tree of `text`, or undefined when the yaml library has to parse it. */
export function parseFast(text: string): ConfigNode | undefined {
  if (OUTSIDE.test(text)) return undefined;
  try {
    return new FastParser(text).document();
  } catch (err) {
    if (err === BAIL) return undefined;
    throw err;
  }
}

function bail(): never {
  throw BAIL;
}

/** Characters that cannot start a plain scalar (YAML 1.2 §7.3.3 c-indicator), here or ever. */
function badPlainStart(c: number, next: number): boolean {
  switch (c) {
    case DASH:
      // "-5", "-x" are plain scalars; "- " starts a sequence entry, and "-:" or "-," are
      // questions of context: only a letter, digit or "." after the dash is taken.
      return !(isWordChar(next) || next === 0x2e);
    case 0x3f: // ?
    case COLON:
      return true;
    case COMMA:
    case LBRACKET:
    case RBRACKET:
    case LBRACE:
    case RBRACE:
    case HASH:
    case 0x26: // &
    case 0x2a: // *
    case 0x21: // !
    case 0x7c: // |
    case 0x3e: // >
    case SQUOTE:
    case DQUOTE:
    case 0x25: // %
    case 0x40: // @
    case 0x60: // `
    case SPACE:
      return true;
    default:
      return false;
  }
}

function isWordChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
}

const DQ_ESCAPES: Readonly<Record<string, string>> = {
  "0": "\0",
  a: "\x07",
  b: "\b",
  e: "\x1b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  N: "\u0085",
  _: "\u00a0",
  L: "\u2028",
  P: "\u2029",
  " ": " ",
  '"': '"',
  "/": "/",
  "\\": "\\",
};

// The core schema's plain-scalar tags, tried in the yaml library's order (schema/core).
const NULL_RE = /^(?:~|[Nn]ull|NULL)$/;
const BOOL_RE = /^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/;
const OCT_RE = /^0o[0-7]+$/;
const INT_RE = /^[-+]?[0-9]+$/;
const HEX_RE = /^0x[0-9a-fA-F]+$/;
const NAN_RE = /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/;
const EXP_RE = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$/;
const FLOAT_RE = /^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/;

/** A plain scalar's value under the YAML 1.2 core schema, as the yaml library resolves it. */
export function resolvePlain(s: string): BareScalar | null {
  const c = s.charCodeAt(0);
  // Most plain scalars are words: only n/N/t/T/f/F, ~, digits, signs and "." can be anything else.
  const maybe = c === 0x7e || c === 0x2b || c === DASH || c === 0x2e || (c >= 0x30 && c <= 0x39) || "nNtTfF".includes(s[0]!);
  if (!maybe) return s;
  if (NULL_RE.test(s)) return null;
  if (BOOL_RE.test(s)) return c === 0x74 || c === 0x54;
  if (OCT_RE.test(s)) return parseInt(s.substring(2), 8);
  if (INT_RE.test(s)) return parseInt(s, 10);
  if (HEX_RE.test(s)) return parseInt(s.substring(2), 16);
  if (NAN_RE.test(s)) return s.slice(-3).toLowerCase() === "nan" ? NaN : s[0] === "-" ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  if (EXP_RE.test(s) || FLOAT_RE.test(s)) return parseFloat(s);
  return s;
}

/** A scalar of the fast tree: its bare value, or the shared null. */
function scalar(value: BareScalar | null): ConfigNode {
  return value === null ? NULL_SCALAR : value;
}

class FastParser {
  private readonly text: string;
  private readonly end: number;
  /** The current line: its first character, its end (before CR LF), its indentation. */
  private lineStart = 0;
  private lineEnd = 0;
  /** -1 at the end of the text. */
  private indent = -1;
  /** Where the next line starts. */
  private next = 0;
  /** Where the last quoted scalar, flow collection or flow node read ended. */
  private pos = 0;
  /** Scratch arrays by nesting depth (open/close). */
  private readonly scratch: ConfigNode[][] = [];
  private depth = 0;

  /** Strings met before, by a hash of their characters: one "name" for 10,000 `name:` keys. */
  private readonly strings: (string | undefined)[] = new Array<string | undefined>(STRING_TABLE).fill(undefined);

  constructor(text: string) {
    this.text = text;
    this.end = text.length;
  }

  /**
   * A collection's entries are gathered in a scratch array of its nesting depth and copied to
   * an array of their exact count when it closes: a 3-key mapping keeps 6 slots, not the 17
   * that pushing into a new array reserves (10,000 of them are alive until validation ends).
   */
  private open(): ConfigNode[] {
    // Every collection opens here before its entries are read (the parser's only recursion).
    if (this.depth >= MAX_NESTING) bail();
    const s = (this.scratch[this.depth++] ??= []);
    s.length = 0;
    return s;
  }

  private close(items: ConfigNode[]): ConfigNode[] {
    this.depth--;
    return items.slice();
  }

  /** text.slice(start, end), the same string as last time for short repeated words. */
  private str(start: number, end: number): string {
    const t = this.text;
    const n = end - start;
    if (n > 24 || n === 0) return t.slice(start, end);
    // Length and three characters: a collision only costs a slice.
    const h = n * 961 + t.charCodeAt(start) * 31 + t.charCodeAt(start + (n >> 1)) * 7 + t.charCodeAt(end - 1);
    const slot = h & (STRING_TABLE - 1);
    const known = this.strings[slot];
    if (known !== undefined && known.length === n && t.startsWith(known, start)) return known;
    const s = t.slice(start, end);
    this.strings[slot] = s;
    return s;
  }

  document(): ConfigNode {
    this.nextLine();
    if (this.indent < 0) bail(); // empty: the yaml library says how
    const root = this.blockNode(-1);
    if (this.indent >= 0) bail(); // something the grammar above did not take
    return root;
  }

  /** Moves to the next line that holds more than spaces and a comment. */
  private nextLine(): void {
    const t = this.text;
    let pos = this.next;
    while (pos < this.end) {
      let eol = t.indexOf("\n", pos);
      const next = eol < 0 ? this.end : eol + 1;
      if (eol < 0) eol = this.end;
      if (eol > pos && t.charCodeAt(eol - 1) === CR) eol--;
      let i = pos;
      while (i < eol && t.charCodeAt(i) === SPACE) i++;
      if (i < eol && t.charCodeAt(i) !== HASH) {
        if (i === pos) {
          // Directives and document markers belong to the yaml library.
          const c = t.charCodeAt(i);
          if (c === 0x25) bail();
          if ((t.startsWith("---", i) || t.startsWith("...", i)) && (i + 3 === eol || t.charCodeAt(i + 3) === SPACE)) bail();
        }
        this.lineStart = pos;
        this.lineEnd = eol;
        this.indent = i - pos;
        this.next = next;
        return;
      }
      pos = next;
    }
    this.indent = -1;
    this.lineStart = this.lineEnd = this.next = this.end;
  }

  /** Offset of the first match of a one-character STOP expression at or after `from`; the text's end if none. */
  private find(re: RegExp, from: number): number {
    re.lastIndex = from;
    return re.test(this.text) ? re.lastIndex - 1 : this.end;
  }

  private at(i: number): number {
    return i < this.lineEnd ? this.text.charCodeAt(i) : LF;
  }

  private skipSpaces(i: number): number {
    while (i < this.lineEnd && this.text.charCodeAt(i) === SPACE) i++;
    return i;
  }

  /** Whether only spaces and a comment follow `i` on the line (a comment needs a space before it). */
  private restIsEmpty(i: number): boolean {
    const j = this.skipSpaces(i);
    if (j >= this.lineEnd) return true;
    return this.text.charCodeAt(j) === HASH && (j > i || j === this.lineStart);
  }

  private isSeqEntry(i: number): boolean {
    if (this.text.charCodeAt(i) !== DASH) return false;
    const c = this.at(i + 1);
    return c === SPACE || c === LF;
  }

  /** The node whose first line is the current one, at its indentation (> parentIndent). */
  private blockNode(parentIndent: number): ConfigNode {
    const n = this.indent;
    const first = this.lineStart + n;
    if (this.isSeqEntry(first)) return this.blockSeq(n);
    const map = this.blockMap(n, first);
    if (map) return map;
    // A scalar or flow collection alone on its line; more lines inside it are for the library.
    const node = this.inlineValue(first);
    this.nextLine();
    if (this.indent > parentIndent) bail();
    return node;
  }

  /**
   * The value of `key:` or `-` with nothing after it on the line: the more indented lines that
   * follow, a sequence at the key's own indentation (YAML allows `key:\n- a`), or empty.
   */
  private blockValue(ownerIndent: number, seqAtOwner: boolean): ConfigNode {
    this.nextLine();
    if (this.indent > ownerIndent) return this.blockNode(ownerIndent);
    if (seqAtOwner && this.indent === ownerIndent && this.isSeqEntry(this.lineStart + this.indent)) return this.blockSeq(ownerIndent);
    return NULL_SCALAR;
  }

  /** A block mapping at indentation `n` whose first key starts at `first`; null if that is no key. */
  private blockMap(n: number, first: number): MapNode | null {
    let keyEnd = this.keyAt(first);
    if (keyEnd < 0) return null;
    const items = this.open();
    let start = first;
    for (;;) {
      const key = this.key(start, keyEnd);
      let value: ConfigNode;
      if (this.restIsEmpty(keyEnd + 1)) {
        value = this.blockValue(n, true);
      } else {
        value = this.inlineValue(this.skipSpaces(keyEnd + 1));
        this.nextLine();
      }
      items.push(key, value);
      if (this.indent < n) return { kind: NodeKind.Map, offset: first, items: this.close(items) };
      if (this.indent > n) bail();
      start = this.lineStart + n;
      if (this.isSeqEntry(start)) bail();
      keyEnd = this.keyAt(start);
      if (keyEnd < 0) bail();
    }
  }

  /** A block sequence whose entries start with "-" at indentation `n`. */
  private blockSeq(n: number): SeqNode {
    const items = this.open();
    const offset = this.lineStart + n;
    for (;;) {
      const dash = this.lineStart + n;
      if (this.restIsEmpty(dash + 1)) {
        items.push(this.blockValue(n, false));
      } else {
        const v = this.skipSpaces(dash + 1);
        if (this.isSeqEntry(v)) bail(); // "- - a": a compact nested sequence
        // A run of `- { ... }` entries (a device's tags) goes to native code (fast-flow.ts).
        if (this.text.charCodeAt(v) !== LBRACE || !this.flowRun(n, v, items)) {
          const map = this.blockMap(v - this.lineStart, v);
          if (map) {
            items.push(map);
          } else {
            items.push(this.inlineValue(v));
            this.nextLine();
          }
        }
      }
      if (this.indent > n) bail();
      if (this.indent < n || !this.isSeqEntry(this.lineStart + n)) return { kind: NodeKind.Seq, offset, items: this.close(items) };
    }
  }

  /**
   * Reads entries of the sequence at indentation `n` whose flow mapping (the first at `v`) is
   * in fast-flow.ts's subset and alone on its line, into `items`; stops at the first entry that
   * is not (the caller reads it). False, with nothing read, when the first is not.
   */
  private flowRun(n: number, v: number, items: ConfigNode[]): boolean {
    const t = this.text;
    const before = items.length;
    const maps: string[] = [];
    const offsets: number[] = [];
    for (let at = v; ; ) {
      // Whole lines at once where they are plain ("- {", fast-flow.ts readFlowRun), else this line.
      const run = at === this.lineStart + n + 2 && this.flushed(maps, offsets, items) ? readFlowRun(t, this.lineStart, n, items) : -1;
      if (run === RUN_REFUSED) bail();
      if (run >= 0) {
        this.next = run;
      } else {
        FLOW_MAP.lastIndex = at;
        if (!FLOW_MAP.test(t)) break;
        const end = FLOW_MAP.lastIndex;
        if (end > this.lineEnd || !this.restIsEmpty(end)) break;
        maps.push(t.slice(at + 1, end - 1));
        offsets.push(at);
      }
      this.nextLine();
      if (this.indent !== n || !this.isSeqEntry(this.lineStart + n)) break;
      at = this.skipSpaces(this.lineStart + n + 1);
      if (t.charCodeAt(at) !== LBRACE) break;
    }
    this.flushed(maps, offsets, items);
    return items.length > before;
  }

  /** Adds the mappings read line by line so far (their insides and offsets) to `items`, in order; true. */
  private flushed(maps: string[], offsets: number[], items: ConfigNode[]): true {
    if (maps.length === 0) return true;
    const read = flowMapItems(maps);
    if (read === undefined || read.length !== maps.length) bail();
    for (let k = 0; k < read.length; k++) items.push({ kind: NodeKind.Map, offset: offsets[k]!, items: read[k]! });
    maps.length = 0;
    offsets.length = 0;
    return true;
  }

  /**
   * If an implicit key starts at `i` (`name:` then a space or the line's end), the offset of
   * its colon; else -1. Quoted keys and plain keys of one line only.
   */
  private keyAt(i: number): number {
    const t = this.text;
    const c = t.charCodeAt(i);
    if (c === DQUOTE || c === SQUOTE) {
      const close = this.quotedEnd(i);
      if (close < 0) return -1;
      if (this.at(close) !== COLON) return -1;
      const after = this.at(close + 1);
      return after === SPACE || after === LF ? close : -1;
    }
    if (c === LBRACKET || c === LBRACE) return -1;
    const p = this.find(BLOCK_STOP, i);
    return p < this.lineEnd && t.charCodeAt(p) === COLON ? p : -1;
  }

  /** The key node of a pair whose colon is at `colon`. */
  private key(start: number, colon: number): ConfigNode {
    const t = this.text;
    const c = t.charCodeAt(start);
    if (c === DQUOTE || c === SQUOTE) return this.quoted(start);
    let end = colon;
    while (end > start && t.charCodeAt(end - 1) === SPACE) end--;
    if (end === start || end - start > MAX_KEY || end !== colon) bail();
    if (badPlainStart(c, this.at(start + 1))) bail();
    const source = this.str(start, end);
    // "a:b: c", "x{y}: z": legal, rare, and a question of the library's rules.
    for (let j = start; j < end; j++) {
      const d = t.charCodeAt(j);
      if (d === COLON || d === COMMA || d === LBRACKET || d === RBRACKET || d === LBRACE || d === RBRACE) bail();
    }
    return scalar(resolvePlain(source));
  }

  /** A value that starts at `i` and ends on this line, with only a comment after it. */
  private inlineValue(i: number): ConfigNode {
    const t = this.text;
    const c = t.charCodeAt(i);
    let node: ConfigNode;
    let end: number;
    if (c === DQUOTE || c === SQUOTE) {
      node = this.quoted(i);
      end = this.pos;
    } else if (c === LBRACKET || c === LBRACE) {
      node = this.flowCollection(i);
      end = this.pos;
    } else {
      if (badPlainStart(c, this.at(i + 1))) bail();
      // A plain scalar runs to the comment or the line's end; ": " inside would be a mapping.
      const p = this.find(BLOCK_STOP, i);
      if (p < this.lineEnd && t.charCodeAt(p) === COLON) bail();
      end = Math.min(p, this.lineEnd);
      while (end > i && t.charCodeAt(end - 1) === SPACE) end--;
      node = scalar(resolvePlain(this.str(i, end)));
    }
    if (!this.restIsEmpty(end)) bail();
    return node;
  }

  /** Offset of the closing quote of the quoted scalar at `i`, or -1 when it does not close on this line. */
  private quotedEnd(i: number): number {
    const t = this.text;
    const double = t.charCodeAt(i) === DQUOTE;
    const re = double ? DQ_STOP : SQ_STOP;
    let j = this.find(re, i + 1);
    while (j < this.lineEnd) {
      const d = t.charCodeAt(j);
      if (d === LF || d === CR) return -1;
      if (double && d === 0x5c) {
        // An escape: the next character is its letter, even a quote; none at the line's end.
        if (j + 1 >= this.lineEnd) return -1;
        j = this.find(re, j + 2);
        continue;
      }
      if (!double && this.at(j + 1) === SQUOTE) {
        j = this.find(re, j + 2);
        continue;
      }
      return j + 1;
    }
    return -1;
  }

  /** The quoted scalar at `i`; `pos` is set after its closing quote. */
  private quoted(i: number): string {
    const t = this.text;
    const end = this.quotedEnd(i);
    if (end < 0) bail();
    let value: string;
    const raw = this.str(i + 1, end - 1);
    if (t.charCodeAt(i) === SQUOTE) value = raw.includes("'") ? raw.replace(/''/g, "'") : raw;
    else value = raw.includes("\\") ? unescape(raw) : raw;
    this.pos = end;
    return value;
  }

  /** A flow mapping or sequence that closes on this line; `pos` is set after it. */
  private flowCollection(i: number): ConfigNode {
    const t = this.text;
    const isMap = t.charCodeAt(i) === LBRACE;
    const close = isMap ? RBRACE : RBRACKET;
    let p = this.skipSpaces(i + 1);
    if (this.at(p) === close) {
      // An empty one is a level too (open() counts the others).
      if (this.depth >= MAX_NESTING) bail();
      this.pos = p + 1;
      return isMap ? { kind: NodeKind.Map, offset: i, items: [] } : { kind: NodeKind.Seq, offset: i, items: [] };
    }
    const items = this.open();
    for (;;) {
      const entry = this.flowNode(p, isMap);
      p = this.pos;
      if (isMap) {
        // `key: value` with a space after the colon; `{ a }`, `{ a: }` and `"a":b` are left out.
        if (this.at(p) !== COLON || this.at(p + 1) !== SPACE) bail();
        const v = this.skipSpaces(p + 1);
        const c = this.at(v);
        if (c === COMMA || c === close || c === LF) bail();
        items.push(entry, this.flowNode(v, false));
        p = this.pos;
      } else {
        // `[a: b]` is a mapping in a sequence.
        if (this.at(p) === COLON) bail();
        items.push(entry);
      }
      p = this.skipSpaces(p);
      const c = this.at(p);
      if (c === close) break;
      if (c !== COMMA) bail();
      p = this.skipSpaces(p + 1);
      if (this.at(p) === close) break; // a trailing comma is allowed
    }
    this.pos = p + 1;
    const kept = this.close(items);
    return isMap ? { kind: NodeKind.Map, offset: i, items: kept } : { kind: NodeKind.Seq, offset: i, items: kept };
  }

  /** A node inside a flow collection, a plain key ending before its colon; `pos` is set after it. */
  private flowNode(i: number, asKey: boolean): ConfigNode {
    const t = this.text;
    const c = this.at(i);
    if (c === DQUOTE || c === SQUOTE) return this.quoted(i);
    if (c === LBRACKET || c === LBRACE) {
      if (asKey) bail();
      return this.flowCollection(i);
    }
    if (c === LF || badPlainStart(c, this.at(i + 1))) bail();
    const j = this.find(FLOW_STOP, i);
    // No closing bracket on this line, a comment inside (the collection goes on below), or a
    // bracket inside a plain scalar: the library's to read.
    if (j >= this.lineEnd) bail();
    const d = t.charCodeAt(j);
    if (d === SPACE || d === LBRACKET || d === LBRACE) bail();
    let last = j;
    while (last > i && t.charCodeAt(last - 1) === SPACE) last--;
    if (asKey && last !== j) bail(); // "a : b"
    this.pos = last;
    return scalar(resolvePlain(this.str(i, last)));
  }
}

/** The value of a one-line double-quoted scalar's text (YAML 1.2 §5.7 escapes). */
function unescape(raw: string): string {
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i]!;
    if (ch !== "\\") {
      out += ch;
      continue;
    }
    const next = raw[++i];
    if (next === undefined) bail();
    const simple = DQ_ESCAPES[next];
    if (simple !== undefined) {
      out += simple;
      continue;
    }
    const length = next === "x" ? 2 : next === "u" ? 4 : next === "U" ? 8 : 0;
    const hex = raw.substr(i + 1, length);
    if (length === 0 || hex.length !== length || !/^[0-9a-fA-F]+$/.test(hex)) bail();
    const code = parseInt(hex, 16);
    if (code > 0x10ffff) bail();
    out += String.fromCodePoint(code);
    i += length;
  }
  return out;
}
