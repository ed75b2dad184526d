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
import { applyIndexRange } from "../ua/numeric-range.js";
import type { BinaryWriter } from "../ua/binary-writer.js";
import { encodeDataValue, encodeDataValueFields } from "../ua/variant-codec.js";
import { BATCH, decodeCompactReadRequest, type CompactReadRequest, type ReadItems } from "./read-items.js";
import {
  decodeWriteRequest,
  encodeResponseHeader,
  encodeWriteResponse,
  type ReadResponse,
  type WriteRequest,
  type WriteResponse,
} from "../ua/generated/types.js";
import { defineService, responseHeader, SessionRequirement, type ServiceContext } from "./service-table.js";
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
  const groups = namespaceGroups(items);
  if (groups === undefined) fn(registry.managerAt(items[0].nodeId.namespace), undefined);
  else for (const [ns, indices] of groups) fn(registry.managerAt(ns), indices);
}

/** The items' indices by namespace, or undefined when all are in one (the common case). */
function namespaceGroups(items: readonly { nodeId: { namespace: number } }[]): Map<number, number[]> | undefined {
  const first = items[0].nodeId.namespace;
  let i = 1;
  while (i < items.length && items[i].nodeId.namespace === first) i++;
  if (i === items.length) return undefined;
  const groups = new Map<number, number[]>();
  for (let k = 0; k < items.length; k++) {
    const ns = items[k].nodeId.namespace;
    let g = groups.get(ns);
    if (!g) groups.set(ns, (g = []));
    g.push(k);
  }
  return groups;
}

/** A manager's share of a Read; a namespace without one answers BadNodeIdUnknown. */
function readFrom(manager: NodeManager | undefined, rc: RequestContext, items: readonly AttributeRead[], out: DataValue[], indices: readonly number[] | undefined): void {
  if (manager) manager.read(rc, items, out, indices);
  else if (indices) for (const i of indices) out[i] = UNKNOWN_NODE;
  else for (let i = 0; i < items.length; i++) out[i] = UNKNOWN_NODE;
}

/** Part 4 §7.2 (DataEncoding): only "Default Binary" is served, and only for Value. */
function dataEncodingStatus(item: AttributeRead): number {
  const enc = item.dataEncoding;
  if (!enc || (enc.name === undefined || enc.name === "") && enc.namespaceIndex === 0) return StatusCodes.Good;
  if (item.attributeId !== AttributeIds.Value) return StatusCodes.BadDataEncodingInvalid;
  return enc.namespaceIndex === 0 && enc.name === "Default Binary" ? StatusCodes.Good : StatusCodes.BadDataEncodingUnsupported;
}

/** Applies TimestampsToReturn (Part 4 §7.40) without touching the manager's stored DataValue. */
export function stamp(dv: DataValue, mode: TimestampsToReturn, now: number, isValue: boolean): DataValue {
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

/**
 * Reads items [0, items.length) into results[offset...], with the DataEncoding and IndexRange of
 * each applied but not the timestamps: `stamp` (or the Read response's encoder) applies those.
 */
function readUnstamped(registry: NamespaceRegistry, rc: RequestContext, items: readonly AttributeRead[], results: DataValue[], offset: number): void {
  const n = items.length;
  // The managers fill a slice of their own when the batch does not start at 0.
  const out: DataValue[] = offset === 0 ? results : new Array(n);
  // Not byNamespace: its callback would be a closure made for every Read.
  const groups = namespaceGroups(items);
  if (groups === undefined) readFrom(registry.managerAt(items[0].nodeId.namespace), rc, items, out, undefined);
  else for (const [ns, indices] of groups) readFrom(registry.managerAt(ns), rc, items, out, indices);
  for (let i = 0; i < n; i++) {
    const item = items[i];
    let dv = out[i] ?? UNKNOWN_NODE;
    if (item.dataEncoding !== undefined) {
      const status = dataEncodingStatus(item);
      if (status !== StatusCodes.Good) dv = { statusCode: status };
    }
    if (item.indexRange !== undefined && item.indexRange !== "" && dv.value !== undefined) {
      dv = applyIndexRange(dv, item.indexRange);
    }
    results[offset + i] = dv;
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
  if (items.length > 0) readUnstamped(registry, rc, items, results, 0);
  const now = rc.now;
  for (let i = 0; i < items.length; i++) {
    const dv = results[i];
    results[i] = stamp(dv, timestamps, now, items[i].attributeId === AttributeIds.Value && dv.value !== undefined);
  }
  return results;
}

/**
 * A Read's response as the handler leaves it: the results as the node managers gave them, the
 * timestamps still to be applied. The encoder writes each result as `stamp` would have made it,
 * without making it: a Read of 10,000 nodes otherwise builds 10,000 DataValues only to write them
 * out (garbage that a Read that outlives a scavenge promotes to the old generation: bench
 * hostile's slow readers, bench/RESULTS.md).
 */
interface UnstampedReadResponse extends ReadResponse {
  results: DataValue[];
  readonly items: ReadItems | undefined;
  readonly timestamps: TimestampsToReturn;
  readonly now: number;
}

/** What encodeReadResponse writes for the response with `stamp` applied to each result. */
function encodeUnstampedReadResponse(w: BinaryWriter, v: UnstampedReadResponse): void {
  encodeResponseHeader(w, v.responseHeader);
  const { results, items, timestamps, now } = v;
  w.writeInt32(results.length);
  for (let i = 0; i < results.length; i++) {
    const dv = results[i];
    if (items!.attributeId(i) !== AttributeIds.Value || dv.value === undefined) {
      encodeDataValue(w, dv);
      continue;
    }
    // As stamp() (Part 4 §7.40): each case writes the fields of the copy it would make.
    switch (timestamps) {
      case TimestampsToReturn.Source:
        if (dv.serverTimestamp === undefined) encodeDataValue(w, dv);
        else encodeDataValueFields(w, dv.value, dv.statusCode, dv.sourceTimestamp, dv.sourcePicoseconds, undefined, undefined);
        break;
      case TimestampsToReturn.Both:
        encodeDataValueFields(w, dv.value, dv.statusCode, dv.sourceTimestamp, dv.sourcePicoseconds, now, undefined);
        break;
      case TimestampsToReturn.Server:
        encodeDataValueFields(w, dv.value, dv.statusCode, undefined, undefined, now, undefined);
        break;
      default:
        if (dv.sourceTimestamp === undefined && dv.serverTimestamp === undefined) encodeDataValue(w, dv);
        else encodeDataValueFields(w, dv.value, dv.statusCode, undefined, undefined, undefined, undefined);
    }
  }
  // diagnosticInfos: none are returned.
  w.writeInt32(0);
}

export const read = defineService<CompactReadRequest, UnstampedReadResponse>({
  name: "Read",
  requestEncodingId: ObjectIds.ReadRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.ReadResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeCompactReadRequest,
  encode: encodeUnstampedReadResponse,
  handle(ctx: ServiceContext, req: CompactReadRequest): UnstampedReadResponse {
    const items = req.items;
    const n = items?.count ?? 0;
    checkOperationCount(n, ctx.server.limits.maxNodesPerRead);
    // Part 4 §5.10.2: a negative maxAge and an unknown TimestampsToReturn fail the whole request.
    if (!(req.maxAge >= 0)) throw new UaStatusError(StatusCodes.BadMaxAgeInvalid);
    if (req.timestampsToReturn < TimestampsToReturn.Source || req.timestampsToReturn > TimestampsToReturn.Neither) {
      throw new UaStatusError(StatusCodes.BadTimestampsToReturnInvalid);
    }
    const rc = ctx.session!.context(ctx.now);
    const results: DataValue[] = new Array(n);
    for (let start = 0; start < n; start += BATCH) readUnstamped(ctx.server.registry, rc, items!.batch(start, Math.min(BATCH, n - start)), results, start);
    // diagnosticInfos: none (the encoder writes an empty array).
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, items, timestamps: req.timestampsToReturn, now: rc.now };
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
