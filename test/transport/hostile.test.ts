// Bad input ends only the connection that sent it, with the right StatusCode in an ERR, while a
// healthy client on the same server keeps getting answers.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import type { UaTcpServer } from "../../src/server/listener.js";
import { ChannelClient, frame, hello, msg, open, RawClient, testRequest } from "./raw-client.js";
import { delay, startServer, type TestHandler } from "./test-server.js";

let server: UaTcpServer;
let handler: TestHandler;
let healthy: ChannelClient;
const clients: RawClient[] = [];

const LIMITS = {
  receiveBufferSize: 8192,
  sendBufferSize: 8192,
  maxMessageSize: 32768,
  maxChunkCount: 8,
  helloTimeoutMs: 300,
  incompleteMessageTimeoutMs: 300,
};

beforeAll(async () => {
  ({ server, handler } = await startServer(LIMITS));
  healthy = await ChannelClient.open(server.port);
});

afterAll(async () => {
  healthy.raw.destroy();
  await server.close();
});

afterEach(async () => {
  // The healthy client still gets answers after every bad one.
  expect((await healthy.roundTrip(32)).length).toBe(36);
  for (const c of clients.splice(0)) c.destroy();
});

async function raw(): Promise<RawClient> {
  const c = await RawClient.connect(server.port);
  clients.push(c);
  return c;
}

async function channel(): Promise<ChannelClient> {
  const c = await ChannelClient.open(server.port);
  clients.push(c.raw);
  return c;
}

async function errFor(bytes: Buffer): Promise<number> {
  const c = await raw();
  await c.write(bytes);
  return c.expectErr();
}

function hex(status: number): string {
  return status.toString(16);
}

describe("connection protocol", () => {
  it("first message not HEL", async () => {
    expect(hex(await errFor(open({ sequenceNumber: 1, requestId: 1 })))).toBe(hex(StatusCodes.BadTcpMessageTypeInvalid));
  });

  it("unknown message type first and after HEL", async () => {
    expect(hex(await errFor(frame("XYZ", "F", Buffer.alloc(30))))).toBe(hex(StatusCodes.BadTcpMessageTypeInvalid));
    const c = await raw();
    await c.write(hello());
    expect((await c.next()).type).toBe("ACK");
    await c.write(frame("ABC", "F", Buffer.alloc(30)));
    expect(hex(await c.expectErr())).toBe(hex(StatusCodes.BadTcpMessageTypeInvalid));
  });

  it("a second HEL", async () => {
    const c = await raw();
    await c.write(hello());
    expect((await c.next()).type).toBe("ACK");
    await c.write(hello());
    expect(hex(await c.expectErr())).toBe(hex(StatusCodes.BadTcpMessageTypeInvalid));
  });

  it.each([
    [0, StatusCodes.BadDecodingError],
    [7, StatusCodes.BadDecodingError],
    [8, StatusCodes.BadDecodingError],
    [31, StatusCodes.BadDecodingError],
    [8193, StatusCodes.BadTcpMessageTooLarge],
    [0xffffffff, StatusCodes.BadTcpMessageTooLarge],
  ])("HEL with MessageSize %i", async (size, status) => {
    // Only the header: the size is refused before any body is waited for or buffered.
    expect(hex(await errFor(frame("HEL", "F", Buffer.alloc(0), size)))).toBe(hex(status));
  });

  it.each([
    [0, StatusCodes.BadDecodingError],
    [7, StatusCodes.BadDecodingError],
    [23, StatusCodes.BadDecodingError],
    [8193, StatusCodes.BadTcpMessageTooLarge],
    [0xffffffff, StatusCodes.BadTcpMessageTooLarge],
  ])("MSG with MessageSize %i", async (size, status) => {
    const c = await raw();
    await c.write(hello());
    expect((await c.next()).type).toBe("ACK");
    await c.write(frame("MSG", "F", Buffer.alloc(0), size));
    expect(hex(await c.expectErr())).toBe(hex(status));
  });

  it("a chunk over the negotiated (smaller) receive buffer", async () => {
    const c = await raw();
    await c.write(hello({ sendBufferSize: 8192 }));
    expect((await c.next()).type).toBe("ACK");
    await c.write(frame("MSG", "F", Buffer.alloc(8200)));
    expect(hex(await c.expectErr())).toBe(hex(StatusCodes.BadTcpMessageTooLarge));
  });

  it("invalid chunk types", async () => {
    expect(hex(await errFor(frame("HEL", "C", Buffer.alloc(30))))).toBe(hex(StatusCodes.BadTcpMessageTypeInvalid));
    const c = await raw();
    await c.write(hello());
    expect((await c.next()).type).toBe("ACK");
    await c.write(frame("MSG", "X", Buffer.alloc(30)));
    expect(hex(await c.expectErr())).toBe(hex(StatusCodes.BadTcpMessageTypeInvalid));
  });

  it("HEL with an EndpointUrl over 4096 bytes", async () => {
    expect(hex(await errFor(hello({ endpointUrl: "opc.tcp://x/" + "a".repeat(4100) })))).toBe(hex(StatusCodes.BadTcpEndpointUrlInvalid));
  });

  it("HEL with buffers below 8192", async () => {
    expect(hex(await errFor(hello({ receiveBufferSize: 1024 })))).toBe(hex(StatusCodes.BadCommunicationError));
  });

  it("HEL with a truncated body", async () => {
    // The EndpointUrl length says more bytes than the message has.
    const h = hello();
    h.writeInt32LE(1000, 28);
    expect(hex(await errFor(h))).toBe(hex(StatusCodes.BadDecodingError));
  });

  it("HEL trickling in byte by byte past the HEL timeout (slowloris)", async () => {
    const c = await raw();
    const h = hello();
    let i = 0;
    while (!c.closed && c.frames.length === 0 && i < h.length - 1) {
      await c.write(h.subarray(i, i + 1));
      i++;
      await delay(40);
    }
    expect(hex(await c.expectErr())).toBe(hex(StatusCodes.BadTimeout));
    // Closed at the deadline, before the HEL was complete (the loop counts bytes, not time).
    expect(i).toBeLessThan(h.length - 1);
  });

  it("a silent connection is closed after the HEL timeout", async () => {
    const c = await raw();
    expect(hex(await c.expectErr())).toBe(hex(StatusCodes.BadTimeout));
  });

  it("HEL without OPN is closed after the same timeout; an opened channel is not", async () => {
    const c = await raw();
    await c.write(hello());
    expect((await c.next()).type).toBe("ACK");
    const opened = await channel();
    expect(hex(await c.expectErr())).toBe(hex(StatusCodes.BadTimeout));
    await delay(350);
    expect((await opened.roundTrip(4)).length).toBe(8);
  });
});

describe("secure channel", () => {
  it("MSG before OPN", async () => {
    const c = await raw();
    await c.write(hello());
    expect((await c.next()).type).toBe("ACK");
    await c.write(msg({ channelId: 1, tokenId: 1, sequenceNumber: 1, requestId: 1 }, testRequest(8)));
    expect(hex(await c.expectErr())).toBe(hex(StatusCodes.BadTcpSecureChannelUnknown));
  });

  it("OPN with an unknown policy, a wrong mode, a wrong version", async () => {
    for (const [opts, status] of [
      [{ policyUri: "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256" }, StatusCodes.BadSecurityPolicyRejected],
      [{ securityMode: 3 }, StatusCodes.BadSecurityModeRejected],
      [{ clientProtocolVersion: 7 }, StatusCodes.BadProtocolVersionUnsupported],
      [{ requestType: 1 as const }, StatusCodes.BadTcpSecureChannelUnknown],
    ] as const) {
      const c = await raw();
      await c.write(hello());
      expect((await c.next()).type).toBe("ACK");
      await c.write(open({ sequenceNumber: 1, requestId: 1, ...opts }));
      expect(hex(await c.expectErr())).toBe(hex(status));
    }
  });

  it("wrong channel id and unknown token id", async () => {
    const a = await channel();
    await a.raw.write(msg({ ...a.next(a.requestId++), channelId: a.channelId + 1000 }, testRequest(8)));
    expect(hex(await a.raw.expectErr())).toBe(hex(StatusCodes.BadSecureChannelIdInvalid));
    const b = await channel();
    await b.raw.write(msg({ ...b.next(b.requestId++), tokenId: b.tokenId + 1 }, testRequest(8)));
    expect(hex(await b.raw.expectErr())).toBe(hex(StatusCodes.BadSecureChannelTokenUnknown));
  });

  it("a sequence number gap", async () => {
    const c = await channel();
    await c.roundTrip();
    c.sequenceNumber++;
    await c.send();
    expect(hex(await c.raw.expectErr())).toBe(hex(StatusCodes.BadSequenceNumberInvalid));
  });

  it("a replayed sequence number", async () => {
    const c = await channel();
    const id = c.requestId++;
    const chunk = msg(c.next(id), testRequest(8));
    await c.raw.write(chunk);
    expect((await c.response()).requestId).toBe(id);
    await c.raw.write(chunk);
    expect(hex(await c.raw.expectErr())).toBe(hex(StatusCodes.BadSequenceNumberInvalid));
  });

  it("sequence numbers wrap only above UInt32.MaxValue - 1024, to below 1024", async () => {
    const c = await ChannelClient.open(server.port, {}, { sequenceNumber: 0xfffffff0 });
    clients.push(c.raw);
    for (let i = 0; i < 20; i++) {
      await c.roundTrip();
      if (c.sequenceNumber > 0xffffffff) c.sequenceNumber = 0;
    }
    expect(c.sequenceNumber).toBeLessThan(1024);

    const early = await ChannelClient.open(server.port, {}, { sequenceNumber: 5000 });
    clients.push(early.raw);
    early.sequenceNumber = 3;
    await early.send();
    expect(hex(await early.raw.expectErr())).toBe(hex(StatusCodes.BadSequenceNumberInvalid));
  });

  it("too many intermediate chunks", async () => {
    const c = await channel();
    const id = c.requestId++;
    await c.raw.write(msg(c.next(id, "C"), testRequest(8)));
    for (let i = 0; i < 8; i++) await c.raw.write(msg(c.next(id, "C"), Buffer.alloc(10)));
    expect(hex(await c.raw.expectErr())).toBe(hex(StatusCodes.BadRequestTooLarge));
  });

  it("a message over the max message size", async () => {
    const c = await channel();
    const id = c.requestId++;
    await c.raw.write(msg(c.next(id, "C"), testRequest(8, 8000)));
    for (let i = 0; i < 4; i++) await c.raw.write(msg(c.next(id, "C"), Buffer.alloc(8000)));
    expect(hex(await c.raw.expectErr())).toBe(hex(StatusCodes.BadRequestTooLarge));
  });

  it("a multi-chunk message is reassembled; an aborted one is dropped and the channel goes on", async () => {
    const c = await channel();
    const id = c.requestId++;
    const req = testRequest(300, 20000);
    for (let off = 0; off < req.length; off += 8000) {
      const last = off + 8000 >= req.length;
      await c.raw.write(msg(c.next(id, last ? "F" : "C"), req.subarray(off, off + 8000)));
    }
    const r = await c.response();
    expect(r.requestId).toBe(id);
    expect(r.body.length).toBe(304);

    const before = handler.requests;
    const aborted = c.requestId++;
    await c.raw.write(msg(c.next(aborted, "C"), testRequest(8, 100)));
    await c.raw.write(msg(c.next(aborted, "C"), Buffer.alloc(100)));
    const reason = Buffer.alloc(8);
    reason.writeUInt32LE(StatusCodes.BadRequestTooLarge, 0);
    reason.writeInt32LE(-1, 4);
    await c.raw.write(msg(c.next(aborted, "A"), reason));
    expect((await c.roundTrip(40)).length).toBe(44);
    expect(handler.requests).toBe(before + 1);
  });

  it("an incomplete message past its deadline", async () => {
    const c = await channel();
    await c.raw.write(msg(c.next(c.requestId++, "C"), testRequest(8)));
    expect(hex(await c.raw.expectErr(1500))).toBe(hex(StatusCodes.BadTimeout));
  });

  it("a chunk that stops half way past its deadline", async () => {
    const c = await channel();
    const chunk = msg(c.next(c.requestId++), testRequest(8, 100));
    await c.raw.write(chunk.subarray(0, 50));
    expect(hex(await c.raw.expectErr(1500))).toBe(hex(StatusCodes.BadTimeout));
  });

  it("an exception in the handler ends only that channel", async () => {
    const c = await channel();
    // Not a test request: the handler throws BadDecodingError.
    await c.raw.write(msg(c.next(c.requestId++), Buffer.from([0, 0, 0, 0, 0, 0, 0, 0])));
    expect(hex(await c.raw.expectErr())).toBe(hex(StatusCodes.BadDecodingError));
  });

  it("random garbage after the handshake never crashes the server", async () => {
    let seed = 12345;
    const rand = (): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    for (let n = 0; n < 20; n++) {
      const c = await channel();
      const junk = Buffer.alloc(16 + Math.floor(rand() * 200));
      for (let i = 0; i < junk.length; i++) junk[i] = Math.floor(rand() * 256);
      // Keep a plausible header half the time so the deeper layers get the garbage.
      if (n % 2 === 0) {
        junk.write("MSGF", 0, "latin1");
        junk.writeUInt32LE(junk.length, 4);
      }
      await c.raw.write(junk);
      const closed = await c.raw.waitClosed(1500);
      expect(closed || c.raw.frames.length > 0).toBe(true);
      c.raw.destroy();
    }
  });
});
