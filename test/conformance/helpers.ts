// Shared bits of the conformance tests (test/conformance/*.test.ts): a gateway on loopback with
// a device map of its own, a node-opcua client session, and an event monitored item that
// collects what it receives. Waits are bounded polls for a condition, never timing claims.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AttributeIds,
  ClientMonitoredItem,
  ClientSubscription,
  MessageSecurityMode,
  OPCUAClient,
  SecurityPolicy,
  TimestampsToReturn,
  UserTokenType,
  constructEventFilter,
  type ClientSession,
  type ContentFilterOptions,
  type EventFilter,
  type Variant,
} from "node-opcua-client";
import { OPCUACertificateManager } from "node-opcua-certificate-manager";
import { hashPassword } from "../../src/sessions/users.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { makeCertificate } from "../users/certs.js";

export { sleep, waitFor } from "../subscriptions/helpers.js";

export interface Gateway extends TestGateway {
  /** Writes a new device map and reloads it (SIGHUP's path). */
  reload(mapText: string): Promise<void>;
}

/** A gateway with `mapText` as its device map (none when undefined) and `extraYaml` appended to its config. */
export async function gatewayWith(mapText: string | undefined, extraYaml = ""): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-conformance-"));
  const mapFile = join(dir, "devices.yaml");
  if (mapText !== undefined) writeFileSync(mapFile, mapText);
  const gw = await startGateway(`${mapText !== undefined ? `devices: ${mapFile}\n` : ""}${extraYaml}`);
  return {
    ...gw,
    async reload(text: string) {
      writeFileSync(mapFile, text);
      const r = await gw.server.reloadDevices();
      if (!r.ok) throw new Error(`reload refused: ${r.issues.map((i) => i.message).join("; ")}`);
    },
    async stop() {
      await gw.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Connection {
  client: OPCUAClient;
  session: ClientSession;
  close(): Promise<void>;
}

export async function connect(url: string, name = "fieldgate-subscriptions", requestedSessionTimeout = 60_000): Promise<Connection> {
  const client = OPCUAClient.create({
    applicationName: name,
    endpointMustExist: false,
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout,
  });
  await client.connect(url);
  const session = await client.createSession();
  return {
    client,
    session,
    async close() {
      await session.close().catch(() => undefined);
      await client.disconnect();
    },
  };
}

/** A subscription that the server has created (node-opcua's ClientSubscription.create returns before it is). */
export async function subscribe(session: ClientSession, publishingInterval = 50): Promise<ClientSubscription> {
  return session.createSubscription2({
    requestedPublishingInterval: publishingInterval,
    requestedLifetimeCount: 600,
    requestedMaxKeepAliveCount: 20,
    maxNotificationsPerPublish: 0,
    publishingEnabled: true,
    priority: 1,
  });
}

/** The fields of one received event, by the names given to `monitorEvents`. */
export type EventRecord = Record<string, unknown>;

export interface EventMonitor {
  readonly item: ClientMonitoredItem;
  readonly events: EventRecord[];
  /** Resolves with the first event (after those already seen) that `match` accepts. */
  next(match: (e: EventRecord) => boolean, what: string, timeoutMs?: number): Promise<EventRecord>;
}

/**
 * An event monitored item on `nodeId` selecting `fields` (browse paths with "." as in
 * node-opcua's constructEventFilter; "ConditionId" is the condition's NodeId), or `filter` with
 * `fields` naming its select clauses.
 */
export async function monitorEvents(
  sub: ClientSubscription,
  nodeId: string,
  fields: string[],
  options: { where?: ContentFilterOptions; queueSize?: number; discardOldest?: boolean; filter?: EventFilter } = {},
): Promise<EventMonitor> {
  // sub.monitor resolves once the server created the item (ClientMonitoredItem.create returns before).
  const item = await sub.monitor(
    { nodeId, attributeId: AttributeIds.EventNotifier },
    { samplingInterval: 0, queueSize: options.queueSize ?? 0, discardOldest: options.discardOldest ?? true, filter: options.filter ?? constructEventFilter(fields, options.where) },
    TimestampsToReturn.Neither,
  );
  const events: EventRecord[] = [];
  item.on("changed", (values: unknown) => {
    const list = values as Variant[];
    const e: EventRecord = {};
    fields.forEach((f, i) => (e[f] = list[i]?.value));
    events.push(e);
  });
  let seen = 0;
  return {
    item,
    events,
    async next(match, what, timeoutMs = 10_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        while (seen < events.length) {
          const e = events[seen++];
          if (match(e)) return e;
        }
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(events.map((e) => e.EventType ?? e))}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
  };
}

// ---- a gateway with users, reached over a signed channel --------------------------------------

export const CLIENT_URI = "urn:fieldgate:conformance-client";
const CHEAP_HASH = { logN: 10, r: 8, p: 1 };

export interface SecuredGateway extends Gateway {
  /** Opens a session (Basic256Sha256, SignAndEncrypt) as `user` (a name of USERS) or anonymous. */
  login(user?: keyof typeof USERS, password?: string): Promise<Connection>;
  /** Tries a session as `user` with `password`; resolves with the StatusCode name that refused it. */
  refusedLogin(user: string, password: string): Promise<string>;
  /** A client whose application certificate the gateway does not trust: its channel is refused. */
  untrustedConnect(): Promise<string>;
}

/** The users of securedGateway, one per role; passwords are the names with "-pw". */
export const USERS = { ada: "admin", otto: "operator", vera: "viewer" } as const;

export async function securedGateway(mapText: string | undefined, extraYaml = ""): Promise<SecuredGateway> {
  const dir = mkdtempSync(join(tmpdir(), "fieldgate-conformance-client-"));
  const [app, stranger] = await Promise.all([makeCertificate({ cn: "conformance-client", applicationUri: CLIENT_URI }), makeCertificate({ cn: "stranger", applicationUri: "urn:fieldgate:stranger" })]);
  const pem = (der: Buffer) => `-----BEGIN CERTIFICATE-----\n${der.toString("base64").replace(/.{64}/g, "$&\n")}\n-----END CERTIFICATE-----\n`;
  for (const [name, id] of [["client", app], ["stranger", stranger]] as const) {
    writeFileSync(join(dir, `${name}.pem`), pem(id.certificate));
    writeFileSync(join(dir, `${name}.key`), id.privateKey.export({ type: "pkcs8", format: "pem" }));
  }
  let users = "users:\n";
  for (const [name, role] of Object.entries(USERS)) users += `  ${name}:\n    role: ${role}\n    password: "${await hashPassword(`${name}-pw`, CHEAP_HASH)}"\n`;
  const gw = await gatewayWith(mapText, `security:\n  securityPolicies: [None, Basic256Sha256]\n${extraYaml}${users}`);
  const trusted = join(gw.server.pki!.root, "trusted", "certs");
  mkdirSync(trusted, { recursive: true });
  writeFileSync(join(trusted, "client.der"), app.certificate);
  let clients = 0;
  const make = (who: "client" | "stranger") =>
    OPCUAClient.create({
      applicationName: `fieldgate-${who}`,
      applicationUri: who === "client" ? CLIENT_URI : "urn:fieldgate:stranger",
      endpointMustExist: false,
      securityMode: MessageSecurityMode.SignAndEncrypt,
      securityPolicy: SecurityPolicy.Basic256Sha256,
      certificateFile: join(dir, `${who}.pem`),
      privateKeyFile: join(dir, `${who}.key`),
      clientCertificateManager: new OPCUACertificateManager({ rootFolder: join(dir, `pki${clients++}`), automaticallyAcceptUnknownCertificate: true }),
      connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
      requestedSessionTimeout: 60_000,
    });
  const open = async (userName: string | undefined, password: string | undefined): Promise<Connection> => {
    const client = make("client");
    await client.connect(gw.url);
    try {
      const session = await client.createSession(userName === undefined ? { type: UserTokenType.Anonymous } : { type: UserTokenType.UserName, userName, password: password ?? `${userName}-pw` });
      return {
        client,
        session,
        async close() {
          await session.close().catch(() => undefined);
          await client.disconnect();
        },
      };
    } catch (err) {
      await client.disconnect();
      throw err;
    }
  };
  return {
    ...gw,
    login: (user, password) => open(user, password),
    async refusedLogin(user, password) {
      try {
        const c = await open(user, password);
        await c.close();
        return "Good";
      } catch (err) {
        const text = String((err as Error).message);
        return /Bad\w+/.exec(text)?.[0] ?? text;
      }
    },
    async untrustedConnect() {
      const client = make("stranger");
      try {
        await client.connect(gw.url);
        return "Good";
      } catch (err) {
        const text = String((err as Error).message);
        return /Bad\w+/.exec(text)?.[0] ?? text;
      } finally {
        await client.disconnect();
      }
    },
    async stop() {
      await gw.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
