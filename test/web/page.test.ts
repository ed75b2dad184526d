// The status page in a real browser (issue 15, "How it is shown"): Debian's chromium driven by
// puppeteer-core, headless. Log in; see a device go from ok to failing when its pymodbus peer
// is stopped and back when it restarts, without a reload; trust a rejected certificate from
// the page and see a node-opcua-client connect; see a damaged file under Needs attention. Screenshots go to the test's temporary folder
// (kept; its path is printed).
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessageSecurityMode, SecurityPolicy } from "node-opcua-client";
import { HAVE_PYMODBUS, PYMODBUS_MISSING, startPymodbus, type PythonPeer } from "../drivers/peers.js";
import { makeCert } from "../security/certs.js";
import { secureClient } from "../security/client.js";
import { CHROMIUM_MISSING, launchChromium } from "./browser.js";
import { PASSWORDS, startWebGateway, type WebGateway } from "./helpers.js";
import { loadGatewayConfig } from "../../src/config/load.js";

const HAVE_CHROMIUM = CHROMIUM_MISSING === "";
// In CI a missing peer fails instead of skipping.
const skip = (!HAVE_CHROMIUM || !HAVE_PYMODBUS) && process.env.CI !== "true";
const why = !HAVE_CHROMIUM ? " (needs Debian's chromium: apt-get install chromium)" : !HAVE_PYMODBUS ? ` (${PYMODBUS_MISSING})` : "";

describe.skipIf(skip)(`the status page in chromium${why}`, () => {
  let g: WebGateway;
  let peer: PythonPeer | undefined;
  let browser: Browser;
  let page: Page;
  let port: number;
  const work = mkdtempSync(join(tmpdir(), "fieldgate-page-"));
  const shots = mkdtempSync(join(tmpdir(), "fieldgate-page-screenshots-"));
  const navigations: string[] = [];

  beforeAll(async () => {
    peer = await startPymodbus("tcp");
    port = peer.port;
    const dir = join(work, "gateway");
    mkdirSync(dir);
    writeFileSync(
      join(dir, "devices.yaml"),
      `devices:\n  - name: plc\n    driver: modbus-tcp\n    host: 127.0.0.1\n    port: ${port}\n    rate: 200ms\n    timeout: 300ms\n    retryBackoff: 100ms\n    maxBackoff: 400ms\n    tags:\n` +
        "      - { name: r0, address: holding:0 }\n      - { name: r1, address: holding:1 }\n      - { name: in5, address: input:5 }\n" +
        "  - name: sim\n    driver: simulator\n    tags:\n      - { name: ramp, address: input:0 }\n      - { name: temperature, address: input:2, type: float32, unit: \"°C\" }\n",
    );
    g = await startWebGateway({ dir, extraYaml: "devices: ./devices.yaml\n", web: "  updateInterval: 250ms\n" });
    browser = await launchChromium(g, join(work, "chromium-profile"));
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 1000 });
    page.on("framenavigated", (f) => {
      if (f === page.mainFrame()) navigations.push(f.url());
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await g?.stop();
    await peer?.stop();
    rmSync(work, { recursive: true, force: true });
    console.log(`status page screenshots: ${shots}`);
  });

  const stateOf = (device: string) => page.$eval(`#devices tr[data-device="${device}"] td.state`, (td) => (td as HTMLElement).dataset.state ?? "");
  const waitState = (device: string, states: string[], timeout = 15_000) =>
    page.waitForFunction(
      (d: string, s: string[]) => {
        const td = document.querySelector(`#devices tr[data-device="${d}"] td.state`) as HTMLElement | null;
        return td !== null && s.includes(td.dataset.state ?? "");
      },
      { timeout, polling: 100 },
      device,
      states,
    );

  it("logs in with a gateway user", async () => {
    await page.goto(g.url, { waitUntil: "load" });
    expect(new URL(page.url()).pathname).toBe("/login");
    await page.screenshot({ path: join(shots, "1-login.png") });
    await page.type("input[name=user]", "admin");
    await page.type("input[name=password]", PASSWORDS.admin);
    await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("button[type=submit]")]);
    expect(new URL(page.url()).pathname).toBe("/");
    await page.waitForFunction(() => document.getElementById("who")?.textContent === "admin (admin)", { timeout: 10_000 });
    await waitState("plc", ["ok"]);
    // The first device's tags, with values from the peer (pymodbus: holding[i] = 1000 + i).
    await page.waitForFunction(() => document.querySelector('#tags tr[data-tag="r1"] td:nth-child(2)')?.textContent === "1001", { timeout: 10_000 });
    expect(await page.$eval('#tags tr[data-tag="r1"] td:nth-child(4)', (td) => td.textContent)).toBe("Good");
    expect(await page.$eval("#gw dd[data-key=Endpoint]", (dd) => dd.textContent)).toBe(g.server.endpointUrl);
    // The recent log, each line once (the first message and the next update both carry it).
    await page.waitForFunction(() => document.querySelectorAll("#log li").length > 0, { timeout: 5_000 });
    await new Promise((r) => setTimeout(r, 600));
    expect(await page.$$eval("#log li", (lis) => lis.filter((li) => /device map: added plc, sim/.test(li.textContent ?? "")).length)).toBe(1);
    await page.evaluate(() => {
      (window as unknown as { marker: number }).marker = 42;
    });
    await page.screenshot({ path: join(shots, "2-ok.png"), fullPage: true });
  }, 40_000);

  it("shows the device failing when its peer stops, and ok when it restarts, without a reload", async () => {
    const before = navigations.length;
    await peer!.stop();
    peer = undefined;
    await waitState("plc", ["failing", "demoted"]);
    await page.waitForFunction(() => document.querySelector('#tags tr[data-tag="r1"] td:nth-child(4)')?.textContent === "BadCommunicationError", { timeout: 10_000 });
    // The last value stays, marked Bad.
    expect(await page.$eval('#tags tr[data-tag="r1"] td:nth-child(2)', (td) => td.textContent)).toBe("1001");
    expect(await page.$eval('#devices tr[data-device="plc"] td.err', (td) => td.textContent)).not.toBe("");
    await page.waitForFunction(() => [...document.querySelectorAll("#log li")].some((li) => /device plc failing/.test(li.textContent ?? "")), { timeout: 10_000 });
    await page.screenshot({ path: join(shots, "3-failing.png"), fullPage: true });
    peer = await startPymodbus("tcp", String(port));
    await waitState("plc", ["ok"], 20_000);
    await page.waitForFunction(() => document.querySelector('#tags tr[data-tag="r1"] td:nth-child(4)')?.textContent === "Good", { timeout: 10_000 });
    await page.waitForFunction(() => [...document.querySelectorAll("#log li")].some((li) => /device plc back after/.test(li.textContent ?? "")), { timeout: 10_000 });
    expect(await stateOf("sim")).toBe("ok");
    // Same document all along: no navigation, and what the page held is still there.
    expect(navigations.length).toBe(before);
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(42);
    await page.screenshot({ path: join(shots, "4-back.png"), fullPage: true });
  }, 60_000);

  it("shows another device's live values when it is clicked", async () => {
    await page.click('#devices tr[data-device="sim"]');
    await page.waitForFunction(() => document.getElementById("tags-device")?.textContent === "sim", { timeout: 10_000 });
    const ramp = () => page.$eval('#tags tr[data-tag="ramp"] td:nth-child(2)', (td) => Number(td.textContent));
    await page.waitForSelector('#tags tr[data-tag="ramp"]', { timeout: 10_000 });
    const first = await ramp();
    await page.waitForFunction((v: number) => Number(document.querySelector('#tags tr[data-tag="ramp"] td:nth-child(2)')?.textContent) !== v, { timeout: 10_000 }, first);
    expect(await page.$eval('#tags tr[data-tag="temperature"] td:nth-child(3)', (td) => td.textContent)).toBe("°C");
  }, 30_000);

  it("trusts a rejected certificate, after which a node-opcua-client connects", async () => {
    const cert = await makeCert({ commonName: "scada-station-7" });
    const refused = secureClient({ dir: work, cert, policy: SecurityPolicy.Basic256Sha256, mode: MessageSecurityMode.SignAndEncrypt });
    await expect(refused.connect(g.opcUrl)).rejects.toThrow();
    await refused.disconnect();
    const tp = createHash("sha1").update(cert.der).digest("hex");
    const row = `#certs tr[data-list="rejected"][data-thumbprint="${tp}"]`;
    await page.waitForSelector(row, { timeout: 15_000 });
    expect(await page.$eval(`${row} td:nth-child(2)`, (td) => td.textContent)).toBe("CN=scada-station-7, O=fieldgate tests");
    await page.screenshot({ path: join(shots, "5-rejected.png"), fullPage: true });
    await page.click(`${row} button[data-action=trust]`);
    await page.waitForSelector(`#certs tr[data-list="trusted"][data-thumbprint="${tp}"]`, { timeout: 15_000 });
    await page.waitForFunction(() => /^trusted: /.test(document.getElementById("toast")?.textContent ?? ""), { timeout: 5_000 });
    const client = secureClient({ dir: work, cert, policy: SecurityPolicy.Basic256Sha256, mode: MessageSecurityMode.SignAndEncrypt });
    await client.connect(g.opcUrl);
    const session = await client.createSession();
    // The new session shows on the page.
    await page.waitForFunction(() => [...document.querySelectorAll("#sessions tbody tr td:nth-child(5)")].some((td) => td.textContent === "Basic256Sha256, SignAndEncrypt"), { timeout: 10_000 });
    await page.screenshot({ path: join(shots, "6-trusted.png"), fullPage: true });
    await session.close();
    await client.disconnect();
  }, 60_000);

  it("reloads the device map from the page", async () => {
    await page.click("#reload");
    await page.waitForFunction(() => /^device map reloaded: 2 unchanged$/.test(document.getElementById("toast")?.textContent ?? ""), { timeout: 10_000 });
  }, 20_000);

  it("shows a damaged file under Needs attention: where it went and what to do", async () => {
    expect(await page.$eval("#attention-card", (e) => (e as HTMLElement).hidden)).toBe(true);
    // A northbound section brought by a reload, whose store is random bytes (a broker nobody listens at).
    const store = join(g.server.config.dataDir, "northbound.db");
    writeFileSync(store, randomBytes(32 * 1024));
    const section = join(work, "northbound.yaml");
    writeFileSync(section, "northbound:\n  sparkplug:\n    broker: mqtt://127.0.0.1:1\n    groupId: plant1\n    edgeNodeId: page\n");
    g.server.reloadConfig({ ...g.server.config, northbound: loadGatewayConfig(section).northbound });
    await page.waitForFunction(() => !(document.getElementById("attention-card") as HTMLElement).hidden, { timeout: 15_000 });
    const text = await page.$eval("#attention", (e) => e.textContent ?? "");
    const moved = g.server.damagedFiles.list.at(-1)!.movedTo;
    expect(text).toContain(`store-and-forward database ${store} is damaged (file is not a database): moved aside to ${moved}`);
    expect(text).toContain(`sqlite3 ${moved} .recover`);
    await page.screenshot({ path: join(shots, "needs-attention.png") });
  }, 30_000);
});
