// Certificates and keys made in the tests (node-opcua-crypto, as the gateway makes its own).
import { generateKeyPairSync, webcrypto, type KeyObject } from "node:crypto";
import { CertificatePurpose, convertPEMtoDER, createSelfSignedCertificate } from "node-opcua-crypto";

export interface TestIdentity {
  certificate: Buffer;
  privateKey: KeyObject;
}

/** A self-signed RSA certificate: a user certificate by default, an application one with an applicationUri. */
export async function makeCertificate(opts: { cn: string; applicationUri?: string; bits?: number; days?: number } = { cn: "user" }): Promise<TestIdentity> {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: opts.bits ?? 2048 });
  const cryptoKey = await webcrypto.subtle.importKey(
    "pkcs8",
    privateKey.export({ type: "pkcs8", format: "der" }),
    { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
    true,
    ["sign"],
  );
  const now = Date.now();
  const { cert } = await createSelfSignedCertificate({
    privateKey: cryptoKey,
    subject: `/CN=${opts.cn}`,
    notBefore: new Date(now - 86_400_000),
    notAfter: new Date(now + (opts.days ?? 30) * 86_400_000),
    ...(opts.applicationUri ? { applicationUri: opts.applicationUri, dns: ["localhost"] } : {}),
    purpose: opts.applicationUri ? CertificatePurpose.ForApplication : CertificatePurpose.ForUserAuthentication,
  });
  return { certificate: convertPEMtoDER(cert), privateKey };
}
