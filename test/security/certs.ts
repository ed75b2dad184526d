// Certificates made in the tests with @peculiar/x509 (through node-opcua-crypto's re-export):
// good ones, and ones with exactly one defect (expired, not yet valid, SHA-1, 1024-bit, tampered,
// wrong applicationUri, revoked through a CA's CRL).
import { createPrivateKey, webcrypto, type KeyObject } from "node:crypto";
import { x509 } from "node-opcua-crypto";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export interface TestCert {
  der: Buffer;
  pem: string;
  keyPem: string;
  key: KeyObject;
  keys: CryptoKeyPair;
  cert: x509.X509Certificate;
  serialHex: string;
}

export interface CertOptions {
  applicationUri?: string;
  commonName?: string;
  bits?: number;
  hash?: "SHA-256" | "SHA-1";
  notBefore?: Date;
  notAfter?: Date;
  ca?: boolean;
  /** Signs with this CA instead of self-signing. */
  issuer?: TestCert;
  keyUsage?: number;
}

let serial = 0x1000 + Math.floor(Math.random() * 0x100000);

const APP_USAGE =
  x509.KeyUsageFlags.digitalSignature |
  x509.KeyUsageFlags.nonRepudiation |
  x509.KeyUsageFlags.keyEncipherment |
  x509.KeyUsageFlags.dataEncipherment |
  x509.KeyUsageFlags.keyCertSign;
const CA_USAGE = x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign;

export async function makeCert(o: CertOptions = {}): Promise<TestCert> {
  const alg = { name: "RSASSA-PKCS1-v1_5", hash: o.hash ?? "SHA-256", publicExponent: new Uint8Array([1, 0, 1]), modulusLength: o.bits ?? 2048 };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ["sign", "verify"])) as CryptoKeyPair;
  const name = `CN=${o.commonName ?? "fieldgate-test"}, O=fieldgate tests`;
  const serialHex = (serial++).toString(16).padStart(8, "0");
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(o.ca === true, undefined, true),
    new x509.KeyUsagesExtension(o.keyUsage ?? (o.ca ? CA_USAGE : APP_USAGE), true),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  if (!o.ca) {
    extensions.push(new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]));
    extensions.push(
      new x509.SubjectAlternativeNameExtension([
        { type: "url", value: o.applicationUri ?? "urn:fieldgate:test-client" },
        { type: "dns", value: "localhost" },
      ]),
    );
  }
  if (o.issuer) extensions.push(await x509.AuthorityKeyIdentifierExtension.create(o.issuer.keys.publicKey));
  const notBefore = o.notBefore ?? new Date(Date.now() - 86_400_000);
  const notAfter = o.notAfter ?? new Date(Date.now() + 365 * 86_400_000);
  const cert = o.issuer
    ? await x509.X509CertificateGenerator.create({
        serialNumber: serialHex,
        subject: name,
        issuer: o.issuer.cert.subject,
        notBefore,
        notAfter,
        signingAlgorithm: { name: "RSASSA-PKCS1-v1_5", hash: o.hash ?? "SHA-256" },
        publicKey: keys.publicKey,
        signingKey: o.issuer.keys.privateKey,
        extensions,
      })
    : await x509.X509CertificateGenerator.createSelfSigned({
        serialNumber: serialHex,
        name,
        notBefore,
        notAfter,
        signingAlgorithm: alg,
        keys,
        extensions,
      });
  const der = Buffer.from(cert.rawData);
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString("base64").replace(/.{64}/g, "$&\n")}\n-----END PRIVATE KEY-----\n`.replace("\n\n", "\n");
  return { der, pem: cert.toString("pem"), keyPem, key: createPrivateKey(keyPem), keys, cert, serialHex };
}

/** A CRL of `ca` that revokes `revoked`. */
export async function makeCrl(ca: TestCert, revoked: TestCert[]): Promise<Buffer> {
  const crl = await x509.X509CrlGenerator.create({
    issuer: ca.cert.subject,
    thisUpdate: new Date(Date.now() - 3_600_000),
    nextUpdate: new Date(Date.now() + 86_400_000),
    entries: revoked.map((r) => ({ serialNumber: r.serialHex, revocationDate: new Date(Date.now() - 60_000) })),
    signingAlgorithm: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
    signingKey: ca.keys.privateKey,
  });
  return Buffer.from(crl.rawData);
}

/** The certificate with one bit of its signature flipped (structure intact). */
export function tamper(der: Buffer): Buffer {
  const t = Buffer.from(der);
  t[t.length - 10] ^= 0x01;
  return t;
}
