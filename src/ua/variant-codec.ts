// Variant (Part 6 §5.2.2.16) and DataValue (§5.2.2.17): the values of the Read and Publish hot
// paths. A Variant holds any built-in, so this module sits on top of the other codecs: one
// switch per value (encodeScalarValue/decodeScalarValue), no closure or lookup table of
// functions per built-in type.
import type { BinaryReader } from "./binary-reader.js";
import type { BinaryWriter } from "./binary-writer.js";
import {
  BuiltinType,
  NULL_VARIANT,
  VariantArrayType,
  type DataValue,
  type DateTime,
  type DiagnosticInfo,
  type ExpandedNodeId,
  type ExtensionObject,
  type LocalizedText,
  type NodeId,
  type QualifiedName,
  type StatusCode,
  type Variant,
} from "./builtins.js";
import { decodingError, encodingError } from "./errors.js";
import { decodeExtensionObject, encodeExtensionObject } from "./extension-object.js";
import { decodeExpandedNodeId, decodeNodeId, encodeExpandedNodeId, encodeNodeId } from "./node-id-codec.js";
import {
  decodeDiagnosticInfo,
  decodeLocalizedText,
  decodeQualifiedName,
  encodeDiagnosticInfo,
  encodeLocalizedText,
  encodeQualifiedName,
} from "./status-text-codec.js";

const VARIANT_ARRAY = 0x80;
const VARIANT_DIMENSIONS = 0x40;
const VARIANT_TYPE_MASK = 0x3f;
const FLOAT_MAX = 3.4028234663852886e38;

/** Smallest encoded size of one element of each built-in type: bounds array lengths before allocation. */
const MIN_ELEMENT_SIZE: readonly number[] = [
  1, // Null (unused: null arrays are refused)
  1, 1, 1, 2, 2, 4, 4, 8, 8, 4, 8, // Boolean .. Double
  4, // String
  8, // DateTime
  16, // Guid
  4, // ByteString
  4, // XmlElement
  2, // NodeId
  2, // ExpandedNodeId
  4, // StatusCode
  6, // QualifiedName
  1, // LocalizedText
  3, // ExtensionObject
  1, // DataValue
  1, // Variant
  1, // DiagnosticInfo
];

/**
 * Writes one value of a built-in type, refusing a value that does not fit it. One switch, no
 * closure: the scalar Read path runs through here for every value.
 */
function encodeScalarValue(w: BinaryWriter, type: BuiltinType, v: unknown): void {
  switch (type) {
    case BuiltinType.Boolean:
      if (typeof v !== "boolean") break;
      w.ensure(1);
      w.buffer[w.pos++] = v ? 1 : 0;
      return;
    case BuiltinType.SByte:
      w.writeSByte(v as number);
      return;
    case BuiltinType.Byte:
      w.writeByte(v as number);
      return;
    case BuiltinType.Int16:
      w.writeInt16(v as number);
      return;
    case BuiltinType.UInt16:
      w.writeUInt16(v as number);
      return;
    case BuiltinType.Int32:
      w.writeInt32(v as number);
      return;
    case BuiltinType.UInt32:
    case BuiltinType.StatusCode:
      w.writeUInt32(v as number);
      return;
    case BuiltinType.Int64:
      w.writeInt64(v as bigint);
      return;
    case BuiltinType.UInt64:
      w.writeUInt64(v as bigint);
      return;
    case BuiltinType.Float:
      // A finite double past the Float range would silently become Infinity: refuse it.
      if (typeof v !== "number" || (v > FLOAT_MAX && v !== Infinity) || (v < -FLOAT_MAX && v !== -Infinity)) break;
      w.writeFloat(v);
      return;
    case BuiltinType.Double:
      w.writeDouble(v as number);
      return;
    case BuiltinType.String:
    case BuiltinType.XmlElement:
      w.writeString(v as string | undefined);
      return;
    case BuiltinType.DateTime:
      w.writeDateTime(v as number);
      return;
    case BuiltinType.Guid:
      w.writeGuid(v as string);
      return;
    case BuiltinType.ByteString:
      w.writeByteString(v as Uint8Array | undefined);
      return;
    case BuiltinType.NodeId:
      if (!isObject(v)) break;
      encodeNodeId(w, v as NodeId);
      return;
    case BuiltinType.ExpandedNodeId:
      if (!isObject(v) || !isObject((v as ExpandedNodeId).nodeId)) break;
      encodeExpandedNodeId(w, v as ExpandedNodeId);
      return;
    case BuiltinType.QualifiedName:
      if (!isObject(v)) break;
      encodeQualifiedName(w, v as QualifiedName);
      return;
    case BuiltinType.LocalizedText:
      if (!isObject(v)) break;
      encodeLocalizedText(w, v as LocalizedText);
      return;
    case BuiltinType.ExtensionObject:
      if (!isObject(v) || !isObject((v as ExtensionObject).typeId)) break;
      encodeExtensionObject(w, v as ExtensionObject);
      return;
    case BuiltinType.DataValue:
      if (!isObject(v)) break;
      encodeDataValue(w, v as DataValue);
      return;
    case BuiltinType.Variant:
      if (!isObject(v)) break;
      encodeVariant(w, v as Variant);
      return;
    case BuiltinType.DiagnosticInfo:
      if (!isObject(v)) break;
      encodeDiagnosticInfo(w, v as DiagnosticInfo);
      return;
  }
  throw encodingError(`${describeValue(v)} is not a valid ${BuiltinType[type] ?? type}`);
}

function isObject(v: unknown): boolean {
  return typeof v === "object" && v !== null;
}

function describeValue(v: unknown): string {
  return typeof v === "bigint" ? `${v}n` : `${String(v)} (${typeof v})`;
}

function decodeScalarValue(r: BinaryReader, type: BuiltinType): unknown {
  switch (type) {
    case BuiltinType.Boolean:
      return r.readBoolean();
    case BuiltinType.SByte:
      return r.readSByte();
    case BuiltinType.Byte:
      return r.readByte();
    case BuiltinType.Int16:
      return r.readInt16();
    case BuiltinType.UInt16:
      return r.readUInt16();
    case BuiltinType.Int32:
      return r.readInt32();
    case BuiltinType.UInt32:
    case BuiltinType.StatusCode:
      return r.readUInt32();
    case BuiltinType.Int64:
      return r.readInt64();
    case BuiltinType.UInt64:
      return r.readUInt64();
    case BuiltinType.Float:
      return r.readFloat();
    case BuiltinType.Double:
      return r.readDouble();
    case BuiltinType.String:
    case BuiltinType.XmlElement:
      return r.readString();
    case BuiltinType.DateTime:
      return r.readDateTime();
    case BuiltinType.Guid:
      return r.readGuid();
    case BuiltinType.ByteString:
      // Copied: Variant values are kept (value cache, history) past the pooled input buffer.
      return r.readByteString();
    case BuiltinType.NodeId:
      return decodeNodeId(r);
    case BuiltinType.ExpandedNodeId:
      return decodeExpandedNodeId(r);
    case BuiltinType.QualifiedName:
      return decodeQualifiedName(r);
    case BuiltinType.LocalizedText:
      return decodeLocalizedText(r);
    case BuiltinType.ExtensionObject:
      return decodeExtensionObject(r);
    case BuiltinType.DataValue:
      return decodeDataValue(r);
    case BuiltinType.Variant:
      return decodeVariant(r);
    case BuiltinType.DiagnosticInfo:
      return decodeDiagnosticInfo(r);
    default:
      throw decodingError(`built-in type ${type} unknown`);
  }
}

export function encodeVariant(w: BinaryWriter, v: Variant): void {
  if (++w.depth > w.maxDepth) throw encodingError(`nesting deeper than ${w.maxDepth}`);
  const type = v.dataType;
  if (!(type >= 0 && type <= BuiltinType.DiagnosticInfo && (type | 0) === type)) {
    throw encodingError(`Variant dataType ${String(type)} unknown`);
  }
  const arrayType = v.arrayType;
  if (arrayType === VariantArrayType.Scalar || arrayType === undefined) {
    if (type === BuiltinType.Null) {
      w.writeByte(0);
    } else if (type === BuiltinType.Variant) {
      // Part 6 §5.2.2.16: a Variant may hold an array of Variants, never a scalar Variant.
      throw encodingError("a Variant cannot hold a scalar Variant");
    } else {
      w.ensure(1);
      w.buffer[w.pos++] = type;
      encodeScalarValue(w, type, v.value);
    }
  } else if (arrayType === VariantArrayType.Array || arrayType === VariantArrayType.Matrix) {
    encodeVariantArray(w, type, v, arrayType === VariantArrayType.Matrix);
  } else {
    throw encodingError(`Variant arrayType ${String(arrayType)} unknown`);
  }
  w.depth--;
}

function encodeVariantArray(w: BinaryWriter, type: BuiltinType, v: Variant, matrix: boolean): void {
  if (type === BuiltinType.Null) throw encodingError("a Variant cannot hold an array of Null");
  const value = v.value as ArrayLike<unknown> | null | undefined;
  if (value != null && !(Array.isArray(value) || ArrayBuffer.isView(value))) {
    throw encodingError(`array Variant value is not an array`);
  }
  const length = value == null ? -1 : value.length;
  const dims = v.dimensions;
  if (matrix) {
    if (dims === undefined || dims.length === 0) throw encodingError("matrix Variant without dimensions");
    let product = 1;
    for (let i = 0; i < dims.length; i++) {
      const d = dims[i];
      if ((d | 0) !== d || d < 0) throw encodingError(`matrix dimension ${String(d)} invalid`);
      product *= d;
    }
    if (product !== Math.max(length, 0)) {
      throw encodingError(`matrix dimensions [${dims.join(",")}] do not match ${length} elements`);
    }
  }
  w.writeByte(type | VARIANT_ARRAY | (matrix ? VARIANT_DIMENSIONS : 0));
  w.writeInt32(length);
  for (let i = 0; i < length; i++) encodeScalarValue(w, type, (value as ArrayLike<unknown>)[i]);
  if (matrix) {
    const d = dims as readonly number[];
    w.writeInt32(d.length);
    for (let i = 0; i < d.length; i++) w.writeInt32(d[i]);
  }
}

/**
 * Decodes a Variant. A null array (length -1) is returned as an empty array; a null Variant is
 * the shared frozen NULL_VARIANT.
 */
export function decodeVariant(r: BinaryReader): Variant {
  r.enter();
  const b = r.readByte();
  const type = b & VARIANT_TYPE_MASK;
  if (type > BuiltinType.DiagnosticInfo) throw decodingError(`Variant type id ${type} unknown`);
  let result: Variant;
  if ((b & VARIANT_ARRAY) === 0) {
    if (b & VARIANT_DIMENSIONS) throw decodingError("Variant has dimensions without an array");
    if (type === BuiltinType.Null) {
      result = NULL_VARIANT;
    } else if (type === BuiltinType.Variant) {
      throw decodingError("a Variant cannot hold a scalar Variant");
    } else {
      result = { dataType: type, arrayType: VariantArrayType.Scalar, value: decodeScalarValue(r, type) };
    }
  } else {
    if (type === BuiltinType.Null) throw decodingError("Variant array of Null");
    const n = r.readArrayLength(MIN_ELEMENT_SIZE[type]);
    const length = n < 0 ? 0 : n;
    const values = new Array<unknown>(length);
    for (let i = 0; i < length; i++) values[i] = decodeScalarValue(r, type);
    if (b & VARIANT_DIMENSIONS) {
      const dimCount = r.readArrayLength(4);
      if (dimCount < 1) throw decodingError("matrix Variant without dimensions");
      const dimensions = new Array<number>(dimCount);
      let product = 1;
      for (let i = 0; i < dimCount; i++) {
        const d = r.readInt32();
        if (d < 0) throw decodingError(`matrix dimension ${d} is negative`);
        dimensions[i] = d;
        product *= d;
      }
      // Part 6 §5.2.2.16: the dimensions describe exactly the elements that were sent.
      if (product !== length) throw decodingError(`matrix dimensions [${dimensions.join(",")}] do not match ${length} elements`);
      result = { dataType: type, arrayType: VariantArrayType.Matrix, value: values, dimensions };
    } else {
      result = { dataType: type, arrayType: VariantArrayType.Array, value: values };
    }
  }
  r.leave();
  return result;
}

// ---------------------------------------------------------------------------------------------
// DataValue (Part 6 §5.2.2.17)

const DV_VALUE = 0x01;
const DV_STATUS = 0x02;
const DV_SOURCE_TIMESTAMP = 0x04;
const DV_SERVER_TIMESTAMP = 0x08;
const DV_SOURCE_PICOSECONDS = 0x10;
const DV_SERVER_PICOSECONDS = 0x20;

/**
 * Encodes a DataValue. Fields that are undefined are left out of the mask; a Good (0)
 * statusCode and zero picoseconds are left out too (they are the defaults when absent), so a
 * decoded DataValue has no statusCode when it was Good.
 */
export function encodeDataValue(w: BinaryWriter, v: DataValue): void {
  // Not a call of encodeDataValueFields: this is every DataValue's path, and the extra call of
  // seven arguments costs the Read rate.
  if (++w.depth > w.maxDepth) throw encodingError(`nesting deeper than ${w.maxDepth}`);
  const value = v.value;
  const status = v.statusCode;
  const sourceTs = v.sourceTimestamp;
  const serverTs = v.serverTimestamp;
  const sourcePs = v.sourcePicoseconds;
  const serverPs = v.serverPicoseconds;
  let mask = 0;
  if (value !== undefined && value !== null) mask |= DV_VALUE;
  if (status !== undefined && status !== 0) mask |= DV_STATUS;
  if (sourceTs !== undefined) mask |= DV_SOURCE_TIMESTAMP;
  if (serverTs !== undefined) mask |= DV_SERVER_TIMESTAMP;
  if (sourcePs !== undefined && sourcePs !== 0) mask |= DV_SOURCE_PICOSECONDS;
  if (serverPs !== undefined && serverPs !== 0) mask |= DV_SERVER_PICOSECONDS;
  w.ensure(1);
  w.buffer[w.pos++] = mask;
  if (mask & DV_VALUE) encodeVariant(w, value as Variant);
  if (mask & DV_STATUS) w.writeUInt32(status as number);
  if (mask & DV_SOURCE_TIMESTAMP) w.writeDateTime(sourceTs as number);
  if (mask & DV_SOURCE_PICOSECONDS) w.writeUInt16(sourcePs as number);
  if (mask & DV_SERVER_TIMESTAMP) w.writeDateTime(serverTs as number);
  if (mask & DV_SERVER_PICOSECONDS) w.writeUInt16(serverPs as number);
  w.depth--;
}

/**
 * A DataValue given field by field: what encodeDataValue writes for an object with these fields,
 * for a caller that would otherwise build that object only to have it written (a Read's results
 * with the timestamps asked for, services/attribute.ts).
 */
export function encodeDataValueFields(
  w: BinaryWriter,
  value: Variant | undefined,
  status: StatusCode | undefined,
  sourceTs: DateTime | undefined,
  sourcePs: number | undefined,
  serverTs: DateTime | undefined,
  serverPs: number | undefined,
): void {
  if (++w.depth > w.maxDepth) throw encodingError(`nesting deeper than ${w.maxDepth}`);
  let mask = 0;
  if (value !== undefined && value !== null) mask |= DV_VALUE;
  if (status !== undefined && status !== 0) mask |= DV_STATUS;
  if (sourceTs !== undefined) mask |= DV_SOURCE_TIMESTAMP;
  if (serverTs !== undefined) mask |= DV_SERVER_TIMESTAMP;
  if (sourcePs !== undefined && sourcePs !== 0) mask |= DV_SOURCE_PICOSECONDS;
  if (serverPs !== undefined && serverPs !== 0) mask |= DV_SERVER_PICOSECONDS;
  w.ensure(1);
  w.buffer[w.pos++] = mask;
  if (mask & DV_VALUE) encodeVariant(w, value as Variant);
  if (mask & DV_STATUS) w.writeUInt32(status as number);
  if (mask & DV_SOURCE_TIMESTAMP) w.writeDateTime(sourceTs as number);
  if (mask & DV_SOURCE_PICOSECONDS) w.writeUInt16(sourcePs as number);
  if (mask & DV_SERVER_TIMESTAMP) w.writeDateTime(serverTs as number);
  if (mask & DV_SERVER_PICOSECONDS) w.writeUInt16(serverPs as number);
  w.depth--;
}

export function decodeDataValue(r: BinaryReader): DataValue {
  r.enter();
  const mask = r.readByte();
  const dv: DataValue = {};
  if (mask & DV_VALUE) dv.value = decodeVariant(r);
  if (mask & DV_STATUS) dv.statusCode = r.readUInt32();
  if (mask & DV_SOURCE_TIMESTAMP) dv.sourceTimestamp = r.readDateTime();
  if (mask & DV_SOURCE_PICOSECONDS) dv.sourcePicoseconds = r.readUInt16();
  if (mask & DV_SERVER_TIMESTAMP) dv.serverTimestamp = r.readDateTime();
  if (mask & DV_SERVER_PICOSECONDS) dv.serverPicoseconds = r.readUInt16();
  r.leave();
  return dv;
}
