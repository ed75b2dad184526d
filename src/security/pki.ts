// The PKI folder (the layout of other OPC UA servers, DESIGN "Secure channel"):
//
//   <dataDir>/pki/own/certs/fieldgate.der       the gateway's certificate
//   <dataDir>/pki/own/private/private_key.pem   its key (0600)
//   <dataDir>/pki/trusted/{certs,crl}           trusted application and CA certificates, their CRLs
//   <dataDir>/pki/issuers/{certs,crl}           CAs that may complete a chain but are not trusted themselves
//   <dataDir>/pki/rejected/certs                refused client certificates, for an operator to move to trusted/
//
// Certificate validation follows Part 4 §6.1.3 (Table 106) in its order: structure, chain,
// signatures, security policy (key size, hash), trust list, validity, URI, usage, revocation.
// The folders are re-read when their mtime changes (stat on each validation), so a certificate
// moved to trusted/ is picked up without a restart.
import { X509Certificate, createPrivateKey, verify, type KeyObject } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { certificateFromFile, createOwnCertificate, describeCertificate, thumbprintHex, type CertificateInfo } from "./certificates.js";
import { splitLeaf, type PolicyPki } from "./policies.js";
import { Store, listFiles, mtime, parseEntry, type Entry } from "./pki-store.js";
import { moveAside, type DamagedFile, type DamagedFileInfo } from "../storage/damaged.js";

export interface PkiOptions {
  /** The pki folder (usually <dataDir>/pki). */
  root: string;
  applicationUri: string;
  applicationName: string;
  /** Validity of a certificate the gateway makes for itself, in days. */
  certificateValidityDays: number;
  /** Most certificates in a chain, the leaf included. */
  maxChainLength?: number;
  /** Most files kept in rejected/certs; the oldest go first. */
  maxRejected?: number;
  /** Smallest RSA key accepted, in bits (Part 7: 2048 for the offered policies). */
  minKeyBits?: number;
  log?: (message: string) => void;
  /** The command a refusal's log line tells the operator to run (default "fieldgate cert trust"). */
  trustCommand?: string;
  /** Told of every refused certificate (the server's audit events, Part 5 §6.4.18). */
  onRefused?: (chain: Buffer, status: number) => void;
  /**
   * Given, an own certificate or key that cannot be used (damaged, or not a pair) is moved aside
   * and a new pair made, reported here; without it open() refuses them (the CLI's tools).
   */
  onDamaged?: (d: DamagedFile) => void;
}

/** The gateway's own certificate and key as damaged files (storage/damaged.ts). */
const OWN_CERTIFICATE: DamagedFileInfo = {
  kind: "certificate",
  what: "gateway certificate",
  advice: "nothing to recover; clients that trusted the old certificate must trust the new one (fieldgate cert show prints it); then delete {moved}",
};
const OWN_KEY: DamagedFileInfo = { kind: "certificate", what: "gateway private key", advice: "delete {moved} once the new certificate is trusted" };

export type CertificatePurpose = "application" | "user";

export interface VerifyOptions {
  /** Checked against the certificate's subjectAltName URI (Part 4 §5.6.2: BadCertificateUriInvalid). */
  applicationUri?: string;
  /** Application instance certificates need encipherment usages; user certificates only signing. */
  purpose?: CertificatePurpose;
  /** Save an untrusted certificate in rejected/certs (default true). */
  saveRejected?: boolean;
  now?: number;
}

/** A chain of 5 certificates with 4096-bit keys is under 10 KiB; more is not a client's chain. */
const MAX_CHAIN_BYTES = 32 * 1024;

/** A refused certificate is logged again after this long (ms) if its client keeps trying. */
const REFUSAL_LOG_INTERVAL = 600_000;

/** Part 7: no SHA-1 (or older) signatures. */
const WEAK_SIGNATURE = /md2|md5|sha1With|sha-1|sha1$/i;

/**
 * The codes a refused OpenSecureChannel may carry on the wire. A client can act on these; the
 * rest (untrusted, revoked, bad signature) are BadSecurityChecksFailed so the answer does not
 * reveal what the trust list holds (Part 4 §5.5.2.3, Part 6 §6.7.7; the specific code is logged).
 */
const CHANNEL_VISIBLE: ReadonlySet<number> = new Set([
  StatusCodes.BadCertificateTimeInvalid,
  StatusCodes.BadCertificateIssuerTimeInvalid,
  StatusCodes.BadCertificateUseNotAllowed,
  StatusCodes.BadCertificatePolicyCheckFailed,
  StatusCodes.BadCertificateRevocationUnknown,
]);

export class Pki implements PolicyPki {
  readonly root: string;
  readonly ownCertificate: Buffer;
  readonly ownPrivateKey: KeyObject;
  readonly trusted: Store;
  readonly issuers: Store;
  readonly rejected: Store;
  private readonly maxChainLength: number;
  private readonly maxRejected: number;
  private readonly minKeyBits: number;
  private readonly log: (message: string) => void;
  private readonly trustCommand: string;
  /** When each refused thumbprint was last logged: a client retrying every few seconds logs once per REFUSAL_LOG_INTERVAL. */
  private readonly refusalsLogged = new Map<string, number>();
  /**
   * Client certificates parsed lately, by thumbprint: X509Certificate parsing costs about as much
   * as one RSA private-key operation, and the same clients come back (reconnects, renewals).
   */
  private readonly parsed = new Map<string, Entry>();

  private constructor(o: PkiOptions, certificate: Buffer, key: KeyObject) {
    this.root = o.root;
    this.ownCertificate = certificate;
    this.ownPrivateKey = key;
    this.trusted = new Store(join(o.root, "trusted", "certs"), join(o.root, "trusted", "crl"));
    this.issuers = new Store(join(o.root, "issuers", "certs"), join(o.root, "issuers", "crl"));
    this.rejected = new Store(join(o.root, "rejected", "certs"), undefined);
    this.maxChainLength = o.maxChainLength ?? 5;
    this.maxRejected = o.maxRejected ?? 100;
    this.onRefused = o.onRefused;
    this.minKeyBits = o.minKeyBits ?? 2048;
    this.log = o.log ?? (() => {});
    this.trustCommand = o.trustCommand ?? "fieldgate cert trust";
  }

  /** Creates the folders, and the gateway's own certificate and key unless they are there. */
  static async open(o: PkiOptions): Promise<Pki> {
    ensureLayout(o.root);
    const certFile = ownCertificateFile(o.root);
    const keyFile = ownKeyFile(o.root);
    if (!existsSync(certFile) || !existsSync(keyFile)) {
      await Pki.regenerate(o);
      o.log?.(`created the gateway certificate ${certFile}`);
    }
    let own = readOwn(certFile, keyFile);
    if (typeof own === "string" && o.onDamaged !== undefined) {
      // The secure endpoints need a pair: a new one, as on a first start, rather than none.
      o.onDamaged(moveAside(certFile, OWN_CERTIFICATE, own));
      if (existsSync(keyFile)) o.onDamaged(moveAside(keyFile, OWN_KEY, own));
      await Pki.regenerate(o);
      o.log?.(`created the gateway certificate ${certFile}`);
      own = readOwn(certFile, keyFile);
    }
    if (typeof own === "string") throw new Error(`${certFile}: ${own}`);
    return new Pki(o, own.der, own.key);
  }

  /** Makes a new own certificate and key (first start, or `fieldgate cert regenerate`). */
  static async regenerate(o: PkiOptions): Promise<Buffer> {
    ensureLayout(o.root);
    const { certificate, privateKey } = await createOwnCertificate({
      applicationUri: o.applicationUri,
      applicationName: o.applicationName,
      validityDays: o.certificateValidityDays,
    });
    const keyFile = ownKeyFile(o.root);
    writeFileSync(keyFile, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
    chmodSync(keyFile, 0o600);
    writeFileSync(ownCertificateFile(o.root), certificate);
    return certificate;
  }

  get ownThumbprint(): string {
    return thumbprintHex(this.ownCertificate);
  }

  /** PolicyPki: validates a channel's SenderCertificate and maps the result to what the wire may say. */
  validateChannelCertificate(chain: Buffer): number {
    const status = this.verifyCertificate(chain, { purpose: "application" });
    if (status === StatusCodes.Good || CHANNEL_VISIBLE.has(status)) return status;
    return StatusCodes.BadSecurityChecksFailed;
  }

  /**
   * Validates a certificate (or chain, leaf first) against the trust lists; returns Good or the
   * specific StatusCode of Part 4 Table 106. An untrusted certificate is saved in rejected/certs.
   * For X509 user tokens pass `purpose: "user"`.
   */
  verifyCertificate(chain: Buffer, options: VerifyOptions = {}): number {
    const status = this.check(chain, options);
    if (status !== StatusCodes.Good) {
      this.logRefusal(chain, status, options);
      this.onRefused?.(chain, status);
    }
    return status;
  }

  private readonly onRefused: PkiOptions["onRefused"];

  /**
   * Names the refused certificate (subject, thumbprint, applicationUri) and what to do about it:
   * for an untrusted one, the command that trusts it. The wire says only BadSecurityChecksFailed.
   */
  private logRefusal(chain: Buffer, status: number, options: VerifyOptions): void {
    let leaf: Entry | undefined;
    try {
      leaf = this.parse(splitLeaf(chain).leaf);
    } catch {
      leaf = undefined;
    }
    if (leaf === undefined) {
      this.log(`certificate refused (${statusName(status)}): not a readable X.509 certificate`);
      return;
    }
    const i = leaf.info;
    const now = options.now ?? Date.now();
    const last = this.refusalsLogged.get(i.thumbprint);
    if (last !== undefined && now - last < REFUSAL_LOG_INTERVAL) return;
    // Bounded: a flood of made-up certificates starts the table over.
    if (this.refusalsLogged.size >= 256) this.refusalsLogged.clear();
    this.refusalsLogged.set(i.thumbprint, now);
    const who = `${i.subject || "(no subject)"}, thumbprint ${i.thumbprint}${i.applicationUri ? `, ${i.applicationUri}` : ""}`;
    this.log(`certificate refused (${statusName(status)}): ${who}: ${this.refusalAdvice(status, leaf, options)}`);
  }

  private refusalAdvice(status: number, leaf: Entry, options: VerifyOptions): string {
    const i = leaf.info;
    switch (status) {
      case StatusCodes.BadCertificateUntrusted:
        return this.rejected.has(i.thumbprint)
          ? `not trusted; saved in ${this.rejected.certsDir}. If it is yours, trust it with: ${this.trustCommand} ${i.thumbprint}`
          : `not trusted; trust it with: ${this.trustCommand} FILE (the certificate's .der or .pem)`;
      case StatusCodes.BadCertificateTimeInvalid:
        return `valid only from ${i.notBefore.toISOString()} until ${i.notAfter.toISOString()}; the client needs a new certificate (or this gateway's clock is wrong)`;
      case StatusCodes.BadCertificateIssuerTimeInvalid:
        return "a CA certificate of its chain is expired or not yet valid";
      case StatusCodes.BadCertificateChainIncomplete:
        return "its issuing CA is not in pki/trusted/certs or pki/issuers/certs (or the chain is too long)";
      case StatusCodes.BadCertificatePolicyCheckFailed:
        return `too weak for the offered policies (${i.keyBits}-bit key, ${i.signatureAlgorithm}; at least ${this.minKeyBits} bits and SHA-256 are needed)`;
      case StatusCodes.BadCertificateUriInvalid:
        return `its applicationUri (${i.applicationUri ?? "none"}) is not the one the client announced (${options.applicationUri ?? "?"})`;
      case StatusCodes.BadCertificateRevoked:
      case StatusCodes.BadCertificateIssuerRevoked:
        return "revoked by a CRL in pki/trusted/crl or pki/issuers/crl";
      case StatusCodes.BadCertificateUseNotAllowed:
      case StatusCodes.BadCertificateIssuerUseNotAllowed:
        return "its key usage does not allow this use";
      default:
        return "its signature or structure is invalid";
    }
  }

  private check(chain: Buffer, options: VerifyOptions): number {
    const now = options.now ?? Date.now();
    // Structure.
    if (chain.length > MAX_CHAIN_BYTES) return StatusCodes.BadCertificateInvalid;
    const given: Entry[] = [];
    let rest = chain;
    while (rest.length > 0) {
      if (given.length >= this.maxChainLength) return StatusCodes.BadCertificateChainIncomplete;
      let part;
      try {
        part = splitLeaf(rest);
      } catch {
        return StatusCodes.BadCertificateInvalid;
      }
      const e = this.parse(part.leaf);
      if (e === undefined) return StatusCodes.BadCertificateInvalid;
      given.push(e);
      rest = part.rest;
    }
    if (given.length === 0) return StatusCodes.BadCertificateInvalid;
    const leaf = given[0];

    // Chain: from the leaf up to a self-signed root, through the certificates sent with it, the
    // trusted and the issuer certificates.
    const path: Entry[] = [leaf];
    for (;;) {
      const cur = path[path.length - 1];
      if (isSelfIssued(cur)) break;
      const issuer = this.findIssuer(cur, given);
      if (issuer === undefined) break;
      if (path.length >= this.maxChainLength || path.some((p) => p.info.thumbprint === issuer.info.thumbprint)) {
        return StatusCodes.BadCertificateChainIncomplete;
      }
      path.push(issuer);
    }
    const top = path[path.length - 1];
    const complete = isSelfIssued(top);

    // Signatures: each certificate by its issuer, a root by itself.
    for (let i = 0; i < path.length; i++) {
      const signer = i + 1 < path.length ? path[i + 1] : path[i];
      if (i + 1 === path.length && !complete) break;
      if (!verifySignature(path[i], signer)) return StatusCodes.BadCertificateInvalid;
    }

    // Security policy: key size and signature hash (Part 7: RSA >= 2048 bits, SHA-256).
    for (const e of path) {
      if (e.info.keyBits < this.minKeyBits) return StatusCodes.BadCertificatePolicyCheckFailed;
      if (WEAK_SIGNATURE.test(e.info.signatureAlgorithm)) return StatusCodes.BadCertificatePolicyCheckFailed;
    }

    // Trust list: the leaf itself or a CA of its chain is in trusted/certs.
    const trusted = path.some((e) => this.trusted.has(e.info.thumbprint));
    if (!trusted) {
      if (options.saveRejected !== false) this.saveRejected(leaf);
      return StatusCodes.BadCertificateUntrusted;
    }
    if (!complete) return StatusCodes.BadCertificateChainIncomplete;

    // Validity.
    for (let i = 0; i < path.length; i++) {
      const e = path[i];
      if (now < e.info.notBefore.getTime() || now > e.info.notAfter.getTime()) {
        return i === 0 ? StatusCodes.BadCertificateTimeInvalid : StatusCodes.BadCertificateIssuerTimeInvalid;
      }
    }

    // URI (Part 4 §5.6.2: CreateSession's ApplicationDescription against the certificate).
    if (options.applicationUri !== undefined && leaf.info.applicationUri !== options.applicationUri) {
      return StatusCodes.BadCertificateUriInvalid;
    }

    // Usage (Part 6 §6.2.2).
    const ku = leaf.info.keyUsage;
    if (ku !== undefined) {
      const ok =
        options.purpose === "user" ? ku.digitalSignature || ku.nonRepudiation : ku.digitalSignature && (ku.keyEncipherment || ku.dataEncipherment);
      if (!ok) return StatusCodes.BadCertificateUseNotAllowed;
    }
    if (leaf.info.isCa && path.length > 1) return StatusCodes.BadCertificateUseNotAllowed;
    for (let i = 1; i < path.length; i++) {
      const u = path[i].info.keyUsage;
      if (!path[i].info.isCa || (u !== undefined && !u.keyCertSign)) return StatusCodes.BadCertificateIssuerUseNotAllowed;
    }

    // Revocation: a CRL of the issuer (trusted/crl or issuers/crl) that lists the serial. A CA
    // without a CRL is accepted (decision: operators of small plants rarely publish CRLs).
    for (let i = 0; i + 1 < path.length; i++) {
      const issuer = path[i + 1];
      const serial = path[i].info.serialNumber;
      for (const crl of [...this.trusted.crlsFor(issuer), ...this.issuers.crlsFor(issuer)]) {
        if (crl.revoked.has(serial)) return i === 0 ? StatusCodes.BadCertificateRevoked : StatusCodes.BadCertificateIssuerRevoked;
      }
    }
    return StatusCodes.Good;
  }

  /** The public key of a DER certificate (cached with its parse). Throws on malformed input. */
  publicKeyOf(der: Buffer): KeyObject {
    const e = this.parse(der);
    if (e === undefined) throw new Error("not a certificate");
    return e.x509.publicKey;
  }

  private parse(der: Buffer): Entry | undefined {
    const tp = thumbprintHex(der);
    let e = this.parsed.get(tp);
    if (e === undefined) {
      e = parseEntry(Buffer.from(der), "");
      if (e === undefined) return undefined;
      // A flood of distinct certificates must not grow this: start over when full.
      if (this.parsed.size >= 256) this.parsed.clear();
      this.parsed.set(tp, e);
    }
    return e;
  }

  private findIssuer(cert: Entry, given: readonly Entry[]): Entry | undefined {
    for (const list of [given, this.trusted.entries(), this.issuers.entries()]) {
      for (const c of list) {
        if (c !== cert && c.info.thumbprint !== cert.info.thumbprint && cert.x509.checkIssued(c.x509)) return c;
      }
    }
    return undefined;
  }

  /** Saves `leaf` in rejected/certs unless it is there; keeps at most maxRejected files. */
  private saveRejected(leaf: Entry): void {
    if (this.rejected.has(leaf.info.thumbprint)) return;
    const dir = this.rejected.certsDir;
    try {
      const files = listFiles(dir)
        .map((f) => ({ f, t: mtime(join(dir, f)) }))
        .sort((a, b) => a.t - b.t);
      // An OPN flood with made-up certificates must not fill the SD card.
      for (let i = 0; i <= files.length - this.maxRejected; i++) unlinkSync(join(dir, files[i].f));
      writeFileSync(join(dir, certificateFileName(leaf.info)), leaf.der);
    } catch (err) {
      this.log(`could not save the rejected certificate: ${(err as Error).message}`);
    }
  }

  // ---------------------------------------------------------------- operator actions (fieldgate cert)

  list(): { own: CertificateInfo; trusted: CertificateInfo[]; issuers: CertificateInfo[]; rejected: CertificateInfo[] } {
    return {
      own: describeCertificate(this.ownCertificate),
      trusted: this.trusted.entries().map((e) => e.info),
      issuers: this.issuers.entries().map((e) => e.info),
      rejected: this.rejected.entries().map((e) => e.info),
    };
  }

  /**
   * Trusts a certificate: by thumbprint (a file in rejected/ moves to trusted/) or from a file
   * (copied into trusted/). Returns the trusted certificate's info.
   */
  trust(thumbprintOrFile: string): CertificateInfo {
    return this.move(thumbprintOrFile, this.rejected, this.trusted);
  }

  /** Moves a trusted certificate (by thumbprint or file) to rejected/. */
  reject(thumbprintOrFile: string): CertificateInfo {
    return this.move(thumbprintOrFile, this.trusted, this.rejected);
  }

  private move(what: string, from: Store, to: Store): CertificateInfo {
    const tp = what.replace(/[:\s]/g, "").toLowerCase();
    const found = /^[0-9a-f]{40}$/.test(tp) ? (from.get(tp) ?? this.findByPrefix(from, tp)) : undefined;
    if (found !== undefined) {
      const target = join(to.certsDir, basename(found.file));
      renameSync(join(from.certsDir, found.file), target);
      return found.info;
    }
    if (/^[0-9a-f]{6,40}$/.test(tp)) {
      const e = this.findByPrefix(from, tp);
      if (e !== undefined) {
        renameSync(join(from.certsDir, e.file), join(to.certsDir, basename(e.file)));
        return e.info;
      }
    }
    if (!existsSync(what)) throw new Error(`no certificate ${what} in ${from.certsDir}, and no such file`);
    const der = certificateFromFile(readFileSync(what));
    const e = der === undefined ? undefined : parseEntry(der, "");
    if (e === undefined) throw new Error(`${what}: not an X.509 certificate (DER or PEM)`);
    const old = from.get(e.info.thumbprint);
    if (old !== undefined) unlinkSync(join(from.certsDir, old.file));
    writeFileSync(join(to.certsDir, certificateFileName(e.info)), e.der);
    return e.info;
  }

  private findByPrefix(store: Store, prefix: string): Entry | undefined {
    const hits = store.entries().filter((e) => e.info.thumbprint.startsWith(prefix));
    return hits.length === 1 ? hits[0] : undefined;
  }
}

/**
 * Subject equals issuer and the certificate's own key verifies it. Not X509Certificate.checkIssued:
 * OpenSSL's check also wants keyCertSign, which some clients' self-signed certificates lack.
 */
function isSelfIssued(e: Entry): boolean {
  return e.info.subjectName.equals(e.info.issuerName) && verifySignature(e, e);
}

function verifySignature(cert: Entry, signer: Entry): boolean {
  try {
    return cert.x509.verify(signer.x509.publicKey);
  } catch {
    return false;
  }
}

function statusName(status: number): string {
  for (const [k, v] of Object.entries(StatusCodes)) if (v === status) return k;
  return `0x${status.toString(16)}`;
}

/** `<CN>[<thumbprint>].der`, the naming other OPC UA servers use. */
export function certificateFileName(info: CertificateInfo): string {
  const cn = /CN=([^,]*)/.exec(info.subject)?.[1] ?? "certificate";
  return `${cn.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 64)}[${info.thumbprint}].der`;
}

export function ownCertificateFile(root: string): string {
  return join(root, "own", "certs", "fieldgate.der");
}

export function ownKeyFile(root: string): string {
  return join(root, "own", "private", "private_key.pem");
}

/**
 * The own certificate and key, or why they cannot be used (a file cut short or overwritten, a
 * key of another certificate). An unreadable file (no permission) throws: that is not damage.
 */
function readOwn(certFile: string, keyFile: string): { der: Buffer; key: KeyObject } | string {
  const certBytes = readFileSync(certFile);
  const keyBytes = readFileSync(keyFile);
  const der = certificateFromFile(certBytes);
  if (der === undefined) return "not a certificate";
  try {
    const x509 = new X509Certificate(der);
    const key = createPrivateKey(keyBytes);
    if (!x509.checkPrivateKey(key)) return "the private key is not the certificate's";
    return { der, key };
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

function ensureLayout(root: string): void {
  for (const sub of ["own/certs", "own/private", "trusted/certs", "trusted/crl", "issuers/certs", "issuers/crl", "rejected/certs", "rejected/crl"]) {
    mkdirSync(join(root, sub), { recursive: true });
  }
  chmodSync(join(root, "own", "private"), 0o700);
}
