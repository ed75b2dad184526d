// The ChunkWriter on its own, with small chunks so that everything spans them: the bytes of a
// message cut into chunks are exactly what a plain BinaryWriter writes, intermediate chunks are
// full (but for a primitive's few bytes), sequence numbers follow each other, lengths patched later (ExtensionObject) are right
// although their chunk was full long before, long strings and byte strings are split, small
// messages share a buffer, and failures end as they must (nothing sent, or an abort chunk).
import { describe, expect, it } from "vitest";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { decodeVariant, encodeVariant } from "../../src/ua/builtin-codec.js";
import { BuiltinType, numericNodeId, scalar, VariantArrayType, type Variant } from "../../src/ua/builtins.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import "../../src/ua/generated/types.js"; // registers the structure codecs (KeyValuePair)
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { ChunkWriter, type ChunkOutput, type ChunkSealer } from "../../src/transport/chunk-writer.js";
import { ChunkType } from "../../src/transport/ua-tcp.js";

import { FakeOutput, FakeSealer } from "./fake-chunks.js";

function plain(encode: (w: BinaryWriter) => void): Buffer {
  const w = new BinaryWriter();
  encode(w);
  return Buffer.from(w.view());
}

/** A Variant with nested ExtensionObjects (lengths patched after their body), strings and arrays. */
function nested(depth: number, width: number): Variant {
  let inner: Variant = scalar(BuiltinType.String, "naïve café ✓ 𝄞 ".repeat(width));
  for (let d = 0; d < depth; d++) {
    inner = scalar(BuiltinType.ExtensionObject, {
      typeId: numericNodeId(ObjectIds.KeyValuePair_Encoding_DefaultBinary),
      body: { key: { namespaceIndex: 1, name: `k${d}`.repeat(width) }, value: inner },
    });
  }
  return inner;
}

function writeMessage(w: ChunkWriter, sealer: FakeSealer, out: FakeOutput, encode: (w: BinaryWriter) => void, maxBody = 1 << 30, maxChunks = 0): void {
  w.begin(sealer, maxBody, maxChunks, out.bufferSize);
  encode(w);
  w.end(true);
}

describe("ChunkWriter", () => {
  it("cuts a message into full chunks whose bodies are exactly the plain encoding, ExtensionObject lengths included", () => {
    const sealer = new FakeSealer(128);
    const out = new FakeOutput(128, 1000);
    const w = new ChunkWriter(out);
    const v = nested(30, 20);
    const encode = (x: BinaryWriter): void => encodeVariant(x, v);
    writeMessage(w, sealer, out, encode);
    w.flush();
    const chunks = out.chunks();
    expect(chunks.length).toBeGreaterThan(20);
    expect(Buffer.concat(chunks.map((c) => c.body))).toEqual(plain(encode));
    expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i + 1));
    // Full, but for the few bytes a primitive that does not fit leaves (at most 15: a Guid).
    expect(chunks.slice(0, -1).map((c) => c.type)).toEqual(chunks.slice(0, -1).map(() => ChunkType.Intermediate));
    expect(Math.min(...chunks.slice(0, -1).map((c) => c.size))).toBeGreaterThanOrEqual(128 - 15);
    expect(Math.max(...chunks.map((c) => c.size))).toBe(128);
    expect(chunks[chunks.length - 1].type).toBe(ChunkType.Final);
    // And it decodes back to the value.
    expect(decodeVariant(new BinaryReader(Buffer.concat(chunks.map((c) => c.body))))).toEqual(v);
    expect(out.free + out.sent.length).toBe(1000);
  });

  it("keeps chunks unsealed while a length is open and sends them in order once it is patched", () => {
    const sealer = new FakeSealer(64);
    const out = new FakeOutput(64, 100);
    const w = new ChunkWriter(out);
    w.begin(sealer, 1 << 20, 0, 64);
    const at = w.mark();
    w.writeInt32(0);
    for (let i = 0; i < 100; i++) w.writeUInt32(i);
    // 404 bytes written, 12 chunks' worth: none sent while the length is open.
    expect(out.sent.length).toBe(0);
    expect(sealer.seq).toBe(1);
    w.patchInt32(at, w.offset() - at - 4);
    // Patched: everything before the current chunk is sealed (and handed on as buffers fill).
    expect(sealer.seq).toBeGreaterThan(10);
    w.end(true);
    w.flush();
    const body = Buffer.concat(out.chunks().map((c) => c.body));
    expect(body.readInt32LE(0)).toBe(400);
    expect(body.readUInt32LE(4 + 4 * 99)).toBe(99);
  });

  it("copies out what was written since an open mark, across chunks (a message the retransmission queue keeps)", () => {
    const sealer = new FakeSealer(64);
    const out = new FakeOutput(64, 100);
    const w = new ChunkWriter(out);
    w.begin(sealer, 1 << 20, 0, 64);
    w.writeUInt32(0xabcdef);
    const start = w.mark();
    const lengthAt = w.mark();
    w.writeInt32(0);
    for (let i = 0; i < 60; i++) w.writeUInt16(i);
    w.patchInt32(lengthAt, 120);
    const kept = w.copyFrom(start);
    w.unmark();
    w.end(true);
    w.flush();
    const body = Buffer.concat(out.chunks().map((c) => c.body));
    expect(kept).toEqual(body.subarray(4));
    expect(kept.readInt32LE(0)).toBe(120);
    expect(kept.length).toBe(124);
    // The base writer does the same over its one buffer.
    const p = new BinaryWriter();
    p.writeUInt32(1);
    const m = p.mark();
    p.writeString("abc");
    expect(p.copyFrom(m)).toEqual(Buffer.from([3, 0, 0, 0, 0x61, 0x62, 0x63]));
  });

  it("splits long strings (multi-byte characters whole), byte strings and raw bytes across chunks with one copy", () => {
    const sealer = new FakeSealer(100);
    const out = new FakeOutput(100, 1000);
    const w = new ChunkWriter(out);
    const text = "Grüße aus 東京 — 🌍🌏 ".repeat(40);
    const bytes = Buffer.from(Array.from({ length: 3000 }, (_, i) => i & 0xff));
    const encode = (x: BinaryWriter): void => {
      x.writeString(text);
      x.writeByteString(bytes);
      x.writeBytes(bytes);
      x.writeString("short");
    };
    writeMessage(w, sealer, out, encode);
    w.flush();
    const body = Buffer.concat(out.chunks().map((c) => c.body));
    expect(body).toEqual(plain(encode));
    const r = new BinaryReader(body);
    expect(r.readString()).toBe(text);
  });

  it("lays small messages back to back in one buffer and moves a message that outgrows the room left once, to a fresh one", () => {
    const sealer = new FakeSealer(512);
    const out = new FakeOutput(512, 10);
    const w = new ChunkWriter(out);
    writeMessage(w, sealer, out, (x) => x.writeBytes(Buffer.alloc(10, 1)));
    writeMessage(w, sealer, out, (x) => x.writeBytes(Buffer.alloc(20, 2)));
    // A message of 2000 bytes starting after those two: its chunks are full nonetheless.
    writeMessage(w, sealer, out, (x) => x.writeBytes(Buffer.alloc(2000, 3)));
    w.flush();
    expect(out.sent[0]).toMatchObject({ length: 42 + 52, responses: 2 });
    const chunks = out.chunks();
    expect(chunks.map((c) => [c.type, c.size])).toEqual([
      [ChunkType.Final, 42],
      [ChunkType.Final, 52],
      [ChunkType.Intermediate, 512],
      [ChunkType.Intermediate, 512],
      [ChunkType.Intermediate, 512],
      [ChunkType.Intermediate, 512],
      [ChunkType.Final, 2000 - 4 * 480 + 32],
    ]);
    expect(chunks.map((c) => c.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("a failure before any chunk is sealed leaves nothing behind; after, an abort chunk ends the message", () => {
    const sealer = new FakeSealer(64);
    const out = new FakeOutput(64, 100);
    const w = new ChunkWriter(out);
    w.begin(sealer, 1 << 20, 0, 64);
    w.writeUInt32(1);
    expect(w.abort(StatusCodes.BadEncodingError, "x", true)).toBe(true);
    w.flush();
    expect(out.sent.length).toBe(0);
    expect(out.free).toBe(100);
    expect(sealer.seq).toBe(1);

    w.begin(sealer, 1 << 20, 0, 64);
    for (let i = 0; i < 30; i++) w.writeUInt32(i); // 120 bytes: three chunks of 32 sealed
    expect(w.abort(StatusCodes.BadResponseTooLarge, "BadResponseTooLarge", true)).toBe(false);
    w.flush();
    const chunks = out.chunks();
    expect(chunks.map((c) => c.type)).toEqual([ChunkType.Intermediate, ChunkType.Intermediate, ChunkType.Intermediate, ChunkType.Abort]);
    const abort = new BinaryReader(chunks[3].body);
    expect(abort.readUInt32()).toBe(StatusCodes.BadResponseTooLarge);
    expect(abort.readString()).toBe("BadResponseTooLarge");
    expect(out.sent.reduce((n, s) => n + s.responses, 0)).toBe(1);
  });

  it("an open length that never closes: the chunks kept for it are dropped on abort, unsent", () => {
    const sealer = new FakeSealer(64);
    const out = new FakeOutput(64, 100);
    const w = new ChunkWriter(out);
    w.begin(sealer, 1 << 20, 0, 64);
    w.mark();
    for (let i = 0; i < 50; i++) w.writeUInt32(i);
    expect(() => w.end(true)).toThrow(/mark was never patched/);
    expect(w.abort(StatusCodes.BadEncodingError, "", true)).toBe(true);
    w.flush();
    expect(out.sent.length).toBe(0);
    expect(out.free).toBe(100);
  });

  it("the client's limits and the budget: BadResponseTooLarge, BadTcpNotEnoughResources", () => {
    const sealer = new FakeSealer(64);
    const w = new ChunkWriter(new FakeOutput(64, 100));
    w.begin(sealer, 100, 0, 64);
    // 120 bytes against 100: found at the end (the last chunk ends past it) ...
    expect(() => {
      for (let i = 0; i < 30; i++) w.writeUInt32(i);
      w.end(true);
    }).toThrow(expect.objectContaining({ statusCode: StatusCodes.BadResponseTooLarge }));
    w.abort(StatusCodes.BadResponseTooLarge, "", true);
    // ... or as soon as a chunk would start past it.
    w.begin(sealer, 100, 0, 64);
    expect(() => {
      for (let i = 0; i < 40; i++) w.writeUInt32(i);
    }).toThrow(expect.objectContaining({ statusCode: StatusCodes.BadResponseTooLarge }));
    w.abort(StatusCodes.BadResponseTooLarge, "", true);
    w.begin(sealer, 1 << 20, 3, 64);
    expect(() => {
      for (let i = 0; i < 30; i++) w.writeUInt32(i);
    }).toThrow(expect.objectContaining({ statusCode: StatusCodes.BadResponseTooLarge, message: expect.stringMatching(/3 chunks/) }));
    w.abort(StatusCodes.BadResponseTooLarge, "", true);

    // One buffer of two chunks, and nothing more in the budget.
    const few = new FakeOutput(128, 1);
    const v = new ChunkWriter(few);
    v.begin(sealer, 1 << 20, 0, 128);
    expect(() => {
      for (let i = 0; i < 30; i++) v.writeUInt32(i);
    }).toThrow(expect.objectContaining({ statusCode: StatusCodes.BadTcpNotEnoughResources }));
    // Two chunks were sealed; no buffer is left for the abort chunk: the caller must end the connection.
    expect(() => v.abort(StatusCodes.BadTcpNotEnoughResources, "", true)).toThrow(expect.objectContaining({ statusCode: StatusCodes.BadTcpNotEnoughResources }));
    expect(v.active).toBe(false);
    const empty = new ChunkWriter(new FakeOutput(64, 0));
    expect(() => empty.begin(sealer, 1 << 20, 0, 64)).toThrow(expect.objectContaining({ statusCode: StatusCodes.BadTcpNotEnoughResources }));
    expect(empty.active).toBe(false);
  });

  it("an array of 5,000 Variants, a pre-encoded body as one write: the same bytes as the plain writer", () => {
    const sealer = new FakeSealer(8192);
    const out = new FakeOutput(8192, 100);
    const w = new ChunkWriter(out);
    const arr: Variant = { dataType: BuiltinType.Variant, arrayType: VariantArrayType.Array, value: Array.from({ length: 5000 }, (_, i) => scalar(BuiltinType.Double, i / 3)) };
    const pre = plain((x) => encodeVariant(x, arr));
    writeMessage(w, sealer, out, (x) => {
      x.writeUInt32(7);
      x.writeBytes(pre);
    });
    w.flush();
    const body = Buffer.concat(out.chunks().map((c) => c.body));
    expect(body.readUInt32LE(0)).toBe(7);
    expect(body.subarray(4)).toEqual(pre);
  });
});
