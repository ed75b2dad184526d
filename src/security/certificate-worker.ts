// The worker of createOwnCertificate (certificates.ts): node-opcua-crypto signs the certificate
// here, so that its modules (x509, asn1 and their sources) live in an isolate that ends with the
// work instead of in the gateway's heap for good. The key is made by the main thread with
// node:crypto and comes as PKCS#8; the answer is the certificate's DER.
import { webcrypto } from "node:crypto";
import { parentPort, workerData } from "node:worker_threads";
import type { LinkData } from "../worker-link.js";
import { serveLink } from "../worker-serve.js";
import type { CertificateReply, CertificateRequest } from "./certificates.js";

async function sign(req: CertificateRequest): Promise<Uint8Array> {
  const { CertificatePurpose, convertPEMtoDER, createSelfSignedCertificate } = await import("node-opcua-crypto");
  const privateKey = await webcrypto.subtle.importKey("pkcs8", req.pkcs8, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, true, ["sign"]);
  const { cert } = await createSelfSignedCertificate({
    privateKey,
    subject: req.subject,
    applicationUri: req.applicationUri,
    dns: [...req.dns],
    ip: [...req.ip],
    notBefore: new Date(req.notBefore),
    notAfter: new Date(req.notAfter),
    purpose: CertificatePurpose.ForApplication,
  });
  return convertPEMtoDER(cert);
}

serveLink<CertificateRequest & { readonly seq: number }>(parentPort!, workerData as LinkData, async (req) => {
  const certificate = await sign(req);
  return { reply: { certificate } satisfies Omit<CertificateReply, "seq">, last: true };
});
