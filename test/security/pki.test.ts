// The PKI on its own: folder layout and own certificate on first start, and client certificate
// validation with certificates made in the test, each with one defect (Part 4 Table 106 codes).
import { mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync, existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeCertificate, thumbprintHex } from "../../src/security/certificates.js";
import { Pki, ownCertificateFile, ownKeyFile } from "../../src/security/pki.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { makeCert, makeCrl, tamper, type TestCert } from "./certs.js";

let dir: string;
let pki: Pki;
let good: TestCert;

function trust(c: TestCert, sub = "trusted/certs"): void {
  writeFileSync(join(dir, "pki", sub, `${c.serialHex}.der`), c.der);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fieldgate-pki-"));
  pki = await Pki.open({ root: join(dir, "pki"), applicationUri: "urn:test-host:fieldgate", applicationName: "fieldgate", certificateValidityDays: 1825 });
  good = await makeCert({ commonName: "good" });
}, 60_000);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("own certificate", () => {
  it("is created on first start: RSA 2048, SHA-256, applicationUri and host names in subjectAltName, key 0600", () => {
    for (const sub of ["own/certs", "own/private", "trusted/certs", "trusted/crl", "issuers/certs", "issuers/crl", "rejected/certs"]) {
      expect(existsSync(join(dir, "pki", sub))).toBe(true);
    }
    const info = describeCertificate(pki.ownCertificate);
    expect(info.keyBits).toBe(2048);
    expect(info.signatureAlgorithm).toBe("sha256WithRSAEncryption");
    expect(info.applicationUri).toBe("urn:test-host:fieldgate");
    const x = new X509Certificate(pki.ownCertificate);
    expect(x.subjectAltName).toContain("DNS:localhost");
    expect(x.subjectAltName).toContain("IP Address:127.0.0.1");
    expect(info.notAfter.getTime() - Date.now()).toBeGreaterThan(1800 * 86_400_000);
    expect(statSync(ownKeyFile(join(dir, "pki"))).mode & 0o777).toBe(0o600);
    expect(x.checkPrivateKey(pki.ownPrivateKey)).toBe(true);
  });

  it("is kept on the next start", async () => {
    const again = await Pki.open({ root: join(dir, "pki"), applicationUri: "urn:test-host:fieldgate", applicationName: "fieldgate", certificateValidityDays: 1825 });
    expect(again.ownCertificate.equals(pki.ownCertificate)).toBe(true);
    expect(readFileSync(ownCertificateFile(join(dir, "pki"))).equals(pki.ownCertificate)).toBe(true);
  });
});

describe("client certificate validation", () => {
  it("refuses an unknown certificate as untrusted, saves it in rejected/, accepts it once moved to trusted/", () => {
    expect(pki.verifyCertificate(good.der)).toBe(StatusCodes.BadCertificateUntrusted);
    const rejected = readdirSync(join(dir, "pki/rejected/certs"));
    const file = rejected.find((f) => f.includes(thumbprintHex(good.der)));
    expect(file).toBeDefined();
    expect(file).toMatch(/^good\[[0-9a-f]{40}\]\.der$/);
    // An operator moves the file: picked up without a restart.
    renameSync(join(dir, "pki/rejected/certs", file!), join(dir, "pki/trusted/certs", file!));
    expect(pki.verifyCertificate(good.der)).toBe(StatusCodes.Good);
    // The channel view of the same checks.
    expect(pki.validateChannelCertificate(good.der)).toBe(StatusCodes.Good);
  });

  it("checks the applicationUri when asked (CreateSession)", () => {
    expect(pki.verifyCertificate(good.der, { applicationUri: "urn:fieldgate:test-client" })).toBe(StatusCodes.Good);
    expect(pki.verifyCertificate(good.der, { applicationUri: "urn:someone:else" })).toBe(StatusCodes.BadCertificateUriInvalid);
  });

  it.each([
    ["expired", { notBefore: new Date(Date.now() - 10 * 86_400_000), notAfter: new Date(Date.now() - 86_400_000) }, StatusCodes.BadCertificateTimeInvalid],
    ["not yet valid", { notBefore: new Date(Date.now() + 86_400_000), notAfter: new Date(Date.now() + 10 * 86_400_000) }, StatusCodes.BadCertificateTimeInvalid],
    ["SHA-1 signed", { hash: "SHA-1" as const }, StatusCodes.BadCertificatePolicyCheckFailed],
    ["1024-bit", { bits: 1024 }, StatusCodes.BadCertificatePolicyCheckFailed],
    ["without encipherment usage", { keyUsage: 0x80 /* digitalSignature */ }, StatusCodes.BadCertificateUseNotAllowed],
  ])("refuses a trusted but %s certificate", async (_name, options, expected) => {
    const c = await makeCert(options);
    trust(c);
    expect(pki.verifyCertificate(c.der)).toBe(expected);
  });

  it("refuses a tampered signature as invalid, even when the original is trusted", () => {
    expect(pki.verifyCertificate(tamper(good.der))).toBe(StatusCodes.BadCertificateInvalid);
    expect(pki.validateChannelCertificate(tamper(good.der))).toBe(StatusCodes.BadSecurityChecksFailed);
  });

  it("refuses chains that are too long or too big", async () => {
    const big = Buffer.concat(Array.from({ length: 40 }, () => good.der));
    expect(pki.verifyCertificate(big)).toBe(StatusCodes.BadCertificateInvalid);
    const six = Buffer.concat(Array.from({ length: 6 }, () => good.der));
    expect(pki.verifyCertificate(six)).toBe(StatusCodes.BadCertificateChainIncomplete);
  });

  it("refuses every truncation of a good certificate as invalid, without throwing", () => {
    for (let n = 0; n < good.der.length; n += 7) expect(pki.verifyCertificate(good.der.subarray(0, n))).toBe(StatusCodes.BadCertificateInvalid);
  });

  it("refuses garbage as invalid", () => {
    expect(pki.verifyCertificate(Buffer.from("not a certificate"))).toBe(StatusCodes.BadCertificateInvalid);
    expect(pki.verifyCertificate(Buffer.from([0x30, 0x82, 0xff, 0xff, 1, 2]))).toBe(StatusCodes.BadCertificateInvalid);
  });

  describe("issued by a CA", () => {
    let ca: TestCert;
    let leaf: TestCert;
    let revoked: TestCert;
    beforeAll(async () => {
      ca = await makeCert({ ca: true, commonName: "test CA" });
      leaf = await makeCert({ issuer: ca, commonName: "leaf" });
      revoked = await makeCert({ issuer: ca, commonName: "revoked" });
    }, 60_000);

    it("refuses the leaf while the CA is unknown; accepts it once the CA is trusted", () => {
      expect(pki.verifyCertificate(leaf.der)).toBe(StatusCodes.BadCertificateUntrusted);
      trust(ca);
      expect(pki.verifyCertificate(leaf.der)).toBe(StatusCodes.Good);
      expect(pki.verifyCertificate(revoked.der)).toBe(StatusCodes.Good);
    });

    it("refuses a certificate the CA's CRL revokes", async () => {
      writeFileSync(join(dir, "pki/trusted/crl/ca.crl"), await makeCrl(ca, [revoked]));
      expect(pki.verifyCertificate(revoked.der)).toBe(StatusCodes.BadCertificateRevoked);
      expect(pki.validateChannelCertificate(revoked.der)).toBe(StatusCodes.BadSecurityChecksFailed);
      expect(pki.verifyCertificate(leaf.der)).toBe(StatusCodes.Good);
    });

    it("needs the CA in issuers/ when only the leaf is trusted", async () => {
      const ca2 = await makeCert({ ca: true, commonName: "second CA" });
      const leaf2 = await makeCert({ issuer: ca2, commonName: "leaf2" });
      trust(leaf2);
      expect(pki.verifyCertificate(leaf2.der)).toBe(StatusCodes.BadCertificateChainIncomplete);
      trust(ca2, "issuers/certs");
      expect(pki.verifyCertificate(leaf2.der)).toBe(StatusCodes.Good);
      // A chain sent with the leaf (leaf first) completes it too.
      const leaf3 = await makeCert({ issuer: ca2, commonName: "leaf3" });
      trust(leaf3);
      expect(pki.verifyCertificate(Buffer.concat([leaf3.der, ca2.der]))).toBe(StatusCodes.Good);
    });
  });

  it("keeps rejected/ bounded", async () => {
    const small = await Pki.open({
      root: join(dir, "pki"),
      applicationUri: "urn:test-host:fieldgate",
      applicationName: "fieldgate",
      certificateValidityDays: 1825,
      maxRejected: 2,
    });
    for (let i = 0; i < 3; i++) expect(small.verifyCertificate((await makeCert({ commonName: `r${i}`, bits: 2048 })).der)).toBe(StatusCodes.BadCertificateUntrusted);
    expect(readdirSync(join(dir, "pki/rejected/certs")).length).toBeLessThanOrEqual(2);
  }, 60_000);
});
