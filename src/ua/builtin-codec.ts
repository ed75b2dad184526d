// Binary encoding of the structured built-in types of Part 6 §5.2.2 (NodeId, Variant, DataValue,
// ...) on top of the primitives of BinaryReader/BinaryWriter, plus the registry of structure
// codecs that ExtensionObject bodies are decoded with.
//
// Decoding treats its input as hostile: every length is checked against the bytes left before
// anything is allocated, nesting is bounded (reader.enter/leave), and every failure is a
// UaStatusError. Encoding validates values against their types (BadEncodingError) so a bad value
// from a driver or a service ends one message, never the process.
import type { BinaryReader } from "./binary-reader.js";
import type { BinaryWriter } from "./binary-writer.js";
import {
  BuiltinType,
  IdType,
  NULL_VARIANT,
  VariantArrayType,
  type DataValue,
  type DiagnosticInfo,
  type ExpandedNodeId,
  type ExtensionObject,
  type LocalizedText,
  type NodeId,
  type QualifiedName,
  type Variant,
  type XmlBody,
} from "./builtins.js";
import { UaStatusError, decodingError } from "./errors.js";
import { StatusCodes } from "./generated/status-codes.js";

function encodingError(message: string): UaStatusError {
  return new UaStatusError(StatusCodes.BadEncodingError, message);
}

// ---------------------------------------------------------------------------------------------
// Structure registry (ExtensionObject bodies)

export interface StructureCodec<T extends object = object> {
  readonly name: string;
  readonly dataTypeId: number;
  readonly binaryEncodingId: number;
  encode(w: BinaryWriter, v: T): void;
  decode(r: BinaryReader): T;
}

const byEncodingId = new Map<number, StructureCodec>();
const byDataTypeId = new Map<number, StructureCodec>();

/** Registers a ns0 structure; a later registration of the same ids replaces the earlier one. */
export function registerStructure(codec: StructureCodec): void {
  byEncodingId.set(codec.binaryEncodingId, codec);
  byDataTypeId.set(codec.dataTypeId, codec);
}

export function structureByEncodingId(id: number): StructureCodec | undefined {
  return byEncodingId.get(id);
}

export function structureByDataTypeId(id: number): StructureCodec | undefined {
  return byDataTypeId.get(id);
}

// ---------------------------------------------------------------------------------------------
// NodeId / ExpandedNodeId (Part 6 §5.2.2.9, §5.2.2.10)

const enum NodeIdEncoding {
  TwoByte = 0x00,
  FourByte = 0x01,
  Numeric = 0x02,
  String = 0x03,
  Guid = 0x04,
  ByteString = 0x05,
}
const NAMESPACE_URI_FLAG = 0x80;
const SERVER_INDEX_FLAG = 0x40;

export function encodeNodeId(w: BinaryWriter, v: NodeId): void {
  const ns = v.namespace;
  if ((ns & 0xffff) !== ns) throw encodingError(`NodeId namespace ${String(ns)} is not a UInt16`);
  const value = v.value;
  switch (v.idType) {
    case IdType.Numeric: {
      if (typeof value !== "number" || value >>> 0 !== value) {
        throw encodingError(`numeric NodeId value ${String(value)} is not a UInt32`);
      }
      // Part 6 §5.2.2.9: the smallest form that holds the id.
      if (ns === 0 && value <= 0xff) {
        w.ensure(2);
        w.buffer[w.pos] = NodeIdEncoding.TwoByte;
        w.buffer[w.pos + 1] = value;
        w.pos += 2;
      } else if (ns <= 0xff && value <= 0xffff) {
        w.ensure(4);
        const b = w.buffer;
        const p = w.pos;
        b[p] = NodeIdEncoding.FourByte;
        b[p + 1] = ns;
        b[p + 2] = value & 0xff;
        b[p + 3] = value >>> 8;
        w.pos = p + 4;
      } else {
        w.ensure(7);
        w.buffer[w.pos] = NodeIdEncoding.Numeric;
        w.buffer.writeUInt16LE(ns, w.pos + 1);
        w.buffer.writeUInt32LE(value, w.pos + 3);
        w.pos += 7;
      }
      return;
    }
    case IdType.String:
      if (typeof value !== "string") throw encodingError("string NodeId without a string value");
      w.writeByte(NodeIdEncoding.String);
      w.writeUInt16(ns);
      w.writeString(value);
      return;
    case IdType.Guid:
      if (typeof value !== "string") throw encodingError("Guid NodeId without a Guid value");
      w.writeByte(NodeIdEncoding.Guid);
      w.writeUInt16(ns);
      w.writeGuid(value);
      return;
    case IdType.Opaque:
      if (!(value instanceof Uint8Array)) throw encodingError("opaque NodeId without a Buffer value");
      w.writeByte(NodeIdEncoding.ByteString);
      w.writeUInt16(ns);
      w.writeByteString(value);
      return;
    default:
      throw encodingError(`NodeId idType ${String(v.idType)} unknown`);
  }
}

/** A ns0 numeric NodeId without building the object (ExtensionObject type ids). */
function encodeNs0NumericNodeId(w: BinaryWriter, value: number): void {
  if (value <= 0xff) {
    w.writeByte(NodeIdEncoding.TwoByte);
    w.writeByte(value);
  } else if (value <= 0xffff) {
    w.writeByte(NodeIdEncoding.FourByte);
    w.writeByte(0);
    w.writeUInt16(value);
  } else {
    w.writeByte(NodeIdEncoding.Numeric);
    w.writeUInt16(0);
    w.writeUInt32(value);
  }
}

/** Reads the NodeId body after its encoding byte (flag bits already removed). */
function decodeNodeIdBody(r: BinaryReader, encoding: number): NodeId {
  switch (encoding) {
    case NodeIdEncoding.TwoByte:
      return { namespace: 0, idType: IdType.Numeric, value: r.readByte() };
    case NodeIdEncoding.FourByte: {
      const namespace = r.readByte();
      return { namespace, idType: IdType.Numeric, value: r.readUInt16() };
    }
    case NodeIdEncoding.Numeric: {
      const namespace = r.readUInt16();
      return { namespace, idType: IdType.Numeric, value: r.readUInt32() };
    }
    case NodeIdEncoding.String: {
      const namespace = r.readUInt16();
      // A null string id is read as "": NodeId values are never null in this model.
      return { namespace, idType: IdType.String, value: r.readString() ?? "" };
    }
    case NodeIdEncoding.Guid: {
      const namespace = r.readUInt16();
      return { namespace, idType: IdType.Guid, value: r.readGuid() };
    }
    case NodeIdEncoding.ByteString: {
      const namespace = r.readUInt16();
      // Copied: the id outlives the (pooled) message buffer, e.g. as a Map key or a session id.
      return { namespace, idType: IdType.Opaque, value: r.readByteString() ?? Buffer.alloc(0) };
    }
    default:
      throw decodingError(`NodeId encoding 0x${encoding.toString(16)} unknown`);
  }
}

export function decodeNodeId(r: BinaryReader): NodeId {
  // Flag bits are only meaningful in an ExpandedNodeId; on a NodeId they are an error.
  return decodeNodeIdBody(r, r.readByte());
}

export function encodeExpandedNodeId(w: BinaryWriter, v: ExpandedNodeId): void {
  const start = w.pos;
  encodeNodeId(w, v.nodeId);
  let flags = 0;
  if (v.namespaceUri !== undefined) {
    flags |= NAMESPACE_URI_FLAG;
    w.writeString(v.namespaceUri);
  }
  const serverIndex = v.serverIndex ?? 0;
  if (serverIndex !== 0) {
    flags |= SERVER_INDEX_FLAG;
    w.writeUInt32(serverIndex);
  }
  w.buffer[start] |= flags;
}

export function decodeExpandedNodeId(r: BinaryReader): ExpandedNodeId {
  const b = r.readByte();
  const nodeId = decodeNodeIdBody(r, b & 0x3f);
  let namespaceUri: string | undefined;
  let serverIndex = 0;
  if (b & NAMESPACE_URI_FLAG) namespaceUri = r.readString();
  if (b & SERVER_INDEX_FLAG) serverIndex = r.readUInt32();
  return namespaceUri === undefined ? { nodeId, serverIndex } : { nodeId, namespaceUri, serverIndex };
}

// ---------------------------------------------------------------------------------------------
// StatusCode, XmlElement, QualifiedName, LocalizedText (Part 6 §5.2.2.11-14)

export function encodeStatusCode(w: BinaryWriter, v: number): void {
  w.writeUInt32(v);
}

export function decodeStatusCode(r: BinaryReader): number {
  return r.readUInt32();
}

export function encodeXmlElement(w: BinaryWriter, v: string | undefined): void {
  w.writeString(v);
}

export function decodeXmlElement(r: BinaryReader): string | undefined {
  return r.readString();
}

export function encodeQualifiedName(w: BinaryWriter, v: QualifiedName): void {
  w.writeUInt16(v.namespaceIndex);
  w.writeString(v.name);
}

export function decodeQualifiedName(r: BinaryReader): QualifiedName {
  const namespaceIndex = r.readUInt16();
  // A null name is read as "": the shape has no null name.
  return { namespaceIndex, name: r.readString() ?? "" };
}

const LT_LOCALE = 0x01;
const LT_TEXT = 0x02;

export function encodeLocalizedText(w: BinaryWriter, v: LocalizedText): void {
  const locale = v.locale;
  const text = v.text;
  w.writeByte((locale !== undefined ? LT_LOCALE : 0) | (text !== undefined ? LT_TEXT : 0));
  if (locale !== undefined) w.writeString(locale);
  if (text !== undefined) w.writeString(text);
}

/** Reserved mask bits are ignored (Part 6 §5.2.2.14 leaves them unused, not forbidden). */
export function decodeLocalizedText(r: BinaryReader): LocalizedText {
  const mask = r.readByte();
  const locale = mask & LT_LOCALE ? r.readString() : undefined;
  const text = mask & LT_TEXT ? r.readString() : undefined;
  if (locale === undefined) return text === undefined ? {} : { text };
  return text === undefined ? { locale } : { locale, text };
}

// ---------------------------------------------------------------------------------------------
// ExtensionObject (Part 6 §5.2.2.15)

const EO_NO_BODY = 0x00;
const EO_BINARY = 0x01;
const EO_XML = 0x02;

export function encodeExtensionObject(w: BinaryWriter, v: ExtensionObject): void {
  if (++w.depth > w.maxDepth) throw encodingError(`nesting deeper than ${w.maxDepth}`);
  const body = v.body;
  if (body === null || body === undefined) {
    encodeNodeId(w, v.typeId);
    w.writeByte(EO_NO_BODY);
  } else if (body instanceof Uint8Array) {
    encodeNodeId(w, v.typeId);
    w.writeByte(EO_BINARY);
    w.writeByteString(body);
  } else {
    const codec = codecForTypeId(v.typeId);
    if (codec !== undefined) {
      // The binary encoding id is always sent, whichever of the two ids the caller named.
      encodeNs0NumericNodeId(w, codec.binaryEncodingId);
      w.writeByte(EO_BINARY);
      const lengthAt = w.pos;
      w.writeInt32(0);
      codec.encode(w, body);
      // Re-read the buffer: encoding may have grown (replaced) it.
      w.buffer.writeInt32LE(w.pos - lengthAt - 4, lengthAt);
    } else if (typeof (body as Partial<XmlBody>).xml === "string") {
      encodeNodeId(w, v.typeId);
      w.writeByte(EO_XML);
      w.writeString((body as XmlBody).xml);
    } else {
      throw encodingError(`no structure codec registered for ExtensionObject typeId ${describeNodeId(v.typeId)}`);
    }
  }
  w.depth--;
}

function codecForTypeId(typeId: NodeId): StructureCodec | undefined {
  if (typeId.namespace !== 0 || typeId.idType !== IdType.Numeric) return undefined;
  const id = typeId.value as number;
  return byEncodingId.get(id) ?? byDataTypeId.get(id);
}

function describeNodeId(id: NodeId): string {
  const v = id.value;
  return `ns=${id.namespace};${Buffer.isBuffer(v) ? v.toString("base64") : String(v)}`;
}

export function decodeExtensionObject(r: BinaryReader): ExtensionObject {
  r.enter();
  const typeId = decodeNodeId(r);
  const encoding = r.readByte();
  let result: ExtensionObject;
  if (encoding === EO_NO_BODY) {
    result = { typeId, body: null };
  } else if (encoding === EO_BINARY) {
    const length = r.readLength();
    if (length === -1) {
      result = { typeId, body: null };
    } else {
      r.need(length);
      const start = r.pos;
      const stop = start + length;
      const codec = typeId.namespace === 0 && typeId.idType === IdType.Numeric ? byEncodingId.get(typeId.value as number) : undefined;
      if (codec !== undefined) {
        // The body may not read past its declared length, nor leave bytes of it unread.
        const savedEnd = r.end;
        r.end = stop;
        let body: object;
        try {
          body = codec.decode(r);
        } finally {
          r.end = savedEnd;
        }
        if (r.pos !== stop) throw decodingError(`${codec.name} body is ${r.pos - start} bytes, declared ${length}`);
        result = { typeId, body };
      } else {
        // Copied: an unknown body is kept as bytes past the life of the (pooled) input buffer.
        const body = Buffer.allocUnsafe(length);
        r.buffer.copy(body, 0, start, stop);
        r.pos = stop;
        result = { typeId, body };
      }
    }
  } else if (encoding === EO_XML) {
    result = { typeId, body: { xml: r.readString() ?? "" } };
  } else {
    throw decodingError(`ExtensionObject encoding 0x${encoding.toString(16)} unknown`);
  }
  r.leave();
  return result;
}

// ---------------------------------------------------------------------------------------------
// Variant (Part 6 §5.2.2.16)

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

// ---------------------------------------------------------------------------------------------
// DiagnosticInfo (Part 6 §5.2.2.12)

const DI_SYMBOLIC_ID = 0x01;
const DI_NAMESPACE_URI = 0x02;
const DI_LOCALIZED_TEXT = 0x04;
const DI_LOCALE = 0x08;
const DI_ADDITIONAL_INFO = 0x10;
const DI_INNER_STATUS_CODE = 0x20;
const DI_INNER_DIAGNOSTIC_INFO = 0x40;

export function encodeDiagnosticInfo(w: BinaryWriter, v: DiagnosticInfo): void {
  if (++w.depth > w.maxDepth) throw encodingError(`nesting deeper than ${w.maxDepth}`);
  let mask = 0;
  if (v.symbolicId !== undefined) mask |= DI_SYMBOLIC_ID;
  if (v.namespaceUri !== undefined) mask |= DI_NAMESPACE_URI;
  if (v.localizedText !== undefined) mask |= DI_LOCALIZED_TEXT;
  if (v.locale !== undefined) mask |= DI_LOCALE;
  if (v.additionalInfo !== undefined) mask |= DI_ADDITIONAL_INFO;
  if (v.innerStatusCode !== undefined) mask |= DI_INNER_STATUS_CODE;
  if (v.innerDiagnosticInfo !== undefined) mask |= DI_INNER_DIAGNOSTIC_INFO;
  w.writeByte(mask);
  if (mask & DI_SYMBOLIC_ID) w.writeInt32(v.symbolicId as number);
  if (mask & DI_NAMESPACE_URI) w.writeInt32(v.namespaceUri as number);
  if (mask & DI_LOCALE) w.writeInt32(v.locale as number);
  if (mask & DI_LOCALIZED_TEXT) w.writeInt32(v.localizedText as number);
  if (mask & DI_ADDITIONAL_INFO) w.writeString(v.additionalInfo);
  if (mask & DI_INNER_STATUS_CODE) w.writeUInt32(v.innerStatusCode as number);
  if (mask & DI_INNER_DIAGNOSTIC_INFO) encodeDiagnosticInfo(w, v.innerDiagnosticInfo as DiagnosticInfo);
  w.depth--;
}

/** Field order on the wire (Part 6 §5.2.2.12): SymbolicId, NamespaceUri, Locale, LocalizedText, ... */
export function decodeDiagnosticInfo(r: BinaryReader): DiagnosticInfo {
  r.enter();
  const mask = r.readByte();
  const di: DiagnosticInfo = {};
  if (mask & DI_SYMBOLIC_ID) di.symbolicId = r.readInt32();
  if (mask & DI_NAMESPACE_URI) di.namespaceUri = r.readInt32();
  if (mask & DI_LOCALE) di.locale = r.readInt32();
  if (mask & DI_LOCALIZED_TEXT) di.localizedText = r.readInt32();
  if (mask & DI_ADDITIONAL_INFO) {
    const s = r.readString();
    if (s !== undefined) di.additionalInfo = s;
  }
  if (mask & DI_INNER_STATUS_CODE) di.innerStatusCode = r.readUInt32();
  if (mask & DI_INNER_DIAGNOSTIC_INFO) di.innerDiagnosticInfo = decodeDiagnosticInfo(r);
  r.leave();
  return di;
}
