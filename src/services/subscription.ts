// Subscription service set (Part 4 §5.13): CreateSubscription, ModifySubscription,
// SetPublishingMode, Publish, Republish, TransferSubscriptions, DeleteSubscriptions. The work
// is done by the server's SubscriptionEngine (src/subscriptions); these map requests to it.
// Publish answers later: its handler returns a promise while the request waits in the session's
// queue, and the subscription that takes it writes the response into the channel itself (its
// NotificationMessage encoded straight into the connection's chunks). Republish sends the bytes
// that were kept of a message.
import { UaStatusError } from "../ua/errors.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import {
  decodeCreateSubscriptionRequest,
  decodeDeleteSubscriptionsRequest,
  decodeModifySubscriptionRequest,
  decodePublishRequest,
  decodeRepublishRequest,
  decodeSetPublishingModeRequest,
  decodeTransferSubscriptionsRequest,
  encodeCreateSubscriptionResponse,
  encodeDeleteSubscriptionsResponse,
  encodeModifySubscriptionResponse,
  encodeSetPublishingModeResponse,
  encodeTransferSubscriptionsResponse,
  type CreateSubscriptionRequest,
  type CreateSubscriptionResponse,
  type DeleteSubscriptionsRequest,
  type DeleteSubscriptionsResponse,
  type ModifySubscriptionRequest,
  type ModifySubscriptionResponse,
  type PublishRequest,
  type RepublishRequest,
  type SetPublishingModeRequest,
  type SetPublishingModeResponse,
  type TransferSubscriptionsRequest,
  type TransferSubscriptionsResponse,
} from "../ua/generated/types.js";
import { encodeRepublishResponseOut, type RepublishResponseOut } from "../subscriptions/notification-encoder.js";
import type { PublishAnswer } from "../subscriptions/publisher.js";
import { defineService, responseHeader, SessionRequirement, type ServiceContext } from "../services/service-table.js";

/** Room left in a response for everything around the NotificationMessage (headers, chunk framing). */
const RESPONSE_OVERHEAD = 4096;

function operationCount(n: number, max: number): void {
  if (n === 0) throw new UaStatusError(StatusCodes.BadNothingToDo);
  if (n > max) throw new UaStatusError(StatusCodes.BadTooManyOperations);
}

/** The largest NotificationMessage this channel can carry in one response (its client's limits). */
function maxMessageBytes(ctx: ServiceContext): number {
  const conn = ctx.channel.connection;
  let max = conn.maxResponseSize;
  if (conn.maxResponseChunks > 0) max = Math.min(max, conn.maxResponseChunks * (conn.sendBufferSize - 64));
  return Math.max(1024, max - RESPONSE_OVERHEAD);
}

export const createSubscription = defineService<CreateSubscriptionRequest, CreateSubscriptionResponse>({
  name: "CreateSubscription",
  requestEncodingId: ObjectIds.CreateSubscriptionRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.CreateSubscriptionResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeCreateSubscriptionRequest,
  encode: encodeCreateSubscriptionResponse,
  handle(ctx: ServiceContext, req: CreateSubscriptionRequest): CreateSubscriptionResponse {
    const revised = ctx.server.subscriptions.createSubscription(
      ctx.session!,
      {
        publishingInterval: req.requestedPublishingInterval,
        lifetimeCount: req.requestedLifetimeCount,
        maxKeepAliveCount: req.requestedMaxKeepAliveCount,
        maxNotificationsPerPublish: req.maxNotificationsPerPublish,
        priority: req.priority,
      },
      req.publishingEnabled,
    );
    return { responseHeader: responseHeader(ctx, req.requestHeader), ...revised };
  },
});

export const modifySubscription = defineService<ModifySubscriptionRequest, ModifySubscriptionResponse>({
  name: "ModifySubscription",
  requestEncodingId: ObjectIds.ModifySubscriptionRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.ModifySubscriptionResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeModifySubscriptionRequest,
  encode: encodeModifySubscriptionResponse,
  handle(ctx: ServiceContext, req: ModifySubscriptionRequest): ModifySubscriptionResponse {
    const r = ctx.server.subscriptions.modifySubscription(ctx.session!, req.subscriptionId, {
      publishingInterval: req.requestedPublishingInterval,
      lifetimeCount: req.requestedLifetimeCount,
      maxKeepAliveCount: req.requestedMaxKeepAliveCount,
      maxNotificationsPerPublish: req.maxNotificationsPerPublish,
      priority: req.priority,
    });
    return {
      responseHeader: responseHeader(ctx, req.requestHeader),
      revisedPublishingInterval: r.revisedPublishingInterval,
      revisedLifetimeCount: r.revisedLifetimeCount,
      revisedMaxKeepAliveCount: r.revisedMaxKeepAliveCount,
    };
  },
});

export const setPublishingMode = defineService<SetPublishingModeRequest, SetPublishingModeResponse>({
  name: "SetPublishingMode",
  requestEncodingId: ObjectIds.SetPublishingModeRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.SetPublishingModeResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeSetPublishingModeRequest,
  encode: encodeSetPublishingModeResponse,
  handle(ctx: ServiceContext, req: SetPublishingModeRequest): SetPublishingModeResponse {
    const ids = req.subscriptionIds ?? [];
    operationCount(ids.length, ctx.server.subscriptions.limits.maxSubscriptions);
    const results = ctx.server.subscriptions.setPublishingMode(ctx.session!, req.publishingEnabled, ids);
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
  },
});

export const deleteSubscriptions = defineService<DeleteSubscriptionsRequest, DeleteSubscriptionsResponse>({
  name: "DeleteSubscriptions",
  requestEncodingId: ObjectIds.DeleteSubscriptionsRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.DeleteSubscriptionsResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeDeleteSubscriptionsRequest,
  encode: encodeDeleteSubscriptionsResponse,
  handle(ctx: ServiceContext, req: DeleteSubscriptionsRequest): DeleteSubscriptionsResponse {
    const ids = req.subscriptionIds ?? [];
    operationCount(ids.length, ctx.server.subscriptions.limits.maxSubscriptions);
    const results = ctx.server.subscriptions.deleteSubscriptions(ctx.session!, ids);
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
  },
});

export const transferSubscriptions = defineService<TransferSubscriptionsRequest, TransferSubscriptionsResponse>({
  name: "TransferSubscriptions",
  requestEncodingId: ObjectIds.TransferSubscriptionsRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.TransferSubscriptionsResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeTransferSubscriptionsRequest,
  encode: encodeTransferSubscriptionsResponse,
  handle(ctx: ServiceContext, req: TransferSubscriptionsRequest): TransferSubscriptionsResponse {
    const ids = req.subscriptionIds ?? [];
    operationCount(ids.length, ctx.server.subscriptions.limits.maxSubscriptions);
    const results = ctx.server.subscriptions.transferSubscriptions(ctx.session!, ids, req.sendInitialValues);
    return { responseHeader: responseHeader(ctx, req.requestHeader), results, diagnosticInfos: [] };
  },
});

export const publish = defineService<PublishRequest, PublishAnswer>({
  name: "Publish",
  requestEncodingId: ObjectIds.PublishRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.PublishResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  // The subscription that takes the request writes the response into the channel (publisher.ts).
  sendsResponse: true,
  decode: decodePublishRequest,
  encode: sentBySubscription,
  handle(ctx: ServiceContext, req: PublishRequest): PublishAnswer | Promise<PublishAnswer> {
    return ctx.server.subscriptions.publish(ctx.session!, {
      requestHandle: req.requestHeader.requestHandle,
      requestId: ctx.requestId,
      timeoutHint: req.requestHeader.timeoutHint,
      acknowledgements: req.subscriptionAcknowledgements,
      channel: ctx.channel,
      maxBytes: maxMessageBytes(ctx),
    });
  },
});

function sentBySubscription(): void {
  throw new UaStatusError(StatusCodes.BadInternalError, "a PublishResponse is sent by the subscription that answers it");
}

export const republish = defineService<RepublishRequest, RepublishResponseOut>({
  name: "Republish",
  requestEncodingId: ObjectIds.RepublishRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.RepublishResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.Activated,
  decode: decodeRepublishRequest,
  encode: encodeRepublishResponseOut,
  handle(ctx: ServiceContext, req: RepublishRequest): RepublishResponseOut {
    const message = ctx.server.subscriptions.republish(ctx.session!, req.subscriptionId, req.retransmitSequenceNumber);
    return { responseHeader: responseHeader(ctx, req.requestHeader), message };
  },
});
