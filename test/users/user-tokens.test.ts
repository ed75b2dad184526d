// The identity decision of ActivateSession at the unit level: token secrets encrypted as a client
// does (Part 4 §7.41.2.2, RSA-OAEP per policy), userTokenSignatures made with keys from the test.
import { constants, createPublicKey, publicEncrypt, randomBytes, sign, X509Certificate } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { numericNodeId, type ExtensionObject } from "../../src/ua/builtins.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { UserTokenType } from "../../src/ua/generated/enums.js";
import {
  authenticateToken,
  decryptLegacySecret,
  userTokenPolicies,
  type IdentityContext,
  type OwnKeys,
} from "../../src/sessions/user-tokens.js";
import { certificateThumbprint, hashPassword, UserDirectory, userEntries } from "../../src/sessions/users.js";
import { makeCertificate, type TestIdentity } from "./certs.js";

const P = "http://opcfoundation.org/UA/SecurityPolicy#";
const BASIC256SHA256 = `${P}Basic256Sha256`;
const AES128 = `${P}Aes128_Sha256_RsaOaep`;
const RSAPSS = `${P}Aes256_Sha256_RsaPss`;
const NONE = `${P}None`;
const OAEP_SHA1 = "http://www.w3.org/2001/04/xmlenc#rsa-oaep";
const OAEP_SHA256 = "http://opcfoundation.org/UA/security/rsa-oaep-sha2-256";
const RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
const RSA_PSS = "http://opcfoundation.org/UA/security/rsa-pss-sha2-256";

let server: TestIdentity;
let keys: OwnKeys;
let user: TestIdentity;
let stranger: TestIdentity;
let users: UserDirectory;

beforeAll(async () => {
  server = await makeCertificate({ cn: "gateway", applicationUri: "urn:test:gateway" });
  keys = { ownCertificate: server.certificate, ownPrivateKey: server.privateKey };
  user = await makeCertificate({ cn: "carol" });
  stranger = await makeCertificate({ cn: "stranger" });
  users = new UserDirectory(
    userEntries({
      alice: { role: "operator", password: await hashPassword("s3cret", { logN: 10, r: 8, p: 1 }) },
      carol: { role: "admin", certificates: [certificateThumbprint(user.certificate)] },
    }),
  );
});

/** What a client sends (Part 4 §7.41.2.2): UInt32 length + secret + serverNonce, RSA-OAEP in blocks. */
function encryptSecret(secret: Buffer, nonce: Buffer, hash: "sha1" | "sha256", cert = server.certificate): Buffer {
  const plain = Buffer.alloc(4 + secret.length + nonce.length);
  plain.writeUInt32LE(secret.length + nonce.length, 0);
  secret.copy(plain, 4);
  nonce.copy(plain, 4 + secret.length);
  const key = createPublicKey(new X509Certificate(cert).publicKey.export({ type: "spki", format: "pem" }));
  const block = 256 - 2 * (hash === "sha1" ? 20 : 32) - 2;
  const out: Buffer[] = [];
  for (let i = 0; i < plain.length; i += block) {
    out.push(publicEncrypt({ key, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: hash }, plain.subarray(i, i + block)));
  }
  return Buffer.concat(out);
}

function ctx(over: Partial<IdentityContext> = {}): IdentityContext {
  return {
    users,
    allowAnonymous: true,
    anonymousRole: "viewer",
    securityPolicyUri: BASIC256SHA256,
    keys,
    serverNonce: randomBytes(32),
    remoteAddress: "127.0.0.1",
    validateCertificate: () => StatusCodes.Good,
    ...over,
  };
}

const NO_SIG = { algorithm: undefined, signature: undefined };

function userNameToken(userName: string, password: Buffer | undefined, encryptionAlgorithm: string | undefined, policyId = "username"): ExtensionObject {
  return { typeId: numericNodeId(ObjectIds.UserNameIdentityToken_Encoding_DefaultBinary), body: { policyId, userName, password, encryptionAlgorithm } };
}

function x509Token(cert: Buffer, policyId = "certificate"): ExtensionObject {
  return { typeId: numericNodeId(ObjectIds.X509IdentityToken_Encoding_DefaultBinary), body: { policyId, certificateData: cert } };
}

describe("token policies", () => {
  it("offers UserName and X509 only on signed endpoints, naming the policy", () => {
    const all = { allowAnonymous: true, passwords: true, certificates: true };
    expect(userTokenPolicies(NONE, all).map((t) => t.tokenType)).toEqual([UserTokenType.Anonymous]);
    const secure = userTokenPolicies(RSAPSS, all);
    expect(secure.map((t) => [t.policyId, t.tokenType, t.securityPolicyUri])).toEqual([
      ["anonymous", UserTokenType.Anonymous, undefined],
      ["username", UserTokenType.UserName, RSAPSS],
      ["certificate", UserTokenType.Certificate, RSAPSS],
    ]);
    expect(userTokenPolicies(BASIC256SHA256, { allowAnonymous: false, passwords: true, certificates: false }).map((t) => t.policyId)).toEqual(["username"]);
  });
});

describe("legacy encrypted token secret", () => {
  it.each([
    [BASIC256SHA256, "sha1"],
    [AES128, "sha1"],
    [RSAPSS, "sha256"],
  ] as const)("%s decrypts with OAEP-%s, also over several blocks", (policy, hash) => {
    const nonce = randomBytes(32);
    for (const secret of [Buffer.from("pw"), Buffer.alloc(0), randomBytes(500)]) {
      expect(decryptLegacySecret(policy, keys.ownPrivateKey, encryptSecret(secret, nonce, hash), nonce)).toEqual(secret);
    }
  });

  it("refuses another nonce, another padding hash, another key, truncated or bent bytes", () => {
    const nonce = randomBytes(32);
    const good = encryptSecret(Buffer.from("pw"), nonce, "sha1");
    expect(decryptLegacySecret(BASIC256SHA256, keys.ownPrivateKey, good, randomBytes(32))).toBeUndefined();
    expect(decryptLegacySecret(RSAPSS, keys.ownPrivateKey, good, nonce)).toBeUndefined();
    expect(decryptLegacySecret(BASIC256SHA256, keys.ownPrivateKey, encryptSecret(Buffer.from("pw"), nonce, "sha1", user.certificate), nonce)).toBeUndefined();
    expect(decryptLegacySecret(BASIC256SHA256, keys.ownPrivateKey, good.subarray(1), nonce)).toBeUndefined();
    const bent = Buffer.from(good);
    bent[100] ^= 1;
    expect(decryptLegacySecret(BASIC256SHA256, keys.ownPrivateKey, bent, nonce)).toBeUndefined();
    expect(decryptLegacySecret(NONE, keys.ownPrivateKey, good, nonce)).toBeUndefined();
  });
});

describe("authenticateToken", () => {
  it("anonymous: a null token or an AnonymousIdentityToken gets the anonymous role unless anonymous is off", async () => {
    expect(await authenticateToken(undefined, NO_SIG, ctx())).toEqual({ role: "viewer", userId: "" });
    const anon: ExtensionObject = { typeId: numericNodeId(ObjectIds.AnonymousIdentityToken_Encoding_DefaultBinary), body: { policyId: "anonymous" } };
    expect(await authenticateToken(anon, NO_SIG, ctx({ anonymousRole: "operator" }))).toEqual({ role: "operator", userId: "" });
    expect(await authenticateToken(anon, NO_SIG, ctx({ allowAnonymous: false }))).toEqual({ status: StatusCodes.BadIdentityTokenRejected });
    const wrongPolicy: ExtensionObject = { typeId: anon.typeId, body: { policyId: "username" } };
    expect(await authenticateToken(wrongPolicy, NO_SIG, ctx())).toEqual({ status: StatusCodes.BadIdentityTokenInvalid });
    const issued: ExtensionObject = { typeId: numericNodeId(ObjectIds.IssuedIdentityToken_Encoding_DefaultBinary), body: Buffer.alloc(4) };
    expect(await authenticateToken(issued, NO_SIG, ctx())).toEqual({ status: StatusCodes.BadIdentityTokenInvalid });
  });

  it("UserName: the right password under each policy gives the user's role", async () => {
    for (const [policy, hash, alg] of [
      [BASIC256SHA256, "sha1", OAEP_SHA1],
      [AES128, "sha1", OAEP_SHA1],
      [RSAPSS, "sha256", OAEP_SHA256],
    ] as const) {
      const c = ctx({ securityPolicyUri: policy });
      const token = userNameToken("alice", encryptSecret(Buffer.from("s3cret"), c.serverNonce, hash), alg);
      expect(await authenticateToken(token, NO_SIG, c)).toEqual({ role: "operator", userId: "user:alice" });
    }
  });

  it("UserName: wrong password, unknown user, replayed nonce and garbage are all BadUserAccessDenied", async () => {
    const c = ctx();
    const denied = { status: StatusCodes.BadUserAccessDenied };
    const enc = (s: string, nonce = c.serverNonce) => encryptSecret(Buffer.from(s), nonce, "sha1");
    expect(await authenticateToken(userNameToken("alice", enc("wrong"), OAEP_SHA1), NO_SIG, c)).toEqual(denied);
    expect(await authenticateToken(userNameToken("nobody", enc("s3cret"), OAEP_SHA1), NO_SIG, c)).toEqual(denied);
    expect(await authenticateToken(userNameToken("alice", enc("s3cret", randomBytes(32)), OAEP_SHA1), NO_SIG, c)).toEqual(denied);
    expect(await authenticateToken(userNameToken("alice", randomBytes(256), OAEP_SHA1), NO_SIG, c)).toEqual(denied);
    expect(await authenticateToken(userNameToken("alice", undefined, OAEP_SHA1), NO_SIG, c)).toEqual(denied);
    expect(await authenticateToken(userNameToken("", enc("s3cret"), OAEP_SHA1), NO_SIG, c)).toEqual(denied);
  });

  it("UserName: a plain-text or wrongly named secret is BadIdentityTokenInvalid, any UserName on a None channel BadIdentityTokenRejected", async () => {
    const c = ctx();
    expect(await authenticateToken(userNameToken("alice", Buffer.from("s3cret"), undefined), NO_SIG, c)).toEqual({ status: StatusCodes.BadIdentityTokenInvalid });
    expect(await authenticateToken(userNameToken("alice", encryptSecret(Buffer.from("s3cret"), c.serverNonce, "sha1"), OAEP_SHA256), NO_SIG, c)).toEqual({
      status: StatusCodes.BadIdentityTokenInvalid,
    });
    expect(await authenticateToken(userNameToken("alice", Buffer.from("s3cret"), OAEP_SHA1, "anonymous"), NO_SIG, c)).toEqual({ status: StatusCodes.BadIdentityTokenInvalid });
    const none = ctx({ securityPolicyUri: NONE });
    expect(await authenticateToken(userNameToken("alice", Buffer.from("s3cret"), undefined), NO_SIG, none)).toEqual({ status: StatusCodes.BadIdentityTokenRejected });
    expect(await authenticateToken(userNameToken("alice", Buffer.from("s3cret"), undefined), NO_SIG, ctx({ keys: undefined }))).toEqual({
      status: StatusCodes.BadIdentityTokenRejected,
    });
  });

  function userSignature(identity: TestIdentity, c: IdentityContext, pss: boolean) {
    const data = Buffer.concat([server.certificate, c.serverNonce]);
    return pss
      ? { algorithm: RSA_PSS, signature: sign("sha256", data, { key: identity.privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }) }
      : { algorithm: RSA_SHA256, signature: sign("sha256", data, identity.privateKey) };
  }

  it("X509: a signed token of a configured, valid certificate gives its user's role", async () => {
    const c = ctx();
    expect(await authenticateToken(x509Token(user.certificate), userSignature(user, c, false), c)).toEqual({
      role: "admin",
      userId: `cert:${certificateThumbprint(user.certificate)}`,
    });
    // certificateData may carry the chain after the user's certificate.
    const chain = Buffer.concat([user.certificate, stranger.certificate]);
    expect(await authenticateToken(x509Token(chain), userSignature(user, c, false), c)).toMatchObject({ role: "admin" });
    const pss = ctx({ securityPolicyUri: RSAPSS });
    expect(await authenticateToken(x509Token(user.certificate), userSignature(user, pss, true), pss)).toMatchObject({ role: "admin" });
  });

  it("X509: bad signature, invalid certificate, unknown certificate, None channel", async () => {
    const c = ctx();
    // Signed by another key, over another nonce, or with the other policy's algorithm.
    expect(await authenticateToken(x509Token(user.certificate), userSignature(stranger, c, false), c)).toEqual({ status: StatusCodes.BadUserSignatureInvalid });
    expect(await authenticateToken(x509Token(user.certificate), userSignature(user, ctx(), false), c)).toEqual({ status: StatusCodes.BadUserSignatureInvalid });
    expect(await authenticateToken(x509Token(user.certificate), userSignature(user, c, true), c)).toEqual({ status: StatusCodes.BadUserSignatureInvalid });
    expect(await authenticateToken(x509Token(user.certificate), NO_SIG, c)).toEqual({ status: StatusCodes.BadUserSignatureInvalid });
    // Refused by the PKI (untrusted, expired, ...): the reason is not passed on.
    const untrusted = ctx({ validateCertificate: () => StatusCodes.BadCertificateUntrusted });
    expect(await authenticateToken(x509Token(user.certificate), userSignature(user, untrusted, false), untrusted)).toEqual({
      status: StatusCodes.BadIdentityTokenRejected,
    });
    // Valid and trusted but not a configured user.
    expect(await authenticateToken(x509Token(stranger.certificate), userSignature(stranger, c, false), c)).toEqual({ status: StatusCodes.BadUserAccessDenied });
    expect(await authenticateToken(x509Token(Buffer.from("not a certificate")), NO_SIG, c)).toEqual({ status: StatusCodes.BadIdentityTokenInvalid });
    const none = ctx({ securityPolicyUri: NONE });
    expect(await authenticateToken(x509Token(user.certificate), userSignature(user, none, false), none)).toEqual({ status: StatusCodes.BadIdentityTokenRejected });
  });
});
