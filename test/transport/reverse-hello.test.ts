// ReverseHello (Part 6 §7.1.2.6): the server connects out, sends RHE, then serves the connection
// like an accepted one.
import net from "node:net";
import { describe, expect, it } from "vitest";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { ChannelClient, RawClient } from "./raw-client.js";
import { startServer } from "./test-server.js";

describe("reverse connect", () => {
  it("sends RHE with ServerUri and EndpointUrl, then takes HEL, OPN and requests", async () => {
    const { server } = await startServer();
    const listener = net.createServer();
    const accepted = new Promise<net.Socket>((resolve) => listener.once("connection", resolve));
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const port = (listener.address() as net.AddressInfo).port;
    try {
      await server.reverseConnect("127.0.0.1", port, "opc.tcp://gateway:4840/fieldgate");
      const raw = RawClient.wrap(await accepted);
      const rhe = await raw.next();
      expect(rhe.type).toBe("RHE");
      expect(rhe.chunkType).toBe("F");
      const uriLen = rhe.body.readInt32LE(0);
      expect(rhe.body.toString("utf8", 4, 4 + uriLen)).toBe(server.serverUri);
      const urlLen = rhe.body.readInt32LE(4 + uriLen);
      expect(rhe.body.toString("utf8", 8 + uriLen, 8 + uriLen + urlLen)).toBe("opc.tcp://gateway:4840/fieldgate");
      expect(rhe.size).toBe(8 + 8 + uriLen + urlLen);

      const c = new ChannelClient(raw);
      await c.handshake({ endpointUrl: "opc.tcp://gateway:4840/fieldgate" });
      expect((await c.roundTrip(64)).length).toBe(68);
      const ch = [...server.channels()];
      expect(ch.length).toBe(1);
      expect(ch[0].endpointUrl).toBe("opc.tcp://gateway:4840/fieldgate");
      raw.destroy();
    } finally {
      await server.close();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    }
  });

  it("rejects when nobody listens, and refuses an over-long EndpointUrl", async () => {
    const { server } = await startServer();
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    try {
      await expect(server.reverseConnect("127.0.0.1", port, "opc.tcp://x")).rejects.toThrow(/ECONNREFUSED/);
      await expect(server.reverseConnect("127.0.0.1", port, "opc.tcp://x/" + "a".repeat(5000))).rejects.toMatchObject({
        statusCode: StatusCodes.BadTcpEndpointUrlInvalid,
      });
      expect([...server.channels()].length).toBe(0);
    } finally {
      await server.close();
    }
  });
});
