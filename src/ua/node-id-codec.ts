// NodeId and ExpandedNodeId (Part 6 §5.2.2.9, §5.2.2.10): the built-ins every other structure
// refers to, written in the smallest of their encodings.
import type { BinaryReader } from "./binary-reader.js";
import type { BinaryWriter } from "./binary-writer.js";
import { IdType, type ExpandedNodeId, type NodeId } from "./builtins.js";
import { decodingError, encodingError } from "./errors.js";
import { putInt32, putUInt16 } from "./le.js";

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

/** `flags`: the ExpandedNodeId bits OR'ed into the encoding byte (0 for a NodeId). */
export function encodeNodeId(w: BinaryWriter, v: NodeId, flags = 0): void {
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
        w.buffer[w.pos] = NodeIdEncoding.TwoByte | flags;
        w.buffer[w.pos + 1] = value;
        w.pos += 2;
      } else if (ns <= 0xff && value <= 0xffff) {
        w.ensure(4);
        const b = w.buffer;
        const p = w.pos;
        b[p] = NodeIdEncoding.FourByte | flags;
        b[p + 1] = ns;
        b[p + 2] = value & 0xff;
        b[p + 3] = value >>> 8;
        w.pos = p + 4;
      } else {
        w.ensure(7);
        w.buffer[w.pos] = NodeIdEncoding.Numeric | flags;
        putUInt16(w.buffer, w.pos + 1, ns);
        putInt32(w.buffer, w.pos + 3, value);
        w.pos += 7;
      }
      return;
    }
    case IdType.String:
      if (typeof value !== "string") throw encodingError("string NodeId without a string value");
      w.writeByte(NodeIdEncoding.String | flags);
      w.writeUInt16(ns);
      w.writeString(value);
      return;
    case IdType.Guid:
      if (typeof value !== "string") throw encodingError("Guid NodeId without a Guid value");
      w.writeByte(NodeIdEncoding.Guid | flags);
      w.writeUInt16(ns);
      w.writeGuid(value);
      return;
    case IdType.Opaque:
      if (!(value instanceof Uint8Array)) throw encodingError("opaque NodeId without a Buffer value");
      w.writeByte(NodeIdEncoding.ByteString | flags);
      w.writeUInt16(ns);
      w.writeByteString(value);
      return;
    default:
      throw encodingError(`NodeId idType ${String(v.idType)} unknown`);
  }
}

/** A ns0 numeric NodeId without building the object (ExtensionObject type ids, a message's type id). */
export function encodeNs0NumericNodeId(w: BinaryWriter, value: number): void {
  if (value <= 0xff) {
    w.writeByte(NodeIdEncoding.TwoByte);
    w.writeByte(value);
  } else if (value <= 0xffff) {
    w.ensure(4);
    const b = w.buffer;
    const p = w.pos;
    b[p] = NodeIdEncoding.FourByte;
    b[p + 1] = 0;
    b[p + 2] = value & 0xff;
    b[p + 3] = value >>> 8;
    w.pos = p + 4;
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
  if (r.pos === r.knownAt) {
    r.pos = r.knownEnd;
    return r.known as NodeId;
  }
  // Flag bits are only meaningful in an ExpandedNodeId; on a NodeId they are an error.
  return decodeNodeIdBody(r, r.readByte());
}

export function encodeExpandedNodeId(w: BinaryWriter, v: ExpandedNodeId): void {
  // The flags go into the NodeId's first byte, so they are known before it is written (no
  // patching of a byte that may be in a chunk already sent).
  const serverIndex = v.serverIndex ?? 0;
  const flags = (v.namespaceUri !== undefined ? NAMESPACE_URI_FLAG : 0) | (serverIndex !== 0 ? SERVER_INDEX_FLAG : 0);
  encodeNodeId(w, v.nodeId, flags);
  if (v.namespaceUri !== undefined) w.writeString(v.namespaceUri);
  if (serverIndex !== 0) w.writeUInt32(serverIndex);
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
