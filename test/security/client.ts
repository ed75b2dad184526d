// node-opcua-client set up for the signed policies: its own PKI folder in a temp dir (never
// ~/.config/node-opcua-default), a certificate made in the test, and the gateway's certificate
// accepted (automaticallyAcceptUnknownCertificate).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { OPCUACertificateManager } from "node-opcua-certificate-manager";
import { MessageSecurityMode, OPCUAClient, SecurityPolicy } from "node-opcua-client";
import type { TestCert } from "./certs.js";

export const CLIENT_URI = "urn:fieldgate:test-client";

export const POLICIES = [
  ["Basic256Sha256", SecurityPolicy.Basic256Sha256],
  ["Aes128_Sha256_RsaOaep", SecurityPolicy.Aes128_Sha256_RsaOaep],
  ["Aes256_Sha256_RsaPss", SecurityPolicy.Aes256_Sha256_RsaPss],
] as const;

export const MODES = [
  ["Sign", MessageSecurityMode.Sign],
  ["SignAndEncrypt", MessageSecurityMode.SignAndEncrypt],
] as const;

export interface SecureClientOptions {
  dir: string;
  cert: TestCert;
  policy: SecurityPolicy;
  mode: MessageSecurityMode;
  applicationUri?: string;
  tokenLifetime?: number;
}

let n = 0;

export function secureClient(o: SecureClientOptions): OPCUAClient {
  const id = n++;
  const certificateFile = join(o.dir, `client${id}.pem`);
  const privateKeyFile = join(o.dir, `client${id}.key`);
  writeFileSync(certificateFile, o.cert.pem);
  writeFileSync(privateKeyFile, o.cert.keyPem);
  return OPCUAClient.create({
    applicationName: "fieldgate-security-test",
    applicationUri: o.applicationUri ?? CLIENT_URI,
    endpointMustExist: false,
    securityMode: o.mode,
    securityPolicy: o.policy,
    certificateFile,
    privateKeyFile,
    clientCertificateManager: new OPCUACertificateManager({ rootFolder: join(o.dir, `client-pki${id}`), automaticallyAcceptUnknownCertificate: true }),
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    defaultSecureTokenLifetime: o.tokenLifetime ?? 600_000,
    requestedSessionTimeout: 60_000,
  });
}
