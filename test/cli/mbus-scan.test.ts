// `fieldgate mbus scan` (a command the M-Bus driver adds to the CLI) on a socat pty pair with the
// simulated meters of test/drivers/mbus-peer.ts: it finds them by primary and secondary address,
// and prints a device map that `fieldgate validate` accepts: the bus, and one entry per meter
// with a tag per record. The same search through the devices layer's generic call (what the
// page's editor can run). Needs socat (skipped, and named, without it) and a built dist/.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { builtinDrivers } from "../../drivers/builtin.js";
import { deviceMapSchema } from "../../src/config/device-map.js";
import { validateYaml } from "../../src/config/load.js";
import { discoverDevices, discoveringDrivers } from "../../src/devices/discovery.js";
import { capture, elvacoSecond, SimBus } from "../drivers/mbus-peer.js";
import { runCli } from "../helpers/child-output.js";
import { HAVE_SOCAT, SOCAT_MISSING, ptyPair, requirePeers, skipWithout, type PtyPair } from "../drivers/peers.js";

const cli = resolve(__dirname, "../../dist/src/cli.js");
const missing = HAVE_SOCAT ? "" : SOCAT_MISSING;

const run = (...args: string[]) => runCli(cli, args);

describe("fieldgate mbus", () => {
  it("is listed in the help, and refuses what it cannot do with its usage", async () => {
    expect((await run("help")).stdout).toContain("fieldgate mbus scan (--bus DEVICE | --host H --port N)");
    const none = await run("mbus", "scan");
    expect([none.status, none.stderr.split("\n")[0]]).toEqual([2, "fieldgate mbus: give the serial line (--bus /dev/ttyUSB0) or the converter (--host H --port N)"]);
    const other = await run("mbus", "read");
    expect([other.status, other.stderr.split("\n")[0]]).toEqual([2, "fieldgate mbus: expected `mbus scan`"]);
    const port = await run("mbus", "scan", "--host", "127.0.0.1");
    expect(port.stderr.split("\n")[0]).toBe("fieldgate mbus: --host needs --port (an M-Bus to TCP converter has no standard port)");
  });
});

describe.skipIf(skipWithout(missing))(`fieldgate mbus scan on a bus${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let pty: PtyPair;
  const sim = new SimBus();
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-mbus-scan-"));

  beforeAll(async () => {
    if (missing !== "") return;
    requirePeers(missing);
    pty = await ptyPair();
    sim.add(17, [capture("kamstrup_multical_601")]);
    sim.add(3, [capture("ELV-Elvaco-CMa10"), elvacoSecond()]);
    sim.add(0, [capture("EMU_EMU-Professional-375-M-Bus")]);
    await sim.serveSerial(pty.b);
  });

  afterAll(async () => {
    await sim.close();
    await pty?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("finds the meters and prints their entries, a map `fieldgate validate` accepts", async () => {
    const out = join(dir, "scan.yaml");
    const r = await run("mbus", "scan", "--bus", pty.a, "--baud", "38400", "--parity", "none", "--to", "20", "--timeout", "40", "--bus-name", "heating", "--out", out);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain("found KAM heat (outlet) meter 06855817 (version 8) at address 17: 27 records in 1 telegram");
    expect(r.stderr).toContain("found ELV other meter 24011561 (version 22) at address 3: 14 records in 2 telegrams");
    const text = readFileSync(out, "utf8");
    expect(validateYaml(deviceMapSchema(builtinDrivers()), text, out).ok).toBe(true);
    expect((await run("validate", "--devices", out)).status).toBe(0);
    const map = parse(text) as { buses: Record<string, unknown>; devices: Record<string, unknown>[] };
    expect(map.buses).toEqual({ heating: { port: pty.a, baudRate: 38400, parity: "none" } });
    const byName = new Map(map.devices.map((d) => [d.name as string, d]));
    // Found by both searches: named by its secondary address.
    expect(byName.get("kam_06855817")).toMatchObject({ driver: "mbus", bus: "heating", secondaryAddress: "068558172C2D0804", description: "KAM heat (outlet) meter, ID 06855817, version 8" });
    const kam = byName.get("kam_06855817")!.tags as Record<string, unknown>[];
    expect(kam).toHaveLength(27);
    expect(kam.slice(0, 3)).toEqual([
      { name: "fabrication_no", quantity: "Fabrication No" },
      { name: "energy", quantity: "Energy" },
      { name: "volume", quantity: "Volume" },
    ]);
    expect(kam).toContainEqual({ name: "power_max", quantity: "Power", function: "maximum" });
    expect(kam).toContainEqual({ name: "energy_t1", quantity: "Energy", tariff: 1 });
    expect(kam).toContainEqual({ name: "time_point_s1", quantity: "Time point", storage: 1 });
    const elv = byName.get("elv_24011561")!;
    expect(elv.telegrams).toBe(2);
    expect((elv.tags as Record<string, unknown>[]).find((t) => t.record === 1)).toEqual({ name: "rh", record: 1, description: "%RH: multiplicative correction factor 10^-2 (02 FC 03 48 52 25 74)" });
    // The EMU's four powers differ only in their manufacturer's VIFEs: read by place.
    const emu = byName.get("emu_00032629")!.tags as Record<string, unknown>[];
    expect(emu.filter((t) => String(t.name).startsWith("power")).map((t) => t.record)).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
  }, 60_000);

  it("is the devices layer's generic search, which the page's editor can run", async () => {
    const drivers = builtinDrivers();
    expect(discoveringDrivers(drivers)).toEqual(["mbus"]);
    const found = await discoverDevices(drivers, "mbus", { kind: "bus", name: "m", bus: { port: pty.a, baudRate: 38400, parity: "none", dataBits: 8, stopBits: 1, interRequestDelay: 0 } }, { timeout: 20 });
    expect(found.map((f) => f.entry.name).sort()).toEqual(["elv_24011561", "emu_00032629", "kam_06855817"]);
    expect(found.find((f) => f.entry.name === "kam_06855817")!.summary).toBe("KAM heat (outlet) meter 06855817 (version 8) at secondary address 068558172C2D0804, primary 17: 27 records in 1 telegram");
    await expect(discoverDevices(drivers, "modbus-tcp", { kind: "tcp", host: "127.0.0.1", port: 1 })).rejects.toThrow("the modbus-tcp driver cannot search for devices (mbus can)");
  }, 60_000);
});
