import { describe, expect, it } from "vitest";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { FrameKind, FrameSplitter, beginMessageFrame, finishFrame, writeHello } from "../../bench/client/ua-tcp.js";

function frames(): Buffer {
  const w = new BinaryWriter(Buffer.alloc(256));
  writeHello(w, "opc.tcp://127.0.0.1:4840", { receiveBufferSize: 65536, sendBufferSize: 65536, maxMessageSize: 0, maxChunkCount: 0 });
  for (let i = 0; i < 3; i++) {
    const at = beginMessageFrame(w, FrameKind.MSGF, 7, 1, i + 1, 100 + i);
    w.writeBytes(Buffer.alloc(i * 9, i + 1));
    finishFrame(w, at);
  }
  return Buffer.from(w.view());
}

function collect(chunks: Buffer[]): { got: string[]; errors: string[] } {
  const got: string[] = [];
  const errors: string[] = [];
  const splitter = new FrameSplitter(
    {
      onFrame: (b, s, e) => got.push(b.subarray(s, e).toString("hex")),
      onFramingError: (m) => errors.push(m),
    },
    1024,
  );
  for (const c of chunks) splitter.feed(c);
  return { got, errors };
}

describe("UA-TCP framing of the load client", () => {
  const all = frames();
  const expected = collect([all]).got;

  it("writes Hello with its size patched and MSG headers in Part 6 order", () => {
    expect(all.readUInt32LE(0)).toBe(FrameKind.HELF);
    expect(all.subarray(0, 4).toString("latin1")).toBe("HELF");
    const helloSize = all.readUInt32LE(4);
    const msg = all.subarray(helloSize);
    expect(msg.subarray(0, 4).toString("latin1")).toBe("MSGF");
    expect(msg.readUInt32LE(8)).toBe(7); // SecureChannelId
    expect(msg.readUInt32LE(12)).toBe(1); // TokenId
    expect(msg.readUInt32LE(16)).toBe(1); // SequenceNumber
    expect(msg.readUInt32LE(20)).toBe(100); // RequestId
    expect(expected).toHaveLength(4);
  });

  it("yields the same frames for every split of the stream into two and into single bytes", () => {
    for (let cut = 1; cut < all.length; cut++) {
      expect(collect([all.subarray(0, cut), all.subarray(cut)]).got).toEqual(expected);
    }
    const bytes = Array.from(all, (b) => Buffer.from([b]));
    expect(collect(bytes).got).toEqual(expected);
  });

  it("yields the same frames for every split into three pieces", () => {
    for (let a = 1; a < all.length; a += 3) {
      for (let b = a + 1; b < all.length; b += 5) {
        expect(collect([all.subarray(0, a), all.subarray(a, b), all.subarray(b)]).got).toEqual(expected);
      }
    }
  });

  it("stops at a frame size below the header or above the limit", () => {
    const bad = Buffer.from(all);
    bad.writeUInt32LE(7, 4);
    expect(collect([bad]).errors).toHaveLength(1);
    bad.writeUInt32LE(4096, 4);
    const r = collect([bad.subarray(0, 5), bad.subarray(5)]);
    expect(r.errors).toHaveLength(1);
    expect(r.got).toHaveLength(0);
  });
});
