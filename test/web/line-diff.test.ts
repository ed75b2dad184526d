// The settings editor's line diff (src/web/line-diff.ts): it turns the old text into the new one,
// with as few lines removed and added as a longest common subsequence allows, folds what is far
// from a change, and gives counts alone past its bound.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { lineDiff, type DiffRow } from "../../src/web/line-diff.js";

/** The new text from the old one and the rows (context wide enough that nothing is folded). */
function replay(before: string, rows: readonly DiffRow[]): string[] {
  const a = before.split("\n");
  if (a[a.length - 1] === "") a.pop();
  const out: string[] = [];
  for (const [kind, la, , text] of rows) {
    if (kind === " ") {
      expect(a[la - 1]).toBe(text);
      out.push(text);
    } else if (kind === "-") {
      expect(a[la - 1]).toBe(text);
    } else if (kind === "+") {
      out.push(text);
    }
  }
  return out;
}

function lcs(a: string[], b: string[]): number {
  const t = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = 1; i <= a.length; i++) for (let j = 1; j <= b.length; j++) t[i]![j] = a[i - 1] === b[j - 1] ? t[i - 1]![j - 1]! + 1 : Math.max(t[i - 1]![j]!, t[i]![j - 1]!);
  return t[a.length]![b.length]!;
}

describe("lineDiff", () => {
  it("shows a tag added in the middle of a map, with its context and the rest folded", () => {
    const before = ["devices:", "  - name: a", "    tags:", "      - { name: t1, address: holding:0 }", "      - { name: t2, address: holding:1 }", "x", "y", "z", "w", "v"].join("\n") + "\n";
    const after = before.replace("      - { name: t2, address: holding:1 }\n", "      - { name: t2, address: holding:1 }\n      - { name: t3, address: holding:2 }\n");
    const d = lineDiff(before, after, 2, 1000);
    expect(d.added).toBe(1);
    expect(d.removed).toBe(0);
    expect(d.rows).toEqual([
      ["…", 0, 0, "3"],
      [" ", 4, 4, "      - { name: t1, address: holding:0 }"],
      [" ", 5, 5, "      - { name: t2, address: holding:1 }"],
      ["+", 0, 6, "      - { name: t3, address: holding:2 }"],
      [" ", 6, 7, "x"],
      [" ", 7, 8, "y"],
      ["…", 0, 0, "3"],
    ]);
  });

  it("has no rows for equal texts", () => {
    expect(lineDiff("a\nb\n", "a\nb\n", 3, 100)).toEqual({ added: 0, removed: 0, rows: [] });
  });

  it("gives the counts alone past its bound", () => {
    const a = Array.from({ length: 50 }, (_, i) => `a${i}`).join("\n");
    const b = Array.from({ length: 50 }, (_, i) => `b${i}`).join("\n");
    expect(lineDiff(a, b, 3, 20)).toEqual({ added: 50, removed: 50, rows: undefined });
    expect(lineDiff(a, b, 3, 100).rows).toHaveLength(100);
  });

  it("turns any text into any other with the fewest lines changed", () => {
    const line = fc.constantFrom("a", "b", "c", "d", "");
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), fc.array(line, { maxLength: 30 }), (la, lb) => {
        const before = la.join("\n");
        const after = lb.join("\n");
        const d = lineDiff(before, after, 1000, 1000);
        const a = before.split("\n");
        const b = after.split("\n");
        if (a[a.length - 1] === "") a.pop();
        if (b[b.length - 1] === "") b.pop();
        // Equal texts have no rows at all: nothing is near a change.
        if (d.added + d.removed === 0) expect(d.rows).toEqual([]);
        else expect(replay(before, d.rows!)).toEqual(b);
        const common = lcs(a, b);
        expect(d.removed).toBe(a.length - common);
        expect(d.added).toBe(b.length - common);
      }),
      { numRuns: 500 },
    );
  });
});
