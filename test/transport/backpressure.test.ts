// Backpressure (DESIGN: Transport): a client that does not read, or a service layer that does not
// answer, makes the server stop reading that channel instead of queueing without bound or
// faulting it; once things move again, every request is answered.
import { afterEach, describe, expect, it } from "vitest";
import type { SecureChannel } from "../../src/security/secure-channel.js";
import type { UaTcpServer } from "../../src/server/listener.js";
import { ChannelClient, msg, testRequest } from "./raw-client.js";
import { delay, startServer } from "./test-server.js";

let server: UaTcpServer | undefined;
let client: ChannelClient | undefined;

afterEach(async () => {
  client?.raw.destroy();
  client = undefined;
  await server?.close();
  server = undefined;
});

function onlyChannel(s: UaTcpServer): SecureChannel {
  const all = [...s.channels()];
  expect(all.length).toBe(1);
  return all[0];
}

/** 1000 single-chunk requests in one write, each asking for `responseSize` bytes; returns their ids. */
async function flood(c: ChannelClient, count: number, responseSize: number): Promise<number[]> {
  const ids: number[] = [];
  const parts: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const id = c.requestId++;
    ids.push(id);
    parts.push(msg(c.next(id), testRequest(responseSize)));
  }
  await c.raw.write(Buffer.concat(parts));
  return ids;
}

async function readAll(c: ChannelClient, ids: number[]): Promise<void> {
  for (const id of ids) {
    const r = await c.response(5000);
    if (r.requestId !== id) throw new Error(`response for ${r.requestId}, expected ${id}`);
  }
}

describe("backpressure", () => {
  it("a client that sends 1000 requests without reading: the server pauses, then answers all", async () => {
    const s = await startServer();
    server = s.server;
    client = await ChannelClient.open(server.port);
    client.raw.socket.pause();
    const ids = await flood(client, 1000, 32 * 1024);
    const conn = onlyChannel(server).connection;
    await expect.poll(() => conn.backpressurePauses, { timeout: 5000 }).toBeGreaterThan(0);

    // Stopped reading well before the end (32 MB of answers cannot all sit in socket buffers).
    expect(s.handler.requests).toBeLessThan(1000);
    expect(conn.maxQueued).toBeLessThanOrEqual(server.limits.responseHighWater);
    // The connection holds at most its queued-bytes bound and one more response (and a
    // chunk being received), not 1000 answers; the budget holds for the whole server.
    expect(conn.maxHeldBytes).toBeLessThanOrEqual(server.limits.maxQueuedResponseBytes + 2 * server.pool.bufferSize);
    expect(server.pool.maxUsed).toBeLessThanOrEqual(server.pool.limit);
    expect(client.raw.closed).toBe(false);

    client.raw.socket.resume();
    await readAll(client, ids);
    expect(s.handler.requests).toBe(1000);
    expect(conn.maxQueued).toBeLessThanOrEqual(server.limits.responseHighWater);
    expect((await client.roundTrip(8)).length).toBe(12);
  }, 30_000);

  it("big responses: reading stops once the socket takes no more, long before the high-water mark", async () => {
    const s = await startServer({ maxQueuedResponseBytes: 256 * 1024 });
    server = s.server;
    client = await ChannelClient.open(server.port);
    client.raw.socket.pause();
    const ids = await flood(client, 200, 64 * 1024);
    const conn = onlyChannel(server).connection;
    await expect.poll(() => conn.backpressurePauses, { timeout: 5000 }).toBeGreaterThan(0);
    const handled = s.handler.requests;
    expect(handled).toBeLessThan(200);
    // Not the count of responses (100): the socket being full stopped it, with few queued.
    expect(conn.maxQueued).toBeLessThan(server.limits.responseHighWater);
    // Each answer takes two chunks (64 KiB of body does not fit one): the bound and one more answer.
    expect(conn.maxHeldBytes).toBeLessThanOrEqual(256 * 1024 + 3 * server.pool.bufferSize);
    // And it stays stopped while the client does not read.
    await delay(100);
    expect(s.handler.requests).toBe(handled);
    client.raw.socket.resume();
    await readAll(client, ids);
    expect(s.handler.requests).toBe(200);
  }, 30_000);

  it("a service layer that does not answer: at most the high-water mark is handed up", async () => {
    const s = await startServer({ responseHighWater: 20, responseLowWater: 10 });
    server = s.server;
    s.handler.mode = "hold";
    client = await ChannelClient.open(server.port);
    const ids = await flood(client, 1000, 16);
    const reading = readAll(client, ids);
    let answered = 0;
    let maxHeld = 0;
    while (answered < 1000) {
      const deadline = Date.now() + 3000;
      while (s.handler.held.length === 0) {
        if (Date.now() > deadline) throw new Error(`stalled after ${answered}`);
        await delay(2);
      }
      // Give the server time to read more if it (wrongly) would.
      await delay(5);
      maxHeld = Math.max(maxHeld, s.handler.held.length);
      answered += s.handler.held.length;
      s.handler.answerHeld();
    }
    await reading;
    expect(maxHeld).toBe(20);
    expect(onlyChannel(server).connection.backpressurePauses).toBeGreaterThan(0);
  }, 30_000);

  it("a client that stops reading and disconnects leaves no pool buffer behind", async () => {
    const s = await startServer();
    server = s.server;
    client = await ChannelClient.open(server.port);
    client.raw.socket.pause();
    await flood(client, 300, 64 * 1024);
    const conn = onlyChannel(server).connection;
    await expect.poll(() => conn.backpressurePauses, { timeout: 5000 }).toBeGreaterThan(0);
    expect(server.pool.inUse).toBeGreaterThan(0);
    client.raw.destroy();
    client = undefined;
    const deadline = Date.now() + 2000;
    while ([...server.channels()].length > 0 && Date.now() < deadline) await delay(10);
    expect([...server.channels()].length).toBe(0);
    expect(server.pool.inUse).toBe(0);
  }, 30_000);
});
