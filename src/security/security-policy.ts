// The plug point for security policies (Part 7 profiles, Part 6 §6.7.2 chunk security). The
// secure channel lays out chunks and leaves every cryptographic step to a `ChunkCrypto`: one for
// OPN chunks (asymmetric: RSA sign/encrypt with certificates) and one per token and direction for
// MSG/CLO chunks (symmetric: keys derived from the nonces, Part 6 §6.7.5). Basic256Sha256,
// Aes128_Sha256_RsaOaep and Aes256_Sha256_RsaPss implement these with node-opcua-crypto later;
// only SecurityPolicy None is here.
import { MessageSecurityMode } from "../ua/generated/enums.js";

/**
 * Chunk layout, Part 6 §6.7.2: [message header | security header | sequence header | body |
 * padding | signature]. `encStart` is where the sequence header begins: the part from there on is
 * what gets encrypted, the whole chunk up to the signature is what gets signed.
 */
export interface ChunkCrypto {
  /** Largest body that fits in a chunk of `chunkSize` bytes whose security header ends at `encStart - chunkStart`. */
  maxBodySize(chunkSize: number, headersSize: number): number;
  /** Padding plus signature bytes that follow a plain part (sequence header + body) of `plainLength` bytes. */
  trailerSize(plainLength: number): number;
  /** Bytes on the wire of a plain part of `plainLength` bytes (trailer included) once encrypted. */
  cipherLength(plainLength: number): number;
  /**
   * Secures one chunk in place. Plain part: buf[encStart, bodyEnd); the trailer goes in
   * [bodyEnd, bodyEnd + trailerSize); the MessageSize in the header is already final. After the
   * call buf[encStart, encStart + cipherLength(...)) is what is sent; the caller made room for it.
   */
  secure(buf: Buffer, chunkStart: number, encStart: number, bodyEnd: number): void;
  /**
   * Decrypts buf[encStart, end) in place and verifies the signature; returns where the body ends
   * (padding and signature stripped). Throws UaStatusError(BadSecurityChecksFailed).
   */
  unsecure(buf: Buffer, chunkStart: number, encStart: number, end: number): number;
}

/** What the OPN security header established for one channel. */
export interface AsymmetricSecurity {
  /** Verifies and decrypts OPN chunks from the client. */
  readonly receive: ChunkCrypto;
  /** Signs and encrypts our OPN responses. */
  readonly send: ChunkCrypto;
  /** Our certificate (chain) for the response's SenderCertificate; undefined for None. */
  readonly senderCertificate?: Buffer;
  /** Thumbprint of the client's certificate for the response's ReceiverCertificateThumbprint. */
  readonly receiverThumbprint?: Buffer;
  /** The client's certificate, for the session layer (CreateSession checks it). */
  readonly clientCertificate?: Buffer;
}

/** The keys of one token (Part 6 §6.7.5), one crypto per direction. */
export interface SymmetricSecurity {
  readonly receive: ChunkCrypto;
  readonly send: ChunkCrypto;
}

export interface SecurityPolicy {
  readonly uri: string;
  /** Bytes of ClientNonce/ServerNonce; 0 means nonces are ignored (None). */
  readonly nonceLength: number;
  supportsMode(mode: MessageSecurityMode): boolean;
  /**
   * Checks the OPN asymmetric security header (Part 6 §6.7.2.3): the sender certificate (trust
   * list) and that the thumbprint names our certificate. The mode is checked later, with
   * `supportsMode`, once the OPN body is decrypted. Throws UaStatusError.
   */
  openAsymmetric(senderCertificate: Buffer | undefined, receiverThumbprint: Buffer | undefined): AsymmetricSecurity;
  /** Derives one token's keys from the nonces (Part 6 §6.7.5). */
  deriveKeys(mode: MessageSecurityMode, clientNonce: Buffer | undefined, serverNonce: Buffer | undefined): SymmetricSecurity;
  /** A fresh server nonce of `nonceLength` bytes (empty for None). */
  createNonce(): Buffer;
}

export const SECURITY_POLICY_NONE_URI = "http://opcfoundation.org/UA/SecurityPolicy#None";

/** Neither signs nor encrypts: the body fills the chunk after the headers. */
const NO_CRYPTO: ChunkCrypto = Object.freeze({
  maxBodySize(chunkSize: number, headersSize: number): number {
    return chunkSize - headersSize - 8;
  },
  trailerSize(): number {
    return 0;
  },
  cipherLength(plainLength: number): number {
    return plainLength;
  },
  secure(): void {},
  unsecure(_buf: Buffer, _chunkStart: number, _encStart: number, end: number): number {
    return end;
  },
});

const NONE_ASYMMETRIC: AsymmetricSecurity = Object.freeze({ receive: NO_CRYPTO, send: NO_CRYPTO });
const NONE_SYMMETRIC: SymmetricSecurity = Object.freeze({ receive: NO_CRYPTO, send: NO_CRYPTO });
const EMPTY_NONCE = Buffer.alloc(0);

/** SecurityPolicy None (Part 7): MessageSecurityMode None only, certificates and nonces ignored. */
export const SecurityPolicyNone: SecurityPolicy = Object.freeze({
  uri: SECURITY_POLICY_NONE_URI,
  nonceLength: 0,
  supportsMode(mode: MessageSecurityMode): boolean {
    return mode === MessageSecurityMode.None;
  },
  openAsymmetric(): AsymmetricSecurity {
    // Part 4 §5.5.2.2: with policy None the server ignores the client certificate.
    return NONE_ASYMMETRIC;
  },
  deriveKeys(): SymmetricSecurity {
    return NONE_SYMMETRIC;
  },
  createNonce(): Buffer {
    return EMPTY_NONCE;
  },
});

/** The policies a server offers, by URI. */
export type SecurityPolicyRegistry = ReadonlyMap<string, SecurityPolicy>;

export function defaultSecurityPolicies(): SecurityPolicyRegistry {
  return new Map([[SecurityPolicyNone.uri, SecurityPolicyNone]]);
}
