// A request-level client for server tests that node-opcua-client cannot express (requests out of
// order, malformed bodies, sessions on the wrong channel): our codec over the raw channel client.
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { decodeNodeId, encodeNodeId, structureByEncodingId } from "../../src/ua/builtin-codec.js";
import { IdType, NULL_NODE_ID, numericNodeId, type NodeId } from "../../src/ua/builtins.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import {
  encodeActivateSessionRequest,
  encodeCreateSessionRequest,
  encodeReadRequest,
  type ActivateSessionResponse,
  type CreateSessionResponse,
  type ReadResponse,
  type ReadValueId,
  type RequestHeader,
  type ServiceFault,
} from "../../src/ua/generated/types.js";
import { msg, ChannelClient } from "../transport/raw-client.js";

export type Response = { typeId: number; body: Record<string, unknown> & { responseHeader: { serviceResult: number } } };

let handle = 1;

export function header(authenticationToken: NodeId = NULL_NODE_ID): RequestHeader {
  return { authenticationToken, timestamp: Date.now(), requestHandle: handle++, returnDiagnostics: 0, timeoutHint: 10_000 };
}

export class ServiceClient {
  readonly channel: ChannelClient;
  token: NodeId = NULL_NODE_ID;

  private constructor(channel: ChannelClient) {
    this.channel = channel;
  }

  static async open(port: number): Promise<ServiceClient> {
    return new ServiceClient(await ChannelClient.open(port));
  }

  /** Sends raw body bytes (starting with the encoding NodeId) as one MSG chunk. */
  async sendRaw(body: Buffer): Promise<number> {
    const id = this.channel.requestId++;
    await this.channel.raw.write(msg(this.channel.next(id), body));
    return id;
  }

  async request<T>(encodingId: number, encode: (w: BinaryWriter, v: T) => void, value: T): Promise<Response> {
    const w = new BinaryWriter();
    encodeNodeId(w, numericNodeId(encodingId));
    encode(w, value);
    await this.sendRaw(Buffer.from(w.view()));
    const r = await this.channel.response();
    const reader = new BinaryReader(r.body);
    const typeId = decodeNodeId(reader);
    if (typeId.idType !== IdType.Numeric) throw new Error("response type id not numeric");
    const codec = structureByEncodingId(typeId.value as number);
    if (!codec) throw new Error(`unknown response type ${String(typeId.value)}`);
    return { typeId: typeId.value as number, body: codec.decode(reader) as Response["body"] };
  }

  async createSession(timeout = 60_000): Promise<CreateSessionResponse | ServiceFault> {
    const r = await this.request(ObjectIds.CreateSessionRequest_Encoding_DefaultBinary, encodeCreateSessionRequest, {
      requestHeader: header(),
      clientDescription: { applicationUri: "urn:test", productUri: "urn:test", applicationName: { text: "t" }, applicationType: 1, discoveryUrls: [] },
      endpointUrl: "opc.tcp://127.0.0.1",
      sessionName: "t",
      requestedSessionTimeout: timeout,
      maxResponseMessageSize: 0,
    });
    if (r.typeId === ObjectIds.CreateSessionResponse_Encoding_DefaultBinary) {
      this.token = (r.body as unknown as CreateSessionResponse).authenticationToken;
    }
    return r.body as unknown as CreateSessionResponse | ServiceFault;
  }

  async activate(): Promise<ActivateSessionResponse | ServiceFault> {
    const r = await this.request(ObjectIds.ActivateSessionRequest_Encoding_DefaultBinary, encodeActivateSessionRequest, {
      requestHeader: header(this.token),
      clientSignature: {},
      userIdentityToken: { typeId: numericNodeId(ObjectIds.AnonymousIdentityToken_Encoding_DefaultBinary), body: { policyId: "anonymous" } },
      userTokenSignature: {},
    });
    return r.body as unknown as ActivateSessionResponse | ServiceFault;
  }

  async read(nodes: ReadValueId[], opts: { maxAge?: number; timestamps?: number } = {}): Promise<ReadResponse | ServiceFault> {
    const r = await this.request(ObjectIds.ReadRequest_Encoding_DefaultBinary, encodeReadRequest, {
      requestHeader: header(this.token),
      maxAge: opts.maxAge ?? 0,
      timestampsToReturn: opts.timestamps ?? TimestampsToReturn.Both,
      nodesToRead: nodes,
    });
    return r.body as unknown as ReadResponse | ServiceFault;
  }

  close(): void {
    this.channel.raw.destroy();
  }
}

export function readValueId(id: number, attributeId = 13): ReadValueId {
  return { nodeId: numericNodeId(id), attributeId, dataEncoding: { namespaceIndex: 0, name: "" } };
}
