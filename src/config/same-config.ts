// Deep equality of validated config values: what a reload compares to find what changed. By
// recursion, as deep as the values nest: as deep as their schema (a device map's, six levels).
/**
 * Deep equality of validated config values (plain objects, arrays, primitives), with an absent
 * key equal to one set to undefined. Compared rather than kept as JSON: a device of 1,000 tags
 * would keep a 100 KB signature string alive for the next reload.
 */
export function sameConfig(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameConfig(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  for (const k in x) if (!sameConfig(x[k], y[k])) return false;
  for (const k in y) if (!(k in x) && y[k] !== undefined) return false;
  return true;
}
