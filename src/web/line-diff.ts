// The difference between two texts, line by line, as the settings editor shows it before Apply:
// lines removed (-), added (+), and `context` unchanged lines around each change, the rest
// folded. Myers' O((N+M)·D) algorithm ("An O(ND) Difference Algorithm and Its Variations",
// 1986, the greedy forward search with the trace kept to walk back), on what is left once the
// lines both texts begin and end with are set aside: an edit of a few lines in a 10,000-tag map
// compares a few lines. At most `maxEdits` lines changed are worked out; more is answered with
// the counts of lines alone (two unrelated files need no line-by-line listing).
//
// The browser runs this function from its own source (the editor script, page-editor.ts): it
// refers to nothing outside itself.

/** [kind, line in the old text (1-based; 0 for an added line), line in the new text, text]; kind "…" is a fold of `text` unchanged lines. */
export type DiffRow = readonly [" " | "-" | "+" | "…", number, number, string];

export interface LineDiff {
  readonly added: number;
  readonly removed: number;
  /** Undefined when more than maxEdits lines changed. */
  readonly rows: readonly DiffRow[] | undefined;
}

export function lineDiff(before: string, after: string, context: number, maxEdits: number): LineDiff {
  const a = before.split("\n");
  const b = after.split("\n");
  if (a.length > 0 && a[a.length - 1] === "") a.pop();
  if (b.length > 0 && b[b.length - 1] === "") b.pop();
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const n = endA - start;
  const m = endB - start;
  const limit = Math.min(n + m, maxEdits);
  const off = limit + 1;
  const v = new Int32Array(2 * off + 1);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= limit && found < 0; d++) {
    // V as it was before step d, for k in [-d-1, d+1]: what the walk back reads.
    trace.push(v.slice(off - d - 1, off + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1]! < v[off + k + 1]!) ? v[off + k + 1]! : v[off + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[start + x] === b[start + y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  // Counted on the trimmed middle alone, when it is too different to list.
  if (found < 0) return { added: m, removed: n, rows: undefined };

  // Walk back from (n, m): 0 same, 1 removed, 2 added; collected from the end.
  const ops: number[] = [];
  let x = n;
  let y = m;
  for (let d = found; d >= 0; d--) {
    const t = trace[d]!;
    const at = (k: number): number => t[k + d + 1]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push(0);
      x--;
      y--;
    }
    if (d > 0) ops.push(x === prevX ? 2 : 1);
    x = prevX;
    y = prevY;
  }
  ops.reverse();

  // Every line in order, with its numbers; then only those near a change.
  const all: DiffRow[] = [];
  let ia = 0;
  let ib = 0;
  for (let i = 0; i < start; i++) all.push([" ", ++ia, ++ib, a[i]!]);
  let added = 0;
  let removed = 0;
  for (const op of ops) {
    if (op === 0) {
      all.push([" ", ++ia, ++ib, a[ia - 1]!]);
    } else if (op === 1) {
      all.push(["-", ++ia, 0, a[ia - 1]!]);
      removed++;
    } else {
      all.push(["+", 0, ++ib, b[ib - 1]!]);
      added++;
    }
  }
  for (let i = endA; i < a.length; i++) all.push([" ", ++ia, ++ib, a[i]!]);
  const near = new Uint8Array(all.length);
  for (let i = 0; i < all.length; i++) {
    if (all[i]![0] === " ") continue;
    for (let j = Math.max(0, i - context); j <= Math.min(all.length - 1, i + context); j++) near[j] = 1;
  }
  const rows: DiffRow[] = [];
  let folded = 0;
  for (let i = 0; i < all.length; i++) {
    if (near[i]) {
      if (folded > 0) rows.push(["…", 0, 0, String(folded)]);
      folded = 0;
      rows.push(all[i]!);
    } else {
      folded++;
    }
  }
  if (folded > 0 && rows.length > 0) rows.push(["…", 0, 0, String(folded)]);
  return { added, removed, rows };
}
