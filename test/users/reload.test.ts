// The user table reloaded from gateway.yaml (SIGHUP) while node-opcua-client sessions are open:
// a lowered role applies to the next request, a changed password or a removed user ends that
// user's sessions, a certificate taken away ends its session, and a reload that also changes
// `security` leaves the users for the restart. The SIGHUP path of the CLI is in
// test/devices/cli.test.ts's style at the end: a broken gateway.yaml is refused with its
// position, a changed section is reported as needing a restart.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
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
import type { GatewayConfig } from "../../src/config/gateway-config.js";
import { loadGatewayConfig } from "../../src/config/load.js";
import type { MemoryNamespace } from "../../src/address-space/memory-namespace.js";
import { AccessLevel } from "../../src/address-space/ua-node.js";
import { TEST_NAMESPACE_URI } from "../../src/testing/test-namespace.js";
import { BuiltinType, VariantArrayType } from "../../src/ua/builtins.js";
import { ObjectIds } from "../../src/ua/generated/node-ids.js";
import { certificateThumbprint, hashPassword } from "../../src/sessions/users.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { makeCertificate, type TestIdentity } from "./certs.js";

const CLIENT_URI = "urn:fieldgate:users-reload-client";
const CHEAP = { logN: 10, r: 8, p: 1 };
const SECURITY = `security:
  allowAnonymous: false
  securityPolicies: [None, Basic256Sha256]
`;

let gw: TestGateway;
let dir: string;
let app: TestIdentity;
let carol: TestIdentity;
let tagNodeId: string;
const hashes: Record<string, string> = {};

const pem = (der: Buffer) => `-----BEGIN CERTIFICATE-----\n${der.toString("base64").replace(/.{64}/g, "$&\n")}\n-----END CERTIFICATE-----\n`;

interface UserSpec {
  role: string;
  password?: string;
  certificate?: TestIdentity;
}

function usersYaml(users: Record<string, UserSpec>): string {
  const lines = ["users:"];
  for (const [name, u] of Object.entries(users)) {
    lines.push(`  ${name}:`, `    role: ${u.role}`);
    if (u.password) lines.push(`    password: "${hashes[u.password]}"`);
    if (u.certificate) lines.push(`    certificates: ["${certificateThumbprint(u.certificate.certificate)}"]`);
  }
  return `${lines.join("\n")}\n`;
}

/** The running gateway's config as a file would give it, with other users (or another security section). */
let reloads = 0;
function nextConfig(users: Record<string, UserSpec>, security = SECURITY): GatewayConfig {
  const sub = join(dir, `reload${reloads++}`);
  mkdirSync(sub);
  const file = join(sub, "gateway.yaml");
  writeFileSync(file, `server:\n  host: 127.0.0.1\n  port: 0\n  testNamespace: true\ndataDir: ${gw.server.config.dataDir}\n${security}${usersYaml(users)}`);
  return loadGatewayConfig(file);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fieldgate-users-reload-"));
  [app, carol] = await Promise.all([makeCertificate({ cn: "users-reload-client", applicationUri: CLIENT_URI }), makeCertificate({ cn: "carol" })]);
  for (const pw of ["alice-pw", "bob-pw", "bob-new-pw"]) hashes[pw] = await hashPassword(pw, CHEAP);
  writeFileSync(join(dir, "client.pem"), pem(app.certificate));
  writeFileSync(join(dir, "client.key"), app.privateKey.export({ type: "pkcs8", format: "pem" }));
  gw = await startGateway(
    SECURITY +
      usersYaml({
        alice: { role: "operator", password: "alice-pw" },
        bob: { role: "operator", password: "bob-pw" },
        carol: { role: "operator", certificate: carol },
      }),
  );
  const trusted = join(gw.server.pki!.root, "trusted", "certs");
  mkdirSync(trusted, { recursive: true });
  writeFileSync(join(trusted, "client.der"), app.certificate);
  writeFileSync(join(trusted, "carol.der"), carol.certificate);
  const index = gw.server.registry.indexOf(TEST_NAMESPACE_URI);
  const ns = gw.server.registry.managerAt(index) as MemoryNamespace;
  ns.addVariable({
    nodeId: "Reload.Tag",
    browseName: "ReloadTag",
    parent: { namespace: 0, idType: 0, value: ObjectIds.ObjectsFolder },
    dataType: BuiltinType.Int32,
    value: { dataType: BuiltinType.Int32, arrayType: VariantArrayType.Scalar, value: 1 },
    accessLevel: AccessLevel.CurrentRead | AccessLevel.CurrentWrite,
  });
  tagNodeId = `ns=${index};s=Reload.Tag`;
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  rmSync(dir, { recursive: true, force: true });
});

let clients = 0;
function client(): OPCUAClient {
  return OPCUAClient.create({
    applicationName: "fieldgate-users-reload-test",
    applicationUri: CLIENT_URI,
    endpointMustExist: false,
    securityMode: MessageSecurityMode.SignAndEncrypt,
    securityPolicy: SecurityPolicy.Basic256Sha256,
    certificateFile: join(dir, "client.pem"),
    privateKeyFile: join(dir, "client.key"),
    clientCertificateManager: new OPCUACertificateManager({ rootFolder: join(dir, `client-pki${clients++}`), automaticallyAcceptUnknownCertificate: true }),
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 60_000,
  });
}

async function login(identity: UserIdentityInfo): Promise<{ session?: ClientSession; error?: string; close: () => Promise<void> }> {
  const c = client();
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
const write = (s: ClientSession, value: number) => s.write({ nodeId: tagNodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value } } });

/** Resolves to `fallback` when `p` has not settled within `ms`. */
function within<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((r) => (timer = setTimeout(() => r(fallback), ms)))]).finally(() => clearTimeout(timer));
}

/** Server-side sessions activated by `userId` (user:<name> or cert:<thumbprint>). */
const sessionsOf = (userId: string) => [...gw.server.sessions.sessions()].filter((s) => s.userId === userId).length;

/**
 * What a read through a session the server closed comes to. node-opcua answers
 * BadSessionIdInvalid by recreating the session with the identity it kept, which the reloaded
 * table refuses, and retries: the read then never comes back Good, and may not come back at all.
 */
const readAfterClose = (s: ClientSession) => within(readStatus(s), 3000, "no answer");

/** The StatusCode name a read of the session fails or succeeds with. */
async function readStatus(s: ClientSession): Promise<string> {
  try {
    return (await s.read({ nodeId: tagNodeId, attributeId: AttributeIds.Value })).statusCode.name;
  } catch (err) {
    return /Bad\w+/.exec(String((err as Error).message))?.[0] ?? String(err);
  }
}

describe("users reloaded from gateway.yaml", () => {
  it("a lowered role applies to the open session's next write; nothing else needs a restart", async () => {
    const alice = await login(user("alice", "alice-pw"));
    try {
      expect(alice.error).toBeUndefined();
      expect(await write(alice.session!, 2)).toBe(NodeOpcuaStatusCodes.Good);
      const r = gw.server.reloadConfig(
        nextConfig({ alice: { role: "viewer", password: "alice-pw" }, bob: { role: "operator", password: "bob-pw" }, carol: { role: "operator", certificate: carol } }),
      );
      expect(r.restartNeeded).toEqual([]);
      expect(r.users).toMatchObject({ added: [], removed: [], changed: ["alice"], sessionsClosed: 0, sessionsRerolled: 1 });
      expect(await write(alice.session!, 3)).toBe(NodeOpcuaStatusCodes.BadUserAccessDenied);
      expect(await readStatus(alice.session!)).toBe("Good");
    } finally {
      await alice.close();
    }
  }, 30_000);

  it("a changed password ends that user's session (not the others'); the old password is refused, the new one works", async () => {
    const bob = await login(user("bob", "bob-pw"));
    const alice = await login(user("alice", "alice-pw"));
    try {
      expect(bob.error).toBeUndefined();
      expect(sessionsOf("user:bob")).toBe(1);
      const r = gw.server.reloadConfig(
        nextConfig({ alice: { role: "viewer", password: "alice-pw" }, bob: { role: "operator", password: "bob-new-pw" }, carol: { role: "operator", certificate: carol } }),
      );
      expect(r.users).toMatchObject({ changed: ["bob"], sessionsClosed: 1, sessionsRerolled: 0 });
      expect(sessionsOf("user:bob")).toBe(0);
      expect(await readAfterClose(bob.session!)).not.toBe("Good");
      // Its attempt to come back with the old password was refused.
      expect(sessionsOf("user:bob")).toBe(0);
      expect(await readStatus(alice.session!)).toBe("Good");
    } finally {
      await within(bob.close(), 5000, undefined);
      await alice.close();
    }
    const old = await login(user("bob", "bob-pw"));
    await old.close();
    expect(old.error).toBe("BadUserAccessDenied");
    const fresh = await login(user("bob", "bob-new-pw"));
    try {
      expect(fresh.error).toBeUndefined();
      expect(await write(fresh.session!, 4)).toBe(NodeOpcuaStatusCodes.Good);
    } finally {
      await fresh.close();
    }
  }, 30_000);

  it("removing a user and a certificate ends their sessions; a new user logs in at once", async () => {
    const keyPem = carol.privateKey.export({ type: "pkcs8", format: "pem" }) as string;
    const c = await login({ type: UserTokenType.Certificate, certificateData: carol.certificate, privateKey: keyPem });
    const alice = await login(user("alice", "alice-pw"));
    try {
      expect(c.error).toBeUndefined();
      expect(await readStatus(c.session!)).toBe("Good");
      const r = gw.server.reloadConfig(nextConfig({ bob: { role: "operator", password: "bob-new-pw" }, dave: { role: "admin", password: "alice-pw" } }));
      expect(r.users).toMatchObject({ added: ["dave"], removed: ["alice", "carol"], changed: [], sessionsClosed: 2 });
      expect(sessionsOf(`cert:${certificateThumbprint(carol.certificate)}`)).toBe(0);
      expect(sessionsOf("user:alice")).toBe(0);
      expect(await readAfterClose(c.session!)).not.toBe("Good");
      expect(await readAfterClose(alice.session!)).not.toBe("Good");
    } finally {
      await within(c.close(), 5000, undefined);
      await within(alice.close(), 5000, undefined);
    }
    const gone = await login(user("alice", "alice-pw"));
    await gone.close();
    expect(gone.error).toBe("BadUserAccessDenied");
    const dave = await login(user("dave", "alice-pw"));
    try {
      expect(dave.error).toBeUndefined();
    } finally {
      await dave.close();
    }
  }, 30_000);

  it("with the security section changed too, the users wait for the restart", async () => {
    const r = gw.server.reloadConfig(
      nextConfig({ eve: { role: "admin", password: "alice-pw" } }, "security:\n  allowAnonymous: false\n  securityPolicies: [Basic256Sha256]\n"),
    );
    expect(r.restartNeeded).toEqual(["security"]);
    expect(r.users).toBeUndefined();
    expect(gw.server.users.get("eve")).toBeUndefined();
    expect(gw.server.users.get("dave")).toBeDefined();
  });
});

const cli = resolve(__dirname, "../../dist/src/cli.js");

describe.skipIf(!existsSync(cli))("SIGHUP re-reads gateway.yaml", () => {
  it("refuses a broken file with its position, and names a changed section as needing a restart", async () => {
    const sub = join(dir, "cli");
    mkdirSync(sub, { recursive: true });
    const file = join(sub, "gateway.yaml");
    const base = "server:\n  host: 127.0.0.1\n  port: 0\n  testNamespace: false\nsecurity:\n  securityPolicies: [None]\n";
    writeFileSync(file, base);
    const child = spawn(process.execPath, [cli, "run", "--config", file], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const waitFor = async (pattern: RegExp, what: string) => {
      for (let i = 0; i < 300 && !pattern.test(out); i++) {
        if (child.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      if (!pattern.test(out)) throw new Error(`no ${what}: ${out}`);
    };
    try {
      await waitFor(/listening on/, "listening line");
      writeFileSync(file, `${base}limits:\n  maxSessions: nope\n`);
      child.kill("SIGHUP");
      await waitFor(/the users loaded last stay in use/, "refusal");
      expect(out).toMatch(new RegExp(`reload refused: ${file.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}:8:16: limits\\.maxSessions`));
      writeFileSync(file, `${base}limits:\n  maxSessions: 7\n`);
      child.kill("SIGHUP");
      await waitFor(/limits changed in the gateway config: takes effect at the next restart/, "restart notice");
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    }
  }, 30_000);
});
