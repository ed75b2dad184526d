// The requests of the read, write and browse scenarios as ServiceShapes for the pipeline.
import type { BinaryReader } from "../../src/ua/binary-reader.js";
import { BuiltinType, NULL_NODE_ID, VariantArrayType, numericNodeId, type NodeId } from "../../src/ua/builtins.js";
import { BrowseDirection, TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { AttributeIds, ObjectIds, ReferenceTypeIds } from "../../src/ua/generated/node-ids.js";
import { statusCodeName } from "../../src/ua/generated/status-codes.js";
import {
  decodeBrowseResponse,
  decodeReadResponse,
  decodeWriteResponse,
  encodeBrowseRequest,
  encodeReadRequest,
  encodeWriteRequest,
  type BrowseDescription,
  type ReadValueId,
  type WriteValue,
} from "../../src/ua/generated/types.js";
import { isGood, type ServiceShape } from "./service-pipeline.js";

/** DataValue encoding mask bits (Part 6 §5.2.2.17). */
const DV_HAS_VALUE = 0x01;
const DV_HAS_STATUS = 0x02;

export interface ReadShapeOptions {
  nodesToRead: readonly ReadValueId[];
  maxAge?: number;
  timestampsToReturn?: TimestampsToReturn;
}

/**
 * Read of `nodesToRead` (the read scenario's hot loop). The minimal check looks at the result
 * count and at the first result only: a Bad status without a value (BadNodeIdUnknown and the
 * like) is an error; the full decode of every Nth response checks that every result is Good and
 * carries a value.
 */
export function readShape(options: ReadShapeOptions): ServiceShape {
  const nodesToRead = [...options.nodesToRead];
  const count = nodesToRead.length;
  return {
    service: "Read",
    requestEncodingId: ObjectIds.ReadRequest_Encoding_DefaultBinary,
    responseEncodingId: ObjectIds.ReadResponse_Encoding_DefaultBinary,
    encode: (w, requestHeader) =>
      encodeReadRequest(w, {
        requestHeader,
        maxAge: options.maxAge ?? 0,
        timestampsToReturn: options.timestampsToReturn ?? TimestampsToReturn.Both,
        nodesToRead,
      }),
    checkResults(b, p, end) {
      if (end - p < 4) return "Read response without results";
      const n = b.readInt32LE(p);
      if (n !== count) return `Read returned ${n} results for ${count} nodes`;
      if (n > 0 && end - p >= 9) {
        const mask = b[p + 4];
        if ((mask & DV_HAS_VALUE) === 0 && (mask & DV_HAS_STATUS) !== 0) {
          const status = b.readUInt32LE(p + 5);
          if (!isGood(status)) return `Read result ${statusCodeName(status)}`;
        }
      }
      return null;
    },
    verify(r: BinaryReader) {
      const res = decodeReadResponse(r);
      const results = res.results ?? [];
      const serviceResult = res.responseHeader.serviceResult;
      let error: string | null = null;
      if (!isGood(serviceResult)) error = `Read serviceResult ${statusCodeName(serviceResult)}`;
      else if (results.length !== count) error = `Read returned ${results.length} results for ${count} nodes`;
      else {
        for (const dv of results) {
          const status = dv.statusCode ?? 0;
          if (!isGood(status)) error ??= `Read result ${statusCodeName(status)}`;
          else if (dv.value === undefined) error ??= "Read result Good without a value";
        }
      }
      return { requestHandle: res.responseHeader.requestHandle, error };
    },
  };
}

/** Marks the Int32 values of a changing Write in the encoded template (count < 0x10000). */
const VALUE_SENTINEL = 0x3a5c0000;
/** Variant encoding byte of a scalar Int32 (Part 6 §5.2.2.16). */
const VARIANT_INT32 = 6;

/**
 * Write of `count` Int32 values to `nodes`, round robin; the value of each is its index, or, when
 * `changing`, the number of the send (every request changes every value: the writer of `sub`).
 */
export function writeShape(nodes: readonly NodeId[], count: number, changing = false): ServiceShape {
  const nodesToWrite: WriteValue[] = Array.from({ length: count }, (_, i) => ({
    nodeId: nodes[i % nodes.length],
    attributeId: AttributeIds.Value,
    indexRange: undefined,
    value: { value: { dataType: BuiltinType.Int32, arrayType: VariantArrayType.Scalar, value: changing ? VALUE_SENTINEL + i : i } },
  }));
  const valueAt = new Int32Array(changing ? count : 0);
  return {
    prepare: changing
      ? (template) => {
          let found = 0;
          for (let p = 1; p + 4 <= template.length && found < count; p++) {
            if (template[p - 1] === VARIANT_INT32 && template.readInt32LE(p) === VALUE_SENTINEL + found) valueAt[found++] = p;
          }
          if (found !== count) throw new Error(`Write template: found ${found} of ${count} values`);
        }
      : undefined,
    patch: changing
      ? (frame, n) => {
          for (let i = 0; i < valueAt.length; i++) frame.writeInt32LE(n | 0, valueAt[i]);
        }
      : undefined,
    service: "Write",
    requestEncodingId: ObjectIds.WriteRequest_Encoding_DefaultBinary,
    responseEncodingId: ObjectIds.WriteResponse_Encoding_DefaultBinary,
    encode: (w, requestHeader) => encodeWriteRequest(w, { requestHeader, nodesToWrite }),
    checkResults(b, p, end) {
      if (end - p < 4) return "Write response without results";
      const n = b.readInt32LE(p);
      if (n !== count) return `Write returned ${n} results for ${count} values`;
      if (end - p < 4 + 4 * n) return "Write results cut short";
      for (let i = 0; i < n; i++) {
        const s = b.readUInt32LE(p + 4 + 4 * i);
        if (!isGood(s)) return `Write result ${statusCodeName(s)}`;
      }
      return null;
    },
    verify(r: BinaryReader) {
      const res = decodeWriteResponse(r);
      const results = res.results ?? [];
      let error: string | null = null;
      if (results.length !== count) error = `Write returned ${results.length} results for ${count} values`;
      else for (const s of results) if (!isGood(s)) error ??= `Write result ${statusCodeName(s)}`;
      return { requestHandle: res.responseHeader.requestHandle, error };
    },
  };
}

/** Browse of the forward hierarchical references of each node, all in one request, every result mask bit. */
export function browseShape(nodes: readonly NodeId[]): ServiceShape {
  const nodesToBrowse: BrowseDescription[] = nodes.map((nodeId) => ({
    nodeId,
    browseDirection: BrowseDirection.Forward,
    referenceTypeId: numericNodeId(ReferenceTypeIds.HierarchicalReferences),
    includeSubtypes: true,
    nodeClassMask: 0,
    resultMask: 0x3f,
  }));
  const count = nodes.length;
  return {
    service: "Browse",
    requestEncodingId: ObjectIds.BrowseRequest_Encoding_DefaultBinary,
    responseEncodingId: ObjectIds.BrowseResponse_Encoding_DefaultBinary,
    // requestedMaxReferencesPerNode 0: no limit from the client, so no continuation point to release.
    encode: (w, requestHeader) =>
      encodeBrowseRequest(w, { requestHeader, view: { viewId: NULL_NODE_ID, timestamp: 0, viewVersion: 0 }, requestedMaxReferencesPerNode: 0, nodesToBrowse }),
    checkResults(b, p, end) {
      if (end - p < 4) return "Browse response without results";
      const n = b.readInt32LE(p);
      if (n !== count) return `Browse returned ${n} results for ${count} nodes`;
      if (end - p < 16) return "Browse result cut short";
      const s = b.readUInt32LE(p + 4);
      if (!isGood(s)) return `Browse result ${statusCodeName(s)}`;
      const cp = b.readInt32LE(p + 8);
      if (cp > 0) return "Browse result with a continuation point";
      // References follow the (null or empty) continuation point: the first node must have some.
      const refs = b.readInt32LE(p + 12 + Math.max(cp, 0));
      if (refs <= 0) return "Browse result without references";
      return null;
    },
    verify(r: BinaryReader) {
      const res = decodeBrowseResponse(r);
      const results = res.results ?? [];
      let error: string | null = null;
      if (results.length !== count) error = `Browse returned ${results.length} results for ${count} nodes`;
      else {
        for (const br of results) {
          if (!isGood(br.statusCode)) error ??= `Browse result ${statusCodeName(br.statusCode)}`;
          else if (br.continuationPoint?.length) error ??= "Browse result with a continuation point";
          else if (!br.references?.length) error ??= "Browse result without references";
        }
      }
      return { requestHandle: res.responseHeader.requestHandle, error };
    },
  };
}
