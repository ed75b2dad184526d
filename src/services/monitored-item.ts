// MonitoredItem service set (Part 4 §5.12): CreateMonitoredItems, ModifyMonitoredItems,
// SetMonitoringMode, SetTriggering, DeleteMonitoredItems, done by src/subscriptions/items.ts.
import { ObjectIds } from "../ua/generated/node-ids.js";
import {
  decodeCreateMonitoredItemsRequest,
  decodeDeleteMonitoredItemsRequest,
  decodeModifyMonitoredItemsRequest,
  decodeSetMonitoringModeRequest,
  decodeSetTriggeringRequest,
  encodeCreateMonitoredItemsResponse,
  encodeDeleteMonitoredItemsResponse,
  encodeModifyMonitoredItemsResponse,
  encodeSetMonitoringModeResponse,
  encodeSetTriggeringResponse,
  type CreateMonitoredItemsRequest,
  type CreateMonitoredItemsResponse,
  type MonitoredItemCreateResult as CreateMonitoredItemsResult,
  type DeleteMonitoredItemsRequest,
  type DeleteMonitoredItemsResponse,
  type ModifyMonitoredItemsRequest,
  type ModifyMonitoredItemsResponse,
  type SetMonitoringModeRequest,
  type SetMonitoringModeResponse,
  type SetTriggeringRequest,
  type SetTriggeringResponse,
} from "../ua/generated/types.js";
import {
  createMonitoredItemsInSlices as create,
  deleteMonitoredItemsInSlices as remove,
  modifyMonitoredItems as modify,
  setMonitoringMode as setMode,
  setTriggering as trigger,
} from "../subscriptions/items.js";
import { defineService, responseHeader, SessionRequirement, type ServiceContext } from "../services/service-table.js";

export const createMonitoredItems = defineService<CreateMonitoredItemsRequest, CreateMonitoredItemsResponse>({
  name: "CreateMonitoredItems",
  requestEncodingId: ObjectIds.CreateMonitoredItemsRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.CreateMonitoredItemsResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeCreateMonitoredItemsRequest,
  encode: encodeCreateMonitoredItemsResponse,
  handle(ctx: ServiceContext, req: CreateMonitoredItemsRequest): CreateMonitoredItemsResponse | Promise<CreateMonitoredItemsResponse> {
    const results = create(ctx.server.subscriptions, ctx.session!, req.subscriptionId, req.timestampsToReturn, req.itemsToCreate ?? []);
    const respond = (r: CreateMonitoredItemsResult[]): CreateMonitoredItemsResponse => ({ responseHeader: responseHeader(ctx, req.requestHeader), results: r, diagnosticInfos: [] });
    return results instanceof Promise ? results.then(respond) : respond(results);
  },
});

export const modifyMonitoredItems = defineService<ModifyMonitoredItemsRequest, ModifyMonitoredItemsResponse>({
  name: "ModifyMonitoredItems",
  requestEncodingId: ObjectIds.ModifyMonitoredItemsRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.ModifyMonitoredItemsResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeModifyMonitoredItemsRequest,
  encode: encodeModifyMonitoredItemsResponse,
  handle(ctx: ServiceContext, req: ModifyMonitoredItemsRequest): ModifyMonitoredItemsResponse {
    const results = modify(ctx.server.subscriptions, ctx.session!, req.subscriptionId, req.timestampsToReturn, req.itemsToModify ?? []);
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
  },
});

export const setMonitoringMode = defineService<SetMonitoringModeRequest, SetMonitoringModeResponse>({
  name: "SetMonitoringMode",
  requestEncodingId: ObjectIds.SetMonitoringModeRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.SetMonitoringModeResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeSetMonitoringModeRequest,
  encode: encodeSetMonitoringModeResponse,
  handle(ctx: ServiceContext, req: SetMonitoringModeRequest): SetMonitoringModeResponse {
    const results = setMode(ctx.server.subscriptions, ctx.session!, req.subscriptionId, req.monitoringMode, req.monitoredItemIds ?? []);
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
  },
});

export const setTriggering = defineService<SetTriggeringRequest, SetTriggeringResponse>({
  name: "SetTriggering",
  requestEncodingId: ObjectIds.SetTriggeringRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.SetTriggeringResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeSetTriggeringRequest,
  encode: encodeSetTriggeringResponse,
  handle(ctx: ServiceContext, req: SetTriggeringRequest): SetTriggeringResponse {
    const r = trigger(ctx.server.subscriptions, ctx.session!, req.subscriptionId, req.triggeringItemId, req.linksToAdd ?? [], req.linksToRemove ?? []);
    return {
      responseHeader: responseHeader(ctx, req.requestHeader),
      addResults: r.addResults,
      addDiagnosticInfos: [],
      removeResults: r.removeResults,
      removeDiagnosticInfos: [],
    };
  },
});

export const deleteMonitoredItems = defineService<DeleteMonitoredItemsRequest, DeleteMonitoredItemsResponse>({
  name: "DeleteMonitoredItems",
  requestEncodingId: ObjectIds.DeleteMonitoredItemsRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.DeleteMonitoredItemsResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeDeleteMonitoredItemsRequest,
  encode: encodeDeleteMonitoredItemsResponse,
  handle(ctx: ServiceContext, req: DeleteMonitoredItemsRequest): DeleteMonitoredItemsResponse | Promise<DeleteMonitoredItemsResponse> {
    const results = remove(ctx.server.subscriptions, ctx.session!, req.subscriptionId, req.monitoredItemIds ?? []);
    const respond = (r: number[]): DeleteMonitoredItemsResponse => ({ responseHeader: responseHeader(ctx, req.requestHeader), results: r, diagnosticInfos: [] });
    return results instanceof Promise ? results.then(respond) : respond(results);
  },
});
