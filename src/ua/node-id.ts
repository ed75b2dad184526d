// NodeId text form (Part 6 §5.3.1.10: `ns=<index>;<i|s|g|b>=<value>`), equality, and a cheap
// Map key. The text form is what the device map and the config use for NodeIds.
import { IdType, type ExpandedNodeId, type NodeId } from "./builtins.js";
import { UaStatusError } from "./errors.js";
import { StatusCodes } from "./generated/status-codes.js";

const TYPE_LETTER = ["i", "s", "g", "b"] as const;
const TWO_32 = 4294967296;
const GUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const UINT_RE = /^(?:0|[1-9][0-9]*)$/;
const NULL_GUID = "00000000-0000-0000-0000-000000000000";

function opaqueText(v: Uint8Array): string {
  // A view, not a copy: Buffer.from(buffer) would copy the bytes first.
  return (Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength)).toString("base64");
}

function idValueText(id: NodeId): string {
  const v = id.value;
  switch (id.idType) {
    case IdType.Numeric:
      return String(v);
    case IdType.String:
      return v as string;
    case IdType.Guid:
      return (v as string).toLowerCase();
    case IdType.Opaque:
      return opaqueText(v as Uint8Array);
    default:
      return String(v);
  }
}

/** `i=85`, `ns=1;s=boiler.temp`, `ns=2;g=<guid>`, `ns=3;b=<base64>`; ns 0 is left out. */
export function nodeIdToString(id: NodeId): string {
  const body = `${TYPE_LETTER[id.idType] ?? "?"}=${idValueText(id)}`;
  return id.namespace === 0 ? body : `ns=${id.namespace};${body}`;
}

function invalid(text: string, why: string): UaStatusError {
  return new UaStatusError(StatusCodes.BadNodeIdInvalid, `${JSON.stringify(text)}: ${why}`);
}

function parseUInt(text: string, max: number): number | undefined {
  if (!UINT_RE.test(text) || text.length > 10) return undefined;
  const n = Number(text);
  return n <= max ? n : undefined;
}

/** Parses `<i|s|g|b>=<value>` (no namespace prefix) into a NodeId of namespace `ns`. */
function parseIdentifier(whole: string, rest: string, namespace: number): NodeId {
  const kind = rest.slice(0, 2);
  const value = rest.slice(2);
  switch (kind) {
    case "i=": {
      const n = parseUInt(value, TWO_32 - 1);
      if (n === undefined) throw invalid(whole, "numeric identifier is not a UInt32");
      return { namespace, idType: IdType.Numeric, value: n };
    }
    case "s=":
      // Everything after "s=" is the id, ';' and '=' included (the prefix is parsed first).
      if (value.length === 0) throw invalid(whole, "empty string identifier");
      return { namespace, idType: IdType.String, value };
    case "g=":
      if (!GUID_RE.test(value)) throw invalid(whole, "Guid identifier is not 8-4-4-4-12 hex");
      return { namespace, idType: IdType.Guid, value: value.toLowerCase() };
    case "b=":
      if (!BASE64_RE.test(value)) throw invalid(whole, "opaque identifier is not base64");
      return { namespace, idType: IdType.Opaque, value: Buffer.from(value, "base64") };
    default:
      throw invalid(whole, "expected i=, s=, g= or b=");
  }
}

/** Parses the text form; throws UaStatusError(BadNodeIdInvalid) on anything else. */
export function parseNodeId(text: string): NodeId {
  if (typeof text !== "string") throw invalid(String(text), "not a string");
  if (text.startsWith("ns=")) {
    const semi = text.indexOf(";");
    if (semi < 0) throw invalid(text, "namespace without identifier");
    const ns = parseUInt(text.slice(3, semi), 0xffff);
    if (ns === undefined) throw invalid(text, "namespace index is not a UInt16");
    return parseIdentifier(text, text.slice(semi + 1), ns);
  }
  return parseIdentifier(text, text, 0);
}

export function nodeIdEquals(a: NodeId, b: NodeId): boolean {
  if (a === b) return true;
  if (a.namespace !== b.namespace || a.idType !== b.idType) return false;
  const av = a.value;
  const bv = b.value;
  switch (a.idType) {
    case IdType.Guid:
      return (av as string).toLowerCase() === (bv as string).toLowerCase();
    case IdType.Opaque:
      return Buffer.compare(av as Uint8Array, bv as Uint8Array) === 0;
    default:
      return av === bv;
  }
}

/**
 * A Map key for a NodeId, distinct for distinct ids. Numeric ids are numbers (no allocation):
 * ns 0 gives the id itself, ns n > 0 gives n·2^32 + id (exact below 2^53, never colliding with
 * ns 0). Other ids are strings `<ns>;<letter>=<value>`, which never equal a number.
 */
export function nodeIdKey(id: NodeId): string | number {
  if (id.idType === IdType.Numeric) {
    const v = id.value as number;
    return id.namespace === 0 ? v : id.namespace * TWO_32 + v;
  }
  return `${id.namespace};${TYPE_LETTER[id.idType]}=${idValueText(id)}`;
}

/**
 * Part 3 §8.2.4: the null NodeId is namespace 0 with a zero numeric id, an empty string, the
 * all-zero Guid or an empty ByteString.
 */
export function isNullNodeId(id: NodeId | undefined | null): boolean {
  if (id == null) return true;
  if (id.namespace !== 0) return false;
  const v = id.value;
  switch (id.idType) {
    case IdType.Numeric:
      return v === 0;
    case IdType.String:
      return v === "";
    case IdType.Guid:
      return v === NULL_GUID;
    case IdType.Opaque:
      return (v as Uint8Array).length === 0;
    default:
      return false;
  }
}

/**
 * `svr=<index>;nsu=<uri>;<id>` (Part 6 §5.3.1.11), each prefix only when it applies. With a
 * namespace URI, the index is left out; ';' in the URI is escaped as %3B so the text parses back.
 */
export function expandedNodeIdToString(id: ExpandedNodeId): string {
  let out = id.serverIndex ? `svr=${id.serverIndex};` : "";
  if (id.namespaceUri !== undefined) {
    out += `nsu=${id.namespaceUri.replace(/%/g, "%25").replace(/;/g, "%3B")};`;
    out += `${TYPE_LETTER[id.nodeId.idType] ?? "?"}=${idValueText(id.nodeId)}`;
  } else {
    out += nodeIdToString(id.nodeId);
  }
  return out;
}
