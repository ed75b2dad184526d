// What a written value must be to fit a Variable (Part 4 §5.10.4): its built-in type against the
// Variable's DataType (abstract Number, Integer and UInteger included) and its shape against the
// ValueRank, and the ByteString / Byte array equivalence. Used by Write and by Call's arguments.
import { BuiltinType, VariantArrayType, type NodeId, type StatusCode, type Variant } from "../ua/builtins.js";
import { UaStatusError } from "../ua/errors.js";
import { DataTypeIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { ns0Table } from "./ns0-table.js";

const ABSTRACT_NUMBER = 100;
const ABSTRACT_INTEGER = 101;
const ABSTRACT_UINTEGER = 102;

/** What the checks need of a Variable. */
export interface TypedVariable {
  /** Built-in type a written Variant must have (Variant: any; or one of the ABSTRACT_* marks). */
  readonly expectedType: number;
  readonly valueRank: number;
}

/** The built-in type (or ABSTRACT_* mark) a value of `dataType` must have. */
export function expectedBuiltin(dataType: NodeId): number {
  if (dataType.namespace === 0 && typeof dataType.value === "number") {
    switch (dataType.value) {
      case DataTypeIds.Number:
        return ABSTRACT_NUMBER;
      case DataTypeIds.Integer:
        return ABSTRACT_INTEGER;
      case DataTypeIds.UInteger:
        return ABSTRACT_UINTEGER;
    }
    const b = ns0Table().builtinTypeOf(dataType.value);
    if (b !== undefined) return b;
  }
  throw new UaStatusError(StatusCodes.BadDataTypeIdUnknown, `DataType ${String(dataType.value)} is not in namespace 0`);
}

function typeMatches(expected: number, actual: BuiltinType): boolean {
  switch (expected) {
    case BuiltinType.Variant:
      return true;
    case ABSTRACT_NUMBER:
      return actual >= BuiltinType.SByte && actual <= BuiltinType.Double;
    case ABSTRACT_INTEGER:
      return actual === BuiltinType.SByte || actual === BuiltinType.Int16 || actual === BuiltinType.Int32 || actual === BuiltinType.Int64;
    case ABSTRACT_UINTEGER:
      return actual === BuiltinType.Byte || actual === BuiltinType.UInt16 || actual === BuiltinType.UInt32 || actual === BuiltinType.UInt64;
    default:
      return actual === expected;
  }
}

/** ValueRank (Part 3 §5.6.2): -3 scalar or 1-D, -2 any, -1 scalar, 0 one or more dimensions, n exactly n. */
export function rankMatches(valueRank: number, value: Variant): boolean {
  const dims =
    value.arrayType === VariantArrayType.Scalar ? 0 : value.arrayType === VariantArrayType.Array ? 1 : (value.dimensions?.length ?? 0);
  switch (valueRank) {
    case -3:
      return dims <= 1;
    case -2:
      return true;
    case -1:
      return dims === 0;
    case 0:
      return dims >= 1;
    default:
      return dims === valueRank;
  }
}

/** BadTypeMismatch unless the Variant's type and shape fit DataType and ValueRank (Part 4 §5.10.4). */
export function checkValue(v: TypedVariable, value: Variant): StatusCode {
  if (value.dataType === BuiltinType.Null) {
    // An empty Variant is a value only where any value is (BaseDataType).
    return v.expectedType === BuiltinType.Variant ? StatusCodes.Good : StatusCodes.BadTypeMismatch;
  }
  if (!typeMatches(v.expectedType, value.dataType)) return StatusCodes.BadTypeMismatch;
  if (!rankMatches(v.valueRank, value)) return StatusCodes.BadTypeMismatch;
  return StatusCodes.Good;
}

/** Part 4 §5.10.4: a ByteString may be written to a Byte array Variable and vice versa. */
export function coerceBytes(v: TypedVariable, value: Variant): Variant {
  if (v.expectedType === BuiltinType.ByteString && v.valueRank === -1 && value.dataType === BuiltinType.Byte && value.arrayType === VariantArrayType.Array) {
    return { dataType: BuiltinType.ByteString, arrayType: VariantArrayType.Scalar, value: Buffer.from(value.value as number[]) };
  }
  if (v.expectedType === BuiltinType.Byte && v.valueRank === 1 && value.dataType === BuiltinType.ByteString && value.arrayType === VariantArrayType.Scalar) {
    const bytes = value.value as Buffer | null;
    return { dataType: BuiltinType.Byte, arrayType: VariantArrayType.Array, value: bytes ? Array.from(bytes) : [] };
  }
  return value;
}
