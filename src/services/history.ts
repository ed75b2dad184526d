// HistoryRead (Part 4 §5.10.3, Part 11 §6): raw (ReadRawModifiedDetails, not modified),
// processed (ReadProcessedDetails, Part 13 aggregates) and ReadAtTimeDetails over the SQLite
// store of src/history. The service checks the request, each node's access (the HistoryRead bit
// of AccessLevel and UserAccessLevel) and keeps continuation points in the session; the reading
// itself is src/history/read.ts.
import { randomBytes } from "node:crypto";
import type { AttributeRead } from "../address-space/node-manager.js";
import { NodeClassMask } from "../address-space/node-manager.js";
import { AccessLevel } from "../address-space/ua-node.js";
import { SUPPORTED_AGGREGATES } from "../history/aggregates.js";
import type { HistoryBackend } from "../history/history.js";
import {
  aggregateConfiguration,
  checkProcessedDetails,
  checkRawDetails,
  continueRaw,
  readAtTime,
  readProcessed,
  readRaw,
  type HistoryCursor,
  type ReadOutcome,
} from "../history/read.js";
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
import type { Session } from "../server/session.js";
import { applyIndexRange } from "./index-range.js";
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

/** TimestampsToReturn (Part 4 §7.40) on stored samples, which carry their source timestamp. */
function stamp(values: DataValue[], mode: TimestampsToReturn): void {
  if (mode === TimestampsToReturn.Source) return;
  for (let i = 0; i < values.length; i++) {
    const dv = values[i];
    // The gateway stamps samples as it polls them: the server timestamp is the source timestamp.
    if (mode === TimestampsToReturn.Both) dv.serverTimestamp = dv.sourceTimestamp;
    else values[i] = { value: dv.value, statusCode: dv.statusCode, serverTimestamp: dv.sourceTimestamp };
  }
}

function result(statusCode: number, values?: DataValue[], continuationPoint?: Buffer): HistoryReadResult {
  return {
    statusCode,
    continuationPoint,
    historyData: values === undefined ? undefined : { typeId: { namespace: 0, idType: IdType.Numeric, value: ObjectIds.HistoryData_Encoding_DefaultBinary }, body: { dataValues: values } },
  };
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

export const historyRead = defineService<HistoryReadRequest, HistoryReadResponse>({
  name: "HistoryRead",
  requestEncodingId: ObjectIds.HistoryReadRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.HistoryReadResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeHistoryReadRequest,
  encode: encodeHistoryReadResponse,
  handle(ctx: ServiceContext, req: HistoryReadRequest): HistoryReadResponse {
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
    let budget = backend?.maxValuesPerRead ?? 0;
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
      let previous: HistoryContinuation | undefined;
      if (hasCp) {
        const cp = takeContinuation(session, item, nodeKey, d.type);
        if (typeof cp === "number") {
          results[i] = result(cp);
          continue;
        }
        previous = cp;
      }
      const series = backend.series(item.nodeId);
      if (series === undefined) {
        results[i] = result(StatusCodes.GoodNoData, []);
        continue;
      }
      const room = Math.max(1, budget);
      let outcome: ReadOutcome;
      switch (d.type) {
        case ObjectIds.ReadRawModifiedDetails_Encoding_DefaultBinary:
          outcome =
            previous?.cursor.kind === "raw"
              ? continueRaw(backend.store, series, previous.cursor, room)
              : readRaw(backend.store, series, d.body, room);
          break;
        case ObjectIds.ReadProcessedDetails_Encoding_DefaultBinary: {
          const aggregateId = d.body.aggregateType![i];
          if (aggregateId.namespace !== 0 || !SUPPORTED_AGGREGATES.has(aggregateId.value as number)) {
            results[i] = result(StatusCodes.BadAggregateNotSupported);
            continue;
          }
          const cfg = aggregateConfiguration(d.body.aggregateConfiguration, backend.aggregateDefaults);
          if (!cfg) {
            results[i] = result(StatusCodes.BadAggregateConfigurationRejected);
            continue;
          }
          const cursor = previous?.cursor.kind === "processed" ? previous.cursor : undefined;
          outcome = readProcessed(backend.store, series, d.body, aggregateId.value as number, cfg, room, cursor);
          break;
        }
        default: {
          const cursor = previous?.cursor.kind === "atTime" ? previous.cursor : undefined;
          outcome = readAtTime(backend.store, series, d.body, backend.aggregateDefaults, room, cursor);
        }
      }
      budget -= outcome.values.length;
      let values = outcome.values;
      if (item.indexRange !== undefined && item.indexRange !== "") values = values.map((v) => applyIndexRange(v, item.indexRange!));
      stamp(values, ttr);
      let continuationPoint: Buffer | undefined;
      if (outcome.cursor) {
        if (session.historyContinuations.size >= backend.maxContinuationPoints) {
          // Part 4 §5.10.3: no room to remember the rest.
          results[i] = result(StatusCodes.BadNoContinuationPoints);
          continue;
        }
        // A continued read keeps its id: clients may compare it, and it was just freed.
        continuationPoint = hasCp ? item.continuationPoint! : randomBytes(16);
        session.historyContinuations.set(continuationPoint.toString("base64"), { nodeKey, detailsType: d.type, cursor: outcome.cursor });
      }
      results[i] = result(outcome.statusCode, values, continuationPoint);
    }
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
  },
});
