// Interop with node-opcua-client in every signing policy and mode: endpoints with the server
// certificate, session (serverSignature checked by the client), reads and a browse, and token
// renewals (1.5 s token lifetime) while reads keep going, none of them lost.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AttributeIds, MessageSecurityMode, SecurityPolicy, StatusCodes } from "node-opcua-client";
import { describeCertificate, thumbprintHex } from "../../src/security/certificates.js";
import { loadGatewayConfig } from "../../src/config/load.js";
import { FieldgateServer } from "../../src/server/server.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { makeCert, type TestCert } from "./certs.js";
import { MODES, POLICIES, secureClient } from "./client.js";

let gw: TestGateway;
let dir: string;
let cert: TestCert;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fieldgate-sec-interop-"));
  gw = await startGateway("transport:\n  minTokenLifetime: 1s\n");
  cert = await makeCert({ commonName: "interop client" });
  writeFileSync(join(gw.server.pki!.root, "trusted", "certs", "client.der"), cert.der);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("endpoints", () => {
  it("offers None and each policy in Sign and SignAndEncrypt, with the server certificate", async () => {
    const client = secureClient({ dir, cert, policy: SecurityPolicy.None, mode: MessageSecurityMode.None });
    await client.connect(gw.url);
    try {
      const endpoints = await client.getEndpoints();
      const pairs = endpoints.map((e) => `${e.securityPolicyUri?.split("#")[1]}/${MessageSecurityMode[e.securityMode]}`);
      expect(pairs.sort()).toEqual(
        [
          "None/None",
          ...POLICIES.flatMap(([name]) => MODES.map(([mode]) => `${name}/${mode}`)),
        ].sort(),
      );
      for (const e of endpoints) expect(thumbprintHex(e.serverCertificate!)).toBe(gw.server.pki!.ownThumbprint);
      const levels = new Map(endpoints.map((e) => [`${e.securityPolicyUri}/${e.securityMode}`, e.securityLevel]));
      expect(levels.get(`${SecurityPolicy.None}/${MessageSecurityMode.None}`)).toBe(0);
      expect(levels.get(`${SecurityPolicy.Basic256Sha256}/${MessageSecurityMode.SignAndEncrypt}`)).toBeGreaterThan(
        levels.get(`${SecurityPolicy.Basic256Sha256}/${MessageSecurityMode.Sign}`)!,
      );
    } finally {
      await client.disconnect();
    }
  });
});

describe("multi-chunk messages in SignAndEncrypt", () => {
  it.each(POLICIES)("%s: a Read of 6000 values (request and response over several chunks)", async (_name, policy) => {
    const client = secureClient({ dir, cert, policy, mode: MessageSecurityMode.SignAndEncrypt });
    await client.connect(gw.url);
    const session = await client.createSession();
    try {
      const nodes = Array.from({ length: 6000 }, () => ({ nodeId: "i=2258", attributeId: AttributeIds.Value }));
      const results = await session.read(nodes);
      expect(results.length).toBe(6000);
      for (const r of results) expect(r.statusCode).toBe(StatusCodes.Good);
    } finally {
      await session.close();
      await client.disconnect();
    }
  }, 30_000);
});

describe("a 4096-bit client key (our OPN responses carry ExtraPaddingSize, Part 6 §6.7.2.5)", () => {
  let big: TestCert;
  beforeAll(async () => {
    big = await makeCert({ commonName: "big key", bits: 4096 });
    writeFileSync(join(gw.server.pki!.root, "trusted", "certs", "big.der"), big.der);
  }, 60_000);

  it.each([
    ["Basic256Sha256", SecurityPolicy.Basic256Sha256],
    ["Aes256_Sha256_RsaPss", SecurityPolicy.Aes256_Sha256_RsaPss],
  ])("%s SignAndEncrypt: session and Read", async (_name, policy) => {
    const client = secureClient({ dir, cert: big, policy, mode: MessageSecurityMode.SignAndEncrypt });
    await client.connect(gw.url);
    const session = await client.createSession();
    try {
      const r = await session.read({ nodeId: "i=2258", attributeId: AttributeIds.Value });
      expect(r.statusCode).toBe(StatusCodes.Good);
    } finally {
      await session.close();
      await client.disconnect();
    }
  }, 30_000);
});

describe("a gateway with a 4096-bit key (the client's OPN chunks carry ExtraPaddingSize)", () => {
  let big: TestGateway;
  beforeAll(async () => {
    // The gateway keeps a certificate it finds in pki/own: put a 4096-bit one there first.
    const root = mkdtempSync(join(tmpdir(), "fieldgate-sec-4096-"));
    const own = await makeCert({ commonName: "fieldgate 4096", bits: 4096, applicationUri: "urn:fieldgate:big" });
    mkdirSync(join(root, "data", "pki", "own", "certs"), { recursive: true });
    mkdirSync(join(root, "data", "pki", "own", "private"), { recursive: true });
    writeFileSync(join(root, "data", "pki", "own", "certs", "fieldgate.der"), own.der);
    writeFileSync(join(root, "data", "pki", "own", "private", "private_key.pem"), own.keyPem);
    writeFileSync(join(root, "gateway.yaml"), "server:\n  host: 127.0.0.1\n  port: 0\n  applicationUri: urn:fieldgate:big\ndataDir: ./data\n");
    const server = new FieldgateServer(loadGatewayConfig(join(root, "gateway.yaml")));
    await server.start();
    big = {
      server,
      url: `opc.tcp://127.0.0.1:${server.port}`,
      async stop() {
        await server.stop();
        rmSync(root, { recursive: true, force: true });
      },
    };
    writeFileSync(join(server.pki!.root, "trusted", "certs", "client.der"), cert.der);
  }, 60_000);
  afterAll(async () => {
    await big?.stop();
  });

  it.each(POLICIES)("%s SignAndEncrypt: session and Read", async (_name, policy) => {
    expect(describeCertificate(big.server.pki!.ownCertificate).keyBits).toBe(4096);
    const client = secureClient({ dir, cert, policy, mode: MessageSecurityMode.SignAndEncrypt });
    await client.connect(big.url);
    const session = await client.createSession();
    try {
      const r = await session.read({ nodeId: "i=2258", attributeId: AttributeIds.Value });
      expect(r.statusCode).toBe(StatusCodes.Good);
    } finally {
      await session.close();
      await client.disconnect();
    }
  }, 30_000);
});

describe.each(POLICIES)("%s", (_name, policy) => {
  it.each(MODES)("%s: session, reads, browse and token renewals during reads", async (_mode, mode) => {
    const client = secureClient({ dir, cert, policy, mode, tokenLifetime: 1500 });
    let renewals = 0;
    client.on("security_token_renewed", () => renewals++);
    await client.connect(gw.url);
    const session = await client.createSession();
    try {
      const browse = await session.browse("i=85");
      expect(browse.statusCode).toBe(StatusCodes.Good);
      expect(browse.references!.length).toBeGreaterThan(0);
      let reads = 0;
      const until = Date.now() + 2600;
      while (Date.now() < until || renewals < 2) {
        // Several requests in flight at once, so some cross a renewal.
        const results = await Promise.all(
          [0, 1, 2, 3].map(() => session.read({ nodeId: "i=2258", attributeId: AttributeIds.Value })),
        );
        for (const r of results) expect(r.statusCode).toBe(StatusCodes.Good);
        reads += results.length;
        if (Date.now() > until + 5000) break;
      }
      expect(renewals).toBeGreaterThanOrEqual(2);
      // The server's side of it: the session's channel has this policy and mode, renewed tokens.
      const channels = [...gw.server.sessions.sessions()].map((s) => s.channel);
      expect(channels.length).toBe(1);
      expect(channels[0].securityPolicyUri).toBe(policy);
      expect(channels[0].securityMode).toBe(mode);
      expect(channels[0].tokensIssued).toBeGreaterThanOrEqual(3);
      expect(reads).toBeGreaterThan(8);
    } finally {
      await session.close();
      await client.disconnect();
    }
  }, 30_000);
});
