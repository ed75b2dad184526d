// The UNECE units of EngineeringUnits (Part 8 §5.6.3) by display name or by code, looked up in the
// generated table's text (generated/units.ts) and remembered once found: a device map names a
// handful of units, and the ~1,900 of the table as objects would stay in the heap for good.
import { UNIT_TABLE, type UneceUnit } from "./generated/units.js";
import { fieldText, tableText } from "./unit-text.js";

export { UNECE_NAMESPACE_URI, type UneceUnit } from "./generated/units.js";

/** What was looked up, found (a unit) or not (null). */
const byName = new Map<string, UneceUnit | null>();
const byCode = new Map<string, UneceUnit | null>();

const enum Column {
  Code = 0,
  DisplayName = 2,
}

/** The unit on the line that starts at `start`. */
function unitAt(start: number): UneceUnit {
  const [code, unitId, displayName, description] = UNIT_TABLE.slice(start, UNIT_TABLE.indexOf("\n", start)).split("\t") as [string, string, string, string];
  return { code: fieldText(code), unitId: Number(unitId), displayName: fieldText(displayName), description: fieldText(description) };
}

/** Where the first line whose `column` satisfies `matches` starts; each candidate holds `text`. */
function firstLine(column: Column, text: string, matches: (field: string) => boolean): number {
  for (let at = UNIT_TABLE.indexOf(text); at >= 0; at = UNIT_TABLE.indexOf(text, at + 1)) {
    const start = UNIT_TABLE.lastIndexOf("\n", at) + 1;
    let from = start;
    for (let c = 0; c < column; c++) from = UNIT_TABLE.indexOf("\t", from) + 1;
    const to = UNIT_TABLE.indexOf("\t", from);
    if (at >= from && at < to && matches(UNIT_TABLE.slice(from, to))) return start;
  }
  return -1;
}

/** A key a line of the table could hold. */
function plausible(key: string): boolean {
  return key !== "" && !key.includes("\t") && !key.includes("\n") && !key.includes("\\");
}

/**
 * The unit with this display name: the first in the table when several share it; a name that
 * lists spellings ("% or pct", "kg/l or kg/L") is found by each, and displays the one asked for.
 */
export function unitByDisplayName(name: string): UneceUnit | undefined {
  let unit = byName.get(name);
  if (unit === undefined) {
    if (!plausible(name)) return undefined;
    const key = tableText(name);
    const exact = firstLine(Column.DisplayName, key, (f) => f === key);
    const spelled = exact >= 0 ? -1 : firstLine(Column.DisplayName, key, (f) => f.includes(" or ") && f.split(" or ").includes(key));
    unit = exact >= 0 ? unitAt(exact) : spelled >= 0 ? { ...unitAt(spelled), displayName: name } : null;
    byName.set(name, unit);
  }
  return unit ?? undefined;
}

/** The unit with this UNECE common code ("CEL"). */
export function unitByCode(code: string): UneceUnit | undefined {
  let unit = byCode.get(code);
  if (unit === undefined) {
    if (!plausible(code)) return undefined;
    const at = UNIT_TABLE.indexOf(`\n${tableText(code)}\t`);
    unit = at >= 0 ? unitAt(at + 1) : null;
    byCode.set(code, unit);
  }
  return unit ?? undefined;
}

/** unitDisplayNames, once asked for: a map with a unit misspelt on many tags asks for each. */
let displayNames: readonly string[] | undefined;

/** Every display name and each spelling of the names that list several, for suggestions. */
export function unitDisplayNames(): readonly string[] {
  return (displayNames ??= listDisplayNames());
}

function listDisplayNames(): string[] {
  const names = new Set<string>();
  const spellings: string[] = [];
  for (const line of UNIT_TABLE.slice(1, -1).split("\n")) {
    const name = fieldText(line.split("\t")[2]!);
    names.add(name);
    if (name.includes(" or ")) spellings.push(...name.split(" or "));
  }
  for (const s of spellings) names.add(s);
  return [...names];
}
