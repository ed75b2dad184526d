// A large response leaves over several turns: the ChunkWriter keeps lent bytes by reference and
// lays them out in slices (feed), the OutputSlicer runs one slice per turn it is given and keeps
// later sends behind the message. The turns here are handed out by hand (a pacer that queues
// them), so the counts are exact: no clock, no timing.
import { describe, expect, it } from "vitest";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { ChunkWriter, LEND_MIN } from "../../src/transport/chunk-writer.js";
import { OutputSlicer, SLICE_BYTES, type OutputPacer, type SlicedMessage, type SlicerOwner } from "../../src/transport/output-slicer.js";
import { ChunkType } from "../../src/transport/ua-tcp.js";
import { FakeOutput, FakeSealer } from "./fake-chunks.js";

function bytes(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

/** A response-like message: a header, two large byte strings, small fields between and after. */
function encodeBig(w: BinaryWriter, a: Buffer, b: Buffer): void {
  w.writeUInt32(0xfeedf00d);
  w.writeString("before");
  w.writeByteString(a);
  w.writeInt32(7);
  w.writeString("between");
  w.writeByteString(b);
  for (let i = 0; i < 100; i++) w.writeDouble(i / 3);
  w.writeString("after");
}

function plain(encode: (w: BinaryWriter) => void): Buffer {
  const w = new BinaryWriter();
  encode(w);
  return Buffer.from(w.view());
}

/** Byte for byte (toEqual on buffers of 600 KB takes seconds). */
function same(got: Buffer[], want: Buffer[]): boolean {
  return got.length === want.length && got.every((g, i) => g.equals(want[i]));
}

/** Turns of the loop handed out one at a time by the test. */
class ManualPacer implements OutputPacer {
  readonly turns: (() => void)[] = [];
  now(): number {
    return 0;
  }
  end(): number {
    // Never reached by the clock: each slice ends at SLICE_BYTES.
    return 1;
  }
  later<A>(fn: (arg: A) => void, arg: A): void {
    this.turns.push(() => fn(arg));
  }
  /** Runs the turns due until none is left; how many ran. */
  runAll(): number {
    let n = 0;
    while (this.turns.length > 0) {
      this.turns.shift()!();
      n++;
    }
    return n;
  }
}

class Owner implements SlicerOwner {
  done = 0;
  pumps = 0;
  closed: number | undefined;
  messageDone(): void {
    this.done++;
  }
  pump(): void {
    this.pumps++;
  }
  close(status: number): void {
    this.closed = status;
  }
}

class Message implements SlicedMessage {
  outcome: boolean | undefined;
  refusedWith: unknown;
  finished(whole: boolean): void {
    expect(this.outcome).toBeUndefined();
    this.outcome = whole;
  }
  refused(err: unknown): void {
    this.refusedWith = err;
  }
}

/** The bodies of the messages sent, each one concatenated from its chunks, and the chunk types. */
function messages(out: FakeOutput): { bodies: Buffer[]; seqs: number[]; types: number[] } {
  const chunks = out.chunks();
  const bodies: Buffer[] = [];
  let cur: Buffer[] = [];
  for (const c of chunks) {
    cur.push(c.body);
    if (c.type !== ChunkType.Intermediate) {
      bodies.push(Buffer.concat(cur));
      cur = [];
    }
  }
  return { bodies, seqs: chunks.map((c) => c.seq), types: chunks.map((c) => c.type) };
}

describe("lent bytes and the output slicer", () => {
  const a = bytes(600_000, 1);
  const b = bytes(3 * LEND_MIN, 2);
  const encode = (w: BinaryWriter): void => encodeBig(w, a, b);

  it("keeps large byte strings by reference and lays the message out in slices with a turn between them, bytes as a plain encoding", () => {
    const sealer = new FakeSealer(8192);
    const out = new FakeOutput(8192, 1000);
    const w = new ChunkWriter(out);
    const pacer = new ManualPacer();
    const owner = new Owner();
    const slicer = new OutputSlicer(w, owner, pacer);
    w.begin(sealer, 1 << 30, 0, out.bufferSize, true);
    encode(w);
    // The encode copied none of the lent bytes: a chunk or two of small fields at most.
    expect(out.sent.length).toBeLessThan(2);
    expect(w.end(true)).toBe(false);
    expect(w.pending).toBe(true);
    const m = new Message();
    slicer.start(m);
    // The first slice ran at once and ended at SLICE_BYTES; the rest waits for turns.
    expect(m.outcome).toBeUndefined();
    expect(slicer.busy).toBe(true);
    expect(pacer.turns.length).toBe(1);
    const turns = pacer.runAll();
    const expectedSlices = Math.ceil((a.length + b.length) / SLICE_BYTES);
    expect(slicer.slices).toBeGreaterThanOrEqual(expectedSlices);
    expect(turns).toBe(slicer.slices - 1);
    // Each slice handed its buffers on to the socket before the next turn.
    expect(owner.pumps).toBe(turns);
    expect(m.outcome).toBe(true);
    expect(owner.done).toBe(1);
    expect(w.active).toBe(false);
    w.flush();
    const sent = messages(out);
    expect(same(sent.bodies, [plain(encode)])).toBe(true);
    expect(sent.seqs).toEqual(sent.seqs.map((_, i) => i + 1));
    expect(out.free + out.sent.length).toBe(1000);
  });

  it("keeps a send that comes meanwhile behind the message, and it may slice in its turn", () => {
    const sealer = new FakeSealer(8192);
    const out = new FakeOutput(8192, 1000);
    const w = new ChunkWriter(out);
    const pacer = new ManualPacer();
    const owner = new Owner();
    const slicer = new OutputSlicer(w, owner, pacer);
    const order: string[] = [];
    const small = (x: BinaryWriter): void => {
      x.writeString("small");
      x.writeUInt32(42);
    };
    const begin = (name: string, enc: (x: BinaryWriter) => void): void => {
      order.push(`${name} begins`);
      w.begin(sealer, 1 << 30, 0, out.bufferSize, true);
      enc(w);
      if (w.end(true)) {
        order.push(`${name} whole`);
        return;
      }
      const m = new Message();
      m.finished = (whole: boolean) => void order.push(`${name} ${whole ? "out" : "cut"}`);
      slicer.start(m);
    };
    begin("first", encode);
    expect(slicer.busy).toBe(true);
    for (const [name, enc] of [["second", small], ["third", encode], ["fourth", small]] as const) {
      slicer.enqueue({ send: () => begin(name, enc), drop: () => order.push(`${name} dropped`) });
    }
    expect(slicer.queued).toBe(3);
    pacer.runAll();
    expect(order).toEqual(["first begins", "first out", "second begins", "second whole", "third begins", "third out", "fourth begins", "fourth whole"]);
    w.flush();
    const sent = messages(out);
    expect(same(sent.bodies, [plain(encode), plain(small), plain(encode), plain(small)])).toBe(true);
    expect(sent.seqs).toEqual(sent.seqs.map((_, i) => i + 1));
    expect(owner.done).toBe(2);
  });

  it("settle() lays out what is left and runs what waits, at once, in order", () => {
    const sealer = new FakeSealer(8192);
    const out = new FakeOutput(8192, 1000);
    const w = new ChunkWriter(out);
    const pacer = new ManualPacer();
    const slicer = new OutputSlicer(w, new Owner(), pacer);
    w.begin(sealer, 1 << 30, 0, out.bufferSize, true);
    encode(w);
    expect(w.end(true)).toBe(false);
    const m = new Message();
    slicer.start(m);
    let ran = false;
    slicer.enqueue({
      send: () => {
        ran = true;
      },
      drop: () => undefined,
    });
    slicer.settle();
    expect(m.outcome).toBe(true);
    expect(ran).toBe(true);
    expect(slicer.busy).toBe(false);
    // The turn asked for before comes and finds nothing to do.
    expect(pacer.runAll()).toBe(1);
    w.flush();
    expect(same(messages(out).bodies, [plain(encode)])).toBe(true);
  });

  it("a channel closing midway: the message is over (abort chunk after what was sealed) and what waits is dropped", () => {
    const sealer = new FakeSealer(8192);
    const out = new FakeOutput(8192, 1000);
    const w = new ChunkWriter(out);
    const pacer = new ManualPacer();
    const slicer = new OutputSlicer(w, new Owner(), pacer);
    w.begin(sealer, 1 << 30, 0, out.bufferSize, true);
    encode(w);
    w.end(true);
    const m = new Message();
    slicer.start(m);
    let dropped = 0;
    slicer.enqueue({ send: () => expect.unreachable(), drop: () => dropped++ });
    // As TcpConnection.close does: the slicer forgets, the writer ends the message.
    slicer.closing();
    expect(w.abort(StatusCodes.BadConnectionClosed, "closed", true)).toBe(false);
    expect(m.outcome).toBe(false);
    expect(dropped).toBe(1);
    pacer.runAll();
    w.flush();
    const sent = messages(out);
    expect(sent.types[sent.types.length - 1]).toBe(ChunkType.Abort);
    expect(sent.types.slice(0, -1).every((t) => t === ChunkType.Intermediate)).toBe(true);
    expect(sent.seqs).toEqual(sent.seqs.map((_, i) => i + 1));
    expect(out.free + out.sent.length).toBe(1000);
  });

  it("no buffer for a later slice and none for an abort chunk: the message is over and the channel ends", () => {
    const sealer = new FakeSealer(8192);
    // Enough for the first slice and a little more, not for the whole message; none comes back.
    const out = new FakeOutput(8192, Math.ceil(SLICE_BYTES / 8192) + 4);
    const w = new ChunkWriter(out);
    const pacer = new ManualPacer();
    const owner = new Owner();
    const slicer = new OutputSlicer(w, owner, pacer);
    w.begin(sealer, 1 << 30, 0, out.bufferSize, true);
    encode(w);
    w.end(true);
    const m = new Message();
    slicer.start(m);
    expect(owner.closed).toBeUndefined();
    pacer.runAll();
    expect(m.outcome).toBe(false);
    expect(m.refusedWith).toBeUndefined();
    expect(owner.closed).toBe(StatusCodes.BadTcpNotEnoughResources);
    expect(w.active).toBe(false);
    expect(slicer.busy).toBe(false);
  });

  it("a mark taken after lent bytes lays them out at once: the message is written as without lending", () => {
    const sealer = new FakeSealer(8192);
    const out = new FakeOutput(8192, 1000);
    const w = new ChunkWriter(out);
    const withMark = (x: BinaryWriter): void => {
      x.writeByteString(a);
      const at = x.mark();
      x.writeInt32(0);
      x.writeString("inside");
      x.patchInt32(at, x.offset() - at - 4);
      x.writeByteString(b);
    };
    w.begin(sealer, 1 << 30, 0, out.bufferSize, true);
    withMark(w);
    // The second byte string was lent again after the mark was patched.
    expect(w.end(true)).toBe(false);
    expect(w.feed(Infinity, () => 0)).toBe(true);
    w.flush();
    expect(same(messages(out).bodies, [plain(withMark)])).toBe(true);
  });

  it("a message over the client's limit is refused at end(), nothing of the lent part sent", () => {
    const sealer = new FakeSealer(8192);
    const out = new FakeOutput(8192, 1000);
    const w = new ChunkWriter(out);
    w.begin(sealer, 100_000, 0, out.bufferSize, true);
    encode(w);
    expect(() => w.end(true)).toThrow(expect.objectContaining({ statusCode: StatusCodes.BadResponseTooLarge }));
    expect(w.abort(StatusCodes.BadResponseTooLarge, "too large", true)).toBe(true);
    w.flush();
    expect(out.sent.length).toBe(0);
    expect(out.free).toBe(1000);
  });
});
