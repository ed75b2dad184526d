// The `northbound:` section of gateway.yaml (included by src/config/gateway-config.ts). Off when
// absent: no MQTT client, no store, no observer on the value cache.
import { hostname } from "node:os";
import { duration, enumOf, integer, object, optional, path, size, string, text, type Infer } from "./schema.js";
import { ROLE_NAMES as ROLES } from "./credentials.js";

/**
 * Sparkplug 3.0 §4.1.2, §4.1.4 (tck-id-topic-structure-namespace-valid-group-id, -edge-node-id):
 * an id is a UTF-8 string without the MQTT topic characters + / #.
 */
const SPARKPLUG_ID = /^[^+/#\u0000]+$/;
const ID_TEXT = "a name without '+', '/' or '#' (they are MQTT topic characters)";

/** mqtt://host[:port] or mqtts://host[:port]; an IPv6 address in brackets. */
export const BROKER_URL = /^(mqtts?):\/\/(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?\/?$/;

/** The host name as an edge node id: the part before the first dot, with topic characters replaced. */
function defaultEdgeNodeId(): string {
  const h = hostname().split(".")[0] || "fieldgate";
  return h.replace(/[+/#]/g, "_");
}

export const sparkplugSchema = object(
  {
    broker: string({
      description: "The MQTT broker: mqtt://host:port (1883 by default) or mqtts://host:port (TLS, 8883 by default).",
      pattern: BROKER_URL,
      patternText: "mqtt://host:port or mqtts://host:port",
    }),
    groupId: string({ description: "Sparkplug Group ID: the first level of every topic this gateway publishes under.", pattern: SPARKPLUG_ID, patternText: ID_TEXT }),
    edgeNodeId: string({
      description: "Sparkplug Edge Node ID of this gateway, unique within its group. Default: the host name.",
      default: defaultEdgeNodeId,
      pattern: SPARKPLUG_ID,
      patternText: ID_TEXT,
    }),
    primaryHostId: optional(
      string({
        description:
          "The Primary Host Application (SCADA) to wait for: births and data are published only while its STATE (spBv1.0/STATE/<id>) says online; meanwhile data is stored. Absent: publish whenever the broker is reachable.",
        pattern: SPARKPLUG_ID,
        patternText: ID_TEXT,
      }),
    ),
    // MQTT 3.1.1 §1.5.3: a UTF-8 string without U+0000, and controls SHOULD NOT be in it.
    username: optional(text({ description: "User name for the broker.", minLength: 1, maxLength: 256 })),
    password: optional(string({ description: "Password for the broker (with username)." })),
    ca: optional(path({ description: "mqtts: PEM file of the CA(s) that signed the broker's certificate. Default: the system's CAs." })),
    cert: optional(path({ description: "mqtts: PEM file of this gateway's client certificate (with key)." })),
    key: optional(path({ description: "mqtts: PEM file of the private key of cert." })),
    writeRole: optional(
      enumOf(ROLES, {
        description:
          "What a DCMD may write, as an OPC UA role: DCMD writes get the same checks as an OPC UA Write by a user of this role (the device's writeRoles, access, type, range). Absent: every DCMD is refused.",
      }),
    ),
    keepAlive: duration({ description: "MQTT keep-alive: how soon the broker notices a silent gateway and sends its NDEATH.", default: "30s", min: "1s", max: "18h" }),
    retryBackoff: duration({ description: "First wait before connecting again after a failure; doubles up to maxBackoff.", default: "1s", min: "10ms", max: "1h" }),
    maxBackoff: duration({ description: "Longest wait between connection attempts.", default: "30s", min: "10ms", max: "24h" }),
    replayRate: integer({
      description: "Stored values sent per second after a reconnect (as historical DDATA), beside the live data.",
      default: 20_000,
      min: 1,
      max: 10_000_000,
    }),
    storeAndForward: object(
      {
        maxAge: duration({ description: "Stored values older than this are dropped (and counted).", default: "7d", min: "1m", max: "3650d" }),
        maxSize: size({ description: "Largest size of the store; the oldest values are dropped (and counted) to stay under it.", default: "256MiB", min: "1MiB", max: "1TiB" }),
        database: optional(path({ description: "The store's SQLite file. Default: northbound.db in dataDir." })),
      },
      { description: "Data changes kept on disk while the broker is unreachable or the primary host offline, and replayed in order once it is back." },
    ),
  },
  {
    description: "A Sparkplug B 3.0 edge node: every device of the map is a Sparkplug device, every tag a metric.",
    check(v, c) {
      const tls = BROKER_URL.exec(v.broker)?.[1] === "mqtts";
      for (const key of ["ca", "cert", "key"] as const) {
        if (v[key] !== undefined && !tls) c.report(key, `expected ${key} only with an mqtts:// broker, got ${v.broker}`);
      }
      if ((v.cert === undefined) !== (v.key === undefined)) c.report(v.cert === undefined ? "key" : "cert", "expected cert and key together");
      if (v.password !== undefined && v.username === undefined) c.report("password", "expected a username with the password");
      if (v.retryBackoff > v.maxBackoff) c.report("retryBackoff", "expected at most maxBackoff");
      const port = BROKER_URL.exec(v.broker)?.[3];
      if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) c.report("broker", `expected a port between 1 and 65535, got ${port}`);
    },
  },
);

export const northboundSchema = object(
  { sparkplug: optional(sparkplugSchema) },
  { description: "Publishing northbound, to a broker that SCADA, historians and MES subscribe to. Off when absent." },
);

export type SparkplugConfig = Infer<typeof sparkplugSchema>;
export type NorthboundConfig = Infer<typeof northboundSchema>;
