// The small fixed-layout built-ins: StatusCode and DiagnosticInfo (Part 6 §5.2.2.11, §5.2.2.12),
// XmlElement, QualifiedName and LocalizedText (§5.2.2.13, §5.2.2.14). None of them holds
// another built-in of variable type, so none needs the registry or the Variant codec.
import type { BinaryReader } from "./binary-reader.js";
import type { BinaryWriter } from "./binary-writer.js";
import type { DiagnosticInfo, LocalizedText, QualifiedName } from "./builtins.js";
import { encodingError } from "./errors.js";

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

/**
 * The QualifiedName that nearly every ReadValueId and Browse result carries as its
 * dataEncoding: namespace 0 with a null (or empty) name. Decoded as one shared, frozen value, so a
 * Read of 10,000 nodes does not make 10,000 of them (garbage that outlives the young generation
 * and grows the heap under load).
 */
const NULL_NAME: QualifiedName = Object.freeze({ namespaceIndex: 0, name: "" });

export function decodeQualifiedName(r: BinaryReader): QualifiedName {
  const namespaceIndex = r.readUInt16();
  // A null name is read as "": the shape has no null name.
  const name = r.readString() ?? "";
  return namespaceIndex === 0 && name === "" ? NULL_NAME : { namespaceIndex, name };
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
