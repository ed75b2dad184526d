import { afterEach, describe, expect, it } from "vitest";
import type { UaTcpServer } from "../../src/server/listener.js";
import { ChannelClient, clo, POLICY_NONE } from "./raw-client.js";
import { startServer } from "./test-server.js";

let server: UaTcpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("UA-TCP listener and secure channel None", () => {
  it("HEL/ACK, OPN, requests and CLO", async () => {
    const s = await startServer();
    server = s.server;
    const c = await ChannelClient.open(server.port, { receiveBufferSize: 16384, sendBufferSize: 32768 });
    expect(c.ack).toEqual({ protocolVersion: 0, receiveBufferSize: 32768, sendBufferSize: 16384, maxMessageSize: 16 << 20, maxChunkCount: 256 });
    expect(c.opened.policyUri).toBe(POLICY_NONE);
    expect(c.opened.serviceResult).toBe(0);
    expect(c.opened.requestHandle).toBe(1);
    expect(c.opened.channelId).toBe(c.channelId);
    expect(c.channelId).not.toBe(0);
    expect(c.opened.revisedLifetime).toBe(600000);

    const body = await c.roundTrip(100);
    expect(body.length).toBe(4 + 100);
    expect(body.readUInt16LE(2)).toBe(634);
    expect(body[4 + 99]).toBe(99);

    // A response over the client's receive buffer comes in several chunks.
    const id = await c.send(50_000);
    const r = await c.response();
    expect(r.requestId).toBe(id);
    expect(r.chunks).toBe(Math.ceil((50_004) / (16384 - 24)));
    expect(r.body.length).toBe(50_004);
    for (let i = 0; i < 50_000; i++) if (r.body[4 + i] !== (i & 0xff)) throw new Error(`byte ${i}`);

    expect([...server.channels()].length).toBe(1);
    await c.raw.write(clo(c.next(c.requestId++)));
    expect(await c.raw.waitClosed()).toBe(true);
    expect(c.raw.frames.length).toBe(0);
    expect(s.handler.closedChannels).toBe(1);
  });
});
