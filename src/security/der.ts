// Just enough DER (X.690) to read what node:crypto's X509Certificate does not expose on Node 20:
// a certificate's signature algorithm, key usage, subjectAltName URI, validity, issuer and
// subject names as bytes, and a CRL's issuer, revoked serials and signature (RFC 5280 §4.1,
// §5.1). Importing node-opcua-crypto for this would cost the gateway tens of MB of RSS at idle
// (@peculiar/x509 and its ASN.1 schemas); it is loaded only to create a certificate.
// Every read checks lengths against the enclosing element and throws DerError on bad input.

export class DerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DerError";
  }
}

/** One element: tag at `start`, content in [contentStart, end). */
export interface Tlv {
  readonly tag: number;
  readonly start: number;
  readonly contentStart: number;
  readonly end: number;
}

export function readTlv(buf: Buffer, pos: number, limit: number = buf.length): Tlv {
  if (pos + 2 > limit) throw new DerError("truncated element");
  const tag = buf[pos];
  if ((tag & 0x1f) === 0x1f) throw new DerError("multi-byte tags are not used in certificates");
  let len = buf[pos + 1];
  let p = pos + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || p + n > limit) throw new DerError("bad length");
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[p + i];
    p += n;
  }
  if (p + len > limit) throw new DerError("element runs past its container");
  return { tag, start: pos, contentStart: p, end: p + len };
}

export function children(buf: Buffer, t: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let p = t.contentStart; p < t.end; ) {
    const c = readTlv(buf, p, t.end);
    out.push(c);
    p = c.end;
  }
  return out;
}

function bytes(buf: Buffer, t: Tlv): Buffer {
  return buf.subarray(t.start, t.end);
}

function content(buf: Buffer, t: Tlv): Buffer {
  return buf.subarray(t.contentStart, t.end);
}

/** OIDs as the hex of their content octets. */
const OID_NAMES: Readonly<Record<string, string>> = {
  "2a864886f70d010102": "md2WithRSAEncryption",
  "2a864886f70d010104": "md5WithRSAEncryption",
  "2a864886f70d010105": "sha1WithRSAEncryption",
  "2a864886f70d01010a": "RSASSA-PSS",
  "2a864886f70d01010b": "sha256WithRSAEncryption",
  "2a864886f70d01010c": "sha384WithRSAEncryption",
  "2a864886f70d01010d": "sha512WithRSAEncryption",
  "2a864886f70d01010e": "sha224WithRSAEncryption",
  "2a8648ce3d0401": "ecdsa-with-SHA1",
  "2a8648ce3d040302": "ecdsa-with-SHA256",
  "2a8648ce380403": "dsa-with-sha1",
};
const OID_KEY_USAGE = "551d0f";
const OID_SUBJECT_ALT_NAME = "551d11";

/** The hash node:crypto needs to verify a signature of this algorithm, or undefined. */
export function hashOf(algorithm: string): string | undefined {
  const m = /^(sha1|sha224|sha256|sha384|sha512|md5)With/.exec(algorithm);
  return m?.[1];
}

export interface KeyUsage {
  digitalSignature: boolean;
  nonRepudiation: boolean;
  keyEncipherment: boolean;
  dataEncipherment: boolean;
  keyAgreement: boolean;
  keyCertSign: boolean;
  cRLSign: boolean;
}

export interface CertificateFields {
  signatureAlgorithm: string;
  serialNumber: string;
  issuer: Buffer;
  subject: Buffer;
  notBefore: Date;
  notAfter: Date;
  keyUsage: KeyUsage | undefined;
  applicationUri: string | undefined;
}

function algorithmName(buf: Buffer, alg: Tlv): string {
  const oid = children(buf, alg)[0];
  if (oid === undefined || oid.tag !== 0x06) throw new DerError("bad AlgorithmIdentifier");
  const hex = content(buf, oid).toString("hex");
  return OID_NAMES[hex] ?? `oid:${hex}`;
}

/** RFC 5280 §4.1.2.5: UTCTime YYMMDDHHMMSSZ (50..99 = 19xx) or GeneralizedTime YYYYMMDDHHMMSSZ. */
function time(buf: Buffer, t: Tlv): Date {
  const s = content(buf, t).toString("latin1");
  let m: RegExpExecArray | null;
  let year: number;
  if (t.tag === 0x17 && (m = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s))) {
    year = Number(m[1]) >= 50 ? 1900 + Number(m[1]) : 2000 + Number(m[1]);
  } else if (t.tag === 0x18 && (m = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s))) {
    year = Number(m[1]);
  } else {
    throw new DerError("bad time");
  }
  return new Date(Date.UTC(year, Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])));
}

function serial(buf: Buffer, t: Tlv): string {
  if (t.tag !== 0x02) throw new DerError("bad serial number");
  return content(buf, t).toString("hex").replace(/^0+/, "");
}

function keyUsage(value: Buffer): KeyUsage {
  const bits = readTlv(value, 0);
  if (bits.tag !== 0x03 || bits.end - bits.contentStart < 1) throw new DerError("bad keyUsage");
  const b0 = bits.end - bits.contentStart > 1 ? value[bits.contentStart + 1] : 0;
  return {
    digitalSignature: (b0 & 0x80) !== 0,
    nonRepudiation: (b0 & 0x40) !== 0,
    keyEncipherment: (b0 & 0x20) !== 0,
    dataEncipherment: (b0 & 0x10) !== 0,
    keyAgreement: (b0 & 0x08) !== 0,
    keyCertSign: (b0 & 0x04) !== 0,
    cRLSign: (b0 & 0x02) !== 0,
  };
}

/** The first uniformResourceIdentifier ([6] IA5String) of a GeneralNames value. */
function firstUri(value: Buffer): string | undefined {
  const names = readTlv(value, 0);
  for (const n of children(value, names)) if (n.tag === 0x86) return content(value, n).toString("latin1");
  return undefined;
}

export function parseCertificate(der: Buffer): CertificateFields {
  const cert = readTlv(der, 0);
  if (cert.tag !== 0x30 || cert.end !== der.length) throw new DerError("not one certificate");
  const [tbs, sigAlg] = children(der, cert);
  if (tbs === undefined || sigAlg === undefined) throw new DerError("bad certificate");
  const f = children(der, tbs);
  const i = f[0]?.tag === 0xa0 ? 1 : 0;
  const validity = f[i + 3] === undefined ? [] : children(der, f[i + 3]);
  if (f.length < i + 6 || validity.length !== 2) throw new DerError("bad tbsCertificate");
  let ku: KeyUsage | undefined;
  let uri: string | undefined;
  const ext = f.find((t) => t.tag === 0xa3);
  if (ext !== undefined) {
    const list = children(der, ext)[0];
    if (list === undefined) throw new DerError("bad extensions");
    for (const e of children(der, list)) {
      const parts = children(der, e);
      const oid = content(der, parts[0]).toString("hex");
      const value = content(der, parts[parts.length - 1]);
      if (oid === OID_KEY_USAGE) ku = keyUsage(value);
      else if (oid === OID_SUBJECT_ALT_NAME) uri = firstUri(value);
    }
  }
  return {
    signatureAlgorithm: algorithmName(der, sigAlg),
    serialNumber: serial(der, f[i]),
    issuer: bytes(der, f[i + 2]),
    subject: bytes(der, f[i + 4]),
    notBefore: time(der, validity[0]),
    notAfter: time(der, validity[1]),
    keyUsage: ku,
    applicationUri: uri,
  };
}

export interface CrlFields {
  /** The DER of the issuer Name, to compare with a CA certificate's subject. */
  issuer: Buffer;
  /** Serial numbers as lower-case hex without leading zeros. */
  revoked: Set<string>;
  /** What the signature covers (the whole tbsCertList element), the algorithm and the signature. */
  signed: Buffer;
  signatureAlgorithm: string;
  signature: Buffer;
}

export function parseCrl(der: Buffer): CrlFields {
  const crl = readTlv(der, 0);
  if (crl.tag !== 0x30) throw new DerError("not a CRL");
  const [tbs, sigAlg, sigVal] = children(der, crl);
  if (tbs === undefined || sigAlg === undefined || sigVal === undefined || sigVal.tag !== 0x03) throw new DerError("bad CRL");
  const f = children(der, tbs);
  let i = f[0]?.tag === 0x02 ? 1 : 0;
  const issuer = f[i + 1];
  if (issuer === undefined) throw new DerError("bad tbsCertList");
  i += 3; // signature, issuer, thisUpdate
  if (f[i] !== undefined && (f[i].tag === 0x17 || f[i].tag === 0x18)) i++; // nextUpdate
  const revoked = new Set<string>();
  if (f[i] !== undefined && f[i].tag === 0x30) {
    for (const entry of children(der, f[i])) revoked.add(serial(der, children(der, entry)[0]));
  }
  return {
    issuer: bytes(der, issuer),
    revoked,
    signed: bytes(der, tbs),
    signatureAlgorithm: algorithmName(der, sigAlg),
    signature: der.subarray(sigVal.contentStart + 1, sigVal.end),
  };
}
