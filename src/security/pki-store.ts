// The PKI's certificate folders as the validation reads them (pki.ts has the layout): each
// certs/ (and crl/) folder parsed again only when its mtime changes, so a certificate an
// operator moves into trusted/ is seen at the next validation without a restart.
import { X509Certificate, verify } from "node:crypto";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { hashOf, parseCrl, type CrlFields } from "./der.js";
import { certificateFromFile, describeCertificate, type CertificateInfo } from "./certificates.js";

export interface Entry {
  readonly der: Buffer;
  readonly file: string;
  readonly info: CertificateInfo;
  readonly x509: X509Certificate;
}

export type Crl = CrlFields;

/** A certs/ (and crl/) folder, parsed again only when the folder changes. */
export class Store {
  private certsMtime = -1;
  private crlMtime = -1;
  private certs: Entry[] = [];
  private byThumbprint = new Map<string, Entry>();
  private crls: Crl[] = [];

  constructor(
    readonly certsDir: string,
    readonly crlDir: string | undefined,
  ) {}

  refresh(): void {
    const m = mtime(this.certsDir);
    if (m !== this.certsMtime) {
      this.certsMtime = m;
      this.certs = [];
      this.byThumbprint = new Map();
      for (const file of listFiles(this.certsDir)) {
        const der = readCertificate(join(this.certsDir, file));
        if (der === undefined) continue;
        const e = parseEntry(der, file);
        if (e === undefined) continue;
        this.certs.push(e);
        this.byThumbprint.set(e.info.thumbprint, e);
      }
    }
    if (this.crlDir !== undefined) {
      const c = mtime(this.crlDir);
      if (c !== this.crlMtime) {
        this.crlMtime = c;
        this.crls = [];
        for (const file of listFiles(this.crlDir)) {
          const crl = readCrl(join(this.crlDir, file));
          if (crl !== undefined) this.crls.push(crl);
        }
      }
    }
  }

  entries(): readonly Entry[] {
    this.refresh();
    return this.certs;
  }

  has(thumbprint: string): boolean {
    this.refresh();
    return this.byThumbprint.has(thumbprint);
  }

  get(thumbprint: string): Entry | undefined {
    this.refresh();
    return this.byThumbprint.get(thumbprint);
  }

  crlsFor(issuer: Entry): Crl[] {
    this.refresh();
    return this.crls.filter((c) => c.issuer.equals(issuer.info.subjectName) && verifyCrl(c, issuer));
  }
}

export function mtime(dir: string): number {
  try {
    return statSync(dir).mtimeMs;
  } catch {
    return 0;
  }
}

export function listFiles(dir: string): string[] {
  try {
    return readdirSync(dir).filter((f) => !f.startsWith("."));
  } catch {
    return [];
  }
}

function readCertificate(file: string): Buffer | undefined {
  try {
    return certificateFromFile(readFileSync(file));
  } catch {
    return undefined;
  }
}

export function parseEntry(der: Buffer, file: string): Entry | undefined {
  try {
    const x509 = new X509Certificate(der);
    return { der, file, info: describeCertificate(der, x509), x509 };
  } catch {
    return undefined;
  }
}

function readCrl(file: string): Crl | undefined {
  try {
    let der = readFileSync(file);
    if (der[0] !== 0x30) {
      const m = /-----BEGIN X509 CRL-----([\s\S]*?)-----END X509 CRL-----/.exec(der.toString("latin1"));
      if (!m) return undefined;
      der = Buffer.from(m[1].replace(/\s+/g, ""), "base64");
    }
    return parseCrl(der);
  } catch {
    return undefined;
  }
}

/** The CRL's signature by the issuer's key (RFC 5280 §5.1.1.3). */
function verifyCrl(crl: Crl, issuer: Entry): boolean {
  const hash = hashOf(crl.signatureAlgorithm);
  if (hash === undefined) return false;
  try {
    return verify(hash, crl.signed, issuer.x509.publicKey, crl.signature);
  } catch {
    return false;
  }
}
