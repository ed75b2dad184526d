// The M-Bus link (drivers/mbus/link.ts) on a socat pseudo-terminal pair, against the simulated
// meters of mbus-peer.ts (which share no code with the driver): SND_NKE and REQ_UD2 with the FCB
// as EN 13757-2 has it, telegrams joined while more records follow, selection by secondary
// address, a request repeated with the same FCB when unanswered, corrupt frames counted and
// named, noise skipped, a silent meter failing while another on the bus reads on, and the search
// for the meters on a bus. Needs socat (skipped, and named, without it).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { linkOptionsFor } from "../../drivers/mbus/discover.js";
import { MbusLink, type MbusStation } from "../../drivers/mbus/link.js";
import type { MbusReading } from "../../drivers/mbus/reading.js";
import { scanBus } from "../../drivers/mbus/scan.js";
import { parseSecondary } from "../../drivers/mbus/secondary.js";
import { rejection } from "../helpers/rejection.js";
import { HAVE_SOCAT, SOCAT_MISSING, ptyPair, requirePeers, skipWithout, type PtyPair } from "./peers.js";
import { capture, elvacoSecond, SimBus, telegramOfHex } from "./mbus-peer.js";

const FRAMES = join(dirname(fileURLToPath(import.meta.url)), "mbus-frames", "test-frames");
const missing = HAVE_SOCAT ? "" : SOCAT_MISSING;

describe.skipIf(skipWithout(missing))(`the M-Bus link on a serial line${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let pty: PtyPair;
  let sim: SimBus;
  let link: MbusLink;

  const station = (s: Partial<MbusStation> & { key: string }): MbusStation => ({ telegrams: 1, retries: 2, timeout: 150, ...s });
  const read = (s: MbusStation) => link.readBlock({ station: s, area: "telegram", start: 0, count: 1 });

  beforeAll(async () => {
    if (missing !== "") return;
    requirePeers(missing);
    pty = await ptyPair();
    sim = new SimBus();
    await sim.serveSerial(pty.b);
  });

  afterEach(async () => {
    await link?.close();
    sim.meters.length = 0;
    sim.log.length = 0;
  });

  afterAll(async () => {
    await sim?.close();
    await pty?.stop();
  });

  function open(): MbusLink {
    // The test bus is a pty: parity none (a pty refuses PARENB), speed only for the waits.
    link = new MbusLink(linkOptionsFor({ kind: "bus", name: "test", bus: { port: pty.a, baudRate: 9600, parity: "none", dataBits: 8, stopBits: 1, interRequestDelay: 0 } }));
    return link;
  }

  it("reads a meter at a primary address: SND_NKE, then REQ_UD2 with FCB 1, its telegram decoded", async () => {
    sim.add(17, [capture("kamstrup_multical_601")]);
    open();
    const r = await read(station({ primary: 17, key: "address 17" }));
    expect(sim.log).toEqual(["SND_NKE 17", "REQ_UD2 17 FCB1"]);
    expect(r.header).toMatchObject({ id: "06855817", manufacturer: "KAM", medium: 4 });
    expect(r.records).toHaveLength(27);
    expect([r.records[1]!.quantity, r.records[1]!.value, r.records[1]!.unit?.code]).toEqual(["Energy", 37351000, "WHR"]);
    expect(r.address).toBe(17);
    // The next readout starts over: SND_NKE resets the FCB.
    await read(station({ primary: 17, key: "address 17" }));
    expect(sim.log.slice(2)).toEqual(["SND_NKE 17", "REQ_UD2 17 FCB1"]);
  });

  it("joins the telegrams of a meter whose records go on (DIF 1Fh), toggling the FCB, numbering the records on", async () => {
    sim.add(3, [capture("ELV-Elvaco-CMa10"), elvacoSecond()]);
    open();
    const r: MbusReading = await read(station({ primary: 3, key: "address 3", telegrams: 4 }));
    expect(sim.log).toEqual(["SND_NKE 3", "REQ_UD2 3 FCB1", "REQ_UD2 3 FCB0"]);
    expect(r.telegrams).toBe(2);
    expect(r.records).toHaveLength(14);
    expect(r.records.slice(12).map((x) => [x.index, x.quantity, x.value])).toEqual([
      [12, "Volume", 1.234],
      [13, "Flow temperature", 45.6],
    ]);
    // Bounded by `telegrams`: one telegram read, the rest left.
    const one = await read(station({ primary: 3, key: "address 3", telegrams: 1 }));
    expect(one.records).toHaveLength(12);
  });

  it("repeats an unanswered request with the same FCB, and the meter's repeated telegram is taken", async () => {
    const m = sim.add(5, [capture("GWF-MTKcoder")]);
    open();
    m.lose = ["SND_NKE", "REQ_UD2"];
    const r = await read(station({ primary: 5, key: "address 5" }));
    expect(sim.log).toEqual(["SND_NKE 5", "SND_NKE 5", "REQ_UD2 5 FCB1", "REQ_UD2 5 FCB1"]);
    expect(r.records.map((x) => x.value)).toEqual([182007, 269]);
  });

  it("counts and names a corrupt frame, skips noise before an answer, and reads on", async () => {
    const m = sim.add(8, [capture("oms_frame2")]);
    open();
    m.corrupt = 1;
    m.noise = Buffer.from([0x00, 0x68, 0x12, 0x99, 0xff]);
    const s = station({ primary: 8, key: "address 8" });
    const r = await read(s);
    expect(r.records[0]!.value).toBe(2850.427);
    expect(link.countersOf(s)!.corruptFrames).toBeGreaterThanOrEqual(1);
    expect(link.health().lastCorruptFrame).toMatch(/checksum|length fields differ|second start byte/);
    // A meter whose every answer is corrupt: the readout fails, the reason named.
    m.corrupt = 10;
    m.noise = undefined;
    const err = await rejection(read(s));
    expect(err.kind).toBe("malformed");
    expect(err.message).toMatch(/^address 8: corrupt answer: long frame with checksum [0-9A-F]{2}h, expected [0-9A-F]{2}h \(in answer to REQ_UD2\); \d+ corrupt frames so far$/);
  });

  it("selects a meter by secondary address (CI 52h at 253) and reads it there", async () => {
    sim.add(0, [capture("kamstrup_multical_601")]);
    sim.add(0, [capture("GWF-MTKcoder")]);
    open();
    const secondary = parseSecondary("06855817");
    if (!secondary.ok) throw new Error(secondary.message);
    const r = await read(station({ secondary: secondary.value, key: "secondary address 06855817FFFFFFFF" }));
    expect(sim.log).toEqual(["SELECT 06855817FFFFFFFF", "REQ_UD2 253 FCB1"]);
    expect(r.header!.id).toBe("06855817");
    const full = parseSecondary("001820071EE63507");
    if (!full.ok) throw new Error(full.message);
    expect((await read(station({ secondary: full.value, key: "secondary address 001820071EE63507" }))).header!.manufacturer).toBe("GWF");
    const none = parseSecondary("99999999");
    if (!none.ok) throw new Error(none.message);
    const err = await rejection(read(station({ secondary: none.value, key: "secondary address 99999999FFFFFFFF", retries: 0 })));
    expect([err.kind, err.message]).toEqual(["timeout", "secondary address 99999999FFFFFFFF: no answer to its selection (99999999FFFFFFFF)"]);
  });

  it("a silent meter fails after its retries; another on the bus reads on", async () => {
    const quiet = sim.add(1, [capture("GWF-MTKcoder")]);
    sim.add(2, [capture("oms_frame1")]);
    open();
    quiet.silent = true;
    const err = await rejection(read(station({ primary: 1, key: "address 1", retries: 1 })));
    expect([err.kind, err.message]).toEqual(["timeout", "address 1: no answer to SND_NKE"]);
    expect(quiet.heard).toEqual(["SND_NKE", "SND_NKE"]);
    expect((await read(station({ primary: 2, key: "address 2" }))).records[0]!.value).toBe(28504.27);
  });

  it("reports a meter's application error as the meter's failure, busy as busy", async () => {
    sim.add(9, [telegramOfHex(readFileSync(join(FRAMES, "..", "error-frames", "application_busy.hex"), "latin1"))]);
    sim.add(10, [telegramOfHex(readFileSync(join(FRAMES, "..", "error-frames", "too_many_records.hex"), "latin1"))]);
    open();
    const busy = await rejection(read(station({ primary: 9, key: "address 9" })));
    expect([busy.kind, busy.message]).toEqual(["busy", "address 9: the meter reports an application error: application too busy for handling readout request"]);
    const failed = await rejection(read(station({ primary: 10, key: "address 10" })));
    expect([failed.kind, failed.message]).toEqual(["deviceFailure", "address 10: the meter reports an application error: too many records"]);
  });

  it("finds the meters of a bus: by primary address, and by secondary search through colliding answers", async () => {
    // Two meters whose IDs share their first digits (0685...) collide until the search parts them.
    sim.add(17, [capture("kamstrup_multical_601")]); // ID 06855817
    sim.add(0, [capture("EMU_EMU-Professional-375-M-Bus")]); // ID 00032629, primary 0
    const twin = capture("kamstrup_multical_601");
    const data = Buffer.from(twin.data);
    data.set([0x17, 0x58, 0x85, 0x06].map((b, i) => (i === 0 ? 0x99 : b)), 0); // ID 06855899
    sim.add(40, [{ ci: twin.ci, data }]);
    open();
    const progress: string[] = [];
    const found = await scanBus(link, { primary: true, from: 0, to: 20, secondary: true, timeout: 40, progress: (m) => progress.push(m) });
    expect(found.map((f) => [f.reading.header!.id, f.primary, f.bySecondary]).sort()).toEqual([
      ["00032629", 0, true],
      ["06855817", 17, true],
      ["06855899", 40, true],
    ]);
    // The secondary search narrowed 0FFFFFFF to 06855817 / 06855899 through colliding answers.
    expect(sim.log).toContain("SELECT 0685581FFFFFFFFF");
    expect(progress.filter((p) => p.startsWith("found"))).toHaveLength(3);
  });
});
