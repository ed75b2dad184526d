// `fieldgate cert ...` on a temp config: thumbprint, list, trust (by thumbprint from rejected/,
// and from a file), reject, regenerate; and the built CLI dispatches to it.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, missingBuild, requirePeers, skipWithout } from "../helpers/built.js";
import { certCommand } from "../../src/security/cert-cli.js";
import { thumbprintHex } from "../../src/security/certificates.js";
import { Pki } from "../../src/security/pki.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { makeCert } from "./certs.js";

const unbuilt = missingBuild("src/cli.js");

let dir: string;
let config: string;

async function cert(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await certCommand(
    [...args, "--config", config],
    (s) => (out += s + "\n"),
    (s) => (err += s + "\n"),
  );
  return { code, out, err };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "fieldgate-cert-cli-"));
  config = join(dir, "gateway.yaml");
  writeFileSync(config, "server:\n  port: 0\n  applicationUri: urn:cli-test:fieldgate\ndataDir: ./data\n");
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("fieldgate cert", () => {
  it("thumbprint creates the certificate on first use and prints its SHA-1", async () => {
    const r = await cert("thumbprint");
    expect(r.code).toBe(0);
    expect(r.out.trim()).toMatch(/^[0-9a-f]{40}$/);
    expect(existsSync(join(dir, "data/pki/own/certs/fieldgate.der"))).toBe(true);
    expect((await cert("thumbprint")).out).toBe(r.out);
  }, 30_000);

  it("lists, trusts a rejected certificate by thumbprint, rejects it again, trusts a file", async () => {
    const pki = await Pki.open({ root: join(dir, "data/pki"), applicationUri: "urn:cli-test:fieldgate", applicationName: "fieldgate", certificateValidityDays: 10 });
    const c = await makeCert({ commonName: "scada" });
    expect(pki.verifyCertificate(c.der)).toBe(StatusCodes.BadCertificateUntrusted);
    const tp = thumbprintHex(c.der);
    let list = await cert("list");
    expect(list.out).toMatch(new RegExp(`rejected \\(1\\):\\n  ${tp}  CN=scada`));
    expect(list.out).toContain("urn:cli-test:fieldgate");

    const trusted = await cert("trust", tp.slice(0, 12).toUpperCase());
    expect(trusted.code).toBe(0);
    expect(trusted.out).toContain(`trusted: ${tp}`);
    expect(pki.verifyCertificate(c.der)).toBe(StatusCodes.Good);

    expect((await cert("reject", tp)).code).toBe(0);
    expect(pki.verifyCertificate(c.der, { saveRejected: false })).toBe(StatusCodes.BadCertificateUntrusted);
    list = await cert("list");
    expect(list.out).toContain("trusted (0)");

    const other = await makeCert({ commonName: "from file" });
    const file = join(dir, "other.pem");
    writeFileSync(file, other.pem);
    expect((await cert("trust", file)).code).toBe(0);
    expect(readdirSync(join(dir, "data/pki/trusted/certs")).some((f) => f.includes(thumbprintHex(other.der)))).toBe(true);
    expect(pki.verifyCertificate(other.der)).toBe(StatusCodes.Good);
  }, 30_000);

  it("refuses unknown thumbprints and subcommands", async () => {
    expect((await cert("trust", "00".repeat(20))).code).toBe(1);
    expect((await cert("trust")).code).toBe(2);
    expect((await cert("frobnicate")).code).toBe(2);
  });

  it("regenerate makes a new certificate", async () => {
    const before = (await cert("thumbprint")).out;
    const r = await cert("regenerate");
    expect(r.code).toBe(0);
    expect((await cert("thumbprint")).out).not.toBe(before);
  }, 30_000);

  it.skipIf(skipWithout(unbuilt))("is reachable from the built CLI", () => {
    requirePeers(unbuilt);
    const out = execFileSync(process.execPath, [CLI, "cert", "thumbprint", "--config", config], { encoding: "utf8", timeout: 20_000 });
    expect(out.trim()).toMatch(/^[0-9a-f]{40}$/);
  }, 30_000);
});
