// DataChangeFilter (Part 4 §7.22.2): which changes of a sampled value are reported. Parsing and
// validation of the filter a client sends, and the comparison of a new value with the last one
// reported: trigger Status / StatusValue / StatusValueTimestamp, deadband Absolute, and Percent
// (Part 8 §6.2: a percentage of the EURange of an AnalogItem, turned into an absolute deadband
// once, when the item is created or modified).
import { BinaryWriter } from "../ua/binary-writer.js";
import { encodeVariant } from "../ua/builtin-codec.js";
import { BuiltinType, VariantArrayType, type ExtensionObject, type Variant } from "../ua/builtins.js";
import { DataChangeTrigger, DeadbandType } from "../ua/generated/enums.js";
import { AttributeIds, DataTypeIds, ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { DataChangeFilter } from "../ua/generated/types.js";

export interface ChangeFilter {
  readonly trigger: DataChangeTrigger;
  readonly deadbandType: DeadbandType;
  /** The deadband as requested (absolute value or percent). */
  readonly deadbandValue: number;
  /** The absolute deadband applied, 0 for none (Percent already converted with the EURange). */
  readonly deadband: number;
}

/** No filter: Part 4 §7.22.2, the default trigger is StatusValue. */
export const DEFAULT_CHANGE_FILTER: ChangeFilter = Object.freeze({
  trigger: DataChangeTrigger.StatusValue,
  deadbandType: DeadbandType.None,
  deadbandValue: 0,
  deadband: 0,
});

/** What validating a filter needs to know about the node, asked only when a deadband is set. */
export interface FilterContext {
  readonly attributeId: number;
  /** Whether the Variable's DataType is Number or a subtype of it. */
  isNumeric(): boolean;
  /** The Variable's EURange property (Part 8 §5.3.2), undefined when it has none. */
  euRange(): { low: number; high: number } | undefined;
}

function isNullFilter(f: ExtensionObject | undefined): boolean {
  return f === undefined || (f.body === null && f.typeId.namespace === 0 && f.typeId.value === 0);
}

/**
 * The filter to apply, or the operation's StatusCode: BadFilterNotAllowed (a filter that the
 * attribute or the DataType cannot take), BadMonitoredItemFilterUnsupported (events,
 * aggregates, Percent without EURange), BadMonitoredItemFilterInvalid, BadDeadbandFilterInvalid.
 */
export function parseChangeFilter(filter: ExtensionObject | undefined, ctx: FilterContext): ChangeFilter | number {
  if (isNullFilter(filter)) return DEFAULT_CHANGE_FILTER;
  const f = filter as ExtensionObject;
  const typeId = f.typeId.namespace === 0 && typeof f.typeId.value === "number" ? f.typeId.value : -1;
  switch (typeId) {
    case ObjectIds.DataChangeFilter_Encoding_DefaultBinary:
    case DataTypeIds.DataChangeFilter:
      break;
    case ObjectIds.EventFilter_Encoding_DefaultBinary:
    case DataTypeIds.EventFilter:
      // Events are not served: a Variable's value takes no EventFilter (Part 4 §7.22.1).
      return ctx.attributeId === AttributeIds.EventNotifier ? StatusCodes.BadMonitoredItemFilterUnsupported : StatusCodes.BadFilterNotAllowed;
    default:
      return StatusCodes.BadMonitoredItemFilterUnsupported;
  }
  const body = f.body as Partial<DataChangeFilter> | null;
  if (body === null || typeof body !== "object" || Buffer.isBuffer(body) || typeof body.trigger !== "number") {
    return StatusCodes.BadMonitoredItemFilterInvalid;
  }
  if (ctx.attributeId !== AttributeIds.Value) return StatusCodes.BadFilterNotAllowed;
  const trigger = body.trigger;
  if (trigger < DataChangeTrigger.Status || trigger > DataChangeTrigger.StatusValueTimestamp) return StatusCodes.BadMonitoredItemFilterInvalid;
  const type = body.deadbandType ?? DeadbandType.None;
  const value = body.deadbandValue ?? 0;
  if (type === DeadbandType.None) return { trigger, deadbandType: type, deadbandValue: value, deadband: 0 };
  if (type !== DeadbandType.Absolute && type !== DeadbandType.Percent) return StatusCodes.BadDeadbandFilterInvalid;
  if (!(value >= 0) || (type === DeadbandType.Percent && value > 100)) return StatusCodes.BadDeadbandFilterInvalid;
  // Part 4 §7.22.2: deadbands apply to numeric values only.
  if (!ctx.isNumeric()) return StatusCodes.BadFilterNotAllowed;
  if (type === DeadbandType.Absolute) return { trigger, deadbandType: type, deadbandValue: value, deadband: value };
  const range = ctx.euRange();
  if (range === undefined) return StatusCodes.BadMonitoredItemFilterUnsupported;
  const deadband = (value / 100) * Math.abs(range.high - range.low);
  if (!Number.isFinite(deadband)) return StatusCodes.BadMonitoredItemFilterUnsupported;
  return { trigger, deadbandType: type, deadbandValue: value, deadband };
}

function toNumber(v: unknown): number {
  return typeof v === "number" ? v : typeof v === "bigint" ? Number(v) : typeof v === "boolean" ? (v ? 1 : 0) : NaN;
}

/** Two numbers differ (NaN equals NaN: a NaN that stays NaN is no change). */
export function numbersDiffer(a: number, b: number, deadband: number): boolean {
  if (a === b) return false;
  if (a !== a && b !== b) return false;
  if (deadband > 0) return !(Math.abs(a - b) <= deadband);
  return true;
}

const scratchA = new BinaryWriter(Buffer.allocUnsafe(256));
const scratchB = new BinaryWriter(Buffer.allocUnsafe(256));

/** Scalars of the types up to ByteString: numbers, strings, bigints, Buffers. */
function scalarEquals(type: BuiltinType, a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (type === BuiltinType.Float || type === BuiltinType.Double) return a !== a && b !== b;
  return type === BuiltinType.ByteString && Buffer.isBuffer(a) && Buffer.isBuffer(b) && a.equals(b);
}

/** Structured values (NodeId, LocalizedText, ExtensionObject, matrices ...) compare by their encoding. */
function encodedEquals(a: Variant, b: Variant): boolean {
  try {
    encodeVariant(scratchA.reset(), a);
    encodeVariant(scratchB.reset(), b);
  } catch {
    return false;
  }
  return scratchA.pos === scratchB.pos && scratchA.buffer.compare(scratchB.buffer, 0, scratchB.pos, 0, scratchA.pos) === 0;
}

const SIMPLE_MAX = BuiltinType.ByteString;

/**
 * Whether `next` differs from `last` enough to report (Part 4 §7.22.2): with a deadband, a
 * numeric scalar when |next - last| > deadband, an array when its length changes or any element
 * moves past the deadband; without one, any difference.
 */
export function valueChanged(next: Variant | undefined, last: Variant | undefined, deadband: number): boolean {
  if (next === last) return false;
  if (next === undefined || last === undefined) return true;
  if (next.dataType !== last.dataType || next.arrayType !== last.arrayType) return true;
  const type = next.dataType;
  if (next.arrayType === VariantArrayType.Scalar) {
    if (deadband > 0) return numbersDiffer(toNumber(next.value), toNumber(last.value), deadband);
    if (type <= SIMPLE_MAX) return !scalarEquals(type, next.value, last.value);
    return !encodedEquals(next, last);
  }
  const a = next.value as ArrayLike<unknown> | null;
  const b = last.value as ArrayLike<unknown> | null;
  if (a === b) return false;
  if (a === null || b === null || a.length !== b.length) return true;
  if (next.arrayType === VariantArrayType.Matrix) {
    const da = next.dimensions ?? [];
    const db = last.dimensions ?? [];
    if (da.length !== db.length || da.some((d, i) => d !== db[i])) return true;
  }
  if (deadband > 0) {
    for (let i = 0; i < a.length; i++) if (numbersDiffer(toNumber(a[i]), toNumber(b[i]), deadband)) return true;
    return false;
  }
  if (type <= SIMPLE_MAX) {
    for (let i = 0; i < a.length; i++) if (!scalarEquals(type, a[i], b[i])) return true;
    return false;
  }
  return !encodedEquals(next, last);
}
