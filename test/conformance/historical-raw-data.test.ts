// Historical Raw Data Server Facet (Part 7; Part 11 §6.4.3) with node-opcua-client, on a device
// tag the gateway polls and historizes (the simulator's ramp, `history: true`):
//   Historical Access Read Raw: forward and backward in time, numValuesPerNode with continuation
//     points until the interval is read, returnBounds.
//   Historical Access Server Capabilities: AccessHistoryDataCapabilities true, Historizing and
//     the HistoryRead bit of (User)AccessLevel on the tag, not on a tag without history.
// The history service itself is checked in depth by test/history/; this file shows the facet.
import {
  AttributeIds,
  HistoryReadRequest,
  ReadRawModifiedDetails,
  TimestampsToReturn,
  type HistoryData,
  type HistoryReadResult,
} from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, gatewayWith, waitFor, type Connection, type Gateway } from "./helpers.js";

let gw: Gateway;
let c: Connection;
let ns: number;
const tag = () => `ns=${ns};s=sim.ramp`;

const MAP = `devices:
  - name: sim
    driver: simulator
    rate: 100ms
    tags:
      - { name: ramp, address: input:0, history: true }
      - { name: saw, address: input:1 }
`;

function raw(start: Date, end: Date, numValuesPerNode: number, returnBounds = false, continuationPoint?: Buffer) {
  return new HistoryReadRequest({
    historyReadDetails: new ReadRawModifiedDetails({ startTime: start, endTime: end, numValuesPerNode, returnBounds, isReadModified: false }),
    nodesToRead: [{ nodeId: tag(), continuationPoint }],
    timestampsToReturn: TimestampsToReturn.Source,
    releaseContinuationPoints: false,
  });
}

function times(r: HistoryReadResult): number[] {
  return ((r.historyData as HistoryData | null)?.dataValues ?? []).map((d) => d.sourceTimestamp!.getTime());
}

let t0: Date;

beforeAll(async () => {
  t0 = new Date(Date.now() - 1000);
  gw = await gatewayWith(MAP, "history:\n  flushInterval: 100ms\n");
  c = await connect(gw.url);
  ns = ((await c.session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value })).value.value as string[]).indexOf("urn:fieldgate:devices");
  // About a second of polls, stored.
  await waitFor(() => gw.server.history.writer.stats.flushed >= 10, "ten stored samples");
}, 30_000);

afterAll(async () => {
  await c?.close();
  await gw?.stop();
});

describe("Historical Access", () => {
  it("says what it offers: capabilities, Historizing, AccessLevel", async () => {
    const [cap, historizing, level, userLevel, plain] = await c.session.read([
      { nodeId: "i=11193", attributeId: AttributeIds.Value }, // HistoryServerCapabilities.AccessHistoryDataCapability
      { nodeId: tag(), attributeId: AttributeIds.Historizing },
      { nodeId: tag(), attributeId: AttributeIds.AccessLevel },
      { nodeId: tag(), attributeId: AttributeIds.UserAccessLevel },
      { nodeId: `ns=${ns};s=sim.saw`, attributeId: AttributeIds.AccessLevel },
    ]);
    expect(cap.value.value).toBe(true);
    expect(historizing.value.value).toBe(true);
    expect(level.value.value & 4).toBe(4);
    expect(userLevel.value.value & 4).toBe(4);
    expect(plain.value.value & 4).toBe(0);
  });

  it("reads raw values forward, page by page, until the interval is read", async () => {
    const end = new Date();
    const seen: number[] = [];
    let cp: Buffer | undefined;
    let pages = 0;
    do {
      const res = await c.session.historyRead(raw(t0, end, 3, false, cp));
      const r = res.results![0];
      expect(r.statusCode.isGood()).toBe(true);
      const page = times(r);
      expect(page.length).toBeLessThanOrEqual(3);
      seen.push(...page);
      cp = r.continuationPoint && r.continuationPoint.length > 0 ? r.continuationPoint : undefined;
      pages++;
    } while (cp !== undefined && pages < 100);
    expect(seen.length).toBeGreaterThanOrEqual(10);
    expect(pages).toBe(Math.ceil(seen.length / 3));
    expect([...seen].sort((a, b) => a - b)).toEqual(seen);
    expect(seen.every((t) => t >= t0.getTime() && t <= end.getTime())).toBe(true);
  });

  it("reads backward when the end is before the start, and bounds the interval when asked", async () => {
    // The end is just past the newest sample already stored, not "now": a sample stamped before
    // now can still be on its way to the database between the two reads, and one of them would
    // have it. (The end itself is outside the interval: Part 11 §6.4.3.2.)
    const stored = times((await c.session.historyRead(raw(t0, new Date(), 0))).results![0]);
    const end = new Date(stored[stored.length - 1]! + 1);
    const all = times((await c.session.historyRead(raw(t0, end, 0))).results![0]);
    expect(all).toEqual(stored);
    const back = times((await c.session.historyRead(raw(end, t0, 0))).results![0]);
    expect(back).toEqual([...all].reverse());
    // An interval strictly between two samples: with bounds, the samples around it.
    const mid = Math.floor(all.length / 2);
    const from = new Date(all[mid] + 1);
    const to = new Date(all[mid + 1] - 1);
    const without = (await c.session.historyRead(raw(from, to, 0))).results![0];
    expect(times(without)).toEqual([]);
    const withBounds = (await c.session.historyRead(raw(from, to, 0, true))).results![0];
    expect(times(withBounds)).toEqual([all[mid], all[mid + 1]]);
    expect(withBounds.statusCode.isGood()).toBe(true);
  });
});
