// The BufferPool's hard bound, and connections that stall on an empty pool and resume.
import { afterEach, describe, expect, it } from "vitest";
import { BufferPool, type PoolWaiter } from "../../src/transport/buffer-pool.js";
import type { UaTcpServer } from "../../src/server/listener.js";
import { ChannelClient, msg, testRequest } from "./raw-client.js";
import { delay, startServer } from "./test-server.js";

describe("BufferPool", () => {
  it("never lends more than its capacity, keeps the send reserve, wakes waiters", async () => {
    const pool = new BufferPool({ bufferSize: 1024, capacity: 4, sendReserve: 1 });
    const a = pool.acquire()!;
    const b = pool.acquire()!;
    const c = pool.acquire()!;
    expect(pool.acquire()).toBeUndefined(); // the last one is for sends
    const d = pool.acquireForSend()!;
    expect(pool.acquireForSend()).toBeUndefined();
    expect(pool.inUse).toBe(4);
    expect(new Set([a, b, c, d]).size).toBe(4);
    expect(a.length).toBe(1024);

    let woken = 0;
    const waiter: PoolWaiter = { onPoolBuffer: () => woken++ };
    pool.waitForReceive(waiter);
    pool.release(d);
    await new Promise((r) => process.nextTick(r));
    expect(woken).toBe(0); // one free buffer is only the send reserve
    pool.release(c);
    await new Promise((r) => process.nextTick(r));
    expect(woken).toBe(1);
    expect(pool.acquire()).toBe(c);

    expect(pool.release(Buffer.alloc(1024))).toBe(false);
    expect(pool.release(a)).toBe(true);
    expect(pool.release(a)).toBe(false);
    expect(pool.maxInUse).toBe(4);
    pool.cancelWait(waiter);
  });
});

let server: UaTcpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("pool exhaustion", () => {
  it("with a tiny pool, connections stall and resume, and the bound holds", async () => {
    const pool = new BufferPool({ bufferSize: 8192, capacity: 4, sendReserve: 1 });
    const s = await startServer({ receiveBufferSize: 8192, sendBufferSize: 8192 }, pool);
    server = s.server;
    const clients = await Promise.all(Array.from({ length: 6 }, () => ChannelClient.open(s.server.port)));
    const rounds = 8;
    await Promise.all(
      clients.map(async (c) => {
        for (let i = 0; i < rounds; i++) {
          // Each chunk arrives in two reads, so it needs a pool buffer while half of it is in.
          const id = c.requestId++;
          const chunk = msg(c.next(id), testRequest(6000, 6000));
          await c.raw.write(chunk.subarray(0, 3000));
          await delay(15);
          await c.raw.write(chunk.subarray(3000));
          const r = await c.response(5000);
          expect(r.requestId).toBe(id);
          expect(r.body.length).toBe(6004);
        }
      }),
    );
    expect(s.handler.requests).toBe(6 * rounds);
    expect(pool.maxInUse).toBeLessThanOrEqual(4);
    expect(pool.misses).toBeGreaterThan(0); // some connection did find the pool empty
    for (const c of clients) c.raw.destroy();
    await s.server.close();
    server = undefined;
    expect(pool.inUse).toBe(0);
  }, 30_000);
});
