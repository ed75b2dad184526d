// A series' rows with those a read sees beside its table (read-overlay.ts says which and why):
// merged by timestamp, one row per millisecond, the overlay's winning, within the bounds and the
// count the table's query had (Series.rows).

/** A row as a series' table gives it: [ts, v, st]. */
export type Row = unknown[];

/**
 * The first `limit` rows of the table's (`table`: its first `limit` rows in [lo, hi) ascending,
 * or in (lo, hi] descending) and the overlay's (`extra`: ascending, one per ms) together.
 */
export function mergeRows(table: Row[], extra: readonly Row[], lo: number, hi: number, ascending: boolean, limit: number): Row[] {
  // The overlay's rows in the bounds of the table's query (Series.rows): [first, end).
  const first = ascending ? firstAtOrAfter(extra, Math.ceil(lo)) : firstAtOrAfter(extra, Math.floor(lo) + 1);
  const end = ascending ? firstAtOrAfter(extra, Math.ceil(hi)) : firstAtOrAfter(extra, Math.floor(hi) + 1);
  if (first >= end) return table;
  const out: Row[] = [];
  let i = 0;
  let j = ascending ? first : end - 1;
  const more = (): boolean => (ascending ? j < end : j >= first);
  while (out.length < limit && (i < table.length || more())) {
    const t = i < table.length ? Number(table[i]![0]) : undefined;
    const e = more() ? (extra[j]![0] as number) : undefined;
    if (e === undefined || (t !== undefined && (ascending ? t < e : t > e))) {
      out.push(table[i++]!);
      continue;
    }
    if (t === e) i++;
    out.push(extra[j]!);
    j += ascending ? 1 : -1;
  }
  return out;
}

/** The index of the first row of `rows` (ascending) at or after `ts`. */
function firstAtOrAfter(rows: readonly Row[], ts: number): number {
  let a = 0;
  let b = rows.length;
  while (a < b) {
    const m = (a + b) >>> 1;
    if ((rows[m]![0] as number) < ts) a = m + 1;
    else b = m;
  }
  return a;
}

/** The oldest (or newest) ts of the overlay of a series, beside the table's. */
export function extentWith(table: number | undefined, extra: readonly Row[] | undefined, oldest: boolean): number | undefined {
  if (extra === undefined || extra.length === 0) return table;
  const e = (oldest ? extra[0]![0] : extra[extra.length - 1]![0]) as number;
  if (table === undefined) return e;
  return oldest ? Math.min(table, e) : Math.max(table, e);
}
