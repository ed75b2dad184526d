// Attribute service set (Part 4 §5.10): Read and Write. Operations are grouped by namespace and
// each node manager gets its share in one call; the service applies what is common to all
// managers (limits, index ranges, data encodings, timestamps to return).
import type { AttributeRead, AttributeWrite, NodeManager, RequestContext } from "../address-space/node-manager.js";
import type { NamespaceRegistry } from "../address-space/namespace-registry.js";
import type { DataValue } from "../ua/builtins.js";
import { UaStatusError } from "../ua/errors.js";
import { TimestampsToReturn } from "../ua/generated/enums.js";
import { AttributeIds, ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import {
  decodeReadRequest,
  decodeWriteRequest,
  encodeReadResponse,
  encodeWriteResponse,
  type ReadRequest,
  type ReadResponse,
  type WriteRequest,
  type WriteResponse,
} from "../ua/generated/types.js";
import { applyIndexRange } from "./index-range.js";
import { defineService, responseHeader, SessionRequirement, type ServiceContext } from "../services/service-table.js";
import { checkOperationCount } from "./view.js";

const UNKNOWN_NODE: DataValue = Object.freeze({ statusCode: StatusCodes.BadNodeIdUnknown });

/**
 * Calls `fn` once per namespace with the indices of the items in it. The common case (one
 * namespace) passes no index list at all.
 */
function byNamespace<T extends { nodeId: { namespace: number } }>(
  registry: NamespaceRegistry,
  items: readonly T[],
  fn: (manager: NodeManager | undefined, indices: readonly number[] | undefined) => void,
): void {
  const first = items[0].nodeId.namespace;
  let mixed = false;
  for (let i = 1; i < items.length; i++) {
    if (items[i].nodeId.namespace !== first) {
      mixed = true;
      break;
    }
  }
  if (!mixed) {
    fn(registry.managerAt(first), undefined);
    return;
  }
  const groups = new Map<number, number[]>();
  for (let i = 0; i < items.length; i++) {
    const ns = items[i].nodeId.namespace;
    let g = groups.get(ns);
    if (!g) groups.set(ns, (g = []));
    g.push(i);
  }
  for (const [ns, indices] of groups) fn(registry.managerAt(ns), indices);
}

/** Part 4 §7.2 (DataEncoding): only "Default Binary" is served, and only for Value. */
function dataEncodingStatus(item: AttributeRead): number {
  const enc = item.dataEncoding;
  if (!enc || (enc.name === undefined || enc.name === "") && enc.namespaceIndex === 0) return StatusCodes.Good;
  if (item.attributeId !== AttributeIds.Value) return StatusCodes.BadDataEncodingInvalid;
  return enc.namespaceIndex === 0 && enc.name === "Default Binary" ? StatusCodes.Good : StatusCodes.BadDataEncodingUnsupported;
}

/** Applies TimestampsToReturn (Part 4 §7.40) without touching the manager's stored DataValue. */
function stamp(dv: DataValue, mode: TimestampsToReturn, now: number, isValue: boolean): DataValue {
  if (!isValue) return dv;
  switch (mode) {
    case TimestampsToReturn.Source:
      return dv.serverTimestamp === undefined ? dv : { value: dv.value, statusCode: dv.statusCode, sourceTimestamp: dv.sourceTimestamp, sourcePicoseconds: dv.sourcePicoseconds };
    case TimestampsToReturn.Both:
      return { value: dv.value, statusCode: dv.statusCode, sourceTimestamp: dv.sourceTimestamp, sourcePicoseconds: dv.sourcePicoseconds, serverTimestamp: now };
    case TimestampsToReturn.Server:
      return { value: dv.value, statusCode: dv.statusCode, serverTimestamp: now };
    default:
      return dv.sourceTimestamp === undefined && dv.serverTimestamp === undefined ? dv : { value: dv.value, statusCode: dv.statusCode };
  }
}

/** Reads many attributes for a session or an internal caller; used by Read and by later services. */
export function readAttributes(
  registry: NamespaceRegistry,
  rc: RequestContext,
  items: readonly AttributeRead[],
  timestamps: TimestampsToReturn,
): DataValue[] {
  const results: DataValue[] = new Array(items.length);
  byNamespace(registry, items, (manager, indices) => {
    if (manager) {
      manager.read(rc, items, results, indices);
    } else if (indices) {
      for (const i of indices) results[i] = UNKNOWN_NODE;
    } else {
      results.fill(UNKNOWN_NODE);
    }
  });
  const now = rc.now;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    let dv = results[i] ?? UNKNOWN_NODE;
    if (item.dataEncoding !== undefined) {
      const status = dataEncodingStatus(item);
      if (status !== StatusCodes.Good) dv = { statusCode: status };
    }
    if (item.indexRange !== undefined && item.indexRange !== "" && dv.value !== undefined) {
      dv = applyIndexRange(dv, item.indexRange);
    }
    results[i] = stamp(dv, timestamps, now, item.attributeId === AttributeIds.Value && dv.value !== undefined);
  }
  return results;
}

export const read = defineService<ReadRequest, ReadResponse>({
  name: "Read",
  requestEncodingId: ObjectIds.ReadRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.ReadResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeReadRequest,
  encode: encodeReadResponse,
  handle(ctx: ServiceContext, req: ReadRequest): ReadResponse {
    const items = req.nodesToRead ?? [];
    checkOperationCount(items.length, ctx.server.limits.maxNodesPerRead);
    // Part 4 §5.10.2: a negative maxAge and an unknown TimestampsToReturn fail the whole request.
    if (!(req.maxAge >= 0)) throw new UaStatusError(StatusCodes.BadMaxAgeInvalid);
    if (req.timestampsToReturn < TimestampsToReturn.Source || req.timestampsToReturn > TimestampsToReturn.Neither) {
      throw new UaStatusError(StatusCodes.BadTimestampsToReturnInvalid);
    }
    const results = readAttributes(ctx.server.registry, ctx.session!.context(ctx.now), items, req.timestampsToReturn);
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
  },
});

export const write = defineService<WriteRequest, WriteResponse>({
  name: "Write",
  requestEncodingId: ObjectIds.WriteRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.WriteResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeWriteRequest,
  encode: encodeWriteResponse,
  handle(ctx: ServiceContext, req: WriteRequest): WriteResponse | Promise<WriteResponse> {
    const items: readonly AttributeWrite[] = req.nodesToWrite ?? [];
    checkOperationCount(items.length, ctx.server.limits.maxNodesPerWrite);
    const rc = ctx.session!.context(ctx.now);
    const results: number[] = new Array(items.length).fill(StatusCodes.BadNodeIdUnknown);
    const pending: Promise<void>[] = [];
    byNamespace(ctx.server.registry, items, (manager, indices) => {
      if (!manager) return;
      const done = manager.write(rc, items, results, indices);
      if (done) pending.push(done);
    });
    const response = (): WriteResponse => ({ responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] });
    // Device writes complete later; everything else answers at once.
    return pending.length === 0 ? response() : Promise.all(pending).then(response);
  },
});
