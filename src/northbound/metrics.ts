// How a tag's value becomes a Sparkplug metric: its datatype (Sparkplug 3.0 §6.4.16), its
// quality (§6.4.9.1) and its value read from the value cache without making a DataValue for
// numbers (the cache keeps them as numbers).
import { BuiltinType, type StatusCode } from "../ua/builtins.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { ValueCache } from "../values/value-cache.js";
import { DataType, Quality, type PayloadWriter } from "./sparkplug-codec.js";
import { StoredKind } from "./forward-store.js";

/** The Sparkplug datatype of values of an OPC UA built-in type; Unknown where none fits. */
export function dataTypeOf(b: BuiltinType): DataType {
  switch (b) {
    case BuiltinType.Boolean:
      return DataType.Boolean;
    case BuiltinType.SByte:
      return DataType.Int8;
    case BuiltinType.Byte:
      return DataType.UInt8;
    case BuiltinType.Int16:
      return DataType.Int16;
    case BuiltinType.UInt16:
      return DataType.UInt16;
    case BuiltinType.Int32:
      return DataType.Int32;
    case BuiltinType.UInt32:
      return DataType.UInt32;
    case BuiltinType.Int64:
      return DataType.Int64;
    case BuiltinType.UInt64:
      return DataType.UInt64;
    case BuiltinType.Float:
      return DataType.Float;
    case BuiltinType.Double:
      return DataType.Double;
    case BuiltinType.String:
      return DataType.String;
    case BuiltinType.DateTime:
      return DataType.DateTime;
    default:
      return DataType.Unknown;
  }
}

/** The OPC UA built-in type a command's value of `t` is written as (undefined: not writable). */
export function builtinOf(t: number): BuiltinType | undefined {
  switch (t) {
    case DataType.Boolean:
      return BuiltinType.Boolean;
    case DataType.Int8:
      return BuiltinType.SByte;
    case DataType.UInt8:
      return BuiltinType.Byte;
    case DataType.Int16:
      return BuiltinType.Int16;
    case DataType.UInt16:
      return BuiltinType.UInt16;
    case DataType.Int32:
      return BuiltinType.Int32;
    case DataType.UInt32:
      return BuiltinType.UInt32;
    case DataType.Int64:
      return BuiltinType.Int64;
    case DataType.UInt64:
      return BuiltinType.UInt64;
    case DataType.Float:
      return BuiltinType.Float;
    case DataType.Double:
      return BuiltinType.Double;
    case DataType.String:
    case DataType.Text:
      return BuiltinType.String;
    default:
      return undefined;
  }
}

/**
 * The Sparkplug quality of an OPC UA StatusCode: Good is GOOD; a value the device can no longer
 * confirm (BadCommunicationError keeps the last value, Uncertain ones) is STALE; any other Bad
 * status (no value yet, a refused address, a device fault) is BAD.
 */
export function qualityOf(status: StatusCode): Quality {
  const severity = status >>> 30;
  if (severity === 0) return Quality.Good;
  if (severity === 1) return Quality.Stale;
  if ((status & 0xffff0000) === (StatusCodes.BadCommunicationError & 0xffff0000)) return Quality.Stale;
  return Quality.Bad;
}

/** Writes the current value of `slot` as the value of a metric of `type` (is_null without one). */
export function writeSlotValue(w: PayloadWriter, values: ValueCache, slot: number, type: DataType): void {
  if (!values.hasValue(slot)) {
    w.isNull();
    return;
  }
  const n = values.numberOf(slot);
  if (n === n && type !== DataType.String) {
    w.numberValue(type, n);
    return;
  }
  // Not a number in the cache (a string, a 64-bit integer past 2^53), or a NaN: its DataValue.
  writeObjectValue(w, values.get(slot).value?.value, type);
}

/** A value that is not a plain number, as the metric's value. */
export function writeObjectValue(w: PayloadWriter, v: unknown, type: DataType): void {
  switch (typeof v) {
    case "number":
      if (type === DataType.String) w.stringValue(String(v));
      else w.numberValue(type, v);
      return;
    case "boolean":
      w.numberValue(DataType.Boolean, v ? 1 : 0);
      return;
    case "bigint":
      w.bigValue(v);
      return;
    case "string":
      if (type === DataType.String || type === DataType.Text) w.stringValue(v);
      else w.isNull();
      return;
    default:
      w.isNull();
  }
}

/** What the store keeps of the current value of `slot`. */
export interface StoredValue {
  kind: StoredKind;
  num: number;
  obj: string | bigint | undefined;
}

/** Reads the current value of `slot` into `out` (reused) in the form the store keeps. */
export function storedValueOf(values: ValueCache, slot: number, out: StoredValue): void {
  out.obj = undefined;
  out.num = 0;
  if (!values.hasValue(slot)) {
    out.kind = StoredKind.Null;
    return;
  }
  const n = values.numberOf(slot);
  if (n === n) {
    out.kind = StoredKind.Number;
    out.num = n;
    return;
  }
  const v = values.get(slot).value?.value;
  if (typeof v === "number") {
    out.kind = StoredKind.Number;
    out.num = v;
  } else if (typeof v === "boolean") {
    out.kind = StoredKind.Number;
    out.num = v ? 1 : 0;
  } else if (typeof v === "bigint") {
    out.kind = StoredKind.BigInt;
    out.obj = v;
  } else if (typeof v === "string") {
    out.kind = StoredKind.String;
    out.obj = v;
  } else {
    out.kind = StoredKind.Null;
  }
}

/** Writes a stored value as a metric's value. */
export function writeStoredValue(w: PayloadWriter, kind: StoredKind, num: number, obj: string | bigint | undefined, type: DataType): void {
  switch (kind) {
    case StoredKind.Number:
      if (type === DataType.String) w.stringValue(String(num));
      else w.numberValue(type, num);
      return;
    case StoredKind.BigInt:
      w.bigValue(obj as bigint);
      return;
    case StoredKind.String:
      if (type === DataType.String || type === DataType.Text) w.stringValue(obj as string);
      else w.isNull();
      return;
    default:
      w.isNull();
  }
}
