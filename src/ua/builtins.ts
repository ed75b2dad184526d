// Built-in data types of OPC UA Part 6 §5.1.2, as plain TypeScript shapes.
// The codec (binary-reader.ts, binary-writer.ts, builtin-codec.ts) maps these to and from bytes;
// everything above the codec speaks only these shapes.

/** Built-in type ids (Part 6 §5.1.2, Table 1): also the DataType NodeIds i=1..25 of namespace 0. */
export enum BuiltinType {
  Null = 0,
  Boolean = 1,
  SByte = 2,
  Byte = 3,
  Int16 = 4,
  UInt16 = 5,
  Int32 = 6,
  UInt32 = 7,
  Int64 = 8,
  UInt64 = 9,
  Float = 10,
  Double = 11,
  String = 12,
  DateTime = 13,
  Guid = 14,
  ByteString = 15,
  XmlElement = 16,
  NodeId = 17,
  ExpandedNodeId = 18,
  StatusCode = 19,
  QualifiedName = 20,
  LocalizedText = 21,
  ExtensionObject = 22,
  DataValue = 23,
  Variant = 24,
  DiagnosticInfo = 25,
}

export enum IdType {
  Numeric = 0,
  String = 1,
  Guid = 2,
  Opaque = 3,
}

/**
 * A NodeId. `value` is a number (UInt32) for Numeric, a string for String, a lower-case
 * 8-4-4-4-12 string for Guid, and a Buffer for Opaque.
 */
export interface NodeId {
  readonly namespace: number;
  readonly idType: IdType;
  readonly value: number | string | Buffer;
}

export interface ExpandedNodeId {
  readonly nodeId: NodeId;
  /** Set when the id names its namespace by URI instead of by index (Part 6 §5.2.2.10). */
  readonly namespaceUri?: string;
  readonly serverIndex: number;
}

export interface QualifiedName {
  readonly namespaceIndex: number;
  readonly name: string;
}

export interface LocalizedText {
  readonly locale?: string;
  readonly text?: string;
}

/**
 * DateTime values are milliseconds since 1970-01-01 UTC (a JS time value, may be fractional).
 * The wire form is 100 ns ticks since 1601; below 1 µs the conversion rounds.
 * DateTime.MinValue (0 on the wire) is `DATETIME_MIN`.
 */
export type DateTime = number;

/** The JS time value that encodes as 0 ticks (1601-01-01), OPC UA's "no date". */
export const DATETIME_MIN = -11644473600000;

/** StatusCodes are UInt32 numbers; names live in generated/status-codes.ts. */
export type StatusCode = number;

export enum VariantArrayType {
  Scalar = 0,
  Array = 1,
  Matrix = 2,
}

/**
 * A Variant. For Scalar, `value` is one value of `dataType`; for Array and Matrix, it is a JS
 * array of such values (a Matrix flattened, with `dimensions`). Int64/UInt64 are bigints.
 * A null Variant is `{ dataType: BuiltinType.Null, arrayType: Scalar, value: null }`.
 */
export interface Variant {
  readonly dataType: BuiltinType;
  readonly arrayType: VariantArrayType;
  readonly value: unknown;
  readonly dimensions?: readonly number[];
}

export interface DataValue {
  value?: Variant;
  statusCode?: StatusCode;
  sourceTimestamp?: DateTime;
  sourcePicoseconds?: number;
  serverTimestamp?: DateTime;
  serverPicoseconds?: number;
}

export interface DiagnosticInfo {
  symbolicId?: number;
  namespaceUri?: number;
  localizedText?: number;
  locale?: number;
  additionalInfo?: string;
  innerStatusCode?: StatusCode;
  innerDiagnosticInfo?: DiagnosticInfo;
}

/**
 * An ExtensionObject. `typeId` is the binary encoding NodeId of the body.
 * `body` is the decoded structure when the encoding id is registered with the codec, a copied
 * Buffer for an unknown binary body, `{ xml }` for an XML body, and null when there is none.
 */
export interface ExtensionObject {
  readonly typeId: NodeId;
  readonly body: object | Buffer | XmlBody | null;
}

export interface XmlBody {
  readonly xml: string;
}

export const NULL_NODE_ID: NodeId = Object.freeze({ namespace: 0, idType: IdType.Numeric, value: 0 });
export const NULL_VARIANT: Variant = Object.freeze({
  dataType: BuiltinType.Null,
  arrayType: VariantArrayType.Scalar,
  value: null,
});

export function numericNodeId(value: number, namespace = 0): NodeId {
  return { namespace, idType: IdType.Numeric, value };
}

export function stringNodeId(value: string, namespace: number): NodeId {
  return { namespace, idType: IdType.String, value };
}

export function scalar(dataType: BuiltinType, value: unknown): Variant {
  return { dataType, arrayType: VariantArrayType.Scalar, value };
}

export function arrayOf(dataType: BuiltinType, value: readonly unknown[]): Variant {
  return { dataType, arrayType: VariantArrayType.Array, value };
}
