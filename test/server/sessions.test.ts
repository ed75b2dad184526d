// Session rules and service-level faults against the real server, through our raw client
// (orderings that a well-behaved client never sends), with a node-opcua session alongside that
// must keep working.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AttributeIds, OPCUAClient, StatusCodes as NStatus, type ClientSession } from "node-opcua-client";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { ObjectIds, VariableIds } from "../../src/ua/generated/node-ids.js";
import { decodeServiceFault, encodeCloseSessionRequest, encodeReadRequest, type ReadResponse, type ServiceFault } from "../../src/ua/generated/types.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { header, readValueId, ServiceClient } from "./service-client.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { decodeNodeId, encodeNodeId } from "../../src/ua/builtin-codec.js";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { numericNodeId } from "../../src/ua/builtins.js";

let gw: TestGateway;
let client: OPCUAClient;
let session: ClientSession;
const open: ServiceClient[] = [];

async function serviceClient(): Promise<ServiceClient> {
  const c = await ServiceClient.open(gw.server.port);
  open.push(c);
  return c;
}

function result(r: ReadResponse | ServiceFault): number {
  return r.responseHeader.serviceResult;
}

async function healthy(): Promise<void> {
  const dv = await session.read({ nodeId: "i=2258", attributeId: AttributeIds.Value });
  expect(dv.statusCode).toBe(NStatus.Good);
}

beforeAll(async () => {
  gw = await startGateway("limits:\n  maxSessions: 20\n  maxNodesPerRead: 5\n  minSessionTimeout: 1s\n");
  client = OPCUAClient.create({ endpointMustExist: false, connectionStrategy: { maxRetry: 0 } });
  await client.connect(gw.url);
  session = await client.createSession();
}, 30_000);

afterAll(async () => {
  for (const c of open) c.close();
  await session?.close();
  await client?.disconnect();
  await gw?.stop();
});

describe("sessions", () => {
  it("refuses services without a session, and before activation", async () => {
    const c = await serviceClient();
    expect(result(await c.read([readValueId(VariableIds.Server_ServerStatus_CurrentTime)]))).toBe(StatusCodes.BadSessionIdInvalid);
    await c.createSession();
    expect(result(await c.read([readValueId(VariableIds.Server_ServerStatus_CurrentTime)]))).toBe(StatusCodes.BadSessionNotActivated);
    expect((await c.activate()).responseHeader.serviceResult).toBe(StatusCodes.Good);
    const r = (await c.read([readValueId(VariableIds.Server_ServerStatus_CurrentTime)])) as ReadResponse;
    expect(result(r)).toBe(StatusCodes.Good);
    expect(r.results![0].value!.value).toBeTypeOf("number");
    await healthy();
  });

  it("enforces operation limits and request-level checks", async () => {
    const c = await serviceClient();
    await c.createSession();
    await c.activate();
    const id = readValueId(VariableIds.Server_ServerStatus_CurrentTime);
    expect(result(await c.read([]))).toBe(StatusCodes.BadNothingToDo);
    expect(result(await c.read([id, id, id, id, id, id]))).toBe(StatusCodes.BadTooManyOperations);
    expect(result(await c.read([id, id, id, id, id]))).toBe(StatusCodes.Good);
    expect(result(await c.read([id], { maxAge: -1 }))).toBe(StatusCodes.BadMaxAgeInvalid);
    expect(result(await c.read([id], { timestamps: 7 }))).toBe(StatusCodes.BadTimestampsToReturnInvalid);
    const attrs = (await c.read([readValueId(ObjectIds.ObjectsFolder, 99), { ...readValueId(ObjectIds.ObjectsFolder, 13) }])) as ReadResponse;
    expect(attrs.results!.map((r) => r.statusCode)).toEqual([StatusCodes.BadAttributeIdInvalid, StatusCodes.BadAttributeIdInvalid]);
  });

  it("answers unknown services with BadServiceUnsupported", async () => {
    const c = await serviceClient();
    await c.createSession();
    await c.activate();
    // AddNodesRequest: a valid request the gateway does not offer.
    const w = new BinaryWriter();
    encodeNodeId(w, numericNodeId(ObjectIds.AddNodesRequest_Encoding_DefaultBinary));
    encodeCloseSessionRequest(w, { requestHeader: header(c.token), deleteSubscriptions: true });
    await c.sendRaw(Buffer.from(w.view()));
    const r = await c.channel.response();
    const reader = new BinaryReader(r.body);
    expect(decodeNodeId(reader).value).toBe(ObjectIds.ServiceFault_Encoding_DefaultBinary);
    expect(decodeServiceFault(reader).responseHeader.serviceResult).toBe(StatusCodes.BadServiceUnsupported);
  });

  it("serves a request whose encoding NodeId is in the long Numeric form, or a String form it refuses", async () => {
    const c = await serviceClient();
    await c.createSession();
    await c.activate();
    // The dispatcher reads the usual FourByte form without decoding a NodeId; the other forms of
    // the same id must still find the service (Part 6 §5.2.2.9: any encoding of a NodeId is valid).
    const w = new BinaryWriter();
    w.writeByte(0x02); // Numeric: UInt16 namespace, UInt32 identifier
    w.writeUInt16(0);
    w.writeUInt32(ObjectIds.ReadRequest_Encoding_DefaultBinary);
    encodeReadRequest(w, { requestHeader: header(c.token), maxAge: 0, timestampsToReturn: 0, nodesToRead: [readValueId(VariableIds.Server_ServerStatus_State)] });
    await c.sendRaw(Buffer.from(w.view()));
    const r = await c.channel.response();
    const reader = new BinaryReader(r.body);
    expect(decodeNodeId(reader).value).toBe(ObjectIds.ReadResponse_Encoding_DefaultBinary);
    const s = new BinaryWriter();
    encodeNodeId(s, { namespace: 0, idType: 1, value: "Read" });
    encodeCloseSessionRequest(s, { requestHeader: header(c.token), deleteSubscriptions: true });
    await c.sendRaw(Buffer.from(s.view()));
    const fault = new BinaryReader((await c.channel.response()).body);
    expect(decodeNodeId(fault).value).toBe(ObjectIds.ServiceFault_Encoding_DefaultBinary);
    expect(decodeServiceFault(fault).responseHeader.serviceResult).toBe(StatusCodes.BadServiceUnsupported);
  });

  it("closes a channel that sends an undecodable request, and only that one", async () => {
    const c = await serviceClient();
    await c.createSession();
    await c.activate();
    const w = new BinaryWriter();
    encodeNodeId(w, numericNodeId(ObjectIds.ReadRequest_Encoding_DefaultBinary));
    encodeReadRequest(w, { requestHeader: header(c.token), maxAge: 0, timestampsToReturn: 0, nodesToRead: [readValueId(1)] });
    const bytes = Buffer.from(w.view());
    bytes.writeInt32LE(0x7ffffff0, bytes.length - 4 - 2 - 4 - 4 - 2); // a huge String length inside ReadValueId.indexRange
    await c.sendRaw(bytes);
    expect(await c.channel.raw.expectErr()).toBe(StatusCodes.BadDecodingError);
    await healthy();
  });

  it("uses a session only on the channel that activated it", async () => {
    const a = await serviceClient();
    await a.createSession();
    await a.activate();
    const b = await serviceClient();
    b.token = a.token;
    expect(result(await b.read([readValueId(VariableIds.Server_ServerStatus_CurrentTime)]))).toBe(StatusCodes.BadSecureChannelIdInvalid);
    // Activating on the new channel moves the session there (Part 4 §5.6.3).
    expect((await b.activate()).responseHeader.serviceResult).toBe(StatusCodes.Good);
    expect(result(await b.read([readValueId(VariableIds.Server_ServerStatus_CurrentTime)]))).toBe(StatusCodes.Good);
    expect(result(await a.read([readValueId(VariableIds.Server_ServerStatus_CurrentTime)]))).toBe(StatusCodes.BadSecureChannelIdInvalid);
  });

  it("caps the number of sessions", async () => {
    for (const c of open.splice(0)) c.close();
    // Closed channels leave their sessions until they time out (a client may come back).
    const free = 20 - gw.server.sessions.size;
    const faults: number[] = [];
    for (let i = 0; i < free + 2; i++) {
      const c = await serviceClient();
      const r = (await c.createSession()).responseHeader.serviceResult;
      faults.push(r);
      // Activated: the cap only refuses when no session is waiting for activation (an
      // unactivated one would make room, Part 4 §5.6.2.1; test/hostile/attacks.test.ts).
      if (r === StatusCodes.Good) await c.activate();
    }
    expect(faults.slice(0, free).every((f) => f === StatusCodes.Good)).toBe(true);
    expect(faults.slice(free)).toEqual([StatusCodes.BadTooManySessions, StatusCodes.BadTooManySessions]);
    for (const s of [...gw.server.sessions.sessions()]) if (s.name === "t") gw.server.sessions.close(s);
    await healthy();
  });

  it("times a silent session out", async () => {
    const c = await serviceClient();
    const created = await c.createSession(1000);
    expect("revisedSessionTimeout" in created && created.revisedSessionTimeout).toBe(1000);
    await c.activate();
    gw.server.sessions.expire(Date.now() + 1500);
    expect(result(await c.read([readValueId(VariableIds.Server_ServerStatus_CurrentTime)]))).toBe(StatusCodes.BadSessionIdInvalid);
    await healthy();
  });
});
