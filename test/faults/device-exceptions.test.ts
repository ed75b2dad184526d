// Devices that answer, but not with their data: a slave that answers every request with an
// exception (modbus-serial's ServerTCP with a vector that throws), and a peer whose replies carry another transaction id, unit id or function
// code (a raw socket peer, test/drivers/raw-peer.ts); the RTU case with Debian's python3-pymodbus on
// a socat pty pair is in test/devices/rtu.test.ts. A device whose every request fails is
// failing and then demoted like a silent one, with the exception named in LastError, on /metrics
// and in one log line per change of state; an exception for one block while the others answer is
// those tags' alone. Replies to other requests are counted per device and said as what they are.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AttributeIds, OPCUAClient, StatusCodes as UaStatus, type ClientSession, type DataValue } from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadGatewayConfig } from "../../src/config/load.js";
import { Logger } from "../../src/log.js";
import { FieldgateServer } from "../../src/server/server.js";
import { renderMetrics } from "../../src/web/metrics.js";
import { startModbusSerialServer } from "../drivers/peers.js";
import { answer, mbap, registersPdu, startRawPeer, type Peer } from "../drivers/raw-peer.js";

async function until<T>(what: string, get: () => T | Promise<T>, ms = 10_000): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("a gateway whose devices answer with exceptions or with replies to other requests", () => {
  /** Unit 1 answers every request with exception 04 while this is true. */
  let plcBroken = false;
  let msr: { port: number; close(): Promise<void> };
  /** How the raw peer answers: its own answer, or one with another transaction id, unit id or function code. */
  let oddMode: "ok" | "tid" | "unit" | "fc" = "ok";
  let raw: Peer;
  let server: FieldgateServer;
  let client: OPCUAClient;
  let session: ClientSession;
  const lines: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-device-exceptions-"));

  beforeAll(async () => {
    msr = await startModbusSerialServer({
      getHoldingRegister: (addr: number, unit: number) => {
        if (unit === 1 && plcBroken) throw new Error("device failure"); // modbus-serial answers 04
        if (unit === 2 && addr >= 100) throw { modbusErrorCode: 2 };
        if (unit === 3 && addr === 50) throw new Error("this card failed");
        return 100 * unit + addr;
      },
    });
    raw = await startRawPeer("tcp", (req, reply) => {
      const values = Array.from({ length: req.count }, (_, i) => 100 * req.unit + req.address + i);
      if (oddMode === "tid") reply(mbap(req.tid ^ 0x8000, req.unit, registersPdu(req.fc, values)));
      else if (oddMode === "unit") reply(mbap(req.tid, req.unit + 7, registersPdu(req.fc, values)));
      else if (oddMode === "fc") reply(mbap(req.tid, req.unit, registersPdu(req.fc === 3 ? 4 : 3, values)));
      else reply(answer("tcp", req));
    });
    const device = (name: string, port: number, unit: number, tags: string) => `  - name: ${name}
    driver: modbus-tcp
    host: 127.0.0.1
    port: ${port}
    unitId: ${unit}
    rate: 100ms
    timeout: 300ms
    retryBackoff: 50ms
    maxBackoff: 200ms
    demoteAfter: 3
    tags:
${tags}`;
    writeFileSync(
      join(dir, "devices.yaml"),
      "devices:\n" +
        device("plc", msr.port, 1, "      - { name: r0, address: holding:0 }\n      - { name: r40, address: holding:40 }\n") +
        device("meter", msr.port, 2, "      - { name: r0, address: holding:0 }\n      - { name: missing, address: holding:150 }\n") +
        device("drive", msr.port, 3, "      - { name: r0, address: holding:0 }\n      - { name: card, address: holding:50 }\n") +
        device("odd", raw.port, 1, "      - { name: r0, address: holding:0 }\n"),
    );
    writeFileSync(join(dir, "gateway.yaml"), "server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\ndevices: ./devices.yaml\nsecurity:\n  securityPolicies: [None]\n");
    const log = new Logger({ level: "debug", journal: false, write: (line) => void lines.push(line) });
    server = new FieldgateServer(loadGatewayConfig(join(dir, "gateway.yaml")), log);
    await server.start();
    client = OPCUAClient.create({ endpointMustExist: false, connectionStrategy: { maxRetry: 0 } });
    await client.connect(`opc.tcp://127.0.0.1:${server.port}`);
    session = await client.createSession();
    await until("every device answering", () => ["plc", "meter", "drive", "odd"].every((d) => server.deviceRuntime.poller(d)?.state === "ok"));
  }, 30_000);

  afterAll(async () => {
    await session?.close();
    await client?.disconnect();
    await server?.stop();
    await msr?.close();
    await raw?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const read = (s: string): Promise<DataValue> => session.read({ nodeId: `ns=1;s=${s}`, attributeId: AttributeIds.Value });
  const metric = (name: string, device: string): number => {
    const m = new RegExp(`^${name}\\{device="${device}"\\} (\\S+)$`, "m").exec(renderMetrics(server, "test"));
    if (!m) throw new Error(`no ${name} for ${device}`);
    return Number(m[1]);
  };
  /** node-opcua gives a UInt64 as [high, low]. */
  const uint64 = (v: unknown): number => (Array.isArray(v) ? v[0] * 2 ** 32 + v[1] : Number(v));
  /** The state lines of a device in the log, by their word: failing, demoted, back. */
  const stateLines = (device: string) => lines.filter((l) => new RegExp(`device ${device} (failing|demoted|back)`).test(l));

  it("exception 04 to every request: failing, then demoted, named in LastError, on /metrics and in one line a state; back when it answers", async () => {
    const plc = server.deviceRuntime.poller("plc")!;
    const kept = (await read("plc.r0")).value.value as number;
    expect(kept).toBe(100);
    plcBroken = true;
    await until("plc failing", () => plc.state === "failing");
    const failing = await until("the failing line", () => stateLines("plc")[0]);
    expect(failing).toMatch(/warning: device plc failing: unit 1: ServerDeviceFailure \(exception 04\) to FC3 reading \d+ at \d+; its values are Bad/);
    expect((await read("plc/Diagnostics/State")).value.value).toBe("failing");
    expect((await read("plc/Diagnostics/LastError")).value.value).toMatch(/ServerDeviceFailure \(exception 04\)/);
    expect(metric("fieldgate_device_up", "plc")).toBe(0);
    // The exception's StatusCode, with the last value kept (Part 8 §6.3.2).
    const r0 = await read("plc.r0");
    expect(r0.statusCode.value).toBe(UaStatus.BadDeviceFailure.value);
    expect(r0.value.value).toBe(kept);
    await until("plc demoted", () => plc.state === "demoted");
    expect((await read("plc/Diagnostics/State")).value.value).toBe("demoted");
    const requestsWhileDown = plc.requests;
    // Probed on, with backoff, and still one line per change of state, not one per request.
    await until("more probes", () => plc.requests >= requestsWhileDown + 4);
    expect(stateLines("plc").map((l) => /device plc (\w+)/.exec(l)![1])).toEqual(["failing", "demoted"]);
    plcBroken = false;
    await until("plc back", () => plc.state === "ok");
    await until("plc.r0 Good again", async () => (await read("plc.r0")).statusCode.value === 0);
    expect(metric("fieldgate_device_up", "plc")).toBe(1);
    expect(stateLines("plc").map((l) => /device plc (\w+)/.exec(l)![1])).toEqual(["failing", "demoted", "back"]);
    expect(stateLines("plc")[2]).toMatch(/last error: unit 1: ServerDeviceFailure \(exception 04\)/);
  }, 30_000);

  it("an exception for one block while the others answer is the tag's: 02 BadConfigurationError, 04 BadDeviceFailure, the device up", async () => {
    expect((await read("meter.missing")).statusCode.value).toBe(UaStatus.BadConfigurationError.value);
    expect((await read("drive.card")).statusCode.value).toBe(UaStatus.BadDeviceFailure.value);
    for (const [tag, value] of [["meter.r0", 200], ["drive.r0", 300]] as const) {
      const dv = await read(tag);
      expect([dv.statusCode.value, dv.value.value]).toEqual([0, value]);
    }
    for (const d of ["meter", "drive"]) {
      expect(server.deviceRuntime.poller(d)!.state).toBe("ok");
      expect(metric("fieldgate_device_up", d)).toBe(1);
      expect(stateLines(d)).toEqual([]);
    }
    expect(server.deviceRuntime.poller("drive")!.lastError).toMatch(/ServerDeviceFailure \(exception 04\) to FC3 reading 1 at 50/);
  });

  it.each([
    ["tid", /reply with transaction id \d+, expected \d+/],
    ["unit", /reply from unit 8, expected unit 1/],
    ["fc", /reply with function code 4, expected 3/],
  ] as const)("replies with another %s: counted for the device on /metrics and Diagnostics, and said as what they are", async (mode, said) => {
    const odd = server.deviceRuntime.poller("odd")!;
    const before = odd.mismatchedReplies;
    const linesBefore = stateLines("odd").length;
    oddMode = mode;
    try {
      await until(`odd failing under ${mode}`, () => odd.state !== "ok");
      expect(odd.lastError).toMatch(said);
      const failing = await until("the failing line", () => stateLines("odd")[linesBefore]);
      expect(failing).toMatch(said);
      expect(failing).not.toMatch(/^[^;]*no answer to FC3/);
      const counted = odd.mismatchedReplies - before;
      expect(counted).toBeGreaterThan(0);
      expect(metric("fieldgate_device_mismatched_replies_total", "odd")).toBe(odd.mismatchedReplies);
      await until("Diagnostics/MismatchedReplies", async () => uint64((await read("odd/Diagnostics/MismatchedReplies")).value.value) >= before + 1);
      expect((await read("odd/Diagnostics/LastError")).value.value).toMatch(said);
    } finally {
      oddMode = "ok";
    }
    await until("odd back", () => odd.state === "ok");
    // The devices on the other link never saw one.
    expect(metric("fieldgate_device_mismatched_replies_total", "meter")).toBe(0);
  }, 20_000);
});
