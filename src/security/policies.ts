// The signing and encrypting SecurityPolicies (Part 7 profiles: Basic256Sha256,
// Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss) on node:crypto: RSA-OAEP / RSA-PKCS1-v1_5 / RSA-PSS
// for the OPN (asymmetric), P_SHA256-derived keys with HMAC-SHA256 and AES-CBC for MSG/CLO
// (symmetric, Part 6 §6.7.5). Chunk layout and padding: Part 6 §6.7.2.
//
// Every failure while unsecuring a chunk is the same UaStatusError(BadSecurityChecksFailed) with
// no detail (Part 6 §6.7.6: nothing that tells an attacker which check failed).
import {
  constants,
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  privateDecrypt,
  publicEncrypt,
  randomBytes,
  sign,
  timingSafeEqual,
  verify,
  type KeyObject,
} from "node:crypto";
import { UaStatusError } from "../ua/errors.js";
import { MessageSecurityMode } from "../ua/generated/enums.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import type { AsymmetricSecurity, ChunkCrypto, SecurityPolicy, SymmetricSecurity } from "./security-policy.js";

export const SECURITY_POLICY_URI_PREFIX = "http://opcfoundation.org/UA/SecurityPolicy#";

/** Part 7: the algorithm choices of one policy. */
export interface PolicyAlgorithms {
  readonly name: SecurePolicyName;
  readonly uri: string;
  /** RSA signature: PKCS#1 v1.5 or PSS, always SHA-256 for these policies. */
  readonly asymmetricSignature: "pkcs1" | "pss";
  /** URI put into SignatureData.algorithm (Part 4 §7.37). */
  readonly asymmetricSignatureUri: string;
  /** OAEP hash for RSA encryption. */
  readonly oaepHash: "sha1" | "sha256";
  /** AES key length in bytes (DerivedEncryptionKeyLength). */
  readonly encryptionKeyLength: 16 | 32;
  /** HMAC-SHA256 key length in bytes (DerivedSignatureKeyLength). */
  readonly signatureKeyLength: number;
  readonly nonceLength: number;
  /** Smallest and largest RSA key in bits the policy allows (Part 7 AsymmetricKeyLength). */
  readonly minKeyBits: number;
  readonly maxKeyBits: number;
  /** Security level contribution: higher is stronger (Part 4 §7.14 securityLevel is relative). */
  readonly strength: number;
}

export const SECURE_POLICY_NAMES = ["Basic256Sha256", "Aes128_Sha256_RsaOaep", "Aes256_Sha256_RsaPss"] as const;
export type SecurePolicyName = (typeof SECURE_POLICY_NAMES)[number];

const RSA_SHA256_URI = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
const RSA_PSS_SHA256_URI = "http://opcfoundation.org/UA/security/rsa-pss-sha2-256";

export const POLICY_ALGORITHMS: Readonly<Record<SecurePolicyName, PolicyAlgorithms>> = Object.freeze({
  Basic256Sha256: {
    name: "Basic256Sha256",
    uri: `${SECURITY_POLICY_URI_PREFIX}Basic256Sha256`,
    asymmetricSignature: "pkcs1",
    asymmetricSignatureUri: RSA_SHA256_URI,
    oaepHash: "sha1",
    encryptionKeyLength: 32,
    signatureKeyLength: 32,
    nonceLength: 32,
    minKeyBits: 2048,
    maxKeyBits: 4096,
    strength: 2,
  },
  Aes128_Sha256_RsaOaep: {
    name: "Aes128_Sha256_RsaOaep",
    uri: `${SECURITY_POLICY_URI_PREFIX}Aes128_Sha256_RsaOaep`,
    asymmetricSignature: "pkcs1",
    asymmetricSignatureUri: RSA_SHA256_URI,
    oaepHash: "sha1",
    encryptionKeyLength: 16,
    signatureKeyLength: 32,
    nonceLength: 32,
    minKeyBits: 2048,
    maxKeyBits: 4096,
    strength: 1,
  },
  Aes256_Sha256_RsaPss: {
    name: "Aes256_Sha256_RsaPss",
    uri: `${SECURITY_POLICY_URI_PREFIX}Aes256_Sha256_RsaPss`,
    asymmetricSignature: "pss",
    asymmetricSignatureUri: RSA_PSS_SHA256_URI,
    oaepHash: "sha256",
    encryptionKeyLength: 32,
    signatureKeyLength: 32,
    nonceLength: 32,
    minKeyBits: 2048,
    maxKeyBits: 4096,
    strength: 3,
  },
});

export function policyByUri(uri: string): PolicyAlgorithms | undefined {
  for (const name of SECURE_POLICY_NAMES) if (POLICY_ALGORITHMS[name].uri === uri) return POLICY_ALGORITHMS[name];
  return undefined;
}

const AES_BLOCK = 16;
const HMAC_SIZE = 32;
const SEQUENCE_HEADER_SIZE = 8;

function securityChecksFailed(): UaStatusError {
  return new UaStatusError(StatusCodes.BadSecurityChecksFailed);
}

// ---------------------------------------------------------------- RSA primitives

/** Signs `data` with the policy's asymmetric signature algorithm (Part 7). */
export function asymmetricSign(alg: PolicyAlgorithms, data: Buffer | Buffer[], key: KeyObject): Buffer {
  const payload = Array.isArray(data) ? Buffer.concat(data) : data;
  if (alg.asymmetricSignature === "pss") {
    return sign("sha256", payload, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
  }
  return sign("sha256", payload, key);
}

/** Verifies a signature made with the policy's asymmetric algorithm; false on any mismatch. */
export function asymmetricVerify(alg: PolicyAlgorithms, data: Buffer | Buffer[], signature: Buffer, key: KeyObject): boolean {
  const payload = Array.isArray(data) ? Buffer.concat(data) : data;
  try {
    if (alg.asymmetricSignature === "pss") {
      return verify("sha256", payload, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, signature);
    }
    return verify("sha256", payload, key, signature);
  } catch {
    return false;
  }
}

/** RSA-OAEP plaintext bytes per block: key bytes minus 2·hash - 2 (RFC 8017 §7.1.1). */
function oaepPlainBlock(keyBytes: number, hash: "sha1" | "sha256"): number {
  return keyBytes - 2 * (hash === "sha1" ? 20 : 32) - 2;
}

export function rsaKeyBytes(key: KeyObject): number {
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  return bits >> 3;
}

/** SHA-1 of a DER certificate: the thumbprint of Part 6 §6.7.2.3. */
export function thumbprint(der: Buffer): Buffer {
  return createHash("sha1").update(der).digest();
}

/**
 * OPN chunks (Part 6 §6.7.2.3, §6.7.2.5): signed with the sender's private key, then
 * encrypted with the receiver's public key in RSA-OAEP blocks. OPN chunks are encrypted in mode
 * Sign as well (Part 6 §6.7.4). With an encrypting key over 2048 bits the padding has a second,
 * ExtraPaddingSize byte.
 */
class AsymmetricCrypto implements ChunkCrypto {
  private readonly plainBlock: number;
  private readonly cipherBlock: number;
  private readonly sigSize: number;
  private readonly extraPadding: boolean;

  constructor(
    private readonly alg: PolicyAlgorithms,
    /** Key whose private half signs (send) or public half verifies (receive). */
    private readonly signKey: KeyObject,
    signKeyBytes: number,
    /** Key whose public half encrypts (send) or private half decrypts (receive). */
    private readonly cryptKey: KeyObject,
    cryptKeyBytes: number,
  ) {
    this.plainBlock = oaepPlainBlock(cryptKeyBytes, alg.oaepHash);
    this.cipherBlock = cryptKeyBytes;
    this.sigSize = signKeyBytes;
    this.extraPadding = cryptKeyBytes > 256;
  }

  maxBodySize(chunkSize: number, headersSize: number): number {
    const blocks = Math.floor((chunkSize - headersSize) / this.cipherBlock);
    return blocks * this.plainBlock - SEQUENCE_HEADER_SIZE - this.sigSize - (this.extraPadding ? 2 : 1);
  }

  trailerSize(plainLength: number): number {
    const sizeBytes = this.extraPadding ? 2 : 1;
    const rem = (plainLength + sizeBytes + this.sigSize) % this.plainBlock;
    const padding = rem === 0 ? 0 : this.plainBlock - rem;
    return padding + sizeBytes + this.sigSize;
  }

  cipherLength(plainLength: number): number {
    return (plainLength / this.plainBlock) * this.cipherBlock;
  }

  secure(buf: Buffer, chunkStart: number, encStart: number, bodyEnd: number): void {
    const plainLength = bodyEnd - encStart;
    const trailer = this.trailerSize(plainLength);
    const padding = trailer - this.sigSize - (this.extraPadding ? 2 : 1);
    let p = bodyEnd;
    buf.fill(padding & 0xff, p, p + padding + 1);
    p += padding + 1;
    if (this.extraPadding) buf[p++] = padding >> 8;
    const signature = asymmetricSign(this.alg, buf.subarray(chunkStart, p), this.signKey);
    signature.copy(buf, p);
    const total = plainLength + trailer;
    // Last block first: a block's ciphertext lands at or after its plaintext and never on a
    // block not yet encrypted.
    for (let i = total / this.plainBlock - 1; i >= 0; i--) {
      const from = encStart + i * this.plainBlock;
      const out = publicEncrypt(
        { key: this.cryptKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: this.alg.oaepHash },
        buf.subarray(from, from + this.plainBlock),
      );
      out.copy(buf, encStart + i * this.cipherBlock);
    }
  }

  unsecure(buf: Buffer, chunkStart: number, encStart: number, end: number): number {
    const cipherLength = end - encStart;
    if (cipherLength <= 0 || cipherLength % this.cipherBlock !== 0) throw securityChecksFailed();
    let out = encStart;
    for (let from = encStart; from < end; from += this.cipherBlock) {
      let plain: Buffer;
      try {
        plain = privateDecrypt(
          { key: this.cryptKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: this.alg.oaepHash },
          buf.subarray(from, from + this.cipherBlock),
        );
      } catch {
        throw securityChecksFailed();
      }
      plain.copy(buf, out);
      out += plain.length;
    }
    const sigStart = out - this.sigSize;
    if (sigStart < encStart + SEQUENCE_HEADER_SIZE + 1) throw securityChecksFailed();
    if (!asymmetricVerify(this.alg, buf.subarray(chunkStart, sigStart), buf.subarray(sigStart, out), this.signKey)) {
      throw securityChecksFailed();
    }
    return checkPadding(buf, encStart, sigStart, this.extraPadding);
  }
}

/**
 * Checks the padding before `sigStart` (Part 6 §6.7.2.5: PaddingSize, that many bytes of the
 * same value, ExtraPaddingSize for big keys); returns where the body ends.
 */
function checkPadding(buf: Buffer, encStart: number, sigStart: number, extra: boolean): number {
  let padding: number;
  let sizeBytes: number;
  if (extra) {
    padding = (buf[sigStart - 1] << 8) | buf[sigStart - 2];
    sizeBytes = 2;
  } else {
    padding = buf[sigStart - 1];
    sizeBytes = 1;
  }
  const bodyEnd = sigStart - sizeBytes - padding;
  if (bodyEnd < encStart + SEQUENCE_HEADER_SIZE) throw securityChecksFailed();
  const v = padding & 0xff;
  let bad = 0;
  for (let i = bodyEnd; i < bodyEnd + padding; i++) bad |= buf[i] ^ v;
  if (bad !== 0) throw securityChecksFailed();
  return bodyEnd;
}

// ---------------------------------------------------------------- symmetric

export interface DerivedKeys {
  readonly signingKey: Buffer;
  readonly encryptingKey: Buffer;
  readonly iv: Buffer;
}

/** P_SHA256(secret, seed) of RFC 5246 §5, `length` bytes (Part 6 §6.7.5). */
export function pSha256(secret: Buffer, seed: Buffer, length: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  let a: Buffer = seed;
  let pos = 0;
  while (pos < length) {
    a = createHmac("sha256", secret).update(a).digest();
    const block = createHmac("sha256", secret).update(a).update(seed).digest();
    pos += block.copy(out, pos);
  }
  return out;
}

/** Part 6 §6.7.5: SigningKey, EncryptingKey, InitializationVector, in that order. */
export function deriveKeys(alg: PolicyAlgorithms, secret: Buffer, seed: Buffer): DerivedKeys {
  const s = alg.signatureKeyLength;
  const e = alg.encryptionKeyLength;
  const bytes = pSha256(secret, seed, s + e + AES_BLOCK);
  return { signingKey: bytes.subarray(0, s), encryptingKey: bytes.subarray(s, s + e), iv: bytes.subarray(s + e) };
}

/** MSG/CLO chunks: HMAC-SHA256 over the chunk, then (SignAndEncrypt) AES-CBC from the sequence header on. */
class SymmetricCrypto implements ChunkCrypto {
  private readonly cipherName: string;

  constructor(
    private readonly keys: DerivedKeys,
    private readonly encrypt: boolean,
  ) {
    this.cipherName = keys.encryptingKey.length === 16 ? "aes-128-cbc" : "aes-256-cbc";
  }

  maxBodySize(chunkSize: number, headersSize: number): number {
    if (!this.encrypt) return chunkSize - headersSize - SEQUENCE_HEADER_SIZE - HMAC_SIZE;
    const room = Math.floor((chunkSize - headersSize) / AES_BLOCK) * AES_BLOCK;
    return room - SEQUENCE_HEADER_SIZE - HMAC_SIZE - 1;
  }

  trailerSize(plainLength: number): number {
    if (!this.encrypt) return HMAC_SIZE;
    const rem = (plainLength + 1 + HMAC_SIZE) % AES_BLOCK;
    return (rem === 0 ? 0 : AES_BLOCK - rem) + 1 + HMAC_SIZE;
  }

  cipherLength(plainLength: number): number {
    return plainLength;
  }

  secure(buf: Buffer, chunkStart: number, encStart: number, bodyEnd: number): void {
    let p = bodyEnd;
    if (this.encrypt) {
      const padding = this.trailerSize(bodyEnd - encStart) - 1 - HMAC_SIZE;
      buf.fill(padding, p, p + padding + 1);
      p += padding + 1;
    }
    createHmac("sha256", this.keys.signingKey).update(buf.subarray(chunkStart, p)).digest().copy(buf, p);
    if (!this.encrypt) return;
    const end = p + HMAC_SIZE;
    const c = createCipheriv(this.cipherName, this.keys.encryptingKey, this.keys.iv);
    c.setAutoPadding(false);
    // node:crypto has no in-place AES: one output buffer per chunk, copied back.
    const out = c.update(buf.subarray(encStart, end));
    out.copy(buf, encStart);
    c.final();
  }

  unsecure(buf: Buffer, chunkStart: number, encStart: number, end: number): number {
    if (this.encrypt) {
      if ((end - encStart) % AES_BLOCK !== 0 || end - encStart < AES_BLOCK) throw securityChecksFailed();
      const d = createDecipheriv(this.cipherName, this.keys.encryptingKey, this.keys.iv);
      d.setAutoPadding(false);
      const out = d.update(buf.subarray(encStart, end));
      out.copy(buf, encStart);
    }
    const sigStart = end - HMAC_SIZE;
    if (sigStart < encStart + SEQUENCE_HEADER_SIZE) throw securityChecksFailed();
    const expected = createHmac("sha256", this.keys.signingKey).update(buf.subarray(chunkStart, sigStart)).digest();
    if (!timingSafeEqual(expected, buf.subarray(sigStart, end))) throw securityChecksFailed();
    return this.encrypt ? checkPadding(buf, encStart, sigStart, false) : sigStart;
  }
}

// ---------------------------------------------------------------- the policy

/** What a secure policy needs from the PKI. */
export interface PolicyPki {
  readonly ownCertificate: Buffer;
  readonly ownPrivateKey: KeyObject;
  /**
   * Validates the client's certificate (chain) for a channel; returns Good or the StatusCode the
   * client may be told (Part 4 §5.5.2.3).
   */
  validateChannelCertificate(chain: Buffer): number;
  /** The public key of a (validated) DER certificate. */
  publicKeyOf(der: Buffer): KeyObject;
}

/** Splits a DER chain (certificates back to back) into its first certificate and the rest. */
export function splitLeaf(chain: Buffer): { leaf: Buffer; rest: Buffer } {
  // A DER SEQUENCE: 0x30, then a short or long length.
  if (chain.length < 2 || chain[0] !== 0x30) throw new UaStatusError(StatusCodes.BadCertificateInvalid);
  let len = chain[1];
  let hdr = 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n < 1 || n > 4 || chain.length < 2 + n) throw new UaStatusError(StatusCodes.BadCertificateInvalid);
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + chain[2 + i];
    hdr = 2 + n;
  }
  const end = hdr + len;
  if (end > chain.length) throw new UaStatusError(StatusCodes.BadCertificateInvalid);
  return { leaf: chain.subarray(0, end), rest: chain.subarray(end) };
}

export class SecurePolicy implements SecurityPolicy {
  readonly uri: string;
  readonly nonceLength: number;
  readonly alg: PolicyAlgorithms;
  private readonly modes: ReadonlySet<MessageSecurityMode>;
  private readonly pki: PolicyPki;
  private readonly ownKeyBytes: number;
  private readonly ownThumbprint: Buffer;

  constructor(alg: PolicyAlgorithms, modes: Iterable<MessageSecurityMode>, pki: PolicyPki) {
    this.alg = alg;
    this.uri = alg.uri;
    this.nonceLength = alg.nonceLength;
    this.modes = new Set(modes);
    this.pki = pki;
    this.ownKeyBytes = rsaKeyBytes(pki.ownPrivateKey);
    this.ownThumbprint = thumbprint(pki.ownCertificate);
  }

  get offeredModes(): readonly MessageSecurityMode[] {
    return [...this.modes];
  }

  supportsMode(mode: MessageSecurityMode): boolean {
    return this.modes.has(mode);
  }

  openAsymmetric(senderCertificate: Buffer | undefined, receiverThumbprint: Buffer | undefined): AsymmetricSecurity {
    // Part 6 §6.7.7: the thumbprint must name our certificate (Bad_CertificateInvalid otherwise).
    if (receiverThumbprint === undefined || !receiverThumbprint.equals(this.ownThumbprint)) {
      throw new UaStatusError(StatusCodes.BadCertificateInvalid, "ReceiverCertificateThumbprint is not ours");
    }
    if (senderCertificate === undefined || senderCertificate.length === 0) {
      throw new UaStatusError(StatusCodes.BadCertificateInvalid, "no SenderCertificate");
    }
    const status = this.pki.validateChannelCertificate(senderCertificate);
    if (status !== StatusCodes.Good) throw new UaStatusError(status, "client certificate refused");
    const leaf = Buffer.from(splitLeaf(senderCertificate).leaf);
    const clientKey = this.pki.publicKeyOf(leaf);
    const clientKeyBytes = rsaKeyBytes(clientKey);
    const bits = clientKeyBytes * 8;
    if (bits < this.alg.minKeyBits || bits > this.alg.maxKeyBits) {
      throw new UaStatusError(StatusCodes.BadCertificatePolicyCheckFailed, `client key of ${bits} bits`);
    }
    return {
      // Incoming: the client signed with its key and encrypted with ours.
      receive: new AsymmetricCrypto(this.alg, clientKey, clientKeyBytes, this.pki.ownPrivateKey, this.ownKeyBytes),
      send: new AsymmetricCrypto(this.alg, this.pki.ownPrivateKey, this.ownKeyBytes, clientKey, clientKeyBytes),
      senderCertificate: this.pki.ownCertificate,
      receiverThumbprint: thumbprint(leaf),
      clientCertificate: leaf,
    };
  }

  deriveKeys(mode: MessageSecurityMode, clientNonce: Buffer | undefined, serverNonce: Buffer | undefined): SymmetricSecurity {
    if (clientNonce === undefined || serverNonce === undefined) throw new UaStatusError(StatusCodes.BadNonceInvalid);
    const encrypt = mode === MessageSecurityMode.SignAndEncrypt;
    // Part 6 §6.7.5: the client's keys come from (secret ServerNonce, seed ClientNonce), ours
    // from (secret ClientNonce, seed ServerNonce).
    const clientKeys = deriveKeys(this.alg, serverNonce, clientNonce);
    const serverKeys = deriveKeys(this.alg, clientNonce, serverNonce);
    return { receive: new SymmetricCrypto(clientKeys, encrypt), send: new SymmetricCrypto(serverKeys, encrypt) };
  }

  createNonce(): Buffer {
    return randomBytes(this.nonceLength);
  }
}

/** Symmetric crypto for one side of a channel, for clients (bench, tests) that reuse this code. */
export function symmetricCrypto(keys: DerivedKeys, encrypt: boolean): ChunkCrypto {
  return new SymmetricCrypto(keys, encrypt);
}

/** Asymmetric crypto for one direction, for clients (bench, tests) that reuse this code. */
export function asymmetricCrypto(alg: PolicyAlgorithms, signKey: KeyObject, cryptKey: KeyObject): ChunkCrypto {
  return new AsymmetricCrypto(alg, signKey, rsaKeyBytes(signKey), cryptKey, rsaKeyBytes(cryptKey));
}
