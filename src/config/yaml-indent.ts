// An indentation mistake in our words, at the line and column where it is. The yaml library
// reports a key indented too far as "Nested mappings are not allowed in compact mappings" on the
// line before it (the value it would nest under), and one indented too little as "All mapping
// items must start at the same column" at column 1; both are true, neither tells a person
// editing gateway.yaml what to do. When the library refuses a file, load.ts asks this scan of
// the block structure first: it follows the keys and sequence items by their indentation and
// names the first line that lines up with nothing, or nests under a key that already has a value.
//
// It only ever explains a refusal (it runs when the library found an error, and its finding is
// used only within a line of the library's), so a construct it does not follow (flow
// collections over several lines, block scalars, multi-line quoted strings) makes it step
// aside rather than guess.

export interface IndentationIssue {
  /** 1-based. */
  readonly line: number;
  readonly column: number;
  readonly message: string;
}

interface Level {
  /** Column (0-based) of the keys or "-" of this level. */
  readonly indent: number;
  readonly line: number;
  readonly label: string;
}

interface Entry {
  readonly line: number;
  readonly indent: number;
  /** Column of the key when the line is "- key: ..." (the item's mapping), else of the key or "-". */
  readonly contentIndent: number;
  readonly label: string;
  /** A key with a value on its own line ("key: 3"): nothing may nest under it. */
  readonly scalar: boolean;
  /** Columns of the line's "-" marks ("- - x": two). */
  readonly dashes: readonly number[];
}

const KEY = /^(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"{[\]},&*!|>%@`-][^#]*?|-[^\s#][^#]*?)\s*:(?=\s|$)/;

/** Removes a comment (a # after a space or at the start, outside quotes); undefined when a quote stays open. */
function stripComment(text: string): string | undefined {
  let quote = "";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quote !== "") {
      if (ch === quote) {
        if (quote === "'" && text[i + 1] === "'") i++;
        else quote = "";
      } else if (ch === "\\" && quote === '"') i++;
      continue;
    }
    if ((ch === '"' || ch === "'") && (i === 0 || /[\s:[{,-]/.test(text[i - 1]!))) quote = ch;
    else if (ch === "#" && (i === 0 || /\s/.test(text[i - 1]!))) return text.slice(0, i).trimEnd();
  }
  return quote === "" ? text.trimEnd() : undefined;
}

function spaces(n: number): string {
  return `${n} space${n === 1 ? "" : "s"}`;
}

export function findIndentationIssue(text: string): IndentationIssue | undefined {
  const lines = text.split(/\r?\n/);
  const stack: Level[] = [];
  let prev: Entry | undefined;
  /** Inside a block scalar (| or >) whose key is at this indent: its lines are text. */
  let blockIndent = -1;
  for (let n = 0; n < lines.length; n++) {
    const raw = lines[n]!;
    if (/^\s*$/.test(raw)) continue;
    const indent = raw.length - raw.trimStart().length;
    if (blockIndent >= 0) {
      if (indent > blockIndent) continue;
      blockIndent = -1;
    }
    if (raw.slice(0, indent).includes("\t")) return undefined;
    const body = stripComment(raw.slice(indent));
    if (body === undefined) return undefined;
    if (body === "") continue;
    if (body === "---" || body === "..." || body.startsWith("%")) {
      stack.length = 0;
      prev = undefined;
      continue;
    }
    // A sequence item: "- " and what follows it, which may be a key of the item's mapping or
    // another item ("- - x": a list in a list, each "-" a level of its own).
    let content = body;
    let contentIndent = indent;
    const dashes: number[] = [];
    for (let item = /^-(\s+|$)/.exec(content); item !== null; item = /^-(\s+|$)/.exec(content)) {
      dashes.push(contentIndent);
      content = content.slice(item[0].length);
      contentIndent += item[0].length;
    }
    const item = dashes.length > 0 ? dashes : null;
    const key = KEY.exec(content);
    const isEntry = item !== null || key !== null;
    const label = key !== null ? key[0].replace(/\s*:$/, "").replace(/^["']|["']$/g, "") : "-";
    const value = key !== null ? content.slice(key[0].length).trim() : content;
    if (/^[[{]/.test(value) && !/[\]}]$/.test(value)) return undefined; // a flow collection over several lines

    if (!isEntry) {
      // Plain text more indented than a key with a value continues that value (a multi-line
      // scalar); anything else is for the library to judge.
      if (prev !== undefined && indent > prev.indent) continue;
      return undefined;
    }
    const line = n + 1;
    // Deeper than a key with a value is a mistake, unless it lines up with that line's own
    // nesting: the item's mapping ("- a: 1" then "  b: 2") or an inner list ("- - a" then "  - b").
    const nested = prev !== undefined && ((indent === prev.contentIndent && prev.contentIndent > prev.indent) || prev.dashes.includes(indent));
    if (prev !== undefined && indent > prev.indent && prev.scalar && !nested) {
      const sibling = prev.contentIndent;
      const parent = [...stack].reverse().find((l) => l.indent < sibling);
      return {
        line,
        column: indent + 1,
        message:
          `"${label}" is indented ${spaces(indent)}, more than "${prev.label}" on line ${prev.line}, which has a value already and cannot hold keys: ` +
          `indent it ${spaces(sibling)} like "${prev.label}"${parent !== undefined && parent.label !== "-" ? ` to make it a key of "${parent.label}"` : ""}`,
      };
    }
    while (stack.length > 0 && stack[stack.length - 1]!.indent > indent) stack.pop();
    const top = stack[stack.length - 1];
    if (prev !== undefined && indent < prev.indent && (top === undefined ? indent !== 0 : top.indent !== indent)) {
      const around = [...stack, ...(prev.indent > (top?.indent ?? -1) ? [{ indent: prev.contentIndent, line: prev.line, label: prev.label }] : [])]
        .filter((l) => l.label !== "-")
        .slice(-3)
        .reverse()
        .map((l) => `"${l.label}" (line ${l.line}) is at ${spaces(l.indent)}`);
      return {
        line,
        column: indent + 1,
        message: `"${label}" is indented ${spaces(indent)}, which lines up with no key above it${around.length > 0 ? `: ${around.join(", ")}` : ""}; indent it like the keys it belongs with`,
      };
    }
    // The newest key of a level names it (messages say which key a line belongs under).
    const level = { indent, line, label: item !== null ? "-" : label };
    if (top === undefined || top.indent < indent) stack.push(level);
    else stack[stack.length - 1] = level;
    for (const d of item?.slice(1) ?? []) stack.push({ indent: d, line, label: "-" });
    if (item !== null && key !== null) stack.push({ indent: contentIndent, line, label });
    if (/^[|>][-+0-9]*$/.test(value)) blockIndent = item !== null && key !== null ? contentIndent : indent;
    prev = {
      line,
      indent,
      contentIndent: key !== null ? contentIndent : indent,
      label,
      scalar: key !== null && value !== "" && !/^[|>][-+0-9]*$/.test(value) && !/^[&!][^\s]*$/.test(value),
      dashes: item ?? [],
    };
  }
  return undefined;
}
