// `node dist/bench/page-weight.js [--editor] [--trend]`: what the status page weighs in a
// browser. A gateway with the shipped device map (the simulator) and an admin user is started in
// this process; Debian's chromium (puppeteer-core) logs in and opens the page at 1280 px, waits
// for live values and then for `--settle` seconds of updates, and reports:
//   - the bytes of the page's own files (HTML, style sheet, scripts) as served;
//   - the page's JS heap in use and its DOM nodes (Chrome's Performance.getMetrics);
//   - the resident memory of the page's renderer process (/proc/<pid>/status VmRSS).
// With --editor the device map editor is opened (devices.yaml loaded and checked) and with
// --trend a tag's trend, before the figures are taken; both need a page that has them. With
// --tags N the map gets N more tags on disabled devices (not polled: the editor's load alone),
// in the shipped map's style, and the time from Check to its answer is given.
import { appendFileSync, readFileSync, copyFileSync, mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir, loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import puppeteer from "puppeteer-core";
import { loadGatewayConfig } from "../src/config/load.js";
import { Logger } from "../src/log.js";
import { FieldgateServer } from "../src/server/server.js";
import { hashPassword } from "../src/sessions/users.js";
import { startStatusPage } from "../src/web/web-server.js";
import { packageRoot } from "../src/package-info.js";

const CHROMIUM = "/usr/bin/chromium";
const PASSWORD = "page weight bench";

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : NaN;
}

const mb = (n: number): string => `${(n / 1048576).toFixed(1)} MB`;

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { editor: { type: "boolean" }, trend: { type: "boolean" }, settle: { type: "string", default: "20" }, tags: { type: "string", default: "0" } } });
  if (!existsSync(CHROMIUM)) {
    console.error(`page-weight: needs ${CHROMIUM} (apt-get install chromium)`);
    return 2;
  }
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-page-weight-"));
  copyFileSync(join(packageRoot(), "config", "devices.yaml"), join(dir, "devices.yaml"));
  const extra = Number(values.tags);
  if (extra > 0) {
    const lines: string[] = [];
    for (let d = 0; d * 1000 < extra; d++) {
      lines.push(`  - name: line${d}-plc`, "    driver: modbus-tcp", `    host: 192.0.2.${10 + d}`, "    enabled: false", "    tags:");
      for (let t = 0; t < 1000 && d * 1000 + t < extra; t++) {
        lines.push(`      - name: motor${t}.speed`, `        address: holding:${2 * t}`, "        type: float32", "        unit: r/min", "        scale: 0.1", "        history: true");
        lines.push(`        description: Speed of motor ${t} of line ${d}, from its drive`);
      }
    }
    appendFileSync(join(dir, "devices.yaml"), `${lines.join("\n")}\n`);
  }
  writeFileSync(
    join(dir, "gateway.yaml"),
    `server:\n  host: 127.0.0.1\n  port: 0\ndataDir: ./data\ndevices: ./devices.yaml\nsecurity:\n  securityPolicies: [None, Basic256Sha256]\n` +
      `users:\n  admin:\n    role: admin\n    password: "${await hashPassword(PASSWORD)}"\n` +
      `web:\n  enabled: true\n  host: 127.0.0.1\n  port: 0\n  tls: false\n`,
  );
  const log = new Logger({ level: "warning", journal: false, write: () => undefined });
  const server = new FieldgateServer(loadGatewayConfig(join(dir, "gateway.yaml")), log, { configFile: join(dir, "gateway.yaml") });
  await server.start();
  const web = await startStatusPage(server, log);
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: join(dir, "profile"),
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-features=SpareRendererForSitePerProcess"],
  });
  try {
    const page = await browser.newPage();
    // The blank page chromium opens with would be a renderer of its own.
    for (const p of await browser.pages()) if (p !== page) await p.close();
    await page.setViewport({ width: 1280, height: 1000 });
    await page.goto(new URL("/login", web.url).href, { waitUntil: "load" });
    await page.type("input[name=user]", "admin");
    await page.type("input[name=password]", PASSWORD);
    const served = new Map<string, number>();
    page.on("response", (r) => {
      const type = r.request().resourceType();
      if (type !== "document" && type !== "script" && type !== "stylesheet") return;
      r.buffer().then(
        (b) => served.set(new URL(r.url()).pathname, b.length),
        () => undefined,
      );
    });
    await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("button[type=submit]")]);
    await page.waitForFunction(() => document.querySelector('#tags tr[data-tag="ramp"] td:nth-child(2)')?.textContent !== "", { timeout: 20_000 });
    if (values.editor) {
      await page.click("#edit-devices");
      await page.waitForFunction(() => (document.getElementById("editor-text") as HTMLTextAreaElement | null)?.value.includes("simulator"), { timeout: 10_000 });
      const asked = Date.now();
      await page.click("#editor-check");
      await page.waitForFunction(() => document.getElementById("editor-status")?.textContent?.startsWith("valid"), { timeout: 60_000 });
      console.log(`Check answered in ${Date.now() - asked} ms (${(await page.$eval("#editor-text", (t) => (t as HTMLTextAreaElement).value.length))} characters)`);
    }
    if (values.trend) {
      await page.click('#tags tr[data-tag="ramp"] td:first-child');
      await page.waitForSelector("#trend svg polyline", { timeout: 10_000 });
    }
    await new Promise((r) => setTimeout(r, Number(values.settle) * 1000));
    const cdp = await page.createCDPSession();
    await cdp.send("HeapProfiler.collectGarbage");
    const metrics = await page.metrics();
    const info = (await (await browser.target().createCDPSession()).send("SystemInfo.getProcessInfo")) as { processInfo: { type: string; id: number }[] };
    const renderers = info.processInfo.filter((p) => p.type === "renderer").map((p) => rssOf(p.id));
    const files = [...served].sort(([a], [b]) => a.localeCompare(b));
    const total = files.reduce((n, [, b]) => n + b, 0);
    console.log(`page files: ${files.map(([p, b]) => `${p} ${b} B`).join(", ")}; total ${total} B`);
    console.log(`JS heap used ${mb(metrics.JSHeapUsedSize ?? NaN)} of ${mb(metrics.JSHeapTotalSize ?? NaN)}; DOM nodes ${metrics.Nodes}; renderer RSS ${renderers.map(mb).join(", ")}`);
    console.log(`load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  } finally {
    await browser.close();
    await web.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return 0;
}

main().then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    console.error("page-weight:", err instanceof Error ? err.stack : err);
    process.exitCode = 1;
  },
);
