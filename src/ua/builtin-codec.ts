// Binary encoding of the structured built-in types of Part 6 §5.2.2 on top of the primitives of
// BinaryReader/BinaryWriter: the one import for the codec of built-ins, used by the generated
// structures and the services. Each part lives where a reader looks for it:
//
//   node-id-codec.ts      NodeId, ExpandedNodeId
//   status-text-codec.ts  StatusCode, DiagnosticInfo, XmlElement, QualifiedName, LocalizedText
//   extension-object.ts   ExtensionObject and the registry of structure codecs for its bodies
//   variant-codec.ts      Variant and DataValue (the Read/Publish hot path), on top of the others
//
// Decoding treats its input as hostile: every length is checked against the bytes left before
// anything is allocated, nesting is bounded (reader.enter/leave), and every failure is a
// UaStatusError. Encoding validates values against their types (BadEncodingError) so a bad value
// from a driver or a service ends one message, never the process.
//
// Re-exports are bound at module link time: a call through this module costs nothing extra.
export { decodeExpandedNodeId, decodeNodeId, encodeExpandedNodeId, encodeNodeId } from "./node-id-codec.js";
export {
  decodeDiagnosticInfo,
  decodeLocalizedText,
  decodeQualifiedName,
  decodeStatusCode,
  decodeXmlElement,
  encodeDiagnosticInfo,
  encodeLocalizedText,
  encodeQualifiedName,
  encodeStatusCode,
  encodeXmlElement,
} from "./status-text-codec.js";
export {
  decodeExtensionObject,
  encodeExtensionObject,
  registerStructure,
  structureByDataTypeId,
  structureByEncodingId,
  type StructureCodec,
} from "./extension-object.js";
export { decodeDataValue, decodeVariant, encodeDataValue, encodeVariant } from "./variant-codec.js";
