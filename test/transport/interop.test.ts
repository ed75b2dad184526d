// A client nobody here wrote (node-opcua) opens, uses and closes a channel on our transport.
import { describe, expect, it } from "vitest";
import { OPCUAClient, MessageSecurityMode, SecurityPolicy } from "node-opcua-client";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { decodeNodeId } from "../../src/ua/builtin-codec.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { decodeGetEndpointsRequest, encodeGetEndpointsResponse } from "../../src/ua/generated/types.js";
import type { ChannelHandler, SecureChannel } from "../../src/security/secure-channel.js";
import { UaTcpServer } from "../../src/server/listener.js";
import { testSlicer } from "../helpers/slicer.js";
import { systemClock } from "../../src/sampling/clock.js";

class EndpointsHandler implements ChannelHandler {
  requests = 0;
  closed = 0;
  private readonly reader = new BinaryReader();
  onRequest(channel: SecureChannel, requestId: number, body: Buffer, start: number, end: number): void {
    const r = this.reader.setBuffer(body, start, end);
    const type = decodeNodeId(r);
    expect(type.value).toBe(ObjectIds.GetEndpointsRequest_Encoding_DefaultBinary);
    const req = decodeGetEndpointsRequest(r);
    this.requests++;
    channel.sendResponse(requestId, ObjectIds.GetEndpointsResponse_Encoding_DefaultBinary, encodeGetEndpointsResponse, {
      responseHeader: { timestamp: Date.now(), requestHandle: req.requestHeader.requestHandle, serviceResult: StatusCodes.Good, serviceDiagnostics: {} },
      endpoints: [],
    });
  }
  onChannelClosed(): void {
    this.closed++;
  }
}

describe("node-opcua client on our secure channel", () => {
  it("HEL/ACK, OPN, GetEndpoints over MSG, CLO", async () => {
    const handler = new EndpointsHandler();
    const server = new UaTcpServer({ host: "127.0.0.1", port: 0, handler, pacer: testSlicer(systemClock) });
    await server.listen();
    const client = OPCUAClient.create({
      endpointMustExist: false,
      securityMode: MessageSecurityMode.None,
      securityPolicy: SecurityPolicy.None,
      connectionStrategy: { maxRetry: 0, initialDelay: 10, maxDelay: 20 },
    });
    try {
      const url = `opc.tcp://127.0.0.1:${server.port}`;
      await client.connect(url);
      const endpoints = await client.getEndpoints();
      expect(endpoints).toEqual([]);
      expect(handler.requests).toBeGreaterThanOrEqual(1);
      const ch = [...server.channels()];
      expect(ch.length).toBe(1);
      expect(ch[0].endpointUrl).toBe(url);
      await client.disconnect();
      const deadline = Date.now() + 2000;
      while ([...server.channels()].length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect([...server.channels()].length).toBe(0);
      expect(handler.closed).toBe(1);
    } finally {
      await client.disconnect().catch(() => {});
      await server.close();
    }
  }, 20_000);
});
