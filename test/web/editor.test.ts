// The settings editor and the trend in a real browser (issue 30, "How it is shown"): Debian's
// chromium driven by puppeteer-core, at 1280 px. The page's first paint carries the state (seen
// with scripts off); an admin adds a tag in the editor, sees the check's message for a typo at
// its line, fixes it, sees the difference, applies, sees the new tag's value in the page and
// through node-opcua-client, opens its trend, restores the previous version and sees the tag
// gone. Screenshots go to a temporary folder (kept; its path is printed).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { AttributeIds, StatusCodes as UaStatus } from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type Connection } from "../conformance/helpers.js";
import { makeCert } from "../security/certs.js";
import { requirePeers, skipWithout } from "../helpers/ci.js";
import { CHROMIUM_MISSING, launchChromium, logIn } from "./browser.js";
import { startWebGateway, type WebGateway } from "./helpers.js";

const MISSING = CHROMIUM_MISSING;

const MAP = `# the line's devices
devices:
  - name: sim
    driver: simulator
    rate: 200ms
    tags:
      - { name: ramp, address: input:0, history: true }
      - { name: level, address: input:1 }
`;
const ISO_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

describe.skipIf(skipWithout(MISSING))(`the settings editor in chromium${MISSING ? ` (needs ${MISSING})` : ""}`, () => {
  let g: WebGateway;
  let browser: Browser;
  let page: Page;
  let opc: Connection;
  const work = mkdtempSync(join(tmpdir(), "fieldgate-editor-"));
  const shots = mkdtempSync(join(tmpdir(), "fieldgate-editor-screenshots-"));

  beforeAll(async () => {
    requirePeers(MISSING);
    const dir = join(work, "gateway");
    mkdirSync(dir);
    writeFileSync(join(dir, "devices.yaml"), MAP);
    g = await startWebGateway({ dir, extraYaml: "devices: ./devices.yaml\nhistory:\n  flushInterval: 200ms\n", web: "  updateInterval: 250ms\n" });
    // A rejected client certificate with a long subject and URI: the table must still fit.
    const cert = await makeCert({ commonName: "SCADA station 7 of the packaging line, plant 3", applicationUri: "urn:plant-3.example.com:packaging-line:scada-station-7:ignition-gateway-8" });
    writeFileSync(join(dir, "data", "pki", "rejected", "certs", "station7.der"), cert.der);
    browser = await launchChromium(g, join(work, "chromium-profile"));
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 1000 });
    page.on("dialog", (d) => void d.accept());
    opc = await connect(g.opcUrl, "fieldgate-editor-test");
  }, 60_000);

  afterAll(async () => {
    await opc?.close();
    await browser?.close();
    await g?.stop();
    rmSync(work, { recursive: true, force: true });
    console.log(`editor screenshots: ${shots}`);
  });

  const read = async (nodeId: string) => opc.session.read({ nodeId, attributeId: AttributeIds.Value });
  const toast = (re: RegExp, timeout = 15_000) =>
    page.waitForFunction((src: string) => new RegExp(src).test(document.getElementById("toast")?.textContent ?? ""), { timeout, polling: 100 }, re.source);
  /** Puts the caret after the first occurrence of `after` in the editor's text and types `text` as a person would. */
  const typeAt = async (after: string, text: string, replace = 0) => {
    await page.evaluate(
      (a: string, n: number) => {
        const ta = document.getElementById("editor-text") as HTMLTextAreaElement;
        const at = ta.value.indexOf(a) + a.length;
        ta.focus();
        ta.setSelectionRange(at, at + n);
      },
      after,
      replace,
    );
    await page.keyboard.type(text);
  };

  it("paints the gateway's state at once, with ISO times, and a certificate table that fits 1280 px", async () => {
    await logIn(page, g, "admin");
    // The same page with scripts off: what the first paint shows, before any server-sent event.
    const bare = await browser.newPage();
    await bare.setViewport({ width: 1280, height: 1000 });
    await bare.setJavaScriptEnabled(false);
    await bare.goto(g.url, { waitUntil: "load" });
    expect(await bare.$eval("#live", (e) => e.textContent)).toMatch(/^live \d{2}:\d{2}:\d{2}$/);
    expect(await bare.$eval('#devices tr[data-device="sim"] td.state', (e) => e.textContent)).toMatch(/^(ok|waiting)/);
    expect(await bare.$eval("#tags-device", (e) => e.textContent)).toBe("sim");
    expect(await bare.$$eval("#tags tbody tr", (rows) => rows.map((r) => (r as HTMLElement).dataset.tag))).toEqual(["ramp", "level"]);
    expect(await bare.$eval("#gw dd[data-key=Endpoint]", (e) => e.textContent)).toBe(g.server.endpointUrl);
    expect(await bare.$$eval("#log li", (l) => l.length)).toBeGreaterThan(0);
    await bare.screenshot({ path: join(shots, "0-first-paint.png"), fullPage: true });
    await bare.close();

    await page.waitForSelector('#certs tr[data-list="rejected"]', { timeout: 15_000 });
    await page.waitForFunction(() => document.querySelector('#tags tr[data-tag="ramp"] td:nth-child(4)')?.textContent === "Good", { timeout: 15_000 });
    const times = await page.$$eval("#tags tbody td:nth-child(5), #sessions tbody td:nth-child(6)", (tds) => tds.map((td) => td.textContent ?? ""));
    for (const t of times) expect(t).toMatch(ISO_TIME);
    expect(await page.$eval("#log li time", (e) => e.textContent)).toMatch(/^\d{2}:\d{2}:\d{2}$/);
    // Nothing wider than the window, the certificate table included.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
    expect(await page.$eval("#certs-card", (e) => e.scrollWidth - e.clientWidth)).toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(shots, "1-page.png"), fullPage: true });
  }, 60_000);

  it("checks a typo at its line, shows the difference, applies the new tag, and the tag has its value", async () => {
    await page.click("#edit-devices");
    await page.waitForFunction(() => (document.getElementById("editor-text") as HTMLTextAreaElement | null)?.value.includes("name: level"), { timeout: 10_000 });
    await typeAt("{ name: level, address: input:1 }\n", "      - { name: extra, adress: input:3, history: true }\n");
    // Checked as typed: the message at line 9, marked in the gutter.
    await page.waitForFunction(() => document.getElementById("editor-status")?.className === "invalid", { timeout: 15_000 });
    const issues = await page.$$eval("#editor-issues li", (lis) => lis.map((li) => li.textContent));
    expect(issues).toContain('9:24 devices[0].tags[2].adress: unknown key; did you mean "address"?');
    expect(await page.$$eval("#editor-gutter b.issue", (bs) => bs.map((b) => b.textContent))).toEqual(["9"]);
    await page.screenshot({ path: join(shots, "2-typo.png") });

    await typeAt("{ name: extra, ", "address", "adress".length);
    await page.waitForFunction(() => document.getElementById("editor-status")?.className === "valid", { timeout: 15_000 });
    expect(await page.$$eval("#editor-gutter b.issue", (bs) => bs.length)).toBe(0);

    await page.click("#editor-changes");
    await page.waitForSelector("#editor-diff");
    expect(await page.$$eval("#editor-diff .add", (rows) => rows.map((r) => [(r as HTMLElement).dataset.new, r.lastChild!.textContent]))).toEqual([["9", "+       - { name: extra, address: input:3, history: true }"]]);
    expect(await page.$$eval("#editor-diff .del", (rows) => rows.length)).toBe(0);
    await page.screenshot({ path: join(shots, "3-diff.png"), fullPage: true });

    await page.click("#editor-apply");
    await toast(/^device map applied: changed sim; 0 unchanged$/);
    await page.waitForFunction(() => document.querySelector('#tags tr[data-tag="extra"] td:nth-child(4)')?.textContent === "Good", { timeout: 15_000 });
    const shown = await page.$eval('#tags tr[data-tag="extra"] td:nth-child(2)', (td) => td.textContent);
    expect(shown).toMatch(/^-?\d+$/);
    const dv = await read("ns=1;s=sim.extra");
    expect(dv.statusCode.value).toBe(UaStatus.Good.value);
    expect(typeof dv.value.value).toBe("number");
    await page.screenshot({ path: join(shots, "4-applied.png"), fullPage: true });
  }, 60_000);

  it("draws the new tag's trend", async () => {
    await page.click('#tags tr[data-tag="extra"] td:first-child');
    await page.waitForSelector("#trend-card:not([hidden]) #trend svg", { timeout: 10_000 });
    expect(await page.$eval("#trend-name", (e) => e.textContent)).toBe("sim.extra");
    // The last hour from the history, with the values since the page opened after it.
    await page.waitForFunction(() => document.querySelectorAll("#trend svg polyline").length > 0 && /^\d+ points, from /.test(document.getElementById("trend-caption")?.textContent ?? ""), { timeout: 20_000 });
    const points = await page.$eval("#trend svg polyline", (p) => (p.getAttribute("points") ?? "").trim().split(" ").length);
    expect(points).toBeGreaterThan(0);
    await page.screenshot({ path: join(shots, "5-trend.png"), fullPage: true });
    // A tag without history: the values the page received since it opened.
    await page.click('#tags tr[data-tag="level"] td:first-child');
    await page.waitForFunction(() => /values since the page opened$/.test(document.getElementById("trend-caption")?.textContent ?? ""), { timeout: 10_000 });
    expect(await page.$eval('#trend-ranges button[data-range="1h"]', (b) => (b as HTMLButtonElement).disabled)).toBe(true);
  }, 60_000);

  it("restores the previous version, and the tag is gone", async () => {
    await page.click("#editor-versions");
    await page.waitForSelector("#editor-versions-table tr[data-version]");
    expect(await page.$$eval("#editor-versions-table tr[data-version]", (rows) => rows.map((r) => [(r as HTMLElement).dataset.version, r.children[2]!.textContent]))).toEqual([
      ["2", "admin"],
      ["1", "on disk"],
    ]);
    await page.screenshot({ path: join(shots, "6-versions.png"), fullPage: true });
    await page.click('#editor-versions-table tr[data-version="1"] button:nth-child(2)');
    await toast(/^device map applied \(version 1 restored\): changed sim; 0 unchanged$/);
    await page.waitForFunction(() => document.querySelector('#tags tr[data-tag="extra"]') === null && document.querySelector('#tags tr[data-tag="level"]') !== null, { timeout: 15_000 });
    expect((await read("ns=1;s=sim.extra")).statusCode.value).toBe(UaStatus.BadNodeIdUnknown.value);
    expect(await page.$eval("#editor-text", (ta) => (ta as HTMLTextAreaElement).value)).toBe(MAP);
    await page.screenshot({ path: join(shots, "7-restored.png"), fullPage: true });
  }, 60_000);
});
