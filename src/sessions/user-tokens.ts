// User identity tokens on the wire (Part 4 v1.05 §7.41): the UserTokenPolicies an endpoint offers,
// the decryption of a UserNameIdentityToken's password (legacy encrypted token secret, §7.41.2.2)
// and the proof of possession of an X509IdentityToken (userTokenSignature, ActivateSession §5.6.3
// in v1.04's numbering, which the rest of the code cites). The asymmetric
// algorithms are those of the channel's SecurityPolicy (security/policies.ts).
import { constants, privateDecrypt, timingSafeEqual, X509Certificate, type KeyObject } from "node:crypto";
import { asymmetricVerify, policyByUri, SECURITY_POLICY_URI_PREFIX, splitLeaf } from "../security/policies.js";
import type { ExtensionObject } from "../ua/builtins.js";
import { UserTokenType } from "../ua/generated/enums.js";
import { ObjectIds } from "../ua/generated/node-ids.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { AnonymousIdentityToken, SignatureData, UserNameIdentityToken, UserTokenPolicy, X509IdentityToken } from "../ua/generated/types.js";
import type { Role } from "./roles.js";
import { certificateThumbprint, LoginResult, type UserDirectory } from "./users.js";

export const ANONYMOUS_POLICY_ID = "anonymous";
export const USERNAME_POLICY_ID = "username";
export const CERTIFICATE_POLICY_ID = "certificate";

export const SECURITY_POLICY_NONE_URI = `${SECURITY_POLICY_URI_PREFIX}None`;

/** EncryptionAlgorithm of a UserNameIdentityToken by the policy's OAEP hash (Part 7). */
const OAEP_URI = { sha1: "http://www.w3.org/2001/04/xmlenc#rsa-oaep", sha256: "http://opcfoundation.org/UA/security/rsa-oaep-sha2-256" } as const;

/** Whether user tokens can be protected under this SecurityPolicy (an RSA policy we know). */
export function protectsUserTokens(securityPolicyUri: string): boolean {
  return policyByUri(securityPolicyUri) !== undefined;
}

export interface UserTokenPolicyOptions {
  readonly allowAnonymous: boolean;
  readonly passwords: boolean;
  readonly certificates: boolean;
}

/**
 * The UserTokenPolicies of an endpoint with `securityPolicyUri`. UserName and X509 are offered
 * only on signed endpoints: on SecurityPolicy None the session could be taken over after the
 * login whatever protects the token itself, so secrets never travel there. The token policy
 * names the channel's policy explicitly (Part 4 §7.41.4: required when the mode is Sign only).
 */
export function userTokenPolicies(securityPolicyUri: string, options: UserTokenPolicyOptions): UserTokenPolicy[] {
  const tokens: UserTokenPolicy[] = [];
  const base = { issuedTokenType: undefined, issuerEndpointUrl: undefined };
  if (options.allowAnonymous) tokens.push({ policyId: ANONYMOUS_POLICY_ID, tokenType: UserTokenType.Anonymous, ...base, securityPolicyUri: undefined });
  if (!protectsUserTokens(securityPolicyUri)) return tokens;
  if (options.passwords) tokens.push({ policyId: USERNAME_POLICY_ID, tokenType: UserTokenType.UserName, ...base, securityPolicyUri });
  if (options.certificates) tokens.push({ policyId: CERTIFICATE_POLICY_ID, tokenType: UserTokenType.Certificate, ...base, securityPolicyUri });
  return tokens;
}

/** The EncryptionAlgorithm a client must name in a UserNameIdentityToken under this policy. */
export function passwordEncryptionUri(securityPolicyUri: string): string | undefined {
  const alg = policyByUri(securityPolicyUri);
  return alg && OAEP_URI[alg.oaepHash];
}

/**
 * Decrypts a legacy encrypted token secret (Part 4 §7.41.2.2): RSA-OAEP blocks of the key size
 * holding [UInt32 length][secret][serverNonce], where length counts secret and nonce. Returns
 * the secret, or undefined when the bytes do not decrypt, are malformed, or carry another nonce
 * (a replayed token): the caller treats all of these as a failed login.
 */
export function decryptLegacySecret(securityPolicyUri: string, privateKey: KeyObject, data: Buffer, serverNonce: Buffer): Buffer | undefined {
  const algorithms = policyByUri(securityPolicyUri);
  const modulusBits = privateKey.asymmetricKeyDetails?.modulusLength;
  if (!algorithms || modulusBits === undefined) return undefined;
  const block = modulusBits / 8;
  if (data.length === 0 || data.length % block !== 0) return undefined;
  const parts: Buffer[] = [];
  try {
    for (let off = 0; off < data.length; off += block) {
      parts.push(
        privateDecrypt({ key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: algorithms.oaepHash }, data.subarray(off, off + block)),
      );
    }
  } catch {
    return undefined;
  }
  const plain = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  if (plain.length < 4) return undefined;
  const length = plain.readUInt32LE(0);
  if (length !== plain.length - 4 || length < serverNonce.length) return undefined;
  const nonce = plain.subarray(plain.length - serverNonce.length);
  if (serverNonce.length === 0 || !timingSafeEqual(nonce, serverNonce)) return undefined;
  return plain.subarray(4, plain.length - serverNonce.length);
}

/** The first certificate of certificateData (a chain may follow it), parsed; undefined when it is not one. */
export function parseCertificate(der: Buffer): X509Certificate | undefined {
  try {
    return new X509Certificate(splitLeaf(der).leaf);
  } catch {
    return undefined;
  }
}

/**
 * Checks a userTokenSignature (Part 4 §5.6.3): the token certificate's key signed
 * serverCertificate + serverNonce with the asymmetric signature algorithm of the policy.
 */
export function verifyUserTokenSignature(
  securityPolicyUri: string,
  certificate: X509Certificate,
  serverCertificate: Buffer,
  serverNonce: Buffer,
  algorithm: string | undefined,
  signature: Buffer | undefined,
): boolean {
  const alg = policyByUri(securityPolicyUri);
  if (!alg || algorithm !== alg.asymmetricSignatureUri || !signature || signature.length === 0) return false;
  return asymmetricVerify(alg, [serverCertificate, serverNonce], signature, certificate.publicKey);
}

// ---------------------------------------------------------------------------------------------
// The identity decision of ActivateSession.

/** The server's own certificate (as sent in CreateSession) and its private key. */
export interface OwnKeys {
  readonly ownCertificate: Buffer;
  readonly ownPrivateKey: KeyObject;
}

export interface IdentityContext {
  readonly users: UserDirectory;
  readonly allowAnonymous: boolean;
  readonly anonymousRole: Role;
  /** The SecurityPolicyUri of the channel the request came on. */
  readonly securityPolicyUri: string;
  /** Undefined only while the server has no certificate (policy None everywhere). */
  readonly keys: OwnKeys | undefined;
  /** The serverNonce the client was last given (CreateSession or the previous ActivateSession). */
  readonly serverNonce: Buffer;
  /** The client's IP address, for the per-address lockout. */
  readonly remoteAddress: string;
  /** Validates a user certificate like a client certificate (trust lists, dates, key, ...): Good or why not. */
  readonly validateCertificate: (der: Buffer) => number | Promise<number>;
}

export interface Identity {
  readonly role: Role;
  /** Who, for the identity check of a session moved to another channel, and for logs. */
  readonly userId: string;
}

/** User names longer than this are refused before any work (Part 4 leaves the length open). */
const MAX_USER_NAME = 256;
const DENIED: Readonly<{ status: number }> = Object.freeze({ status: StatusCodes.BadUserAccessDenied });

/**
 * Decides who a userIdentityToken is (Part 4 §5.6.3, §7.41): the identity and role, or the
 * StatusCode that ends the ActivateSession. A wrong password, an unknown user and a lockout are
 * all BadUserAccessDenied after the same work (UserDirectory.checkPassword).
 */
export async function authenticateToken(
  token: ExtensionObject | undefined,
  userTokenSignature: SignatureData,
  ic: IdentityContext,
): Promise<Identity | { status: number }> {
  const typeId = token?.typeId.namespace === 0 ? token.typeId.value : -1;
  // Part 4 §5.6.3: a null token is the same as an anonymous one.
  if (token === undefined || (typeId === 0 && token.body === null) || typeId === ObjectIds.AnonymousIdentityToken_Encoding_DefaultBinary) {
    const body = token?.body as AnonymousIdentityToken | null | undefined;
    if (body && !Buffer.isBuffer(body) && "policyId" in body && body.policyId !== undefined && body.policyId !== ANONYMOUS_POLICY_ID) {
      return { status: StatusCodes.BadIdentityTokenInvalid };
    }
    if (!ic.allowAnonymous) return { status: StatusCodes.BadIdentityTokenRejected };
    return { role: ic.anonymousRole, userId: "" };
  }
  const isUserName = typeId === ObjectIds.UserNameIdentityToken_Encoding_DefaultBinary;
  const isX509 = typeId === ObjectIds.X509IdentityToken_Encoding_DefaultBinary;
  if ((!isUserName && !isX509) || token.body === null || Buffer.isBuffer(token.body)) return { status: StatusCodes.BadIdentityTokenInvalid };
  // A well-formed token the server will not take on this channel: secrets only on signed channels.
  if (!protectsUserTokens(ic.securityPolicyUri) || ic.keys === undefined) return { status: StatusCodes.BadIdentityTokenRejected };
  return isUserName ? userNameIdentity(token.body as UserNameIdentityToken, ic, ic.keys) : x509Identity(token.body as X509IdentityToken, userTokenSignature, ic, ic.keys);
}

async function userNameIdentity(t: UserNameIdentityToken, ic: IdentityContext, keys: OwnKeys): Promise<Identity | { status: number }> {
  if (t.policyId !== USERNAME_POLICY_ID || !ic.users.acceptsPasswords) return { status: StatusCodes.BadIdentityTokenInvalid };
  const userName = t.userName ?? "";
  if (userName.length === 0 || userName.length > MAX_USER_NAME) return DENIED;
  // The token names the algorithm it was encrypted with; only the policy's own is accepted, so
  // a password is never taken in plain text on these endpoints.
  if (t.encryptionAlgorithm !== passwordEncryptionUri(ic.securityPolicyUri)) return { status: StatusCodes.BadIdentityTokenInvalid };
  const password = t.password ? decryptLegacySecret(ic.securityPolicyUri, keys.ownPrivateKey, t.password, ic.serverNonce) : undefined;
  const r = await ic.users.checkPassword(userName, password, ic.remoteAddress);
  return r.result === LoginResult.Ok ? { role: r.role!, userId: `user:${userName}` } : DENIED;
}

async function x509Identity(t: X509IdentityToken, sig: SignatureData, ic: IdentityContext, keys: OwnKeys): Promise<Identity | { status: number }> {
  if (t.policyId !== CERTIFICATE_POLICY_ID || !ic.users.acceptsCertificates) return { status: StatusCodes.BadIdentityTokenInvalid };
  const der = t.certificateData;
  const cert = der && der.length > 0 ? parseCertificate(der) : undefined;
  if (!der || !cert) return { status: StatusCodes.BadIdentityTokenInvalid };
  if (!verifyUserTokenSignature(ic.securityPolicyUri, cert, keys.ownCertificate, ic.serverNonce, sig.algorithm, sig.signature)) {
    return { status: StatusCodes.BadUserSignatureInvalid };
  }
  const validity = await ic.validateCertificate(der);
  // Refused as a token (Part 4 §5.6.3 result codes); which fault of the certificate (untrusted,
  // expired, revoked, ...) is not told, as with the other failed logins. pki/rejected keeps it.
  if (validity !== StatusCodes.Good) return { status: StatusCodes.BadIdentityTokenRejected };
  const thumbprint = certificateThumbprint(splitLeaf(der).leaf);
  const role = ic.users.certificateRole(thumbprint);
  return role === undefined ? DENIED : { role, userId: `cert:${thumbprint}` };
}
