// HistoryRead (Part 4 §5.10.3, Part 11 §6): raw (ReadRawModifiedDetails, not modified),
// processed (ReadProcessedDetails, Part 13 aggregates) and ReadAtTimeDetails over the SQLite
// store of src/history. The service checks the request, each node's access (the HistoryRead bit
// of AccessLevel and UserAccessLevel) and keeps continuation points in the session; the reading
// and the encoding of the values (src/history/read-job.ts) run on the history's read worker,
// which hands back each node's HistoryData body as bytes.
import { randomBytes } from "node:crypto";
import type { AttributeRead } from "../address-space/node-manager.js";
import { NodeClassMask } from "../address-space/node-manager.js";
import { AccessLevel } from "../address-space/ua-node.js";
import { SUPPORTED_AGGREGATES } from "../history/aggregates.js";
import type { HistoryBackend } from "../history/history.js";
import type { HistoryReadJob, NodeRead, NodeReadResult, ReadDetails } from "../history/read-job.js";
import { aggregateConfiguration, checkProcessedDetails, checkRawDetails, type HistoryCursor } from "../history/read.js";
import type { DataValue, NodeId } from "../ua/builtins.js";
import { IdType } from "../ua/builtins.js";
import { UaStatusError } from "../ua/errors.js";
import { TimestampsToReturn } from "../ua/generated/enums.js";
import { AttributeIds, ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import {
  decodeHistoryReadRequest,
  encodeHistoryReadResponse,
  type HistoryReadRequest,
  type HistoryReadResponse,
  type HistoryReadResult,
  type HistoryReadValueId,
  type ReadAtTimeDetails,
  type ReadProcessedDetails,
  type ReadRawModifiedDetails,
} from "../ua/generated/types.js";
import { nodeIdToString } from "../ua/node-id.js";
import { defineService, responseHeader, SessionRequirement, type ServiceContext } from "../services/service-table.js";
import type { Session } from "../sessions/session.js";
import { checkOperationCount } from "./view.js";

/** What a history continuation point remembers. */
interface HistoryContinuation {
  readonly nodeKey: string;
  readonly detailsType: number;
  readonly cursor: HistoryCursor;
}

type Details =
  | { readonly type: ObjectIds.ReadRawModifiedDetails_Encoding_DefaultBinary; readonly body: ReadRawModifiedDetails }
  | { readonly type: ObjectIds.ReadProcessedDetails_Encoding_DefaultBinary; readonly body: ReadProcessedDetails }
  | { readonly type: ObjectIds.ReadAtTimeDetails_Encoding_DefaultBinary; readonly body: ReadAtTimeDetails };

/** Used when the server runs without history: HistoryRead still checks nodes, then refuses. */
const DEFAULT_MAX_NODES = 1000;

function details(req: HistoryReadRequest): Details {
  const ext = req.historyReadDetails;
  const id = ext?.typeId;
  if (!ext || !id || id.namespace !== 0 || id.idType !== IdType.Numeric || ext.body === null || Buffer.isBuffer(ext.body)) {
    throw new UaStatusError(StatusCodes.BadHistoryOperationInvalid);
  }
  switch (id.value) {
    case ObjectIds.ReadRawModifiedDetails_Encoding_DefaultBinary:
    case ObjectIds.ReadProcessedDetails_Encoding_DefaultBinary:
    case ObjectIds.ReadAtTimeDetails_Encoding_DefaultBinary:
      return { type: id.value, body: ext.body } as Details;
    case ObjectIds.ReadEventDetails_Encoding_DefaultBinary:
    case ObjectIds.ReadAnnotationDataDetails_Encoding_DefaultBinary:
      // fieldgate keeps no events and no annotations.
      throw new UaStatusError(StatusCodes.BadHistoryOperationUnsupported);
    default:
      throw new UaStatusError(StatusCodes.BadHistoryOperationInvalid);
  }
}

/** Part 11 §5.2: a node is read from history only with the HistoryRead bit in (User)AccessLevel. */
function accessStatus(ctx: ServiceContext, nodeId: NodeId): number {
  const manager = ctx.server.registry.managerFor(nodeId);
  if (!manager) return StatusCodes.BadNodeIdUnknown;
  const items: AttributeRead[] = [
    { nodeId, attributeId: AttributeIds.NodeClass },
    { nodeId, attributeId: AttributeIds.AccessLevel },
    { nodeId, attributeId: AttributeIds.UserAccessLevel },
  ];
  const out: DataValue[] = new Array(3);
  manager.read(ctx.session!.context(ctx.now), items, out);
  if (out[0]?.statusCode === StatusCodes.BadNodeIdUnknown || out[0]?.value === undefined) return StatusCodes.BadNodeIdUnknown;
  // Objects (event history) and everything else: no data history here.
  if (out[0].value.value !== NodeClassMask.Variable) return StatusCodes.BadHistoryOperationUnsupported;
  const al = Number(out[1]?.value?.value ?? 0);
  if ((al & AccessLevel.HistoryRead) === 0) return StatusCodes.BadNotReadable;
  const ual = Number(out[2]?.value?.value ?? al);
  if ((ual & AccessLevel.HistoryRead) === 0) return StatusCodes.BadUserAccessDenied;
  return StatusCodes.Good;
}

const HISTORY_DATA = { namespace: 0, idType: IdType.Numeric, value: ObjectIds.HistoryData_Encoding_DefaultBinary } as const;

function result(statusCode: number, historyData?: Uint8Array, continuationPoint?: Buffer): HistoryReadResult {
  return {
    statusCode,
    continuationPoint,
    // The body as bytes: encoded by the read worker, copied into the response as they are.
    historyData: historyData === undefined ? undefined : { typeId: HISTORY_DATA, body: Buffer.from(historyData.buffer, historyData.byteOffset, historyData.byteLength) },
  };
}

/** A node that goes to the reader: where its result goes, and its continuation point. */
interface PendingRead {
  readonly index: number;
  readonly nodeKey: string;
  readonly continuationPoint: Buffer | undefined;
  /** Continuation points taken from the session up to this node (its own included). */
  readonly takenSoFar: number;
}

/** Releases (releaseContinuationPoints) or looks up the continuation point of one node. */
function takeContinuation(session: Session, item: HistoryReadValueId, nodeKey: string, detailsType: number): HistoryContinuation | number {
  const key = item.continuationPoint!.toString("base64");
  const cp = session.historyContinuations.get(key) as HistoryContinuation | undefined;
  // Part 4 §5.10.3: a point of another node or another kind of read is not this one's.
  if (cp === undefined || cp.nodeKey !== nodeKey || cp.detailsType !== detailsType) return StatusCodes.BadContinuationPointInvalid;
  session.historyContinuations.delete(key);
  return cp;
}

/** What a node's read needs beyond the request's details. */
function nodeRead(d: Details, i: number, key: string, indexRange: string | undefined, cursor: HistoryCursor | undefined, backend: HistoryBackend): NodeRead {
  if (d.type !== ObjectIds.ReadProcessedDetails_Encoding_DefaultBinary) return { key, indexRange, cursor };
  const aggregateId = d.body.aggregateType![i];
  // The reader refuses these only for nodes that have a history (others have no data at all).
  let refused: number | undefined;
  if (aggregateId.namespace !== 0 || !SUPPORTED_AGGREGATES.has(aggregateId.value as number)) refused = StatusCodes.BadAggregateNotSupported;
  else if (!aggregateConfiguration(d.body.aggregateConfiguration, backend.aggregateDefaults)) refused = StatusCodes.BadAggregateConfigurationRejected;
  return { key, indexRange, cursor, aggregateId: aggregateId.value as number, refused };
}

function readDetails(d: Details, backend: HistoryBackend): ReadDetails {
  switch (d.type) {
    case ObjectIds.ReadRawModifiedDetails_Encoding_DefaultBinary:
      return { kind: "raw", body: d.body };
    case ObjectIds.ReadProcessedDetails_Encoding_DefaultBinary:
      return { kind: "processed", body: d.body, cfg: aggregateConfiguration(d.body.aggregateConfiguration, backend.aggregateDefaults) };
    default:
      return { kind: "atTime", body: d.body, cfg: backend.aggregateDefaults };
  }
}

/** A node's result, and its continuation point kept in the session when values remain. */
function remember(session: Session, backend: HistoryBackend, detailsType: number, r: PendingRead, takenAfter: number, out: NodeReadResult): HistoryReadResult {
  let continuationPoint: Buffer | undefined;
  if (out.cursor) {
    // Part 4 §5.10.3: no room to remember the rest. The points of the nodes after this one were
    // taken up front; they count as still there, as when each node was read in its turn.
    if (session.historyContinuations.size + takenAfter >= backend.maxContinuationPoints) return result(StatusCodes.BadNoContinuationPoints);
    // A continued read keeps its id: clients may compare it, and it was just freed.
    continuationPoint = r.continuationPoint ?? randomBytes(16);
    session.historyContinuations.set(continuationPoint.toString("base64"), { nodeKey: r.nodeKey, detailsType, cursor: out.cursor });
  }
  return result(out.statusCode, out.historyData, continuationPoint);
}

/** A response whose HistoryData bodies are views of the backend's memory, lent until the response is out (`sent`). */
interface HistoryReadAnswer extends HistoryReadResponse {
  readonly lent?: { readonly backend: HistoryBackend; readonly reads: readonly NodeReadResult[] };
}

function response(ctx: ServiceContext, req: HistoryReadRequest, results: HistoryReadResult[], lent?: HistoryReadAnswer["lent"]): HistoryReadAnswer {
  return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [], lent };
}

export const historyRead = defineService<HistoryReadRequest, HistoryReadAnswer>({
  name: "HistoryRead",
  requestEncodingId: ObjectIds.HistoryReadRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.HistoryReadResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeHistoryReadRequest,
  encode: encodeHistoryReadResponse,
  handle(ctx: ServiceContext, req: HistoryReadRequest): HistoryReadAnswer | Promise<HistoryReadAnswer> {
    const backend: HistoryBackend | undefined = ctx.server.history;
    const nodes = req.nodesToRead ?? [];
    checkOperationCount(nodes.length, backend?.maxNodesPerRead ?? DEFAULT_MAX_NODES);
    // Part 4 §5.10.3: Neither is not a valid choice for history.
    const ttr = req.timestampsToReturn;
    if (ttr !== TimestampsToReturn.Source && ttr !== TimestampsToReturn.Server && ttr !== TimestampsToReturn.Both) {
      throw new UaStatusError(StatusCodes.BadTimestampsToReturnInvalid);
    }
    const d = details(req);
    let detailsStatus: number = StatusCodes.Good;
    if (d.type === ObjectIds.ReadRawModifiedDetails_Encoding_DefaultBinary) {
      detailsStatus = checkRawDetails(d.body);
      // Modified values are never kept: refuse the request as a whole.
      if (detailsStatus === StatusCodes.BadHistoryOperationUnsupported) throw new UaStatusError(detailsStatus);
    } else if (d.type === ObjectIds.ReadProcessedDetails_Encoding_DefaultBinary) {
      if ((d.body.aggregateType ?? []).length !== nodes.length) throw new UaStatusError(StatusCodes.BadAggregateListMismatch);
      detailsStatus = checkProcessedDetails(d.body);
    }
    const session = ctx.session!;
    const results: HistoryReadResult[] = new Array(nodes.length);
    const reads: PendingRead[] = [];
    const toRead: NodeRead[] = [];
    let taken = 0;
    for (let i = 0; i < nodes.length; i++) {
      const item = nodes[i];
      const nodeKey = nodeIdToString(item.nodeId);
      const hasCp = item.continuationPoint !== undefined && item.continuationPoint.length > 0;
      if (req.releaseContinuationPoints) {
        const cp = hasCp ? takeContinuation(session, item, nodeKey, d.type) : StatusCodes.Good;
        results[i] = result(typeof cp === "number" ? cp : StatusCodes.Good);
        continue;
      }
      const access = accessStatus(ctx, item.nodeId);
      if (access !== StatusCodes.Good) {
        results[i] = result(access);
        continue;
      }
      if (!backend) {
        results[i] = result(StatusCodes.BadHistoryOperationUnsupported);
        continue;
      }
      const enc = item.dataEncoding;
      if (enc && enc.name !== undefined && enc.name !== "" && !(enc.namespaceIndex === 0 && enc.name === "Default Binary")) {
        results[i] = result(StatusCodes.BadDataEncodingUnsupported);
        continue;
      }
      if (detailsStatus !== StatusCodes.Good) {
        results[i] = result(detailsStatus);
        continue;
      }
      let cursor: HistoryCursor | undefined;
      if (hasCp) {
        const cp = takeContinuation(session, item, nodeKey, d.type);
        if (typeof cp === "number") {
          results[i] = result(cp);
          continue;
        }
        cursor = cp.cursor;
        taken++;
      }
      reads.push({ index: i, nodeKey, continuationPoint: hasCp ? item.continuationPoint : undefined, takenSoFar: taken });
      toRead.push(nodeRead(d, i, nodeKey, item.indexRange, cursor, backend));
    }
    if (reads.length === 0) return response(ctx, req, results);
    const job: HistoryReadJob = { details: readDetails(d, backend!), timestampsToReturn: ttr, budget: backend!.maxValuesPerRead, nodes: toRead };
    const channel = ctx.channel;
    const abandoned = () => session.closed || (channel !== undefined && !channel.isOpen);
    // The bodies are sent by reference (the response may leave over several turns): the
    // backend keeps them until the response is out.
    return backend!.read(job, abandoned, true).then((out) => {
      try {
        for (let k = 0; k < reads.length; k++) results[reads[k].index] = remember(session, backend!, d.type, reads[k], taken - reads[k].takenSoFar, out[k]);
      } catch (err) {
        backend!.releaseBodies?.(out);
        throw err;
      }
      return response(ctx, req, results, { backend: backend!, reads: out });
    });
  },

  sent(res: HistoryReadAnswer): void {
    if (res.lent !== undefined) res.lent.backend.releaseBodies?.(res.lent.reads);
  },

});
