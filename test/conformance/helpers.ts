// Shared bits of the conformance tests (test/conformance/*.test.ts): a gateway on loopback with
// a device map of its own, a node-opcua client session, and an event monitored item that
// collects what it receives. Waits are bounded polls for a condition, never timing claims.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
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
  constructEventFilter,
  type ClientSession,
  type ContentFilterOptions,
  type Variant,
} from "node-opcua-client";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

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

export async function connect(url: string, name = "fieldgate-subscriptions"): Promise<Connection> {
  const client = OPCUAClient.create({
    applicationName: name,
    endpointMustExist: false,
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 60_000,
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

export async function subscribe(session: ClientSession, publishingInterval = 50): Promise<ClientSubscription> {
  return ClientSubscription.create(session, {
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
 * node-opcua's constructEventFilter; "ConditionId" is the condition's NodeId).
 */
export async function monitorEvents(
  sub: ClientSubscription,
  nodeId: string,
  fields: string[],
  options: { where?: ContentFilterOptions; queueSize?: number; discardOldest?: boolean } = {},
): Promise<EventMonitor> {
  const item = await ClientMonitoredItem.create(
    sub,
    { nodeId, attributeId: AttributeIds.EventNotifier },
    { samplingInterval: 0, queueSize: options.queueSize ?? 0, discardOldest: options.discardOldest ?? true, filter: constructEventFilter(fields, options.where) },
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
