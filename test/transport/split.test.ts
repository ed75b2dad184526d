// Every valid frame sequence, split at every byte offset (and trickled byte by byte), gives the
// same result as when it arrives in one piece.
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UaTcpServer } from "../../src/server/listener.js";
import { clo, hello, msg, open, parseAck, parseMsg, parseOpen, testRequest, type Frame } from "./raw-client.js";
import { delay, startServer } from "./test-server.js";

let server: UaTcpServer;

beforeAll(async () => {
  ({ server } = await startServer({ receiveBufferSize: 8192, sendBufferSize: 8192 }));
});
afterAll(async () => {
  await server.close();
});

/**
 * Two streams: HEL + OPN, then (built from the ids the OPN response gave) a one-chunk request, a
 * three-chunk request, an aborted request, one more request and CLO. Each is split the same way.
 */
function handshake(): Buffer {
  return Buffer.concat([hello({ receiveBufferSize: 8192, sendBufferSize: 8192 }), open({ sequenceNumber: 1, requestId: 1, requestHandle: 7 })]);
}

function messages(channelId: number, tokenId: number): Buffer {
  let seq = 2;
  const o = (requestId: number, chunkType: "F" | "C" | "A" = "F") => ({ channelId, tokenId, sequenceNumber: seq++, requestId, chunkType });
  const big = testRequest(9000, 300);
  const abort = Buffer.alloc(8);
  abort.writeUInt32LE(0x80b80000, 0);
  abort.writeInt32LE(-1, 4);
  return Buffer.concat([
    msg(o(2), testRequest(10)),
    msg(o(3, "C"), big.subarray(0, 100)),
    msg(o(3, "C"), big.subarray(100, 200)),
    msg(o(3, "F"), big.subarray(200)),
    msg(o(4, "C"), testRequest(5)),
    msg(o(4, "A"), abort),
    msg(o(5), testRequest(1)),
    clo(o(6)),
  ]);
}

/** What a run produced, with the per-connection ids and timestamps left out. */
function summarize(frames: Frame[]): string[] {
  return frames.map((f) => {
    if (f.type === "ACK") return `ACK ${JSON.stringify(parseAck(f))}`;
    if (f.type === "OPN") {
      const o = parseOpen(f);
      return `OPN ${o.requestId} ${o.requestHandle} ${o.serviceResult} ${o.revisedLifetime} ${o.tokenId}`;
    }
    if (f.type === "MSG") {
      const m = parseMsg(f);
      return `MSG ${f.chunkType} ${f.size} ${m.requestId} ${m.body.toString("base64").length} ${m.body.subarray(0, 16).toString("hex")}`;
    }
    return `${f.type} ${f.body.toString("hex")}`;
  });
}

/** Connects, sends `parts` with a pause between them, returns all frames until the server closes. */
async function run(split: (stream: Buffer) => Buffer[]): Promise<string[]> {
  const socket = net.connect({ host: "127.0.0.1", port: server.port });
  const frames: Frame[] = [];
  let acc: Buffer = Buffer.alloc(0);
  let closed = false;
  let wake: (() => void) | null = null;
  socket.on("data", (d: Buffer) => {
    acc = Buffer.concat([acc, d]);
    while (acc.length >= 8 && acc.length >= acc.readUInt32LE(4)) {
      const size = acc.readUInt32LE(4);
      frames.push({ type: acc.toString("latin1", 0, 3), chunkType: acc.toString("latin1", 3, 4), size, body: Buffer.from(acc.subarray(8, size)) });
      acc = acc.subarray(size);
    }
    wake?.();
  });
  socket.on("error", () => {});
  socket.on("close", () => {
    closed = true;
    wake?.();
  });
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  const waitFor = async (cond: () => boolean): Promise<void> => {
    const deadline = Date.now() + 3000;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error("timeout");
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 50);
      });
    }
  };
  const send = async (stream: Buffer): Promise<void> => {
    for (const part of split(stream)) {
      if (part.length === 0) continue;
      socket.write(part);
      // Separate socket reads on the server side: loopback delivers a write well within this.
      await delay(1);
    }
  };
  try {
    await send(handshake());
    await waitFor(() => frames.length >= 2 || closed);
    if (frames.length < 2 || frames[1].type !== "OPN") return summarize(frames);
    const o = parseOpen(frames[1]);
    await send(messages(o.tokenChannelId, o.tokenId));
    await waitFor(() => closed);
    return summarize(frames);
  } finally {
    socket.destroy();
  }
}

describe("framing is independent of how bytes are split", () => {
  let whole: string[];

  beforeAll(async () => {
    whole = await run((s) => [s]);
  });

  it("the unsplit run answers every request and ends with the CLO", () => {
    expect(whole[0]).toMatch(/^ACK /);
    expect(whole[1]).toMatch(/^OPN 1 7 0 /);
    const msgs = whole.slice(2);
    // 24 bytes of headers + 4 of NodeId + the asked-for size: 10; 9000 in two 8192-byte chunks;
    // nothing for the aborted request; 1.
    expect(msgs.map((m) => m.split(" ").slice(0, 4).join(" "))).toEqual([
      "MSG F 38 2",
      "MSG C 8192 3",
      "MSG F 860 3",
      "MSG F 29 5",
    ]);
  });

  it("split at every offset of the handshake and of the message stream", async () => {
    const hs = handshake().length;
    const ms = messages(1, 1).length;
    const offsets: [number, number][] = [];
    for (let i = 1; i < hs; i++) offsets.push([i, 0]);
    for (let i = 1; i < ms; i++) offsets.push([0, i]);
    // A few connections at a time keep this quick on a small machine.
    const parallel = 8;
    for (let k = 0; k < offsets.length; k += parallel) {
      const batch = offsets.slice(k, k + parallel);
      const results = await Promise.all(
        batch.map(([a, b]) =>
          run((s) => {
            const at = s.length === hs ? a : b;
            return at === 0 ? [s] : [s.subarray(0, at), s.subarray(at)];
          }),
        ),
      );
      for (let j = 0; j < results.length; j++) {
        if (JSON.stringify(results[j]) !== JSON.stringify(whole)) {
          expect({ offset: batch[j], result: results[j] }).toEqual({ offset: batch[j], result: whole });
        }
      }
    }
  }, 60_000);

  it("byte by byte", async () => {
    const result = await run((s) => Array.from({ length: s.length }, (_, i) => s.subarray(i, i + 1)));
    expect(result).toEqual(whole);
  }, 30_000);
});
