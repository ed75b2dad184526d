// Token renewal and expiry, the channel cap, responses over the client's limits, server close.
import { afterEach, describe, expect, it } from "vitest";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import type { UaTcpServer } from "../../src/server/listener.js";
import { ChannelClient, msg, open, parseMsg, parseOpen, testRequest } from "./raw-client.js";
import { delay, startServer, type TestHandler } from "./test-server.js";

let server: UaTcpServer | undefined;
let handler: TestHandler;
const clients: ChannelClient[] = [];

async function start(limits: Parameters<typeof startServer>[0] = {}): Promise<UaTcpServer> {
  const s = await startServer(limits);
  server = s.server;
  handler = s.handler;
  return server;
}

async function client(...args: Parameters<typeof ChannelClient.open> extends [number, ...infer R] ? R : never): Promise<ChannelClient> {
  const c = await ChannelClient.open(server!.port, ...args);
  clients.push(c);
  return c;
}

afterEach(async () => {
  for (const c of clients.splice(0)) c.raw.destroy();
  await server?.close();
  server = undefined;
});

async function renew(c: ChannelClient, requestedLifetime: number): Promise<ReturnType<typeof parseOpen>> {
  await c.raw.write(open({ channelId: c.channelId, requestType: 1, sequenceNumber: c.sequenceNumber++, requestId: c.requestId++, requestedLifetime }));
  const f = await c.raw.next();
  expect(f.type).toBe("OPN");
  return parseOpen(f);
}

describe("security tokens", () => {
  it("renewal: the old token works until the new one is used, responses switch with the client", async () => {
    await start();
    const c = await client({}, { requestedLifetime: 60_000 });
    expect(c.tokenId).toBe(1);
    await c.roundTrip();
    const r = await renew(c, 60_000);
    expect(r.tokenChannelId).toBe(c.channelId);
    expect(r.tokenId).toBe(2);

    // Still on the old token: accepted, and answered with the old token (Part 4 §5.5.2.1).
    let id = await c.send();
    let f = await c.raw.next();
    expect(parseMsg(f).requestId).toBe(id);
    expect(parseMsg(f).tokenId).toBe(1);

    c.tokenId = 2;
    id = await c.send();
    f = await c.raw.next();
    expect(parseMsg(f).requestId).toBe(id);
    expect(parseMsg(f).tokenId).toBe(2);

    // Once the new token is in use, the old one is gone.
    c.tokenId = 1;
    await c.send();
    expect((await c.raw.expectErr()).toString(16)).toBe(StatusCodes.BadSecureChannelTokenUnknown.toString(16));
  });

  it("revised lifetime stays within bounds", async () => {
    await start({ minTokenLifetimeMs: 1000, maxTokenLifetimeMs: 5000, defaultTokenLifetimeMs: 3000 });
    expect((await client({}, { requestedLifetime: 10 })).opened.revisedLifetime).toBe(1000);
    expect((await client({}, { requestedLifetime: 10_000_000 })).opened.revisedLifetime).toBe(5000);
    expect((await client({}, { requestedLifetime: 0 })).opened.revisedLifetime).toBe(3000);
    expect((await client({}, { requestedLifetime: 2500 })).opened.revisedLifetime).toBe(2500);
  });

  it("a token not renewed in time ends the channel; renewing in time keeps it", async () => {
    await start({ minTokenLifetimeMs: 100 });
    const lazy = await client({}, { requestedLifetime: 200 });
    const keen = await client({}, { requestedLifetime: 200 });
    for (let i = 0; i < 4; i++) {
      await delay(150);
      await renew(keen, 200);
      keen.tokenId++;
      await keen.roundTrip();
    }
    // 200 ms lifetime + 25 % overlap; by now (600 ms) the lazy one is long gone.
    expect((await lazy.raw.expectErr()).toString(16)).toBe(StatusCodes.BadSecureChannelTokenUnknown.toString(16));
    expect(keen.raw.closed).toBe(false);
    expect(handler.closedChannels).toBe(1);
  });

  it("renew for another channel id", async () => {
    await start();
    const c = await client();
    await c.raw.write(open({ channelId: c.channelId + 1, requestType: 1, sequenceNumber: c.sequenceNumber++, requestId: c.requestId++ }));
    expect((await c.raw.expectErr()).toString(16)).toBe(StatusCodes.BadSecureChannelIdInvalid.toString(16));
  });

  it("a second Issue on an open channel", async () => {
    await start();
    const c = await client();
    await c.raw.write(open({ channelId: c.channelId, requestType: 0, sequenceNumber: c.sequenceNumber++, requestId: c.requestId++ }));
    expect((await c.raw.expectErr()).toString(16)).toBe(StatusCodes.BadRequestTypeInvalid.toString(16));
  });
});

describe("channel registry", () => {
  it("over the cap, the oldest channel without a session makes room; with sessions everywhere the new one is refused", async () => {
    const s = await start({ maxChannels: 2 });
    const a = await client();
    const b = await client();
    const c = await client();
    expect((await a.raw.expectErr()).toString(16)).toBe(StatusCodes.BadTcpNotEnoughResources.toString(16));
    await b.roundTrip();
    await c.roundTrip();

    for (const ch of s.channels()) ch.sessionCount = 1;
    await expect(client()).rejects.toThrow(/ACK|closed/);
    await b.roundTrip();
    await c.roundTrip();
    expect([...s.channels()].filter((ch) => ch.sessionCount === 1).length).toBe(2);
  });

  it("channel ids are unique among live channels", async () => {
    const s = await start();
    const cs = await Promise.all(Array.from({ length: 5 }, () => client()));
    const ids = new Set(cs.map((c) => c.channelId));
    expect(ids.size).toBe(5);
    expect(new Set([...s.channels()].map((ch) => ch.channelId))).toEqual(ids);
  });

  it("close() ends every channel and resolves when all sockets are gone", async () => {
    const s = await start();
    const cs = await Promise.all(Array.from({ length: 3 }, () => client()));
    const unopened = await client().catch(() => undefined);
    expect(unopened).toBeDefined();
    await s.close();
    server = undefined;
    for (const c of cs) expect(await c.raw.waitClosed(100)).toBe(true);
    expect([...s.channels()].length).toBe(0);
    expect(s.pool.inUse).toBe(0);
  });
});

describe("responses over the client's limits", () => {
  it("MaxMessageSize: BadResponseTooLarge is thrown before anything is sent", async () => {
    await start();
    const c = await client({ maxMessageSize: 10_000 });
    expect((await c.roundTrip(9_000)).length).toBe(9_004);
    expect((await c.roundTrip(20_000)).length).toBe(4);
    expect(handler.tooLarge).toBe(1);
    expect((await c.roundTrip(100)).length).toBe(104);
  });

  it("MaxChunkCount: the chunks already sent are followed by an abort chunk with BadResponseTooLarge", async () => {
    await start({ sendBufferSize: 8192 });
    const c = await client({ receiveBufferSize: 8192, maxChunkCount: 2 });
    const r = await c.send(16_000);
    const resp = await c.response();
    expect(resp.requestId).toBe(r);
    expect(resp.chunks).toBe(2);
    expect(resp.aborted).toBeUndefined();
    // Three chunks' worth: the first went out while the response was being encoded; Part 6
    // §7.1.2.3 has the server abort the message with BadResponseTooLarge.
    const big = await c.send(17_000);
    const aborted = await c.response();
    expect(aborted).toMatchObject({ requestId: big, chunks: 2, aborted: StatusCodes.BadResponseTooLarge });
    expect(handler.tooLarge).toBe(0);
    // The channel goes on, and the abort counted as the answer (nothing else comes for it).
    expect((await c.roundTrip(100)).length).toBe(104);
  });

  it("a response of many chunks: every chunk of it in order, its bytes as encoded, nothing left in the pool", async () => {
    const s = await start({ sendBufferSize: 8192, receiveBufferSize: 8192 });
    const c = await client({ receiveBufferSize: 8192 });
    const size = 300_000;
    const body = await c.roundTrip(size);
    expect(body.length).toBe(size + 4);
    for (let i = 0; i < size; i++) if (body[4 + i] !== (i & 0xff)) throw new Error(`byte ${i} is ${body[4 + i]}`);
    await expect.poll(() => s.pool.inUse).toBe(0);
  });

  it("a request body split over chunks of the negotiated size", async () => {
    await start({ receiveBufferSize: 8192 });
    const c = await client();
    expect(c.ack.receiveBufferSize).toBe(8192);
    const id = c.requestId++;
    const req = testRequest(10, 8192 - 24 - 8);
    await c.raw.write(msg(c.next(id), req));
    expect((await c.response()).requestId).toBe(id);
  });
});
