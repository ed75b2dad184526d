// M-Bus end to end: a device map of meters on a serial bus (one end of a socat pty pair, the
// simulated meters of mbus-peer.ts on the other) and behind an M-Bus to TCP converter, polled by
// a running gateway and read by node-opcua-client: values in the units their VIFs give, with
// those units as EngineeringUnits (UNECE), time points as DateTime; two meters sharing one bus
// link; a meter that stops answering is failing then demoted, its values Bad with the last one
// kept, while the other keeps its rate, and it comes back; a corrupt frame is named in the
// meter's LastError. Needs socat (skipped, and named, without it).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AttributeIds, DataType, OPCUAClient, StatusCodes, type ClientSession, type DataValue } from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { readUntil } from "../helpers/read-until.js";
import { capture, SimBus, type SimMeter } from "./mbus-peer.js";
import { HAVE_SOCAT, SOCAT_MISSING, ptyPair, requirePeers, skipWithout, type PtyPair } from "./peers.js";

const missing = HAVE_SOCAT ? "" : SOCAT_MISSING;

describe.skipIf(skipWithout(missing))(`M-Bus meters read through the gateway${missing ? ` (skipped: ${missing})` : ""}`, () => {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-mbus-"));
  let pty: PtyPair;
  const bus = new SimBus();
  const converter = new SimBus();
  let heat: SimMeter;
  let water: SimMeter;
  let gw: TestGateway;
  let client: OPCUAClient;
  let session: ClientSession;

  const read = (nodeId: string, attributeId = AttributeIds.Value): Promise<DataValue> => session.read({ nodeId, attributeId });
  const until = (nodeId: string, ok: (dv: DataValue) => boolean, what: string): Promise<DataValue> => readUntil(session, nodeId, ok, what);
  const good = (dv: DataValue) => dv.statusCode.value === 0;

  /** The EngineeringUnits of a tag, as a client finds them: by browse path, then read. */
  async function unitOf(nodeId: string): Promise<DataValue> {
    const found = await session.translateBrowsePath({ startingNode: nodeId, relativePath: { elements: [{ referenceTypeId: "i=46", isInverse: false, includeSubtypes: true, targetName: { namespaceIndex: 0, name: "EngineeringUnits" } }] } });
    return read(found.targets![0]!.targetId.toString());
  }

  beforeAll(async () => {
    if (missing !== "") return;
    requirePeers(missing);
    pty = await ptyPair();
    heat = bus.add(17, [capture("kamstrup_multical_601")]);
    water = bus.add(0, [capture("GWF-MTKcoder")]);
    await bus.serveSerial(pty.b);
    converter.add(5, [capture("oms_frame3")]);
    const port = await converter.serveTcp();
    const map = `buses:
  meters: { port: ${pty.a}, baudRate: 38400, parity: none }
devices:
  - name: heat
    driver: mbus
    bus: meters
    address: 17
    rate: 500ms
    timeout: 100ms
    retries: 1
    retryBackoff: 200ms
    maxBackoff: 400ms
    demoteAfter: 2
    tags:
      - { name: energy, quantity: Energy }
      - { name: energy_kwh, quantity: Energy, scale: 0.001, unit: "kW·h" }
      - { name: flow_temperature, quantity: Flow temperature }
      - { name: power_max, quantity: Power, function: maximum }
      - { name: volume_s1, quantity: Volume, storage: 1 }
      - { name: read_at, quantity: Time point }
      - { name: fabrication, record: 0 }
  - name: water
    driver: mbus
    bus: meters
    secondaryAddress: "00182007"
    rate: 500ms
    timeout: 100ms
    tags:
      - { name: volume, record: 1 }
  - name: district
    driver: mbus
    host: 127.0.0.1
    port: ${port}
    baudRate: 9600
    address: 5
    rate: 2s
    timeout: 200ms
    tags:
      - { name: energy, quantity: Energy }
      - { name: power, quantity: Power }
`;
    writeFileSync(join(dir, "devices.yaml"), map);
    gw = await startGateway(`devices: ${join(dir, "devices.yaml")}\n`);
    client = OPCUAClient.create({ endpointMustExist: false, connectionStrategy: { maxRetry: 0 } });
    await client.connect(gw.url);
    session = await client.createSession();
  }, 30_000);

  afterAll(async () => {
    await session?.close();
    await client?.disconnect();
    await gw?.stop();
    await bus.close();
    await converter.close();
    await pty?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("reads each record in its VIF's unit, with that unit as EngineeringUnits", async () => {
    const energy = await until("ns=1;s=heat.energy", good, "heat.energy Good");
    expect([energy.value.dataType, energy.value.value]).toEqual([DataType.Double, 37351000]);
    const eu = (await unitOf("ns=1;s=heat.energy")).value.value as { namespaceUri: string; unitId: number; displayName: { text: string } };
    expect([eu.namespaceUri, eu.unitId, eu.displayName.text]).toEqual(["http://www.opcfoundation.org/UA/units/un/cefact", 5720146, "W·h"]);
    expect((await read("ns=1;s=heat.flow_temperature")).value.value).toBeCloseTo(101.69, 9);
    expect(((await unitOf("ns=1;s=heat.flow_temperature")).value.value as { displayName: { text: string } }).displayName.text).toBe("°C");
    expect((await read("ns=1;s=heat.power_max")).value.value).toBe(44800);
    expect((await read("ns=1;s=heat.volume_s1")).value.value).toBeCloseTo(500.98, 9);
    expect((await read("ns=1;s=heat.fabrication")).value.value).toBe(6855817);
    // The map's unit and scale win over the VIF's.
    expect((await read("ns=1;s=heat.energy_kwh")).value.value).toBeCloseTo(37351, 9);
    expect(((await unitOf("ns=1;s=heat.energy_kwh")).value.value as { displayName: { text: string } }).displayName.text).toBe("kW·h");
    const at = await read("ns=1;s=heat.read_at");
    expect(at.value.dataType).toBe(DataType.DateTime);
    expect((at.value.value as Date).toISOString()).toBe("2011-01-05T15:26:00.000Z");
    expect((await read("ns=1;s=heat.energy", AttributeIds.Description)).value.value.text).toBe("number at Energy");
  });

  it("reads a meter by its secondary address and one behind a TCP converter", async () => {
    expect((await until("ns=1;s=water.volume", good, "water.volume Good")).value.value).toBe(269);
    expect(((await unitOf("ns=1;s=water.volume")).value.value as { displayName: { text: string } }).displayName.text).toBe("m³");
    expect((await until("ns=1;s=district.energy", good, "district.energy Good")).value.value).toBe(2850427000);
    expect((await read("ns=1;s=district.power")).value.value).toBeCloseTo(329.7, 9);
    expect(converter.log.slice(0, 2)).toEqual(["SND_NKE 5", "REQ_UD2 5 FCB1"]);
  });

  it("shares one link for the meters of one bus, one readout a cycle each", async () => {
    await until("ns=1;s=water.volume", good, "water.volume Good");
    const rt = gw.server.deviceRuntime;
    expect(rt.driverOf("heat")).toBe(rt.driverOf("water"));
    expect(rt.driverOf("heat")).not.toBe(rt.driverOf("district"));
    expect(rt.poller("heat")!.requestsPerCycle).toBe(1);
    expect(rt.describeLink(rt.poller("water")!.config)).toBe("bus meters secondary address 00182007FFFFFFFF");
  });

  it("names a corrupt frame in the meter's LastError", async () => {
    await until("ns=1;s=heat.energy", good, "heat.energy Good");
    heat.corrupt = 100;
    const lastError = await until("ns=1;s=heat/Diagnostics/LastError", (dv) => /corrupt answer/.test(String(dv.value.value)), "heat LastError");
    expect(String(lastError.value.value)).toMatch(/^address 17: corrupt answer: long frame with checksum [0-9A-F]{2}h, expected [0-9A-F]{2}h \(in answer to REQ_UD2\); \d+ corrupt frames so far$/);
    heat.corrupt = 0;
    await until("ns=1;s=heat/Diagnostics/State", (dv) => dv.value.value === "ok", "heat ok again");
  });

  it("a meter that stops answering is failing then demoted, Bad with its last value; the other keeps its rate; it comes back", async () => {
    await until("ns=1;s=heat.energy", good, "heat.energy Good");
    heat.silent = true;
    const down = await until("ns=1;s=heat.energy", (dv) => dv.statusCode.value === StatusCodes.BadCommunicationError.value, "heat.energy Bad");
    expect(down.value.value).toBe(37351000);
    await until("ns=1;s=heat/Diagnostics/State", (dv) => dv.value.value === "demoted", "heat demoted");
    expect(String((await read("ns=1;s=heat/Diagnostics/LastError")).value.value)).toBe("address 17: no answer to SND_NKE");
    const before = water.heard.length;
    await until("ns=1;s=water.volume", () => water.heard.length >= before + 6, "water polled on");
    expect((await read("ns=1;s=water.volume")).statusCode.value).toBe(0);
    heat.silent = false;
    const back = await until("ns=1;s=heat.energy", good, "heat.energy back");
    expect(back.value.value).toBe(37351000);
  });
});
