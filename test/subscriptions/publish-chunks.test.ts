// The Publish path into a connection's ChunkWriter (subscription.ts writeResponse): a
// subscription that takes a request writes its PublishResponse straight into small chunks of a
// little pool, as SecureChannel.sendResponse does. What the chunks carry is the PublishResponse
// the generated decoder reads, the retransmission queue keeps the very bytes that were sent, and a
// response that cannot be completed (no buffer left, mid-message or for its end) loses nothing:
// its notifications come with the next Publish, under the sequence number it did not use.
import { describe, expect, it } from "vitest";
import { UaStatusError } from "../../src/ua/errors.js";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import type { BinaryWriter } from "../../src/ua/binary-writer.js";
import { encodeNodeId, decodeNodeId } from "../../src/ua/builtin-codec.js";
import { numericNodeId } from "../../src/ua/builtins.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes, statusCodeName } from "../../src/ua/generated/status-codes.js";
import { decodePublishResponse, type PublishResponse } from "../../src/ua/generated/types.js";
import { ChunkWriter } from "../../src/transport/chunk-writer.js";
import { ChunkType } from "../../src/transport/ua-tcp.js";
import type { PublishChannel } from "../../src/subscriptions/publisher.js";
import { FakeOutput, FakeSealer } from "../transport/fake-chunks.js";
import { Fixture, changes, decodeMessage } from "./fixture.js";

const RESPONSE_ID = numericNodeId(ObjectIds.PublishResponse_Encoding_DefaultBinary);

/** What one response on the chunk channel came to. */
interface Sent {
  kind: "whole" | "aborted" | "refused" | "cut";
  response?: PublishResponse;
  abortStatus?: number;
  status?: number;
}

/** A PublishChannel over a ChunkWriter with `chunk`-byte chunks in `buffers` pool buffers of `bufferSize`. */
class ChunkChannel implements PublishChannel {
  isOpen = true;
  readonly sendBusy = false;
  readonly sealer: FakeSealer;
  out: FakeOutput;
  w: ChunkWriter;
  readonly log: Sent[] = [];

  constructor(
    readonly chunk: number,
    readonly bufferSize: number,
    buffers: number,
  ) {
    this.sealer = new FakeSealer(chunk);
    this.out = new FakeOutput(bufferSize, buffers);
    this.w = new ChunkWriter(this.out);
  }

  /** A fresh pool of `buffers` (what was sent so far is forgotten). */
  refill(buffers: number): void {
    this.out = new FakeOutput(this.bufferSize, buffers);
    this.w = new ChunkWriter(this.out);
  }

  whenSendFree(fn: () => void): void {
    setImmediate(fn);
  }

  // As SecureChannel.sendResponse: nothing sent -> throw; chunks out -> abort chunk, false.
  sendResponse<T>(_requestId: number, _encodingId: number, encode: (w: BinaryWriter, v: T) => void, value: T): boolean {
    const w = this.w;
    const before = this.out.sent.length;
    w.begin(this.sealer, 1 << 24, 0, this.out.bufferSize);
    try {
      encodeNodeId(w, RESPONSE_ID);
      encode(w, value);
      w.end(true);
    } catch (err) {
      const status = err instanceof UaStatusError ? err.statusCode : StatusCodes.BadEncodingError;
      let nothingSent: boolean;
      try {
        nothingSent = w.abort(status, statusCodeName(status), true);
      } catch {
        // Not even the abort chunk fits: the real channel closes the connection.
        this.log.push({ kind: "cut", status });
        this.isOpen = false;
        return false;
      }
      if (nothingSent) {
        this.log.push({ kind: "refused", status });
        throw err;
      }
      w.flush();
      const chunks = this.chunksSince(before);
      const last = chunks[chunks.length - 1];
      expect(last.type).toBe(ChunkType.Abort);
      expect(chunks.slice(0, -1).every((c) => c.type === ChunkType.Intermediate)).toBe(true);
      this.log.push({ kind: "aborted", abortStatus: new BinaryReader(last.body).readUInt32() });
      return false;
    }
    w.flush();
    const chunks = this.chunksSince(before);
    expect(chunks.map((c) => c.type)).toEqual([...Array(chunks.length - 1).fill(ChunkType.Intermediate), ChunkType.Final]);
    const r = new BinaryReader(Buffer.concat(chunks.map((c) => c.body)));
    expect(decodeNodeId(r)).toEqual(RESPONSE_ID);
    const response = decodePublishResponse(r);
    expect(r.pos).toBe(r.end);
    this.log.push({ kind: "whole", response });
    return true;
  }

  chunksSince(sentIndex: number): ReturnType<FakeOutput["chunks"]> {
    const all = this.out.sent;
    const saved = all.splice(0, sentIndex);
    try {
      return this.out.chunks();
    } finally {
      all.unshift(...saved);
    }
  }
}

/** `n` variables monitored in one subscription (queue 1), each set to 1000 + its index. */
function manyItems(f: Fixture, n: number, interval = 100): { sub: number; session: ReturnType<Fixture["session"]> } {
  const session = f.session();
  const sub = f.subscribe(session, { interval, keepAlive: 100, lifetime: 1000 });
  for (let i = 0; i < n; i++) {
    const v = f.variable(`v${i}`, { value: 1000 + i });
    f.monitor(session, sub, f.nodeId(`v${i}`), { clientHandle: i, samplingInterval: interval });
    void v;
  }
  return { sub, session };
}

describe("Publish into a ChunkWriter", () => {
  it("writes 5,000 notifications across hundreds of chunks as the PublishResponse the decoder reads, and keeps the very bytes sent for Republish", async () => {
    const f = await Fixture.start();
    const { sub, session } = manyItems(f, 5000);
    const ch = new ChunkChannel(128, 1024, 10_000);
    f.publish(session, [], 0, ch);
    await f.advance(100);
    const whole = ch.log.filter((s) => s.kind === "whole");
    expect(ch.log.map((s) => s.kind)).toEqual(["whole"]);
    const res = whole[0].response!;
    expect(res.moreNotifications).toBe(false);
    expect(res.availableSequenceNumbers).toEqual([1]);
    const got = changes(res.notificationMessage);
    expect(got.length).toBe(5000);
    expect(got.map(([h, v]) => [h, v])).toEqual([...Array(5000).keys()].map((i) => [i, 1000 + i]));
    expect(ch.sealer.seq).toBeGreaterThan(500);
    // Republish returns the message as it went out.
    expect(decodeMessage(f.engine.republish(session, sub, 1))).toEqual(res.notificationMessage);
    // Every buffer went back or out: none is held by the writer between messages.
    expect(ch.out.free + ch.out.sent.length).toBe(10_000);
  });

  it("splits a set over maxNotificationsPerPublish into messages with moreNotifications, the last without", async () => {
    const f = await Fixture.start({ maxNotificationsPerPublish: 1500 });
    const { session } = manyItems(f, 4000);
    const ch = new ChunkChannel(256, 4096, 10_000);
    for (let i = 0; i < 3; i++) f.publish(session, [], 0, ch);
    await f.advance(100);
    await f.advance(10);
    const r = ch.log.map((s) => s.response!);
    expect(r.map((x) => [x.notificationMessage.sequenceNumber, changes(x.notificationMessage).length, x.moreNotifications])).toEqual([
      [1, 1500, true],
      [2, 1500, true],
      [3, 1000, false],
    ]);
    expect(r[2].availableSequenceNumbers).toEqual([1, 2, 3]);
    expect(r.flatMap((x) => changes(x.notificationMessage).map(([h]) => h))).toEqual([...Array(4000).keys()]);
  });

  it("loses no notification and no sequence number to a response the budget cannot complete, whatever the budget: all or nothing", async () => {
    // Budgets from 1 buffer up: the response is refused (a ServiceFault, nothing sent) or goes
    // whole; after a refusal the next Publish, with buffers enough, carries all 150
    // notifications as message 1. (Were chunks out, an abort chunk would end it: the channel
    // checks that too.)
    const kinds = new Set<string>();
    for (let buffers = 1; buffers <= 48; buffers++) {
      const f = await Fixture.start();
      const { session } = manyItems(f, 150);
      const ch = new ChunkChannel(96, 192, buffers);
      f.publish(session, [], 0, ch);
      await f.advance(100);
      const first = ch.log[0];
      kinds.add(first.kind);
      if (first.kind === "whole") {
        expect(changes(first.response!.notificationMessage).length).toBe(150);
        continue;
      }
      if (first.kind === "refused") expect(f.take().map((a) => a.status)).toEqual([StatusCodes.BadTcpNotEnoughResources]);
      if (first.kind === "aborted") expect(first.abortStatus).toBe(StatusCodes.BadTcpNotEnoughResources);
      const retry = new ChunkChannel(96, 192, 10_000);
      f.publish(session, [], 0, retry);
      await f.advance(100);
      const next = retry.log[0];
      expect(next.kind).toBe("whole");
      expect(next.response!.notificationMessage.sequenceNumber).toBe(1);
      expect(changes(next.response!.notificationMessage).map(([h]) => h)).toEqual([...Array(150).keys()]);
      expect(next.response!.availableSequenceNumbers).toEqual([1]);
    }
    // A Publish is all or nothing: its chunks stay unsealed while the message's lengths are open,
    // so a budget that runs out finds nothing sent yet (a ServiceFault, no abort chunk).
    expect([...kinds].sort()).toEqual(["refused", "whole"]);
  });
});
