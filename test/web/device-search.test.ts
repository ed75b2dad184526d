// The editor's search for devices through the settings API (devices/device-search.ts): an admin
// searches a serial line (one end of a socat pty pair, simulated M-Bus meters on the other,
// test/drivers/mbus-peer.ts) while the gateway polls a meter on another line; the search's
// progress and finds are asked for until it ends; the entries are added to the map being edited
// (not applied), with the bus they name, and the map is valid; refused: a viewer, a line the
// gateway polls (its port is held: said in words), a second search while one runs, a port another
// program holds; bounded: a search of a silent line ends at the time given, with what it found.
// And the page's form in Debian's chromium (puppeteer-core): the admin searches the free line
// from the editor, sees the meters found, and adds them to the text being edited.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SerialPort } from "serialport";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capture, elvacoSecond, SimBus } from "../drivers/mbus-peer.js";
import { HAVE_SOCAT, SOCAT_MISSING, ptyPair, requirePeers, skipWithout, type PtyPair } from "../drivers/peers.js";
import { CHROMIUM_MISSING, launchChromium, logIn } from "./browser.js";
import { basic, fetchPage, startWebGateway, type Reply, type WebGateway } from "./helpers.js";

const missing = HAVE_SOCAT ? "" : SOCAT_MISSING;
/**
 * The wait for each answer, ms: short, so that a search of 251 primary addresses and the secondary
 * search ends in seconds, yet long enough for the simulated meters, which answer from this process
 * while the gateway and the browser's protocol share its event loop (at 20 ms a loaded machine
 * missed a meter now and then).
 */
const ANSWER_MS = 50;

describe.skipIf(skipWithout(missing))(`the editor's search for devices${missing ? ` (skipped: ${missing})` : ""}`, () => {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-device-search-"));
  const polled = new SimBus();
  const free = new SimBus();
  let polledLine: PtyPair;
  let freeLine: PtyPair;
  let silentLine: PtyPair;
  let g: WebGateway;
  let map = "";

  const as = (user: "admin" | "viewer", path: string, body?: unknown): Promise<Reply> =>
    fetchPage(g, path, { method: body === undefined ? "GET" : "POST", headers: { authorization: basic(user), "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const search = (body: unknown) => as("admin", "/api/config/devices/search", body);
  /** Asks for the search's state until it is no longer running (bounded by the test's time-out). */
  async function ended(): Promise<{ state: string; found: { summary: string; entry: { name: string } }[]; progress: string[]; message?: string; where: string }> {
    for (;;) {
      const s = JSON.parse((await as("viewer", "/api/config/devices/search")).body);
      if (s.state !== "running") return s;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  beforeAll(async () => {
    if (missing !== "") return;
    requirePeers(missing);
    [polledLine, freeLine, silentLine] = await Promise.all([ptyPair(), ptyPair(), ptyPair()]);
    polled.add(17, [capture("kamstrup_multical_601")]);
    await polled.serveSerial(polledLine.b);
    free.add(3, [capture("ELV-Elvaco-CMa10"), elvacoSecond()]);
    free.add(0, [capture("EMU_EMU-Professional-375-M-Bus")]);
    await free.serveSerial(freeLine.b);
    map = `# the heating's meters
buses:
  heating: { port: ${polledLine.a}, baudRate: 38400, parity: none }
devices:
  - name: heat
    driver: mbus
    bus: heating
    address: 17
    rate: 1s
    timeout: 100ms
    tags:
      - { name: energy, quantity: Energy }
`;
    writeFileSync(join(dir, "devices.yaml"), map);
    g = await startWebGateway({ dir, extraYaml: "devices: ./devices.yaml\n" });
  }, 60_000);

  afterAll(async () => {
    await g?.stop();
    await Promise.all([polled.close(), free.close()]);
    await Promise.all([polledLine?.stop(), freeLine?.stop(), silentLine?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("is offered to admins, with the drivers that can search; a viewer cannot start one", async () => {
    const s = JSON.parse((await as("viewer", "/api/config/devices/search")).body);
    expect(s).toMatchObject({ drivers: ["mbus"], state: "idle", found: [] });
    expect((await as("viewer", "/api/config/devices/search", { bus: { port: freeLine.a } })).status).toBe(403);
    const bad = await search({ driver: "modbus-tcp", host: "127.0.0.1", port: 502 });
    expect([bad.status, JSON.parse(bad.body).error]).toEqual([400, 'driver: expected one of the drivers that can search (mbus), got "modbus-tcp"']);
    const neither = await search({ driver: "mbus" });
    expect(JSON.parse(neither.body).error).toBe("give the serial line (bus: {port: /dev/ttyUSB0, ...}) or the endpoint (host, port)");
  });

  it("refuses a line the gateway polls, saying so in words, before anything is opened", async () => {
    const r = await search({ bus: { port: polledLine.a, baudRate: 38400, parity: "none" } });
    expect(r.status).toBe(409);
    expect(JSON.parse(r.body).error).toBe(
      `the gateway polls ${polledLine.a} (bus heating: heat) and holds its port: a search needs the line to itself. ` +
        "Search a line before its bus is in the map; for a line in use, apply the map with enabled: false on its devices, search, then enable them again",
    );
    expect(JSON.parse((await as("viewer", "/api/config/devices/search")).body).state).toBe("idle");
  });

  it("searches a free line, shows what it found, and adds the entries and their bus to the map being edited", async () => {
    const r = await search({ driver: "mbus", bus: { port: freeLine.a, baudRate: 38400, parity: "none" }, busName: "water", seconds: 120, timeout: ANSWER_MS });
    expect(r.status, r.body).toBe(202);
    expect(JSON.parse(r.body)).toMatchObject({ state: "running", driver: "mbus", where: `bus water (${freeLine.a}, 38400 baud)`, by: "admin" });
    // One at a time.
    const again = await search({ bus: { port: silentLine.a } });
    expect([again.status, JSON.parse(again.body).error]).toEqual([409, expect.stringMatching(/^a search by admin is running on bus water .* until .*: stop it first$/)]);
    const s = await ended();
    expect(s.state).toBe("done");
    expect(s.found.map((f) => f.entry.name).sort()).toEqual(["elv_24011561", "emu_00032629"]);
    expect(s.found.find((f) => f.entry.name === "elv_24011561")!.summary).toMatch(/^ELV other meter 24011561 \(version 22\) at secondary address/);
    expect(s.progress.some((l) => l.startsWith("found ELV other meter 24011561"))).toBe(true);

    const added = await as("admin", "/api/config/devices/search/add", { text: map });
    expect(added.status, added.body).toBe(200);
    const body = JSON.parse(added.body) as { text: string; added: string[]; skipped: string[] };
    expect(body.added.sort()).toEqual(["elv_24011561", "emu_00032629"]);
    expect(body.skipped).toEqual([]);
    expect(body.text.startsWith("# the heating's meters\n")).toBe(true);
    expect(body.text).toContain(`  water:\n    port: ${freeLine.a}\n    baudRate: 38400\n    parity: none\n`);
    expect(body.text).toMatch(/\n {2}- name: elv_24011561\n {4}driver: mbus\n {4}bus: water\n/);
    // Valid as it is, and not applied: the file on the gateway is as it was.
    const check = await fetchPage(g, "/api/config/devices/check", { method: "POST", headers: { authorization: basic("admin"), "content-type": "text/yaml" }, body: body.text });
    expect(JSON.parse(check.body)).toEqual([]);
    expect(readFileSync(join(dir, "devices.yaml"), "utf8")).toBe(map);
    // Added once: a map that has them already gets none again.
    const twice = JSON.parse((await as("admin", "/api/config/devices/search/add", { text: body.text })).body);
    expect([twice.added, twice.skipped.sort()]).toEqual([[], ["elv_24011561", "emu_00032629"]]);
    // A bus of that name on another port is not silently taken for the search's.
    const clash = await as("admin", "/api/config/devices/search/add", { text: map.replace("heating:", "water:").replace("bus: heating", "bus: water") });
    expect([clash.status, JSON.parse(clash.body).error]).toEqual([409, expect.stringMatching(/^the map has buses\.water already, as .*, not .*: give the new one another name$/)]);
  }, 120_000);

  it("ends at the time given on a line where nothing answers, and can be stopped", async () => {
    const r = await search({ bus: { port: silentLine.a, baudRate: 38400, parity: "none" }, seconds: 5, timeout: 1000 });
    expect(r.status, r.body).toBe(202);
    const s = await ended();
    expect([s.state, s.message, s.found]).toEqual(["stopped", "the time given (5 s) ran out", []]);
    expect((await as("admin", "/api/config/devices/search/add", { text: map })).status).toBe(409);
    expect(await search({ bus: { port: silentLine.a, baudRate: 38400, parity: "none" }, seconds: 600, timeout: 1000 }).then((x) => x.status)).toBe(202);
    const stopped = await as("admin", "/api/config/devices/search/stop", {});
    expect(stopped.status).toBe(200);
    const t = await ended();
    expect([t.state, t.message]).toEqual(["stopped", "stopped by admin"]);
  }, 60_000);

  it("says when another program holds the port", async () => {
    const holder = new SerialPort({ path: freeLine.a, baudRate: 38400, autoOpen: false });
    await new Promise<void>((resolve, reject) => holder.open((err) => (err ? reject(err) : resolve())));
    try {
      expect((await search({ bus: { port: freeLine.a, baudRate: 38400, parity: "none" }, timeout: 20 })).status).toBe(202);
      const s = await ended();
      expect(s.state).toBe("failed");
      expect(s.message).toMatch(new RegExp(`^${freeLine.a.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} is held by another program \\(its lock: .*Cannot lock port.*\\): close it there \\(or stop it\\), then search again$`));
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });

  it.skipIf(skipWithout(CHROMIUM_MISSING))(`is run from the editor's form, the finds added to the text${CHROMIUM_MISSING ? ` (skipped: ${CHROMIUM_MISSING})` : ""}`, async () => {
    requirePeers(CHROMIUM_MISSING);
    const browser = await launchChromium(g, join(dir, "chromium-profile"));
    try {
      const page = await browser.newPage();
      await page.setViewport({ width: 1280, height: 1000 });
      await logIn(page, g, "admin");
      await page.click("#edit-devices");
      await page.waitForFunction(() => (document.getElementById("editor-text") as HTMLTextAreaElement | null)?.value.includes("name: heat"), { timeout: 10_000 });
      await page.click("#editor-search");
      await page.waitForSelector("#sr-port", { timeout: 10_000 });
      expect(await page.$$eval("#sr-driver option", (os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual(["mbus"]);
      await page.type("#sr-port", freeLine.a);
      await page.type("#sr-baud", "38400");
      await page.select("#sr-parity", "none");
      await page.type("#sr-bus-name", "water");
      await page.type("#sr-timeout", String(ANSWER_MS));
      await page.click("#sr-start");
      await page.waitForSelector("#sr-add", { timeout: 90_000 });
      expect(await page.$eval("#sr-status", (e) => e.textContent)).toBe(`the search of bus water (${freeLine.a}, 38400 baud) is done: 2 devices found`);
      expect((await page.$$eval("#sr-found li", (lis) => lis.map((li) => li.textContent ?? ""))).sort()).toEqual([expect.stringMatching(/^ELV other meter 24011561 /), expect.stringMatching(/^EMU /)]);
      await page.click("#sr-add");
      await page.waitForFunction(() => (document.getElementById("editor-text") as HTMLTextAreaElement).value.includes("name: emu_00032629"), { timeout: 10_000 });
      expect(await page.$eval("#editor-panel h2", (e) => e.textContent)).toBe("2 devices added to the map (not applied yet)");
      const text = await page.$eval("#editor-text", (e) => (e as HTMLTextAreaElement).value);
      expect(text.startsWith("# the heating's meters\n")).toBe(true);
      expect(text).toMatch(/\n {2}- name: elv_24011561\n {4}driver: mbus\n {4}bus: water\n/);
      // Checked as any edit is, and valid; nothing applied.
      await page.waitForFunction(() => document.getElementById("editor-status")?.className === "valid", { timeout: 15_000 });
      expect(readFileSync(join(dir, "devices.yaml"), "utf8")).toBe(map);
    } finally {
      await browser.close();
    }
  }, 150_000);
});
