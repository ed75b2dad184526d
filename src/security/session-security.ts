// The channel-security parts of CreateSession and ActivateSession (Part 4 §5.6.2, §5.6.3): the
// server proves it holds the key of its certificate (serverSignature over clientCertificate +
// clientNonce), the client proves the same (clientSignature over serverCertificate + serverNonce),
// and the client certificate of the session is the one of the channel, with a matching
// applicationUri.
import { X509Certificate } from "node:crypto";
import { UaStatusError } from "../ua/errors.js";
import { MessageSecurityMode } from "../ua/generated/enums.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { SignatureData } from "../ua/generated/types.js";
import type { Pki } from "./pki.js";
import { asymmetricSign, asymmetricVerify, policyByUri, splitLeaf } from "./policies.js";

/** What CreateSession needs of the channel it came on. */
export interface SessionChannel {
  readonly securityPolicyUri: string;
  readonly securityMode: MessageSecurityMode;
  readonly clientCertificate: Buffer | undefined;
}

/** Part 4 §5.6.2: nonces of at least 32 bytes on signed channels. */
export const MIN_SESSION_NONCE_LENGTH = 32;

function isSigned(channel: SessionChannel): boolean {
  return channel.securityMode === MessageSecurityMode.Sign || channel.securityMode === MessageSecurityMode.SignAndEncrypt;
}

export interface CreateSessionSecurity {
  serverCertificate: Buffer | undefined;
  serverSignature: SignatureData;
}

const NO_SIGNATURE: SignatureData = Object.freeze({ algorithm: undefined, signature: undefined });

/**
 * Checks CreateSession's clientNonce, clientCertificate and ApplicationDescription against the
 * channel, and signs clientCertificate + clientNonce. Throws UaStatusError (BadNonceInvalid,
 * BadCertificateInvalid, BadCertificateUriInvalid, ...) for a fault that refuses the session.
 * On a None channel nothing is checked and the certificate is still returned when there is one
 * (Part 4 §5.6.2: clients may want it for user token encryption).
 */
export function createSessionSecurity(
  channel: SessionChannel,
  pki: Pki | undefined,
  clientNonce: Buffer | undefined,
  clientCertificate: Buffer | undefined,
  clientApplicationUri: string | undefined,
): CreateSessionSecurity {
  if (!isSigned(channel) || pki === undefined) return { serverCertificate: pki?.ownCertificate, serverSignature: NO_SIGNATURE };
  const alg = policyByUri(channel.securityPolicyUri);
  if (alg === undefined) throw new UaStatusError(StatusCodes.BadSecurityPolicyRejected);
  if (clientNonce === undefined || clientNonce.length < MIN_SESSION_NONCE_LENGTH) {
    throw new UaStatusError(StatusCodes.BadNonceInvalid, `clientNonce must have at least ${MIN_SESSION_NONCE_LENGTH} bytes`);
  }
  if (clientCertificate === undefined || clientCertificate.length === 0) {
    throw new UaStatusError(StatusCodes.BadCertificateInvalid, "no clientCertificate on a signed channel");
  }
  let leaf: Buffer;
  try {
    leaf = splitLeaf(clientCertificate).leaf;
  } catch {
    throw new UaStatusError(StatusCodes.BadCertificateInvalid);
  }
  // Part 4 §5.6.2: the certificate must be the one that secured the channel.
  if (channel.clientCertificate === undefined || !leaf.equals(channel.clientCertificate)) {
    throw new UaStatusError(StatusCodes.BadCertificateInvalid, "clientCertificate differs from the channel's");
  }
  const status = pki.verifyCertificate(clientCertificate, { applicationUri: clientApplicationUri ?? "", purpose: "application", saveRejected: false });
  if (status !== StatusCodes.Good) throw new UaStatusError(status, "client certificate");
  return {
    serverCertificate: pki.ownCertificate,
    serverSignature: {
      algorithm: alg.asymmetricSignatureUri,
      signature: asymmetricSign(alg, [leaf, clientNonce], pki.ownPrivateKey),
    },
  };
}

/**
 * ActivateSession (Part 4 §5.6.3): on a signed channel, clientSignature must be the client's
 * signature over serverCertificate + the serverNonce of the last CreateSession/ActivateSession.
 * Returns Good or BadApplicationSignatureInvalid.
 */
export function verifyClientSignature(channel: SessionChannel, pki: Pki | undefined, serverNonce: Buffer, clientSignature: SignatureData | undefined): number {
  if (!isSigned(channel)) return StatusCodes.Good;
  const alg = policyByUri(channel.securityPolicyUri);
  if (alg === undefined || pki === undefined || channel.clientCertificate === undefined) return StatusCodes.BadApplicationSignatureInvalid;
  const sig = clientSignature?.signature;
  if (sig === undefined || sig.length === 0 || clientSignature?.algorithm !== alg.asymmetricSignatureUri) return StatusCodes.BadApplicationSignatureInvalid;
  const key = new X509Certificate(channel.clientCertificate).publicKey;
  return asymmetricVerify(alg, [pki.ownCertificate, serverNonce], sig, key) ? StatusCodes.Good : StatusCodes.BadApplicationSignatureInvalid;
}

/** Whether the channel's (policy, mode) is one of the endpoints offered for sessions. */
export function channelOffered(channel: SessionChannel, offers: readonly { securityPolicyUri?: string; securityMode: MessageSecurityMode }[]): boolean {
  return offers.some((o) => o.securityPolicyUri === channel.securityPolicyUri && o.securityMode === channel.securityMode);
}
