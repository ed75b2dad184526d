// MonitoredItem service set (Part 4 §5.12): CreateMonitoredItems, ModifyMonitoredItems,
// SetMonitoringMode, SetTriggering, DeleteMonitoredItems, done by src/subscriptions/items.ts for
// data items and by src/events/event-items.ts for items on the EventNotifier attribute. A request
// without event items goes to items.ts as it is; a mixed one is split and its results merged
// back in request order (mixed-items.ts).
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
import { createMixed, deleteMixed, modifyMixed, setModeMixed } from "../events/mixed-items.js";
import { defineService, responseHeader, SessionRequirement, type ServiceContext } from "../services/service-table.js";

export const createMonitoredItems = defineService<CreateMonitoredItemsRequest, CreateMonitoredItemsResponse>({
  name: "CreateMonitoredItems",
  requestEncodingId: ObjectIds.CreateMonitoredItemsRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.CreateMonitoredItemsResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeCreateMonitoredItemsRequest,
  encode: encodeCreateMonitoredItemsResponse,
  async handle(ctx: ServiceContext, req: CreateMonitoredItemsRequest): Promise<CreateMonitoredItemsResponse> {
    const results = await createMixed(ctx.server.events.items, ctx.server.subscriptions, ctx.session!, req.subscriptionId, req.timestampsToReturn, req.itemsToCreate ?? [], (subset) =>
      create(ctx.server.subscriptions, ctx.session!, req.subscriptionId, req.timestampsToReturn, subset),
    );
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
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
    const results = modifyMixed(ctx.server.events.items, ctx.server.subscriptions, ctx.session!, req.subscriptionId, req.timestampsToReturn, req.itemsToModify ?? [], (subset) =>
      modify(ctx.server.subscriptions, ctx.session!, req.subscriptionId, req.timestampsToReturn, subset),
    );
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
    const results = setModeMixed(ctx.server.events.items, ctx.server.subscriptions, ctx.session!, req.subscriptionId, req.monitoringMode, req.monitoredItemIds ?? [], (subset) =>
      setMode(ctx.server.subscriptions, ctx.session!, req.subscriptionId, req.monitoringMode, subset),
    );
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
  async handle(ctx: ServiceContext, req: DeleteMonitoredItemsRequest): Promise<DeleteMonitoredItemsResponse> {
    const results = await deleteMixed(ctx.server.events.items, ctx.server.subscriptions, ctx.session!, req.subscriptionId, req.monitoredItemIds ?? [], (subset) =>
      remove(ctx.server.subscriptions, ctx.session!, req.subscriptionId, subset),
    );
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
  },
});
