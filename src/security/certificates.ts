// X.509 certificates: the gateway's own application instance certificate (Part 6 §6.2.2), and
// what the PKI and the CLI read out of a DER certificate (node:crypto's X509Certificate, plus
// der.ts for what it does not expose on Node 20). node-opcua-crypto makes the certificate, on a
// worker thread of its own (certificate-worker.ts): loaded into the gateway's isolate, its modules
// and their sources would stay in its heap for as long as the process runs.
import { createHash, generateKeyPair, X509Certificate, type KeyObject } from "node:crypto";
import { hostname, networkInterfaces } from "node:os";
import { promisify } from "node:util";
import { parseCertificate, type KeyUsage } from "./der.js";
import { WorkerLink, type Reply } from "../worker-link.js";
import { builtFile } from "../worker-file.js";

const generateKeyPairAsync = promisify(generateKeyPair);

export interface OwnCertificateOptions {
  applicationUri: string;
  applicationName: string;
  /** Host names for subjectAltName dNSName (default: the host name). */
  dns?: string[];
  /** Addresses for subjectAltName iPAddress (default: the host's addresses). */
  ip?: string[];
  /** Days of validity from now. */
  validityDays: number;
  /** RSA modulus bits (2048 unless a policy needs more). */
  keyBits?: number;
}

export interface CertificateAndKey {
  /** DER. */
  certificate: Buffer;
  privateKey: KeyObject;
}

/** The host's names and non-link-local addresses, for the certificate's subjectAltName. */
export function hostNamesAndAddresses(): { dns: string[]; ip: string[] } {
  const dns = new Set<string>([hostname(), "localhost"]);
  const ip = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      // fe80:: addresses carry a zone and change with the interface; clients never use them.
      if (a.family === "IPv6" && a.address.toLowerCase().startsWith("fe80")) continue;
      ip.add(a.address);
    }
  }
  return { dns: [...dns], ip: [...ip] };
}

/**
 * A self-signed application instance certificate: RSA, SHA-256, keyUsage digitalSignature,
 * nonRepudiation, keyEncipherment, dataEncipherment (and keyCertSign, as self-signed
 * certificates carry it), extendedKeyUsage serverAuth+clientAuth, and subjectAltName with the
 * applicationUri (Part 6 §6.2.2) and the host's names and addresses.
 */
export async function createOwnCertificate(o: OwnCertificateOptions): Promise<CertificateAndKey> {
  const { privateKey } = await generateKeyPairAsync("rsa", { modulusLength: o.keyBits ?? 2048 });
  const names = hostNamesAndAddresses();
  // A day of slack before now: a gateway's clock, or its clients', is often a little off.
  const notBefore = Date.now() - 86_400_000;
  const request: CertificateRequest = {
    pkcs8: privateKey.export({ type: "pkcs8", format: "der" }),
    subject: `/CN=${escapeRdn(o.applicationName)}/O=fieldgate/DC=${escapeRdn(hostname())}`,
    applicationUri: o.applicationUri,
    dns: o.dns ?? names.dns,
    ip: o.ip ?? names.ip,
    notBefore,
    notAfter: Date.now() + o.validityDays * 86_400_000,
  };
  const link = new WorkerLink<CertificateRequest, CertificateReply>(builtFile("security/certificate-worker"), {}, { name: "certificate worker" });
  try {
    const { certificate } = await link.call(request);
    return { certificate: Buffer.from(certificate), privateKey };
  } finally {
    await link.terminate();
  }
}

/** What the certificate worker signs: the key (PKCS#8 DER) and the certificate's fields. */
export interface CertificateRequest {
  readonly pkcs8: Buffer;
  readonly subject: string;
  readonly applicationUri: string;
  readonly dns: readonly string[];
  readonly ip: readonly string[];
  /** ms since 1970. */
  readonly notBefore: number;
  readonly notAfter: number;
}

export interface CertificateReply extends Reply {
  /** DER. */
  readonly certificate: Uint8Array;
}

function escapeRdn(s: string): string {
  return s.replace(/[/=]/g, "-");
}

export function thumbprintHex(der: Buffer): string {
  return createHash("sha1").update(der).digest("hex");
}

export function derToPem(der: Buffer): string {
  const b64 = der.toString("base64").replace(/.{64}/g, "$&\n");
  return `-----BEGIN CERTIFICATE-----\n${b64}${b64.endsWith("\n") ? "" : "\n"}-----END CERTIFICATE-----\n`;
}

/** DER from a .der or .pem file's bytes; undefined when it is neither. */
export function certificateFromFile(bytes: Buffer): Buffer | undefined {
  if (bytes.length > 0 && bytes[0] === 0x30) return bytes;
  const text = bytes.toString("latin1");
  const m = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/.exec(text);
  if (!m) return undefined;
  return Buffer.from(m[1].replace(/\s+/g, ""), "base64");
}

/** What operators and the validator need to know about a certificate. */
export interface CertificateInfo {
  readonly thumbprint: string;
  /** "CN=..., O=..." */
  readonly subject: string;
  readonly issuer: string;
  /** Lower-case hex without leading zeros. */
  readonly serialNumber: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly applicationUri: string | undefined;
  readonly keyBits: number;
  /** e.g. sha256WithRSAEncryption */
  readonly signatureAlgorithm: string;
  readonly isCa: boolean;
  readonly keyUsage: KeyUsage | undefined;
  /** DER of the subject and issuer Names (chain building, CRL issuers). */
  readonly subjectName: Buffer;
  readonly issuerName: Buffer;
}

function oneLine(dn: string): string {
  return dn.split("\n").filter(Boolean).join(", ");
}

/** Parses a DER certificate (with `x509` when the caller has it already); throws on malformed input. */
export function describeCertificate(der: Buffer, x509: X509Certificate = new X509Certificate(der)): CertificateInfo {
  const f = parseCertificate(der);
  return {
    thumbprint: thumbprintHex(der),
    subject: oneLine(x509.subject),
    issuer: oneLine(x509.issuer),
    serialNumber: f.serialNumber,
    notBefore: f.notBefore,
    notAfter: f.notAfter,
    applicationUri: f.applicationUri,
    keyBits: x509.publicKey.asymmetricKeyDetails?.modulusLength ?? 0,
    signatureAlgorithm: f.signatureAlgorithm,
    isCa: x509.ca,
    keyUsage: f.keyUsage,
    subjectName: f.subject,
    issuerName: f.issuer,
  };
}
