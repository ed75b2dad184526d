// A ChunkSealer and a ChunkOutput for tests of what is written into a ChunkWriter
// (chunk-writer.test.ts, the Publish path): small chunks with a fake 8-byte signature that the
// parser checks, and a little pool whose buffers can run out.
import { expect } from "vitest";
import type { ChunkOutput, ChunkSealer } from "../../src/transport/chunk-writer.js";

const HEADER = 24;
const TRAILER = 8;

/** A sealer like the secure channel's with a fake 8-byte signature: the sum of the chunk's bytes. */
export class FakeSealer implements ChunkSealer {
  readonly bodyOffset = HEADER;
  seq = 1;
  constructor(private readonly chunkSize: number) {}
  maxBodyIn(room: number): number {
    return Math.min(room, this.chunkSize) - HEADER - TRAILER;
  }
  wireLength(bodyLength: number): number {
    return HEADER + bodyLength + TRAILER;
  }
  seal(buf: Buffer, chunkStart: number, bodyEnd: number, chunkType: number): number {
    const size = bodyEnd + TRAILER - chunkStart;
    buf.write("MSG", chunkStart, "latin1");
    buf[chunkStart + 3] = chunkType;
    buf.writeUInt32LE(size, chunkStart + 4);
    buf.writeUInt32LE(this.seq++, chunkStart + 16);
    let sum = 0;
    for (let i = chunkStart; i < bodyEnd; i++) sum = (sum + buf[i]) >>> 0;
    buf.writeUInt32LE(sum, bodyEnd);
    buf.writeUInt32LE(0x5ea1ed, bodyEnd + 4);
    return size;
  }
}

/** Buffers from a little pool, and what was sent, parsed back into chunks. */
export class FakeOutput implements ChunkOutput {
  free: number;
  readonly sent: { buf: Buffer; length: number; responses: number }[] = [];
  dropped = 0;
  constructor(
    readonly bufferSize: number,
    buffers: number,
  ) {
    this.free = buffers;
  }
  takeBuffer(): Buffer | undefined {
    if (this.free === 0) return undefined;
    this.free--;
    return Buffer.alloc(this.bufferSize, 0xee);
  }
  dropBuffer(): void {
    this.free++;
    this.dropped++;
  }
  sendBuffer(buf: Buffer, length: number, responses: number): void {
    this.sent.push({ buf, length, responses });
  }
  chunks(): { type: number; seq: number; body: Buffer; size: number }[] {
    const out = [];
    for (const { buf, length } of this.sent) {
      let p = 0;
      while (p < length) {
        expect(buf.toString("latin1", p, p + 3)).toBe("MSG");
        const size = buf.readUInt32LE(p + 4);
        const bodyEnd = p + size - TRAILER;
        let sum = 0;
        for (let i = p; i < bodyEnd; i++) sum = (sum + buf[i]) >>> 0;
        expect(buf.readUInt32LE(bodyEnd)).toBe(sum);
        out.push({ type: buf[p + 3], seq: buf.readUInt32LE(p + 16), body: Buffer.from(buf.subarray(p + HEADER, bodyEnd)), size });
        p += size;
      }
      expect(p).toBe(length);
    }
    return out;
  }
}

