// History of tags polled from a Modbus peer nobody here wrote (modbus-serial's ServerTCP),
// read back with node-opcua-client: raw pages with continuation points matching what the store
// holds, processed Count/Maximum/Average over the same samples, and the device going Bad kept
// in history with its status.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AggregateFunction,
  HistoryReadRequest,
  OPCUAClient,
  ReadRawModifiedDetails,
  TimestampsToReturn,
  type ClientSession,
  type DataValue,
  type HistoryData,
} from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringNodeId } from "../../src/ua/builtins.js";
import { startModbusSerialServer } from "../drivers/peers.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

let polls = 0;
const vector = {
  getInputRegister: (addr: number) => {
    if (addr === 0) return 0x41ac; // float32 21.5, high word
    if (addr === 5) return ++polls & 0xffff; // one more on every poll
    return 0;
  },
  getHoldingRegister: () => 0,
  getCoil: () => false,
  setRegister: () => undefined,
  setCoil: () => undefined,
};

let peer: { port: number; close(): Promise<void> } | undefined;
let gw: TestGateway;
let client: OPCUAClient;
let session: ClientSession;
let ns: number;
const dir = mkdtempSync(join(tmpdir(), "fieldgate-history-modbus-"));

const id = (tag: string) => `ns=${ns};s=plc.${tag}`;

/** Samples of a tag in the store, as the server holds them (flushed). */
function stored(tag: string, from: number, to: number): { t: number; v: unknown; s: number }[] {
  const series = gw.server.history.series(stringNodeId(`plc.${tag}`, ns));
  if (!series) return [];
  return gw.server.history.store.read(series, from, to, true, 1_000_000).map((d) => ({ t: d.sourceTimestamp!, v: d.value?.value, s: d.statusCode ?? 0 }));
}

async function waitFor(what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function brief(dvs: DataValue[]): { t: number; v: unknown; s: number }[] {
  return dvs.map((d) => ({ t: d.sourceTimestamp!.getTime(), v: d.value.value, s: d.statusCode.value }));
}

beforeAll(async () => {
  peer = await startModbusSerialServer(vector);
  const map = join(dir, "devices.yaml");
  writeFileSync(
    map,
    `devices:
  - name: plc
    driver: modbus-tcp
    host: 127.0.0.1
    port: ${peer.port}
    rate: 50ms
    timeout: 200ms
    retryBackoff: 100ms
    maxBackoff: 200ms
    tags:
      - { name: temp, address: input:0, type: float32, history: true }
      - { name: count, address: input:5, history: true }
`,
  );
  gw = await startGateway(`devices: ${map}\nhistory:\n  flushInterval: 50ms\n`);
  client = OPCUAClient.create({ endpointMustExist: false, connectionStrategy: { maxRetry: 0 } });
  await client.connect(gw.url);
  session = await client.createSession();
  const nsArray = await session.read({ nodeId: "i=2255", attributeId: 13 });
  ns = (nsArray.value.value as string[]).indexOf("urn:fieldgate:devices");
}, 30_000);

afterAll(async () => {
  await session?.close();
  await client?.disconnect();
  await gw?.stop();
  await peer?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("history of tags polled from modbus-serial's server", () => {
  it("raw pages, processed values and a device going Bad, all as stored", async () => {
    expect(ns).toBeGreaterThan(0);
    await waitFor("40 stored samples", () => stored("count", 0, 8.64e15).filter((x) => x.s === 0).length >= 40);
    // The device stops answering: its tags go Bad, and history keeps that.
    await peer!.close();
    peer = undefined;
    await waitFor("a Bad sample in history", () => stored("count", 0, 8.64e15).some((x) => x.s >>> 30 >= 2));
    const all = stored("count", 0, 8.64e15);
    const start = all[0].t;
    const end = all.at(-1)!.t + 1; // everything stored so far, nothing that comes later
    const expected = stored("count", start, end);

    const pages: { t: number; v: unknown; s: number }[][] = [];
    let cp: Buffer | undefined;
    do {
      const res = await session.historyRead(
        new HistoryReadRequest({
          historyReadDetails: new ReadRawModifiedDetails({ startTime: new Date(start), endTime: new Date(end), numValuesPerNode: 7, returnBounds: false }),
          nodesToRead: [{ nodeId: id("count"), continuationPoint: cp }],
          timestampsToReturn: TimestampsToReturn.Source,
        }),
      );
      const r = res.results![0];
      expect(r.statusCode.isGood()).toBe(true);
      pages.push(brief((r.historyData as HistoryData).dataValues ?? []));
      cp = r.continuationPoint && r.continuationPoint.length > 0 ? r.continuationPoint : undefined;
    } while (cp && pages.length < 1000);
    expect(pages.length).toBe(Math.ceil(expected.length / 7));
    const raw = pages.flat();
    expect(raw.map((x) => x.t)).toEqual(expected.map((x) => x.t));
    expect(raw.map((x) => x.s)).toEqual(expected.map((x) => x.s));
    const goodValues = raw.filter((x) => x.s === 0).map((x) => x.v as number);
    for (let i = 1; i < goodValues.length; i++) expect(goodValues[i]).toBeGreaterThan(goodValues[i - 1]);
    expect(raw.some((x) => x.s >>> 30 >= 2)).toBe(true);

    const [count, max, avg] = await session.readAggregateValue(
      [{ nodeId: id("count") }, { nodeId: id("count") }, { nodeId: id("temp") }],
      new Date(start),
      new Date(end),
      [AggregateFunction.Count, AggregateFunction.Maximum, AggregateFunction.Average],
      end - start,
    );
    const [c] = (count.historyData as HistoryData).dataValues!;
    expect(c.value.value).toBe(goodValues.length);
    expect(c.statusCode.value >>> 30).toBe(1); // Uncertain: Bad samples in the interval
    const [m] = (max.historyData as HistoryData).dataValues!;
    expect(m.value.value).toBe(Math.max(...goodValues));
    const [a] = (avg.historyData as HistoryData).dataValues!;
    expect(a.value.value).toBe(21.5);
  }, 60_000);
});
