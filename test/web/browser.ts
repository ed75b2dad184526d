// Debian's chromium driven by puppeteer-core, for the status page's browser tests: headless, with
// a profile of the test's own, trusting exactly the gateway's certificate (its SPKI's SHA-256:
// nothing else is ignored); and the page's login as a person does it.
import { createHash, X509Certificate } from "node:crypto";
import { existsSync } from "node:fs";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { PASSWORDS, type WebGateway } from "./helpers.js";

export const CHROMIUM = "/usr/bin/chromium";
/** What the browser tests miss, in words; "" when chromium is there. */
export const CHROMIUM_MISSING = existsSync(CHROMIUM) ? "" : "Debian's chromium (apt-get install chromium)";

/** Chromium for the page of `g`, its profile in `profileDir`. */
export function launchChromium(g: WebGateway, profileDir: string): Promise<Browser> {
  const spki = createHash("sha256").update(new X509Certificate(g.server.pki!.ownCertificate).publicKey.export({ type: "spki", format: "der" })).digest("base64");
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: profileDir,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic", `--ignore-certificate-errors-spki-list=${spki}`],
  });
}

/** Opens the page of `g` in `page` and logs in as `user` with the login form. */
export async function logIn(page: Page, g: WebGateway, user: keyof typeof PASSWORDS): Promise<void> {
  await page.goto(g.url, { waitUntil: "load" });
  await page.type("input[name=user]", user);
  await page.type("input[name=password]", PASSWORDS[user]);
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("button[type=submit]")]);
}
