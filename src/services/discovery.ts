// Discovery service set (Part 4 §5.4): GetEndpoints and FindServers. Both work without a session.
import { ObjectIds } from "../ua/generated/node-ids.js";
import {
  decodeFindServersRequest,
  decodeGetEndpointsRequest,
  encodeFindServersResponse,
  encodeGetEndpointsResponse,
  type FindServersRequest,
  type FindServersResponse,
  type GetEndpointsRequest,
  type GetEndpointsResponse,
} from "../ua/generated/types.js";
import { defineService, responseHeader, SessionRequirement, type ServiceContext } from "../services/service-table.js";

const TRANSPORT_PROFILE = "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary";

export const getEndpoints = defineService<GetEndpointsRequest, GetEndpointsResponse>({
  name: "GetEndpoints",
  requestEncodingId: ObjectIds.GetEndpointsRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.GetEndpointsResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.None,
  decode: decodeGetEndpointsRequest,
  encode: encodeGetEndpointsResponse,
  handle(ctx: ServiceContext, req: GetEndpointsRequest): GetEndpointsResponse {
    let endpoints = ctx.server.endpoints(req.endpointUrl ?? ctx.channel.endpointUrl);
    // Part 4 §5.4.4: profileUris filters by transport profile; an empty list means all.
    const profiles = req.profileUris;
    if (profiles && profiles.length > 0) {
      endpoints = endpoints.filter((e) => profiles.includes(e.transportProfileUri ?? TRANSPORT_PROFILE));
    }
    return { responseHeader: responseHeader(ctx, req.requestHeader), endpoints };
  },
});

export const findServers = defineService<FindServersRequest, FindServersResponse>({
  name: "FindServers",
  requestEncodingId: ObjectIds.FindServersRequest_Encoding_DefaultBinary,
  responseEncodingId: ObjectIds.FindServersResponse_Encoding_DefaultBinary,
  requires: SessionRequirement.None,
  decode: decodeFindServersRequest,
  encode: encodeFindServersResponse,
  handle(ctx: ServiceContext, req: FindServersRequest): FindServersResponse {
    const app = ctx.server.application;
    // Part 4 §5.4.2: serverUris filters by applicationUri; a gateway knows only itself.
    const wanted = req.serverUris;
    const match = !wanted || wanted.length === 0 || wanted.includes(app.applicationUri ?? "");
    const url = req.endpointUrl ?? ctx.channel.endpointUrl;
    const servers = match ? [{ ...app, discoveryUrls: [url] }] : [];
    return { responseHeader: responseHeader(ctx, req.requestHeader), servers };
  },
});

export const DISCOVERY_TRANSPORT_PROFILE = TRANSPORT_PROFILE;
