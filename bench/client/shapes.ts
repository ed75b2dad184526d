// The requests of the write and browse scenarios as ServiceShapes for the pipeline.
import type { BinaryReader } from "../../src/ua/binary-reader.js";
import { BuiltinType, NULL_NODE_ID, VariantArrayType, numericNodeId, type NodeId } from "../../src/ua/builtins.js";
import { BrowseDirection } from "../../src/ua/generated/enums.js";
import { AttributeIds, ObjectIds, ReferenceTypeIds } from "../../src/ua/generated/node-ids.js";
import { statusCodeName } from "../../src/ua/generated/status-codes.js";
import {
  decodeBrowseResponse,
  decodeWriteResponse,
  encodeBrowseRequest,
  encodeWriteRequest,
  type BrowseDescription,
  type WriteValue,
} from "../../src/ua/generated/types.js";
import { isGood, type ServiceShape } from "./service-pipeline.js";

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
