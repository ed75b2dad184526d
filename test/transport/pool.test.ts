// The memory budget (BufferPool): its hard bound, the send reserve and the fair share, charges,
// waiters, giving memory back when idle; and connections that stall on a spent budget and resume.
import { afterEach, describe, expect, it } from "vitest";
import { BufferPool, type PoolHolder, type PoolWaiter } from "../../src/transport/buffer-pool.js";
import type { UaTcpServer } from "../../src/server/listener.js";
import { ChannelClient, msg, testRequest } from "./raw-client.js";
import { delay, startServer } from "./test-server.js";

const KiB = 1024;
const holder = (): PoolHolder => ({ heldBytes: 0 });

describe("BufferPool", () => {
  it("never lends past its limit; receives leave the send reserve; the reserve is for holders within their share", () => {
    // 1 MiB of 64 KiB buffers in 256 KiB slabs: 16 buffers; reserve 128 KiB (2); fair share 4 buffers.
    const pool = new BufferPool({ bufferSize: 64 * KiB, limit: 1024 * KiB });
    expect(pool.capacity).toBe(16);
    expect(pool.slabBuffers).toBe(4);
    const rx = holder();
    const got: Buffer[] = [];
    for (let b = pool.acquire(rx); b !== undefined; b = pool.acquire(rx)) got.push(b);
    expect(got.length).toBe(14);
    expect(new Set(got).size).toBe(14);
    expect(got.every((b) => b.length === 64 * KiB)).toBe(true);
    expect(rx.heldBytes).toBe(14 * 64 * KiB);
    expect(pool.exhausted).toBe(true);
    // A holder over its fair share (rx holds 14 buffers) may not take the reserve...
    expect(pool.acquireForSend(rx)).toBeUndefined();
    // ...one within it may, down to the last buffer.
    const tx = holder();
    const s1 = pool.acquireForSend(tx)!;
    const s2 = pool.acquireForSend(tx)!;
    expect(pool.acquireForSend(tx)).toBeUndefined();
    expect(pool.inUse).toBe(16);
    expect(pool.used).toBe(1024 * KiB);
    expect(pool.maxUsed).toBeLessThanOrEqual(pool.limit);
    expect(pool.misses).toBeGreaterThanOrEqual(3);

    expect(pool.release(Buffer.alloc(64 * KiB), tx)).toBe(false);
    expect(pool.release(s1, tx)).toBe(true);
    expect(pool.release(s1, tx)).toBe(false);
    expect(pool.release(s2, tx)).toBe(true);
    expect(tx.heldBytes).toBe(0);
    for (const b of got) pool.release(b, rx);
    expect(rx.heldBytes).toBe(0);
    expect(pool.inUse).toBe(0);
  });

  it("charges compete with buffers; idle slabs make room for a charge", () => {
    const pool = new BufferPool({ bufferSize: 64 * KiB, limit: 1024 * KiB });
    const h = holder();
    const bufs = Array.from({ length: 8 }, () => pool.acquire(h)!);
    expect(pool.slabCount).toBe(2);
    for (const b of bufs) pool.release(b, h);
    // 512 KiB of slabs with nothing lent: a charge of everything up to the reserve releases them.
    expect(pool.charge(896 * KiB)).toBe(true);
    expect(pool.slabCount).toBe(0);
    expect(pool.charge(1)).toBe(false);
    expect(pool.acquire(h)).toBeUndefined();
    expect(pool.acquireForSend(h)).toBeUndefined();
    // Forced: already taken (a socket read), counted even past the limit.
    expect(pool.charge(512 * KiB, true)).toBe(true);
    expect(pool.used).toBe(1408 * KiB);
    pool.uncharge(512 * KiB);
    pool.uncharge(896 * KiB);
    expect(pool.used).toBe(0);
    expect(pool.acquire(h)).toBeDefined();
  });

  it("wakes a receive waiter once a buffer outside the reserve is free", async () => {
    const pool = new BufferPool({ bufferSize: 64 * KiB, limit: 1024 * KiB });
    const h = holder();
    const got: Buffer[] = [];
    for (let b = pool.acquire(h); b !== undefined; b = pool.acquire(h)) got.push(b);
    const sender = holder();
    const sent = pool.acquireForSend(sender)!;
    let woken = 0;
    const waiter: PoolWaiter = { onPoolBuffer: () => woken++ };
    pool.waitForReceive(waiter);
    pool.release(sent, sender);
    await new Promise((r) => process.nextTick(r));
    expect(woken).toBe(0); // what came back is the send reserve
    pool.release(got.pop()!, h);
    await new Promise((r) => process.nextTick(r));
    expect(woken).toBe(1);
    expect(pool.acquire(h)).toBeDefined();
    pool.cancelWait(waiter);
  });

  it("gives memory back when idle: down to what the last seconds needed, then to its floor", () => {
    const pool = new BufferPool({ bufferSize: 64 * KiB, limit: 8192 * KiB, floor: 256 * KiB });
    const h = holder();
    const burst = Array.from({ length: 100 }, () => pool.acquireForSend(h)!);
    const stale = burst[50];
    expect(pool.slabCount).toBe(25);
    for (const b of burst.splice(10)) pool.release(b, h);
    // Ten in use: the burst's peak is remembered for a few calls, so nothing goes at once.
    pool.trim();
    expect(pool.slabCount).toBe(25);
    for (let i = 0; i < 5; i++) pool.trim();
    // The ten in use keep their slabs (lent from the lowest first: 3 slabs) plus one spare.
    expect(pool.slabCount).toBe(4);
    expect(pool.used).toBe(4 * 256 * KiB);
    for (const b of burst) pool.release(b, h);
    for (let i = 0; i < 6; i++) pool.trim();
    expect(pool.slabCount).toBe(1);
    expect(pool.used).toBe(256 * KiB);
    expect(pool.slabsReleased).toBe(24);
    // A released slab's buffers are detached: a stale reference cannot write into freed memory.
    expect(stale.length).toBe(0);
    // And the pool still lends.
    expect(pool.acquire(h)!.length).toBe(64 * KiB);
  });

  it("by default, an idle pool keeps one slab after a burst, as a pool that never had one", () => {
    const pool = new BufferPool({ bufferSize: 64 * KiB, limit: 32 * 1024 * KiB });
    const h = holder();
    const burst = Array.from({ length: 200 }, () => pool.acquire(h));
    expect(burst.every((b) => b !== undefined)).toBe(true);
    expect(pool.slabCount).toBe(50);
    for (const b of burst) pool.release(b!, h);
    // Once the burst has left the trim window, what is kept is one slab (not 1 MiB of them).
    for (let i = 0; i < 6; i++) pool.trim();
    expect(pool.slabCount).toBe(1);
    expect(pool.used).toBe(pool.slabBytes);
    expect(pool.floor).toBe(pool.slabBytes);
  });
});

let server: UaTcpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("budget exhaustion", () => {
  it("with a tiny budget, connections stall and resume, and the bound holds", async () => {
    // 1 MiB of 8 KiB buffers; the reserve (1/8) leaves receives 112 buffers.
    const pool = new BufferPool({ bufferSize: 8192, limit: 1024 * KiB });
    const s = await startServer({ receiveBufferSize: 8192, sendBufferSize: 8192 }, pool);
    server = s.server;
    const clients = await Promise.all(Array.from({ length: 6 }, () => ChannelClient.open(s.server.port)));
    // Hold most of the receive side, so that chunks spanning reads wait for a buffer.
    const hog = holder();
    const held: Buffer[] = [];
    while (held.length < 110) {
      const b = pool.acquire(hog);
      if (b === undefined) break;
      held.push(b);
    }
    let release: NodeJS.Timeout | undefined = setInterval(() => {
      const b = held.pop();
      if (b !== undefined) pool.release(b, hog);
    }, 20);
    const rounds = 8;
    try {
      await Promise.all(
        clients.map(async (c) => {
          for (let i = 0; i < rounds; i++) {
            // Each chunk arrives in two reads, so it needs a pool buffer while half of it is in.
            const id = c.requestId++;
            const chunk = msg(c.next(id), testRequest(6000, 6000));
            await c.raw.write(chunk.subarray(0, 3000));
            await delay(15);
            await c.raw.write(chunk.subarray(3000));
            const r = await c.response(10_000);
            expect(r.requestId).toBe(id);
            expect(r.body.length).toBe(6004);
          }
        }),
      );
    } finally {
      clearInterval(release);
      release = undefined;
      for (const b of held.splice(0)) pool.release(b, hog);
    }
    expect(s.handler.requests).toBe(6 * rounds);
    // Socket reads that arrived before a paused socket stopped reading are counted as they come
    // (they exist already): at most one read past the limit per connection.
    expect(pool.maxUsed).toBeLessThanOrEqual(pool.limit + clients.length * 64 * KiB);
    expect(pool.misses).toBeGreaterThan(0); // some connection did find the budget spent
    for (const c of clients) c.raw.destroy();
    await s.server.close();
    server = undefined;
    expect(pool.inUse).toBe(0);
  }, 30_000);
});
