// The floor target (bench/targets/echo.ts: the canned responder with the gateway's node flags)
// stands for what Node costs per Read only if its responses are the ones the gateway sends: the
// same bytes on the wire for the same request, for every TimestampsToReturn. Checked against a
// real gateway, and the target's process against the gateway's flags.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UaClientChannel } from "../../bench/client/channel.js";
import { DEFAULT_READ_NODE, resolveNodes, valueReadOf } from "../../bench/client/nodes.js";
import { makeTarget } from "../../bench/harness/runner.js";
import { startCannedResponder, type CannedResponder } from "../../bench/targets/canned-responder.js";
import { GATEWAY_NODE_FLAGS } from "../../src/runtime-flags.js";
import type { BinaryReader } from "../../src/ua/binary-reader.js";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { decodeReadResponse, encodeReadRequest, type DataValue, type ReadRequest } from "../../src/ua/generated/types.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

async function session(host: string, port: number): Promise<UaClientChannel> {
  const ch = await UaClientChannel.open({ host, port, endpointUrl: `opc.tcp://${host}:${port}` });
  await ch.openSecureChannel();
  await ch.createAndActivateSession("floor-check");
  return ch;
}

/** One Read of CurrentTime: the response body's length (after its type id) and its DataValue. */
async function readOnce(ch: UaClientChannel, mode: TimestampsToReturn): Promise<{ bytes: number; value: DataValue }> {
  const [node] = await resolveNodes(ch, [DEFAULT_READ_NODE]);
  let bytes = 0;
  const response = await ch.call(
    "Read",
    ObjectIds.ReadRequest_Encoding_DefaultBinary,
    encodeReadRequest,
    { requestHeader: ch.requestHeader(), maxAge: 0, timestampsToReturn: mode, nodesToRead: [valueReadOf(node)] } satisfies ReadRequest,
    ObjectIds.ReadResponse_Encoding_DefaultBinary,
    (r: BinaryReader) => {
      bytes = r.end - r.pos;
      return decodeReadResponse(r);
    },
  );
  return { bytes, value: response.results![0] };
}

const fields = (dv: DataValue): string[] => (["value", "statusCode", "sourceTimestamp", "serverTimestamp"] as const).filter((k) => dv[k] !== undefined);

describe("the floor target answers a Read as the gateway does", () => {
  let gw: TestGateway;
  let canned: CannedResponder;

  beforeAll(async () => {
    gw = await startGateway();
    canned = await startCannedResponder();
  }, 30_000);

  afterAll(async () => {
    await canned?.close();
    await gw?.stop();
  });

  it.each([TimestampsToReturn.Both, TimestampsToReturn.Source, TimestampsToReturn.Server, TimestampsToReturn.Neither])(
    "the same response bytes and DataValue fields, TimestampsToReturn %i",
    async (mode) => {
      const ours = await session("127.0.0.1", gw.server.port);
      const floor = await session(canned.host, canned.port);
      try {
        const a = await readOnce(ours, mode);
        const b = await readOnce(floor, mode);
        expect(b.bytes).toBe(a.bytes);
        expect(fields(b.value)).toEqual(fields(a.value));
      } finally {
        await ours.close();
        await floor.close();
      }
    },
  );

  it("runs with the gateway's node flags; echo without them", () => {
    const options = { inline: false, pin: false, targets: [], rounds: 1 };
    const floor = makeTarget("floor", root, options) as unknown as { name: string; options: { nodeFlags?: readonly string[] } };
    const echo = makeTarget("echo", root, options) as unknown as { name: string; options: { nodeFlags?: readonly string[] } };
    expect(floor.name).toBe("floor");
    expect(floor.options.nodeFlags).toEqual(GATEWAY_NODE_FLAGS);
    expect(echo.options.nodeFlags ?? []).toEqual([]);
  });
});
