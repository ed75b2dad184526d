// Property-based fuzzing of the whole message path of the real gateway on loopback: HEL, OPN
// and MSG frames captured from a node-opcua-client session (through a recording proxy) are
// mutated and sent on fresh connections. Each must end in a response, an ERR or a closed
// connection (never a hang or a crash), no response may carry a stack trace or a path, and a
// healthy session on the same server keeps being served after every case.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BinaryReader } from "../../src/ua/binary-reader.js";
import { decodeNodeId } from "../../src/ua/builtin-codec.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { BinaryWriter } from "../../src/ua/binary-writer.js";
import { encodeNodeId, structureByEncodingId } from "../../src/ua/builtin-codec.js";
import { numericNodeId } from "../../src/ua/builtins.js";
import { structureInfos } from "../../src/ua/generated/structure-info.js";
import { SERVICES } from "../../src/server/services.js";
import { header } from "../server/service-client.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { ServiceClient } from "../server/service-client.js";
import { msg, parseErr, RawClient, type Frame } from "../transport/raw-client.js";
import { fuzzRuns, fuzzSeed, fuzzTimeout, mutate, mutationsArb, structureArb } from "./arbitraries.js";
import { captureClientSession, startRecordingProxy, type CapturedFrame } from "./capture.js";
import { Healthy, leakIn, rssMiB, withToken } from "./helpers.js";

let gw: TestGateway;
let healthy: Healthy;
let frames: CapturedFrame[];
let rssBefore: number;

beforeAll(async () => {
  gw = await startGateway(
    "limits:\n  maxSessions: 1000\n  minSessionTimeout: 1s\ntransport:\n  helloTimeout: 500ms\n  incompleteMessageTimeout: 500ms\n",
  );
  const proxy = await startRecordingProxy(gw.server.port);
  try {
    await captureClientSession(proxy.port);
  } finally {
    await proxy.close();
  }
  frames = proxy.frames();
  healthy = await Healthy.open(gw.server.port);
  rssBefore = rssMiB();
}, 60_000);

afterAll(async () => {
  healthy?.close();
  await gw?.stop();
});

function requestType(body: Buffer): number {
  const id = decodeNodeId(new BinaryReader(body));
  return typeof id.value === "number" ? id.value : -1;
}

/** Waits for the server's answer: a frame, or the connection closing. Undefined: neither in time. */
async function outcome(c: RawClient, timeoutMs = 3000): Promise<Frame | "closed" | undefined> {
  try {
    return await c.next(timeoutMs);
  } catch {
    return c.closed ? "closed" : undefined;
  }
}

/** A frame's bytes are complete enough that the server must answer or close (not wait for more). */
function complete(b: Buffer): boolean {
  return b.length >= 8 && b.readUInt32LE(4) <= b.length;
}

function checkFrame(f: Frame | "closed" | undefined, what: string): void {
  expect(f, `${what}: no answer and not closed`).toBeDefined();
  if (f === "closed" || f === undefined) return;
  expect(leakIn(f.body), what).toBeUndefined();
  if (f.type === "ERR") expect(leakIn(Buffer.from(parseErr(f).reason)), what).toBeUndefined();
}

describe("the captured client session", () => {
  it("has HEL, OPN and MSG frames of many services", () => {
    const types = new Set(frames.filter((f) => f.type === "MSG").map((f) => requestType(f.bytes.subarray(24))));
    expect(frames.some((f) => f.type === "HEL")).toBe(true);
    expect(frames.some((f) => f.type === "OPN")).toBe(true);
    for (const id of [
      ObjectIds.CreateSessionRequest_Encoding_DefaultBinary,
      ObjectIds.ActivateSessionRequest_Encoding_DefaultBinary,
      ObjectIds.BrowseRequest_Encoding_DefaultBinary,
      ObjectIds.ReadRequest_Encoding_DefaultBinary,
      ObjectIds.TranslateBrowsePathsToNodeIdsRequest_Encoding_DefaultBinary,
      ObjectIds.CreateSubscriptionRequest_Encoding_DefaultBinary,
      ObjectIds.CreateMonitoredItemsRequest_Encoding_DefaultBinary,
      ObjectIds.PublishRequest_Encoding_DefaultBinary,
      ObjectIds.HistoryReadRequest_Encoding_DefaultBinary,
      ObjectIds.CloseSessionRequest_Encoding_DefaultBinary,
    ]) {
      expect(types.has(id), `captured request ${id}`).toBe(true);
    }
  });
});

describe("mutated frames against the real server", () => {
  it("HEL", async () => {
    const hel = frames.find((f) => f.type === "HEL")!.bytes;
    await fc.assert(
      fc.asyncProperty(mutationsArb, async (mutations) => {
        const bad = mutate(hel, mutations);
        const c = await RawClient.connect(gw.server.port);
        try {
          await c.write(bad);
          if (complete(bad)) checkFrame(await outcome(c), `HEL ${bad.toString("hex")}`);
        } finally {
          c.destroy();
        }
        await healthy.check();
      }),
      { numRuns: fuzzRuns(60), seed: fuzzSeed() },
    );
  }, fuzzTimeout());

  it("OPN after a valid HEL", async () => {
    const hel = frames.find((f) => f.type === "HEL")!.bytes;
    const opn = frames.find((f) => f.type === "OPN")!.bytes;
    await fc.assert(
      fc.asyncProperty(mutationsArb, async (mutations) => {
        const bad = mutate(opn, mutations);
        const c = await RawClient.connect(gw.server.port);
        try {
          await c.write(hel);
          expect((await c.next()).type).toBe("ACK");
          await c.write(bad);
          if (complete(bad)) checkFrame(await outcome(c), `OPN ${bad.toString("hex")}`);
        } finally {
          c.destroy();
        }
        await healthy.check();
      }),
      { numRuns: fuzzRuns(60), seed: fuzzSeed() },
    );
  }, fuzzTimeout());

  it("MSG of every captured service, in an activated session", async () => {
    // The request bodies (after the symmetric header of policy None: 8 + 16 bytes).
    const bodies = frames.filter((f) => f.type === "MSG" && f.chunkType === "F").map((f) => f.bytes.subarray(24));
    const caseArb = fc.record({ index: fc.nat({ max: bodies.length - 1 }), mutations: mutationsArb, wholeBody: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ index, mutations, wholeBody }) => {
        const c = await ServiceClient.open(gw.server.port);
        try {
          await c.createSession(1000);
          await c.activate();
          const { body, headerEnd } = withToken(bodies[index], c.token);
          // Mostly past the header (so the service decoder is reached), sometimes anywhere.
          const bad = mutate(body, mutations, wholeBody ? 0 : headerEnd);
          const id = c.channel.requestId++;
          await c.channel.raw.write(msg(c.channel.next(id), bad));
          const what = `MSG ${requestType(bodies[index])} ${bad.toString("hex")}`;
          const f = await outcome(c.channel.raw);
          // A Publish may be held for a subscription the mutation created; others answer.
          if (f !== undefined || requestType(body) !== ObjectIds.PublishRequest_Encoding_DefaultBinary) checkFrame(f, what);
        } finally {
          c.close();
        }
        await healthy.check();
      }),
      { numRuns: fuzzRuns(150), seed: fuzzSeed() },
    );
    // A bound, generous on purpose: sessions and buffers of finished cases must not pile up.
    expect(rssMiB() - rssBefore).toBeLessThan(150);
  }, fuzzTimeout(120_000));
});

describe("generated requests of every service against the real server", () => {
  it("any value of any request type the server handles, in an activated session", async () => {
    // Valid encodings of arbitrary values (not seeded by a client): request fields no client
    // would send, such as huge counts, odd enumerations, unknown NodeIds and nested Variants.
    const services = SERVICES.filter((s) => s.requestEncodingId !== ObjectIds.CreateSessionRequest_Encoding_DefaultBinary);
    const infoByEncoding = new Map(structureInfos.map((i) => [i.binaryEncodingId, i]));
    const caseArb = fc.constantFrom(...services).chain((s) => fc.tuple(fc.constant(s), structureArb(infoByEncoding.get(s.requestEncodingId)!)));
    await fc.assert(
      fc.asyncProperty(caseArb, async ([service, value]) => {
        const codec = structureByEncodingId(service.requestEncodingId)!;
        const c = await ServiceClient.open(gw.server.port);
        try {
          await c.createSession(1000);
          await c.activate();
          const w = new BinaryWriter(Buffer.alloc(1024));
          try {
            encodeNodeId(w, numericNodeId(service.requestEncodingId));
            codec.encode(w, { ...value, requestHeader: header(c.token) });
          } catch {
            return; // a value the encoder refuses
          }
          const id = c.channel.requestId++;
          await c.channel.raw.write(msg(c.channel.next(id), Buffer.from(w.view())));
          const f = await outcome(c.channel.raw);
          if (f !== undefined || service.requestEncodingId !== ObjectIds.PublishRequest_Encoding_DefaultBinary) checkFrame(f, `${service.name} ${JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}`);
        } finally {
          c.close();
        }
        await healthy.check();
      }),
      { numRuns: fuzzRuns(100), seed: fuzzSeed() },
    );
  }, fuzzTimeout(120_000));
});
