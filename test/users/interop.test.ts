// Users and roles against a real server with node-opcua-client (a client nobody here wrote) on
// signed and encrypted channels: UserName in every policy, wrong password, unknown user, lockout
// and its release, an X509 user, anonymous switched off, and the role checks of Write and
// UserAccessLevel.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OPCUACertificateManager } from "node-opcua-certificate-manager";
import {
  AttributeIds,
  DataType,
  MessageSecurityMode,
  OPCUAClient,
  SecurityPolicy,
  StatusCodes as NodeOpcuaStatusCodes,
  UserTokenType,
  type ClientSession,
  type UserIdentityInfo,
} from "node-opcua-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BuiltinType, VariantArrayType } from "../../src/ua/builtins.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import type { MemoryNamespace } from "../../src/address-space/memory-namespace.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { TEST_NAMESPACE_URI } from "../../src/testing/test-namespace.js";
import { FakeClock } from "../../src/sampling/clock.js";
import { certificateThumbprint, hashPassword } from "../../src/sessions/users.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { makeCertificate, type TestIdentity } from "./certs.js";

const CLIENT_URI = "urn:fieldgate:users-test-client";
const CHEAP = { logN: 10, r: 8, p: 1 };

let gw: TestGateway;
let dir: string;
let app: TestIdentity;
let carol: TestIdentity;
let stranger: TestIdentity;
let tagNodeId: string;

const pem = (der: Buffer) => `-----BEGIN CERTIFICATE-----\n${der.toString("base64").replace(/.{64}/g, "$&\n")}\n-----END CERTIFICATE-----\n`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fieldgate-users-"));
  [app, carol, stranger] = await Promise.all([
    makeCertificate({ cn: "users-test-client", applicationUri: CLIENT_URI }),
    makeCertificate({ cn: "carol" }),
    makeCertificate({ cn: "stranger" }),
  ]);
  writeFileSync(join(dir, "client.pem"), pem(app.certificate));
  writeFileSync(join(dir, "client.key"), app.privateKey.export({ type: "pkcs8", format: "pem" }));
  gw = await startGateway(`security:
  allowAnonymous: false
  securityPolicies: [None, Basic256Sha256, Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss]
  lockout:
    maxFailuresPerUser: 3
    maxFailuresPerAddress: 1000
    duration: 1m
users:
  alice:
    role: operator
    password: "${await hashPassword("alice-pw", CHEAP)}"
  victor:
    role: viewer
    password: "${await hashPassword("victor-pw", CHEAP)}"
  lockme:
    role: viewer
    password: "${await hashPassword("lockme-pw", CHEAP)}"
  carol:
    role: operator
    certificates: ["${certificateThumbprint(carol.certificate)}"]
`);
  // The client's application certificate and both user certificates are trusted; only carol's
  // is a configured user. The PKI picks up trusted/ without a restart.
  const trusted = join(gw.server.pki!.root, "trusted", "certs");
  mkdirSync(trusted, { recursive: true });
  writeFileSync(join(trusted, "client.der"), app.certificate);
  writeFileSync(join(trusted, "carol.der"), carol.certificate);
  writeFileSync(join(trusted, "stranger.der"), stranger.certificate);
  // A device-like tag: writable by operator and admin only (MemoryNamespace's default writeRoles).
  const index = gw.server.registry.indexOf(TEST_NAMESPACE_URI);
  const ns = gw.server.registry.managerAt(index) as MemoryNamespace;
  ns.addVariable({
    nodeId: "Users.Tag",
    browseName: "UsersTag",
    parent: { namespace: 0, idType: 0, value: ObjectIds.ObjectsFolder },
    dataType: BuiltinType.Int32,
    value: { dataType: BuiltinType.Int32, arrayType: VariantArrayType.Scalar, value: 1 },
    accessLevel: AccessLevel.CurrentRead | AccessLevel.CurrentWrite,
  });
  tagNodeId = `ns=${index};s=Users.Tag`;
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  rmSync(dir, { recursive: true, force: true });
});

let clients = 0;
function client(policy = SecurityPolicy.Basic256Sha256, mode = MessageSecurityMode.SignAndEncrypt): OPCUAClient {
  return OPCUAClient.create({
    applicationName: "fieldgate-users-test",
    applicationUri: CLIENT_URI,
    endpointMustExist: false,
    securityMode: mode,
    securityPolicy: policy,
    certificateFile: join(dir, "client.pem"),
    privateKeyFile: join(dir, "client.key"),
    clientCertificateManager: new OPCUACertificateManager({ rootFolder: join(dir, `client-pki${clients++}`), automaticallyAcceptUnknownCertificate: true }),
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 60_000,
  });
}

/** Connects and opens a session as `identity`; returns the session or the StatusCode name that refused it. */
async function login(identity: UserIdentityInfo, c = client()): Promise<{ session?: ClientSession; error?: string; close: () => Promise<void> }> {
  await c.connect(gw.url);
  const close = () => c.disconnect();
  try {
    return { session: await c.createSession(identity), close };
  } catch (err) {
    const text = String((err as Error).message);
    return { error: /Bad\w+/.exec(text)?.[0] ?? text, close };
  }
}

const user = (userName: string, password: string): UserIdentityInfo => ({ type: UserTokenType.UserName, userName, password });

describe("users with node-opcua-client", () => {
  it("offers UserName and X509 token policies on the signed endpoints only, and no anonymous", async () => {
    const c = client();
    await c.connect(gw.url);
    try {
      const endpoints = await c.getEndpoints();
      expect(endpoints.length).toBe(7);
      for (const e of endpoints) {
        const types = (e.userIdentityTokens ?? []).map((t) => t.tokenType);
        if (e.securityMode === MessageSecurityMode.None) expect(types).toEqual([]);
        else expect(types).toEqual([UserTokenType.UserName, UserTokenType.Certificate]);
      }
    } finally {
      await c.disconnect();
    }
  });

  it.each([
    ["Basic256Sha256", "Sign", SecurityPolicy.Basic256Sha256, MessageSecurityMode.Sign],
    ["Basic256Sha256", "SignAndEncrypt", SecurityPolicy.Basic256Sha256, MessageSecurityMode.SignAndEncrypt],
    ["Aes128_Sha256_RsaOaep", "Sign", SecurityPolicy.Aes128_Sha256_RsaOaep, MessageSecurityMode.Sign],
    ["Aes128_Sha256_RsaOaep", "SignAndEncrypt", SecurityPolicy.Aes128_Sha256_RsaOaep, MessageSecurityMode.SignAndEncrypt],
    ["Aes256_Sha256_RsaPss", "Sign", SecurityPolicy.Aes256_Sha256_RsaPss, MessageSecurityMode.Sign],
    ["Aes256_Sha256_RsaPss", "SignAndEncrypt", SecurityPolicy.Aes256_Sha256_RsaPss, MessageSecurityMode.SignAndEncrypt],
  ])("logs in with a password under %s mode %s", async (_name, _mode, policy, mode) => {
    const r = await login(user("alice", "alice-pw"), client(policy, mode));
    try {
      expect(r.error).toBeUndefined();
      const dv = await r.session!.read({ nodeId: tagNodeId, attributeId: AttributeIds.Value });
      expect(dv.statusCode.isGood()).toBe(true);
    } finally {
      await r.close();
    }
  });

  it("refuses a wrong password and an unknown user with the same BadUserAccessDenied", async () => {
    for (const identity of [user("alice", "wrong"), user("nobody", "alice-pw")]) {
      const r = await login(identity);
      await r.close();
      expect(r.error).toBe("BadUserAccessDenied");
    }
  });

  it("refuses anonymous when it is switched off", async () => {
    const r = await login({ type: UserTokenType.Anonymous });
    await r.close();
    // node-opcua refuses before asking when no endpoint offers anonymous; either way no session.
    expect(r.session).toBeUndefined();
  });

  it("locks a user out after repeated failures, also for the right password, and lets it in after the window", async () => {
    // The lockout windows run on a fake clock: a loaded machine cannot stretch them.
    const clock = new FakeClock(performance.now());
    gw.server.users.setClock(clock);
    for (let i = 0; i < 3; i++) {
      const r = await login(user("lockme", `guess${i}`));
      await r.close();
      expect(r.error).toBe("BadUserAccessDenied");
    }
    expect(gw.server.users.isLockedOut("lockme", undefined)).toBe(true);
    const locked = await login(user("lockme", "lockme-pw"));
    await locked.close();
    expect(locked.error).toBe("BadUserAccessDenied");
    clock.advance(59_999);
    const still = await login(user("lockme", "lockme-pw"));
    await still.close();
    expect(still.error).toBe("BadUserAccessDenied");
    clock.advance(1);
    const released = await login(user("lockme", "lockme-pw"));
    try {
      expect(released.error).toBeUndefined();
    } finally {
      await released.close();
    }
  });

  it("logs in an X509 user with its role; a trusted certificate that is no user is denied", async () => {
    const keyPem = (k: TestIdentity) => k.privateKey.export({ type: "pkcs8", format: "pem" }) as string;
    const ok = await login({ type: UserTokenType.Certificate, certificateData: carol.certificate, privateKey: keyPem(carol) });
    try {
      expect(ok.error).toBeUndefined();
      const result = await ok.session!.write({ nodeId: tagNodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value: 7 } } });
      expect(result).toBe(NodeOpcuaStatusCodes.Good);
    } finally {
      await ok.close();
    }
    const no = await login({ type: UserTokenType.Certificate, certificateData: stranger.certificate, privateKey: keyPem(stranger) });
    await no.close();
    expect(no.error).toBe("BadUserAccessDenied");
  });

  it("roles: a viewer's write is BadUserAccessDenied and its UserAccessLevel lacks CurrentWrite; an operator writes", async () => {
    const viewer = await login(user("victor", "victor-pw"));
    try {
      expect(viewer.error).toBeUndefined();
      const s = viewer.session!;
      const [al, ual] = await s.read([
        { nodeId: tagNodeId, attributeId: AttributeIds.AccessLevel },
        { nodeId: tagNodeId, attributeId: AttributeIds.UserAccessLevel },
      ]);
      expect(al!.value.value & AccessLevel.CurrentWrite).toBe(AccessLevel.CurrentWrite);
      expect(ual!.value.value & AccessLevel.CurrentWrite).toBe(0);
      expect(ual!.value.value & AccessLevel.CurrentRead).toBe(AccessLevel.CurrentRead);
      const w = await s.write({ nodeId: tagNodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value: 5 } } });
      expect(w).toBe(NodeOpcuaStatusCodes.BadUserAccessDenied);
    } finally {
      await viewer.close();
    }
    const operator = await login(user("alice", "alice-pw"));
    try {
      const s = operator.session!;
      const ual = await s.read({ nodeId: tagNodeId, attributeId: AttributeIds.UserAccessLevel });
      expect(ual.value.value & AccessLevel.CurrentWrite).toBe(AccessLevel.CurrentWrite);
      const w = await s.write({ nodeId: tagNodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value: 6 } } });
      expect(w).toBe(NodeOpcuaStatusCodes.Good);
      const dv = await s.read({ nodeId: tagNodeId, attributeId: AttributeIds.Value });
      expect(dv.value.value).toBe(6);
    } finally {
      await operator.close();
    }
  });
});
