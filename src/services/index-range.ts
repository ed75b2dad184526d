// Index ranges on Read results (Part 4 §7.22): applied here once for every node manager.
import type { DataValue } from "../ua/builtins.js";
import { applyRange, parseNumericRange } from "../ua/numeric-range.js";

/** The DataValue with its value cut to `rangeText`, or a DataValue with only the failure status. */
export function applyIndexRange(dv: DataValue, rangeText: string): DataValue {
  const parsed = parseNumericRange(rangeText);
  if (!parsed.ok) return { statusCode: parsed.statusCode };
  if (parsed.range.length === 0 || dv.value === undefined) return dv;
  const ranged = applyRange(dv.value, parsed.range);
  if (!ranged.ok) return { statusCode: ranged.statusCode };
  return {
    value: ranged.value,
    statusCode: dv.statusCode,
    sourceTimestamp: dv.sourceTimestamp,
    sourcePicoseconds: dv.sourcePicoseconds,
    serverTimestamp: dv.serverTimestamp,
    serverPicoseconds: dv.serverPicoseconds,
  };
}
