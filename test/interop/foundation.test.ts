// Interop with a client nobody here wrote: node-opcua-client against the real server on
// loopback, security None, anonymous. Discovery, session, browse, read, write, BrowseNext,
// TranslateBrowsePath, close.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AttributeIds,
  BrowseDirection,
  ClientSession,
  DataType,
  MessageSecurityMode,
  NodeClass,
  OPCUAClient,
  SecurityPolicy,
  StatusCodes,
  makeBrowsePath,
  type BrowseDescriptionLike,
} from "node-opcua-client";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

let gw: TestGateway;
let client: OPCUAClient;
let session: ClientSession;
let ns: number;

function newClient(): OPCUAClient {
  return OPCUAClient.create({
    applicationName: "fieldgate-interop",
    endpointMustExist: false,
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 60_000,
  });
}

beforeAll(async () => {
  gw = await startGateway();
  client = newClient();
  await client.connect(gw.url);
  session = await client.createSession();
  const nsArray = await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value });
  ns = (nsArray.value.value as string[]).indexOf("urn:fieldgate:test");
}, 30_000);

afterAll(async () => {
  await session?.close();
  await client?.disconnect();
  await gw?.stop();
});

describe("node-opcua-client against fieldgate", () => {
  it("gets the endpoints with an anonymous token policy", async () => {
    const endpoints = await client.getEndpoints();
    expect(endpoints.length).toBeGreaterThan(0);
    const none = endpoints.find((e) => e.securityMode === MessageSecurityMode.None);
    expect(none?.securityPolicyUri).toBe(SecurityPolicy.None);
    expect(none?.userIdentityTokens?.map((t) => t.tokenType)).toContain(0);
    expect(none?.endpointUrl).toBe(gw.url);
  });

  it("finds the server itself", async () => {
    const servers = await client.findServers();
    expect(servers).toHaveLength(1);
    expect(servers[0].applicationName.text).toBe("fieldgate");
  });

  it("browses from Root down to the Server object", async () => {
    const root = await session.browse("i=84");
    const names = root.references!.map((r) => r.browseName.name);
    expect(names).toEqual(expect.arrayContaining(["Objects", "Types", "Views"]));
    const objects = await session.browse("i=85");
    const server = objects.references!.find((r) => r.browseName.name === "Server");
    expect(server?.nodeId.toString()).toBe("ns=0;i=2253");
    expect(server?.nodeClass).toBe(NodeClass.Object);
    expect(server?.typeDefinition.toString()).toBe("ns=0;i=2004");
    const children = await session.browse("i=2253");
    expect(children.references!.map((r) => r.browseName.name)).toEqual(
      expect.arrayContaining(["ServerStatus", "NamespaceArray", "ServerArray", "ServiceLevel", "ServerCapabilities"]),
    );
  });

  it("reads ServerStatus and NamespaceArray", async () => {
    const [status, nsArray, currentTime] = await session.read([
      { nodeId: "i=2256", attributeId: AttributeIds.Value },
      { nodeId: "i=2255", attributeId: AttributeIds.Value },
      { nodeId: "i=2258", attributeId: AttributeIds.Value },
    ]);
    expect(status.statusCode).toBe(StatusCodes.Good);
    const body = status.value.value as { state: number; buildInfo: { productName: string } };
    expect(body.state).toBe(0); // Running
    expect(body.buildInfo.productName).toBe("fieldgate");
    expect(nsArray.value.value[0]).toBe("http://opcfoundation.org/UA/");
    expect(nsArray.value.value).toContain("urn:fieldgate:test");
    const t = (currentTime.value.value as Date).getTime();
    expect(Math.abs(t - Date.now())).toBeLessThan(5000);
  });

  it("publishes the enforced operation limits in ServerCapabilities", async () => {
    const [maxRead, maxBrowse, maxCp] = await session.read([
      { nodeId: "i=11705", attributeId: AttributeIds.Value }, // OperationLimits.MaxNodesPerRead
      { nodeId: "i=11710", attributeId: AttributeIds.Value }, // OperationLimits.MaxNodesPerBrowse
      { nodeId: "i=2735", attributeId: AttributeIds.Value }, // MaxBrowseContinuationPoints
    ]);
    expect(maxRead.value.value).toBe(gw.server.limits.maxNodesPerRead);
    expect(maxBrowse.value.value).toBe(gw.server.limits.maxNodesPerBrowse);
    expect(maxCp.value.value).toBe(gw.server.limits.maxBrowseContinuationPoints);
  });

  it("reads the attributes of a node of each class", async () => {
    const results = await session.read([
      { nodeId: "i=85", attributeId: AttributeIds.BrowseName },
      { nodeId: "i=85", attributeId: AttributeIds.NodeClass },
      { nodeId: "i=2256", attributeId: AttributeIds.DataType },
      { nodeId: "i=35", attributeId: AttributeIds.InverseName },
      { nodeId: "i=85", attributeId: AttributeIds.Value },
      { nodeId: "ns=0;i=999999", attributeId: AttributeIds.Value },
    ]);
    expect(results[0].value.value.name).toBe("Objects");
    expect(results[1].value.value).toBe(NodeClass.Object);
    expect(results[2].value.value.toString()).toBe("ns=0;i=862");
    expect(results[3].value.value.text).toBe("OrganizedBy");
    expect(results[4].statusCode).toBe(StatusCodes.BadAttributeIdInvalid);
    expect(results[5].statusCode).toBe(StatusCodes.BadNodeIdUnknown);
  });

  const samples: [string, DataType, unknown][] = [
    ["Boolean", DataType.Boolean, true],
    ["SByte", DataType.SByte, -12],
    ["Byte", DataType.Byte, 200],
    ["Int16", DataType.Int16, -30000],
    ["UInt16", DataType.UInt16, 60000],
    ["Int32", DataType.Int32, -2000000000],
    ["UInt32", DataType.UInt32, 4000000000],
    ["Float", DataType.Float, 1.5],
    ["Double", DataType.Double, Math.PI],
    ["String", DataType.String, "héllo wörld"],
    ["DateTime", DataType.DateTime, new Date("2024-05-06T07:08:09.123Z")],
    ["Guid", DataType.Guid, "72962B91-FA75-4AE6-8D28-B404DC7DAF63"],
    ["ByteString", DataType.ByteString, Buffer.from([1, 2, 3, 250])],
  ];

  it.each(samples)("writes and reads back Scalar.%s", async (name, dataType, value) => {
    const nodeId = `ns=${ns};s=Scalar.${name}`;
    const status = await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType, value } } });
    expect(status).toBe(StatusCodes.Good);
    const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
    expect(dv.statusCode).toBe(StatusCodes.Good);
    expect(dv.value.dataType).toBe(dataType);
    if (dataType === DataType.Float) expect(dv.value.value).toBeCloseTo(value as number, 5);
    else if (dataType === DataType.Guid) expect(String(dv.value.value).toLowerCase()).toBe(String(value).toLowerCase());
    else expect(dv.value.value).toEqual(value);
  });

  it("writes and reads back the 64-bit integers", async () => {
    const nodeId = `ns=${ns};s=Scalar.Int64`;
    // node-opcua represents Int64 as [high, low] 32-bit words.
    const status = await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int64, arrayType: 0, value: [1, 2] } } });
    expect(status).toBe(StatusCodes.Good);
    const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
    expect(dv.value.value).toEqual([1, 2]);
  });

  it("writes and reads back an array, and reads an index range", async () => {
    const nodeId = `ns=${ns};s=Array.Double`;
    const values = [1.5, 2.5, 3.5, 4.5];
    const status = await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, arrayType: 1, value: values } } });
    expect(status).toBe(StatusCodes.Good);
    const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
    expect(Array.from(dv.value.value as Float64Array)).toEqual(values);
    const ranged = await session.read({ nodeId, attributeId: AttributeIds.Value, indexRange: "1:2" } as never);
    expect(Array.from(ranged.value.value as Float64Array)).toEqual([2.5, 3.5]);
  });

  it("refuses a write of the wrong type and a write to a read-only node", async () => {
    const wrongType = await session.write({
      nodeId: `ns=${ns};s=Scalar.Int32`,
      attributeId: AttributeIds.Value,
      value: { value: { dataType: DataType.String, value: "nope" } },
    });
    expect(wrongType).toBe(StatusCodes.BadTypeMismatch);
    const readOnly = await session.write({
      nodeId: `ns=${ns};s=ReadOnly.Int32`,
      attributeId: AttributeIds.Value,
      value: { value: { dataType: DataType.Int32, value: 1 } },
    });
    expect(readOnly).toBe(StatusCodes.BadNotWritable);
    const unknown = await session.write({
      nodeId: `ns=${ns};s=NoSuchNode`,
      attributeId: AttributeIds.Value,
      value: { value: { dataType: DataType.Int32, value: 1 } },
    });
    expect(unknown).toBe(StatusCodes.BadNodeIdUnknown);
  });

  it("pages a browse with BrowseNext and releases continuation points", async () => {
    const desc: BrowseDescriptionLike = {
      nodeId: "i=2253",
      browseDirection: BrowseDirection.Forward,
      includeSubtypes: true,
      resultMask: 63,
    };
    const full = await session.browse(desc);
    const all = full.references!.map((r) => r.nodeId.toString());
    expect(all.length).toBeGreaterThan(4);
    session.requestedMaxReferencesPerNode = 2;
    try {
      let result = await session.browse(desc);
      const paged = result.references!.map((r) => r.nodeId.toString());
      expect(paged).toHaveLength(2);
      while (result.continuationPoint && result.continuationPoint.length > 0) {
        result = await session.browseNext(result.continuationPoint, false);
        expect(result.statusCode).toBe(StatusCodes.Good);
        paged.push(...result.references!.map((r) => r.nodeId.toString()));
      }
      expect(paged).toEqual(all);
      // A released point is gone: using it again is BadContinuationPointInvalid.
      const first = await session.browse(desc);
      const released = await session.browseNext(first.continuationPoint!, true);
      expect(released.statusCode).toBe(StatusCodes.Good);
      const stale = await session.browseNext(first.continuationPoint!, false);
      expect(stale.statusCode).toBe(StatusCodes.BadContinuationPointInvalid);
    } finally {
      session.requestedMaxReferencesPerNode = 0;
    }
  });

  it("translates browse paths", async () => {
    const [found, missing] = await session.translateBrowsePath([
      makeBrowsePath("RootFolder", "/Objects/Server.ServerStatus.CurrentTime"),
      makeBrowsePath("RootFolder", "/Objects/NoSuchThing"),
    ]);
    expect(found.statusCode).toBe(StatusCodes.Good);
    expect(found.targets![0].targetId.toString()).toBe("ns=0;i=2258");
    expect(missing.statusCode).toBe(StatusCodes.BadNoMatch);
  });

  it("registers nodes and reads through the registered ids", async () => {
    const nodeId = `ns=${ns};s=Scalar.Int32`;
    const registered = await session.registerNodes([nodeId]);
    const dv = await session.read({ nodeId: registered[0], attributeId: AttributeIds.Value });
    expect(dv.statusCode).toBe(StatusCodes.Good);
    await session.unregisterNodes(registered);
  });

  it("answers an unsupported service with BadServiceUnsupported", async () => {
    // QueryFirst (Part 4 §5.9) is not offered by a gateway.
    const err = await session
      .queryFirst({ nodeTypes: [], filter: { elements: [] }, maxDataSetsToReturn: 1, maxReferencesToReturn: 1 } as never)
      .then(
        (r: { responseHeader: { serviceResult: unknown } }) => r.responseHeader.serviceResult,
        (e: Error) => e.message,
      );
    expect(String(err)).toMatch(/BadServiceUnsupported/);
  });

  it("opens and closes a second session while the first keeps working", async () => {
    const other = newClient();
    await other.connect(gw.url);
    const s2 = await other.createSession();
    const dv = await s2.read({ nodeId: "i=2259", attributeId: AttributeIds.Value });
    expect(dv.statusCode).toBe(StatusCodes.Good);
    await s2.close();
    await other.disconnect();
    const still = await session.read({ nodeId: "i=2259", attributeId: AttributeIds.Value });
    expect(still.statusCode).toBe(StatusCodes.Good);
  });
});
