// Client certificates with one defect each, presented by node-opcua-client on a signed channel:
// each refused, and saved in rejected/ where moving it to trusted/ would help (untrusted only).
// node-opcua-client reports a refused OPN as "socket disconnected" without the ERR's code: the
// code on the wire is checked with our raw client in channel.test.ts (Part 4 §5.5.2.3:
// untrusted, revoked and badly signed certificates get BadSecurityChecksFailed; time and policy
// faults are told), and the precise Part 4 Table 106 code of each case in pki.test.ts.
import { mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessageSecurityMode, SecurityPolicy } from "node-opcua-client";
import { thumbprintHex } from "../../src/security/certificates.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { makeCert, makeCrl, tamper, type CertOptions, type TestCert } from "./certs.js";
import { secureClient } from "./client.js";

let gw: TestGateway;
let dir: string;
let trusted: string;
let rejected: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fieldgate-sec-refusals-"));
  gw = await startGateway();
  trusted = join(gw.server.pki!.root, "trusted", "certs");
  rejected = join(gw.server.pki!.root, "rejected", "certs");
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Connects and opens a session; returns "Good", the StatusCode name the client reports, or "refused". */
async function attempt(cert: TestCert, applicationUri?: string): Promise<string> {
  const client = secureClient({ dir, cert, policy: SecurityPolicy.Basic256Sha256, mode: MessageSecurityMode.SignAndEncrypt, applicationUri });
  try {
    await client.connect(gw.url);
    const session = await client.createSession();
    await session.close();
    return "Good";
  } catch (err) {
    const m = /Bad[A-Za-z]+/.exec(String((err as Error).message));
    return m ? m[0] : /rejected by server|disconnected/.test(String(err)) ? "refused" : String(err);
  } finally {
    await client.disconnect().catch(() => {});
  }
}

function inRejected(c: TestCert): boolean {
  return readdirSync(rejected).some((f) => f.includes(thumbprintHex(c.der)));
}

describe("client certificates refused on the wire", () => {
  it("untrusted: refused, saved in rejected/, accepted once an operator moves it to trusted/", async () => {
    const c = await makeCert({ commonName: "newcomer" });
    expect(await attempt(c)).toBe("refused");
    expect(inRejected(c)).toBe(true);
    const file = readdirSync(rejected).find((f) => f.includes(thumbprintHex(c.der)))!;
    renameSync(join(rejected, file), join(trusted, file));
    expect(await attempt(c)).toBe("Good");
  }, 30_000);

  it.each<[string, CertOptions, number]>([
    ["expired", { notBefore: new Date(Date.now() - 10 * 86_400_000), notAfter: new Date(Date.now() - 86_400_000) }, StatusCodes.BadCertificateTimeInvalid],
    ["not yet valid", { notBefore: new Date(Date.now() + 86_400_000), notAfter: new Date(Date.now() + 10 * 86_400_000) }, StatusCodes.BadCertificateTimeInvalid],
    ["SHA-1 signed", { hash: "SHA-1" }, StatusCodes.BadCertificatePolicyCheckFailed],
  ])("%s (in trusted/): refused, not saved in rejected/", async (name, options, expected) => {
    const c = await makeCert({ ...options, commonName: name });
    writeFileSync(join(trusted, `${c.serialHex}.der`), c.der);
    expect(await attempt(c)).toBe("refused");
    expect(gw.server.pki!.verifyCertificate(c.der)).toBe(expected);
    expect(inRejected(c)).toBe(false);
  }, 30_000);

  it("1024-bit key: refused (the client itself may refuse it first)", async () => {
    const c = await makeCert({ bits: 1024, commonName: "small key" });
    writeFileSync(join(trusted, `${c.serialHex}.der`), c.der);
    expect(await attempt(c)).not.toBe("Good");
    expect(gw.server.pki!.verifyCertificate(c.der)).toBe(StatusCodes.BadCertificatePolicyCheckFailed);
  }, 30_000);

  it("tampered signature (original trusted): refused", async () => {
    const c = await makeCert({ commonName: "tampered" });
    writeFileSync(join(trusted, `${c.serialHex}.der`), c.der);
    const bad: TestCert = { ...c, der: tamper(c.der), pem: derPem(tamper(c.der)) };
    expect(await attempt(bad)).toBe("refused");
    expect(gw.server.pki!.verifyCertificate(bad.der)).toBe(StatusCodes.BadCertificateInvalid);
  }, 30_000);

  it("revoked by the CA's CRL: refused; its sibling passes", async () => {
    const ca = await makeCert({ ca: true, commonName: "plant CA" });
    const ok = await makeCert({ issuer: ca, commonName: "ok" });
    const revoked = await makeCert({ issuer: ca, commonName: "revoked" });
    writeFileSync(join(trusted, "plant-ca.der"), ca.der);
    writeFileSync(join(gw.server.pki!.root, "trusted", "crl", "plant-ca.crl"), await makeCrl(ca, [revoked]));
    expect(await attempt(ok)).toBe("Good");
    expect(await attempt(revoked)).toBe("refused");
    expect(gw.server.pki!.verifyCertificate(revoked.der)).toBe(StatusCodes.BadCertificateRevoked);
  }, 30_000);
});

function derPem(der: Buffer): string {
  return `-----BEGIN CERTIFICATE-----\n${der.toString("base64").replace(/.{64}/g, "$&\n")}\n-----END CERTIFICATE-----\n`.replace("\n\n", "\n");
}
