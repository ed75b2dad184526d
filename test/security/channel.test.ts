// The secure channel against our own raw client (bench/client/secure-channel.ts, on the same
// crypto as the server, interop being node-opcua-client's job): exact ERR codes for refused
// certificates, tampered / replayed / reordered chunks, CreateSession checks, renewals with
// requests in flight, None kept for discovery only when switched off.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SecureClientChannel, SecureClientError } from "../../bench/client/secure-channel.js";
import { MessageSecurityMode, SecurityTokenRequestType, TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { StatusCodes } from "../../src/ua/generated/status-codes.js";
import { decodeGetEndpointsResponse, decodeReadResponse, encodeGetEndpointsRequest, encodeReadRequest, type ReadResponse } from "../../src/ua/generated/types.js";
import { numericNodeId } from "../../src/ua/builtins.js";
import { POLICY_ALGORITHMS } from "../../src/security/policies.js";
import { SECURITY_POLICY_NONE_URI } from "../../src/security/security-policy.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { makeCert, type CertOptions, type TestCert } from "./certs.js";

const B256 = POLICY_ALGORITHMS.Basic256Sha256.uri;
let gw: TestGateway;
let good: TestCert;

function options(cert: TestCert, policyUri = B256, mode = MessageSecurityMode.SignAndEncrypt) {
  return {
    host: "127.0.0.1",
    port: gw.server.port,
    policyUri,
    mode,
    certificate: cert.der,
    privateKey: cert.key,
    serverCertificate: gw.server.pki!.ownCertificate,
    timeoutMs: 5000,
  };
}

function trust(c: TestCert): void {
  writeFileSync(join(gw.server.pki!.root, "trusted", "certs", `${c.serialHex}.der`), c.der);
}

function read(c: SecureClientChannel): Promise<ReadResponse> {
  return c.call(
    ObjectIds.ReadRequest_Encoding_DefaultBinary,
    encodeReadRequest,
    { requestHeader: c.requestHeader(), maxAge: 0, timestampsToReturn: TimestampsToReturn.Both, nodesToRead: [{ nodeId: numericNodeId(2258), attributeId: 13, indexRange: undefined, dataEncoding: { namespaceIndex: 0, name: undefined } }] },
    decodeReadResponse,
  );
}

/** The ERR status the server ends the channel with. */
async function errOf(p: Promise<unknown>, c?: SecureClientChannel): Promise<number | undefined> {
  try {
    await p;
    return StatusCodes.Good;
  } catch (err) {
    if (c) await c.closed;
    return (err as SecureClientError).statusCode;
  }
}

beforeAll(async () => {
  gw = await startGateway("transport:\n  minTokenLifetime: 1s\n");
  good = await makeCert({ commonName: "raw client" });
  trust(good);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
});

describe("signed channels with our raw client", () => {
  it.each([
    ["Basic256Sha256", MessageSecurityMode.Sign],
    ["Basic256Sha256", MessageSecurityMode.SignAndEncrypt],
    ["Aes128_Sha256_RsaOaep", MessageSecurityMode.SignAndEncrypt],
    ["Aes256_Sha256_RsaPss", MessageSecurityMode.SignAndEncrypt],
  ] as const)("%s mode %i: session and Read, Renew with requests in flight", async (name, mode) => {
    const c = await SecureClientChannel.open(options(good, POLICY_ALGORITHMS[name].uri, mode));
    await c.createSession();
    const r = await read(c);
    expect(r.results![0].statusCode ?? 0).toBe(StatusCodes.Good);
    // Requests sent with the old token, then the Renew, then requests with the new token.
    const before = [read(c), read(c)];
    await c.openSecureChannel(SecurityTokenRequestType.Renew);
    const after = [read(c), read(c)];
    for (const res of await Promise.all([...before, ...after])) expect(res.responseHeader.serviceResult).toBe(StatusCodes.Good);
    await c.close();
  });

  it("refuses OPNs with the code the wire may carry", async () => {
    const cases: [CertOptions, boolean, number][] = [
      [{}, false, StatusCodes.BadSecurityChecksFailed], // untrusted
      [{ notAfter: new Date(Date.now() - 86_400_000), notBefore: new Date(Date.now() - 9 * 86_400_000) }, true, StatusCodes.BadCertificateTimeInvalid],
      [{ hash: "SHA-1" }, true, StatusCodes.BadCertificatePolicyCheckFailed],
      [{ bits: 1024 }, true, StatusCodes.BadCertificatePolicyCheckFailed],
    ];
    for (const [o, trusted, expected] of cases) {
      const cert = await makeCert(o);
      if (trusted) trust(cert);
      const c = await SecureClientChannel.connect(options(cert));
      expect(await errOf(c.openSecureChannel(SecurityTokenRequestType.Issue), c)).toBe(expected);
    }
  }, 30_000);

  it("refuses a thumbprint that is not the server's", async () => {
    const other = await makeCert({ commonName: "not the server" });
    const c = await SecureClientChannel.connect({ ...options(good), serverCertificate: other.der });
    expect(await errOf(c.openSecureChannel(SecurityTokenRequestType.Issue), c)).toBe(StatusCodes.BadCertificateInvalid);
  });

  const SAE = MessageSecurityMode.SignAndEncrypt;
  it.each([
    ["a flipped bit in the encrypted part", SAE, (f: Buffer[]) => (f[0][30] ^= 1, [f[0]])],
    ["a flipped bit in a signed (mode Sign) body", MessageSecurityMode.Sign, (f: Buffer[]) => (f[0][40] ^= 1, [f[0]])],
    ["a flipped bit in the signature", MessageSecurityMode.Sign, (f: Buffer[]) => (f[0][f[0].length - 1] ^= 1, [f[0]])],
    ["a replayed chunk", SAE, (f: Buffer[]) => [f[0], f[0]]],
    ["chunks out of order", SAE, (f: Buffer[]) => [f[1], f[0]]],
    ["an unknown token", SAE, (f: Buffer[]) => (f[0].writeUInt32LE(f[0].readUInt32LE(12) + 7, 12), [f[0]])],
  ])("ends the channel with BadSecurityChecksFailed on %s", async (_what, mode, spoil) => {
    const c = await SecureClientChannel.open(options(good, B256, mode));
    await c.createSession();
    const frames = [0, 1].map(() =>
      c.buildMessage(ObjectIds.ReadRequest_Encoding_DefaultBinary, encodeReadRequest, {
        requestHeader: c.requestHeader(),
        maxAge: 0,
        timestampsToReturn: TimestampsToReturn.Both,
        nodesToRead: [{ nodeId: numericNodeId(2258), attributeId: 13, indexRange: undefined, dataEncoding: { namespaceIndex: 0, name: undefined } }],
      }),
    );
    for (const f of spoil(frames)) c.socket.write(f);
    await c.closed;
    expect(c.errorStatus).toBe(StatusCodes.BadSecurityChecksFailed);
  });

  it("CreateSession: wrong applicationUri, short nonce-less session refused", async () => {
    const c = await SecureClientChannel.open({ ...options(good), applicationUri: "urn:not:the:certificate" });
    expect(await errOf(c.createSession())).toBe(StatusCodes.BadCertificateUriInvalid);
    await c.close();
  });
});

describe("None switched off", () => {
  let strict: TestGateway;
  beforeAll(async () => {
    strict = await startGateway("security:\n  securityPolicies: [Basic256Sha256]\n  securityModes: [SignAndEncrypt]\n");
  }, 60_000);
  afterAll(async () => {
    await strict?.stop();
  });

  it("answers GetEndpoints on a None channel (SignAndEncrypt only), refuses a session there", async () => {
    const c = await SecureClientChannel.open({ host: "127.0.0.1", port: strict.server.port, policyUri: SECURITY_POLICY_NONE_URI, mode: MessageSecurityMode.None });
    const ep = await c.call(
      ObjectIds.GetEndpointsRequest_Encoding_DefaultBinary,
      encodeGetEndpointsRequest,
      { requestHeader: c.requestHeader(), endpointUrl: strict.url, localeIds: undefined, profileUris: undefined },
      decodeGetEndpointsResponse,
    );
    expect(ep.endpoints!.map((e) => [e.securityPolicyUri, e.securityMode])).toEqual([[B256, MessageSecurityMode.SignAndEncrypt]]);
    expect(await errOf(c.createSession())).toBe(StatusCodes.BadSecurityPolicyRejected);
    await c.close();
  });

  it("refuses a mode that is not offered", async () => {
    const cert = await makeCert({ commonName: "sign only" });
    writeFileSync(join(strict.server.pki!.root, "trusted", "certs", "c.der"), cert.der);
    const c = await SecureClientChannel.connect({ ...options(cert), port: strict.server.port, serverCertificate: strict.server.pki!.ownCertificate, mode: MessageSecurityMode.Sign });
    expect(await errOf(c.openSecureChannel(SecurityTokenRequestType.Issue), c)).toBe(StatusCodes.BadSecurityModeRejected);
  });
});
