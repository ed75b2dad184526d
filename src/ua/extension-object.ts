// ExtensionObject (Part 6 §5.2.2.15) and the registry of structure codecs its bodies are
// encoded and decoded with. The generated structures (generated/types.ts) register themselves
// here when they load; a body of a type nobody registered is kept as bytes.
import type { BinaryReader } from "./binary-reader.js";
import type { BinaryWriter } from "./binary-writer.js";
import { IdType, type ExtensionObject, type NodeId, type XmlBody } from "./builtins.js";
import { decodingError, encodingError } from "./errors.js";
import { decodeNodeId, encodeNodeId, encodeNs0NumericNodeId } from "./node-id-codec.js";

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
// ExtensionObject

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
      // The length is known once the body is written: a mark, not a position (the body may
      // run over into further chunks).
      const lengthAt = w.mark();
      w.writeInt32(0);
      codec.encode(w, body);
      w.patchInt32(lengthAt, w.offset() - lengthAt - 4);
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
