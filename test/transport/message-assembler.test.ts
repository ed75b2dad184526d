// The bounds on bytes held for unfinished messages (message-assembler.ts), at the exact byte where
// they refuse: per channel (maxPendingBytesPerChannel) and for the whole server (the memory
// budget's receive side). Each case sends more than its bound and checks where it stopped, so a
// bound that is switched off or moved fails here.
import { describe, expect, it } from "vitest";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { BufferPool, type PoolHolder } from "../../src/transport/buffer-pool.js";
import { resolveLimits } from "../../src/transport/limits.js";
import { MessageAssembler, ReassemblyBuffer } from "../../src/transport/message-assembler.js";

const KiB = 1024;
const BUF = 8 * KiB;

function setup(memoryLimit: number, perChannel: number) {
  const pool = new BufferPool({ bufferSize: BUF, limit: memoryLimit });
  const limits = resolveLimits({ receiveBufferSize: BUF, sendBufferSize: BUF, memoryLimit, maxPendingBytesPerChannel: perChannel, maxMessageSize: 64 << 20, maxChunkCount: 100_000 });
  const scratch = new ReassemblyBuffer(pool);
  const channel = (): { a: MessageAssembler; h: PoolHolder } => {
    const h: PoolHolder = { heldBytes: 0 };
    return { a: new MessageAssembler(limits, pool, h, scratch), h };
  };
  return { pool, limits, scratch, channel };
}

/** Appends `chunk`-byte bodies of request `id` until one is refused; returns the bytes taken and the refusal. */
function flood(a: MessageAssembler, id: number, chunk: number, total: number): { taken: number; error: unknown } {
  const body = Buffer.alloc(chunk, 0x41);
  let taken = 0;
  while (taken < total) {
    try {
      a.append(id, body, 0, chunk, 0);
    } catch (error) {
      return { taken, error };
    }
    taken += chunk;
  }
  return { taken, error: undefined };
}

describe("MessageAssembler bounds", () => {
  it("per channel: refused with BadTcpNotEnoughResources at maxPendingBytesPerChannel, not later", () => {
    // The budget (1 MiB, receive side 896 KiB) would take far more than the channel's 64 KiB.
    const { pool, channel } = setup(1024 * KiB, 64 * KiB);
    const { a, h } = channel();
    const r = flood(a, 7, 1000, 1024 * KiB);
    expect(r.error).toMatchObject({ statusCode: StatusCodes.BadTcpNotEnoughResources });
    // Eight 8 KiB buffers hold 65,536 bytes: 65 bodies of 1000 fit, the 66th needs a ninth buffer.
    expect(r.taken).toBe(65_000);
    expect(a.heldBytes).toBe(64 * KiB);
    expect(h.heldBytes).toBe(64 * KiB);
    a.clear();
    expect(pool.inUse).toBe(0);
    expect(h.heldBytes).toBe(0);
  });

  it("for the server: channels within their own bound are refused once the budget's receive side is spent", () => {
    // 1 MiB budget, 128 KiB send reserve: 896 KiB = 112 buffers for receiving; 300 KiB per channel.
    const { pool, channel } = setup(1024 * KiB, 300 * KiB);
    const chans = [channel(), channel(), channel(), channel()];
    const results = chans.map((c, i) => flood(c.a, i + 1, BUF, 280 * KiB));
    // The first three take 35 buffers each (280 KiB, within 300), then there are 7 left for the fourth.
    expect(results.map((r) => r.taken)).toEqual([280 * KiB, 280 * KiB, 280 * KiB, 7 * BUF]);
    expect(results[3].error).toMatchObject({ statusCode: StatusCodes.BadTcpNotEnoughResources });
    expect(pool.inUse).toBe(112);
    expect(pool.used).toBeLessThanOrEqual(pool.limit);
    expect(pool.exhausted).toBe(true);
    // The send reserve is still there for answers.
    expect(pool.acquireForSend({ heldBytes: 0 })).toBeDefined();
    for (const c of chans) c.a.clear();
  });

  it("a message of one buffer is handed up from it; a longer one is copied once, exactly; both let go of their memory", () => {
    const { pool, scratch, channel } = setup(1024 * KiB, 512 * KiB);
    const { a, h } = channel();
    const part = (n: number, seed: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff));
    a.append(1, part(3000, 1), 0, 3000, 0);
    const small = a.final(1, part(2000, 2), 0, 2000)!;
    expect(Buffer.compare(small.body.subarray(small.start, small.end), Buffer.concat([part(3000, 1), part(2000, 2)]))).toBe(0);
    expect(small.body.length).toBe(BUF); // the pool buffer itself
    a.finish(small);
    expect(h.heldBytes).toBe(0);

    const parts = [part(8000, 3), part(8000, 4), part(8000, 5)];
    for (const p of parts.slice(0, 2)) a.append(2, p, 0, p.length, 0);
    const big = a.final(2, parts[2], 0, parts[2].length)!;
    expect(big.end - big.start).toBe(24_000);
    expect(Buffer.compare(big.body.subarray(big.start, big.end), Buffer.concat(parts))).toBe(0);
    // The blocks went back as soon as the message was copied; the reassembly buffer is charged.
    expect(h.heldBytes).toBe(0);
    expect(scratch.size).toBeGreaterThanOrEqual(24_000);
    expect(pool.used).toBe(pool.slabCount * pool.slabBytes + scratch.size);
    a.finish(big);
    // Idle for two trims: the reassembly buffer goes.
    scratch.trim();
    scratch.trim();
    expect(scratch.size).toBe(0);
    expect(pool.used).toBe(pool.slabCount * pool.slabBytes);
  });

  it("an abort chunk drops the message and its memory; the channel goes on", () => {
    const { pool, channel } = setup(1024 * KiB, 512 * KiB);
    const { a } = channel();
    flood(a, 3, 5000, 40_000);
    expect(a.incompleteCount).toBe(1);
    expect(a.abort(3)).toBe(true);
    expect(a.incompleteCount).toBe(0);
    expect(pool.inUse).toBe(0);
    expect(a.final(3, Buffer.alloc(10), 0, 10)).toBeUndefined();
  });
});
