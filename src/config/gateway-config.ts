// The schema of gateway.yaml and the GatewayConfig type inferred from it. Descriptions are
// written for the person editing the file: editors show them on hover through the JSON Schema.
// Later sections (history, users, the device map's devices/buses/tags) are added here as more
// keys of the same `object`, never by renaming one (issue 4: users and docs rely on the names).
import { hostname } from "node:os";
import {
  array,
  boolean,
  duration,
  enumOf,
  formatDuration as fmtMs,
  formatSize as fmtBytes,
  integer,
  object,
  optional,
  path,
  size,
  record,
  string,
  text,
  custom,
  MAX_HOST,
  type Checker,
  type Infer,
} from "./schema.js";
import { historySchema } from "./history-config.js";
import { northboundSchema } from "./northbound-config.js";
import { updateSchema } from "./update-config.js";
import { normaliseThumbprint, parsePasswordHash, ROLE_NAMES as ROLES } from "./credentials.js";

/** Security policies this build can negotiate (Part 7); Basic128Rsa15 and Basic256 are deprecated and not offered. */
export const SUPPORTED_SECURITY_POLICIES = ["None", "Basic256Sha256", "Aes128_Sha256_RsaOaep", "Aes256_Sha256_RsaPss"] as const;
/** Message security modes of the signing policies (None always goes with mode None). */
export const SUPPORTED_SECURITY_MODES = ["Sign", "SignAndEncrypt"] as const;

const count = (description: string, def: number, max: number, min = 1) =>
  integer({ description, default: def, min, max });

/**
 * Requires low <= high (low < high when `strict`), blaming the key the file gives: the low one
 * when it is written (or neither is), else the high one, which then clashes with the default.
 */
function ordered(c: Checker, lowKey: string, low: number, highKey: string, high: number, fmt: (n: number) => string, strict = false): void {
  if (strict ? low < high : low <= high) return;
  if (c.given(lowKey) || !c.given(highKey)) {
    c.report(lowKey, `expected ${strict ? "less than" : "at most"} ${highKey} (${fmt(high)}), got ${fmt(low)}`);
  } else {
    c.report(highKey, `expected ${strict ? "more than" : "at least"} ${lowKey} (${fmt(low)}), got ${fmt(high)}`);
  }
}

const server = object(
  {
    host: text({
      description: "Address to listen on. 0.0.0.0 listens on every interface; 127.0.0.1 only on this box.",
      default: "0.0.0.0",
      minLength: 1,
      maxLength: MAX_HOST,
    }),
    port: integer({
      description: "TCP port of the opc.tcp endpoint (4840 is the OPC UA standard port; 0 picks a free port).",
      default: 4840,
      min: 0,
      max: 65535,
    }),
    applicationName: text({
      description: "Name clients show for this server; also the CN of its certificate (RFC 5280: at most 64 characters).",
      default: "fieldgate",
      minLength: 1,
      maxLength: 64,
    }),
    applicationUri: string({
      description: "ApplicationUri of this server, also written into its certificate. Default: urn:<hostname>:fieldgate.",
      default: () => `urn:${hostname()}:fieldgate`,
      pattern: /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/,
      patternText: "a URI such as urn:my-gateway:fieldgate",
    }),
    productUri: string({
      description: "ProductUri of this server.",
      default: "urn:fieldgate",
      pattern: /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/,
      patternText: "a URI such as urn:fieldgate",
    }),
    testNamespace: boolean({
      description:
        "Publish a test namespace with one variable of every built-in type, writable by anyone (anonymous clients included), for interoperability checks with clients; off unless asked for.",
      default: false,
    }),
    benchNamespace: integer({
      description:
        "Benchmarks only: N > 0 publishes the bench namespace at index 1 (N UInt64 counters ns=1;i=1..N that count their samples, and 100 writable Int32 BenchmarkValue variables at ns=1;i=1001..1100). Only without devices; 0 = off.",
      default: 0,
      min: 0,
      max: 1_000_000,
    }),
  },
  { description: "The OPC UA server: where it listens and how it names itself." },
);

const security = object(
  {
    allowAnonymous: boolean({
      description: "Accept sessions without a user name.",
      default: true,
    }),
    anonymousRole: enumOf(ROLES, {
      description: "Role of anonymous sessions: viewer (browse, read, subscribe, history), operator (+ write device tags) or admin.",
      default: "viewer",
    }),
    lockout: object(
      {
        maxFailuresPerUser: count("Failed logins of one user name after which it is locked out.", 5, 1000),
        maxFailuresPerAddress: count("Failed logins from one client address (any user names) after which it is locked out.", 20, 100_000),
        duration: duration({
          description: "How long failed logins are remembered, and how long a lockout lasts.",
          default: "5m",
          min: "1s",
          max: "24h",
        }),
      },
      { description: "Repeated failed logins are refused for a while, also with the right password; clients see the same error either way." },
    ),
    securityPolicies: array(
      enumOf(SUPPORTED_SECURITY_POLICIES, {
        description: "A security policy offered on the endpoint.",
      }),
      {
        description:
          "Security policies offered to clients. Leave out None to refuse unsigned sessions (discovery still answers on None, as Part 4 requires).",
        default: ["None", "Basic256Sha256", "Aes128_Sha256_RsaOaep", "Aes256_Sha256_RsaPss"],
        minItems: 1,
        uniqueItems: true,
      },
    ),
    securityModes: array(enumOf(SUPPORTED_SECURITY_MODES, { description: "Sign: messages are signed; SignAndEncrypt: signed and encrypted." }), {
      description: "Message security modes offered with each signing policy.",
      default: ["Sign", "SignAndEncrypt"],
      minItems: 1,
      uniqueItems: true,
    }),
    certificateValidity: duration({
      description: "Validity of the certificate the gateway makes for itself on first start (or `fieldgate cert regenerate`).",
      default: "1825d",
      min: "1d",
      max: "7300d",
    }),
    maxChainLength: count("Most certificates in a client's certificate chain, its own included.", 5, 10),
    maxRejectedCertificates: count("Refused client certificates kept in pki/rejected/certs for an operator to trust; the oldest go first.", 100, 10_000),
    handshakes: object(
      {
        maxConcurrent: count("Secure channel handshakes (RSA) run back to back before established connections get their turn.", 2, 64),
        maxQueued: count("Handshakes waiting for their turn; more are refused (BadTcpNotEnoughResources).", 32, 10_000),
        ratePerAddress: count("New signed channels per second from one client address; more are refused.", 10, 10_000),
        burstPerAddress: count("New signed channels one address may open at once before that rate applies.", 20, 10_000),
      },
      { description: "Bounds on secure channel handshakes, so that a flood of connection attempts cannot starve connected clients." },
    ),
  },
  { description: "Who may connect, and how the connection is protected." },
);

const passwordHash = custom<string>({
  expected: "a password hash printed by `fieldgate password`",
  description: "scrypt hash of the user's password: run `fieldgate password` and paste what it prints (never the password itself).",
  jsonSchema: { type: "string", pattern: "^\\$scrypt\\$" },
  parse(raw) {
    const h = typeof raw === "string" ? parsePasswordHash(raw) : "";
    if (typeof h !== "string") return { ok: true, value: raw as string };
    // Someone pasted the password itself, or a hash from another tool: say what to do.
    const scrypt = typeof raw === "string" && raw.startsWith("$scrypt$");
    return { ok: false, message: scrypt ? `the hash needs ${h}` : "run `fieldgate password` and paste what it prints" };
  },
});

const thumbprint = custom<string>({
  expected: "a SHA-1 certificate thumbprint (40 hex digits)",
  description: "SHA-1 thumbprint of a user certificate (40 hex digits, ':' allowed), as `fieldgate cert` prints it.",
  jsonSchema: { type: "string", pattern: "^([0-9A-Fa-f]{2}[: ]?){19}[0-9A-Fa-f]{2}$" },
  parse(raw) {
    const t = typeof raw === "string" ? normaliseThumbprint(raw) : undefined;
    return t === undefined ? { ok: false, message: "" } : { ok: true, value: t };
  },
});

const users = record(
  object(
    {
      role: enumOf(ROLES, { description: "viewer (browse, read, subscribe, history), operator (+ write device tags) or admin (+ configuration)." }),
      password: optional(passwordHash),
      certificates: optional(
        array(thumbprint, {
          description: "Certificates this user logs in with (X509 user tokens); each must also be trusted in pki/.",
          minItems: 1,
          uniqueItems: true,
        }),
      ),
    },
    {
      description: "One user: a role, and a password hash and/or certificates to log in with.",
      check(v, c) {
        if (v.password === undefined && v.certificates === undefined) c.report("password", "expected a password hash or certificates: this user could never log in");
      },
    },
  ),
  {
    description: "Users who log in with a user name and password or with a certificate, by user name.",
    default: {},
    keyPattern: /^[^\s:]{1,64}$/,
    keyText: "a user name of 1 to 64 characters without spaces or ':'",
  },
);

const limits = object(
  {
    maxSessions: count("Most sessions open at once; more are refused with BadTooManySessions.", 100, 10_000),
    maxChannels: count("Most secure channels (TCP connections) open at once.", 100, 10_000),
    minSessionTimeout: duration({
      description: "Shortest session timeout granted to a client; shorter requests are raised to it.",
      default: "10s",
      min: "100ms",
      max: "24h",
    }),
    maxSessionTimeout: duration({
      description: "Longest session timeout granted to a client; longer requests are lowered to it.",
      default: "1h",
      min: "100ms",
      max: "24h",
    }),
    maxBrowseContinuationPoints: count("Browse continuation points kept per session.", 10, 1000),
    maxNodesPerRead: count("Most nodes in one Read request.", 10_000, 100_000),
    maxNodesPerWrite: count("Most nodes in one Write request.", 10_000, 100_000),
    maxNodesPerBrowse: count("Most nodes in one Browse request.", 1000, 100_000),
    maxNodesPerTranslateBrowsePathsToNodeIds: count("Most browse paths in one TranslateBrowsePathsToNodeIds request.", 1000, 100_000),
    maxNodesPerRegisterNodes: count("Most nodes in one RegisterNodes request.", 1000, 100_000),
    maxNodesPerMethodCall: count("Most methods in one Call request.", 100, 10_000),
    maxBrowsePathElements: count("Most elements in one browse path.", 64, 1000),
    maxReferencesPerNode: count("Most references returned for one node before a continuation point.", 1000, 100_000),
    maxStringLength: size({
      description: "Longest String accepted or returned, in bytes.",
      default: "1MiB",
      min: "1KiB",
      max: "1GiB",
    }),
    maxByteStringLength: size({
      description: "Longest ByteString accepted or returned, in bytes.",
      default: "16MiB",
      min: "1KiB",
      max: "1GiB",
    }),
    maxArrayLength: count("Most elements in one array value.", 1_000_000, 2_147_483_647),
    maxSubscriptions: count("Most subscriptions of all sessions together.", 500, 100_000),
    maxSubscriptionsPerSession: count("Most subscriptions of one session; more are refused with BadTooManySubscriptions.", 50, 10_000),
    maxMonitoredItems: count("Most monitored items of all subscriptions together.", 100_000, 10_000_000),
    maxMonitoredItemsPerSubscription: count("Most monitored items in one subscription; more are refused with BadTooManyMonitoredItems.", 50_000, 10_000_000),
    maxMonitoredItemsPerCall: count("Most items in one CreateMonitoredItems, ModifyMonitoredItems, SetMonitoringMode or DeleteMonitoredItems request.", 50_000, 1_000_000),
    maxMonitoredItemsQueueSize: count("Longest queue of values a monitored item may keep between two Publish responses.", 1000, 100_000),
    minPublishingInterval: duration({
      description: "Fastest publishing interval granted to a subscription; faster requests are raised to it.",
      default: "10ms",
      min: "1ms",
      max: "1h",
    }),
    maxPublishingInterval: duration({
      description: "Slowest publishing interval granted to a subscription; slower requests are lowered to it.",
      default: "1h",
      min: "1ms",
      max: "24h",
    }),
    minSamplingInterval: duration({
      description: "Fastest sampling interval granted to a monitored item (also what 0, \"as fast as possible\", becomes).",
      default: "10ms",
      min: "1ms",
      max: "1h",
    }),
    maxKeepAliveCount: count("Most publishing intervals a quiet subscription may go without a keep-alive.", 1000, 100_000),
    maxLifetimeCount: count("Most publishing intervals a subscription lives without Publish requests (at least three keep-alive counts).", 15_000, 10_000_000, 3),
    maxNotificationsPerPublish: count("Most notifications in one Publish response; the rest follow in the next ones.", 65_536, 10_000_000),
    maxPublishRequestsPerSession: count("Publish requests one session may have waiting; more answer the oldest with BadTooManyPublishRequests. Keep it below transport.highWaterMark.", 10, 10_000),
  },
  {
    description: "Per-request and per-server limits; they keep a misbehaving client from exhausting the gateway.",
    check(v, c) {
      ordered(c, "minSessionTimeout", v.minSessionTimeout, "maxSessionTimeout", v.maxSessionTimeout, fmtMs);
      ordered(c, "minPublishingInterval", v.minPublishingInterval, "maxPublishingInterval", v.maxPublishingInterval, fmtMs);
      ordered(c, "maxSubscriptionsPerSession", v.maxSubscriptionsPerSession, "maxSubscriptions", v.maxSubscriptions, String);
      ordered(c, "maxMonitoredItemsPerSubscription", v.maxMonitoredItemsPerSubscription, "maxMonitoredItems", v.maxMonitoredItems, String);
      // Part 4 §5.13.2: a lifetime is at least three keep-alive periods.
      if (v.maxLifetimeCount < 3 * v.maxKeepAliveCount) {
        const at = c.given("maxKeepAliveCount") && !c.given("maxLifetimeCount") ? "maxKeepAliveCount" : "maxLifetimeCount";
        c.report(at, `expected maxLifetimeCount (${v.maxLifetimeCount}) to be at least 3 times maxKeepAliveCount (${v.maxKeepAliveCount})`);
      }
    },
  },
);

const transport = object(
  {
    // Part 6 §7.1.2.3: buffers shall be at least 8192 bytes.
    receiveBufferSize: size({ description: "Size of one message chunk received.", default: "64KiB", min: 8192, max: "16MiB" }),
    sendBufferSize: size({ description: "Size of one message chunk sent.", default: "64KiB", min: 8192, max: "16MiB" }),
    maxMessageSize: size({ description: "Largest message (all its chunks) accepted or sent.", default: "16MiB", min: 8192, max: "1GiB" }),
    maxChunkCount: count("Most chunks in one message.", 256, 65_535),
    helloTimeout: duration({
      description: "How long a new connection may take to send its Hello before it is closed.",
      default: "5s",
      min: "100ms",
      max: "10m",
    }),
    incompleteMessageTimeout: duration({
      description: "How long the chunks of one message may take to arrive in full.",
      default: "10s",
      min: "100ms",
      max: "10m",
    }),
    memoryLimit: size({
      description:
        "All the memory the network layer may hold for all connections together: message chunks being received, requests being put together, responses being sent. When it is spent, connections stop reading, new ones are refused (BadTcpNotEnoughResources) and clients that hold the most are closed; established sessions keep being served. Memory above a small floor is given back when idle.",
      default: "32MiB",
      min: "1MiB",
      max: "4GiB",
    }),
    maxPendingBytesPerChannel: optional(
      size({
        description: "Bytes of incomplete messages one channel may hold, out of memoryLimit. Default: half of memoryLimit, at most 16 MiB.",
        min: "64KiB",
        max: "4GiB",
      }),
    ),
    sendTimeout: duration({
      description: "A client that takes none of the responses waiting for it for this long (it stopped reading its socket) is disconnected.",
      default: "10s",
      min: "100ms",
      max: "10m",
    }),
    highWaterMark: count("Queued responses on one channel at which its socket stops reading.", 100, 100_000),
    lowWaterMark: count("Queued responses at which a paused channel reads again.", 50, 100_000, 0),
    minTokenLifetime: duration({
      description: "Shortest security token lifetime granted; shorter requests are raised to it.",
      default: "10s",
      min: "1s",
      max: "24h",
    }),
    maxTokenLifetime: duration({
      description: "Longest security token lifetime granted; longer requests are lowered to it.",
      default: "1h",
      min: "1s",
      max: "24h",
    }),
  },
  {
    description: "UA-TCP transport: chunk sizes, time-outs, memory bounds and backpressure.",
    check(v, c) {
      ordered(c, "lowWaterMark", v.lowWaterMark, "highWaterMark", v.highWaterMark, String, true);
      ordered(c, "minTokenLifetime", v.minTokenLifetime, "maxTokenLifetime", v.maxTokenLifetime, fmtMs);
      if (v.maxPendingBytesPerChannel !== undefined) ordered(c, "maxPendingBytesPerChannel", v.maxPendingBytesPerChannel, "memoryLimit", v.memoryLimit, fmtBytes);
      // Part 6 §7.1.2.3: eight chunks at least, so that a few connections fit beside the send reserve.
      const chunk = Math.max(v.receiveBufferSize, v.sendBufferSize);
      if (v.memoryLimit < 8 * chunk) c.report(c.given("memoryLimit") ? "memoryLimit" : "receiveBufferSize", `expected memoryLimit (${fmtBytes(v.memoryLimit)}) to hold at least 8 chunks of ${fmtBytes(chunk)}`);
      ordered(c, "receiveBufferSize", v.receiveBufferSize, "maxMessageSize", v.maxMessageSize, fmtBytes);
    },
  },
);

/** Addresses that reach this box only: the status page may go without a login only there. */
export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

const web = object(
  {
    enabled: boolean({
      description: "Serve the status page and /metrics on their own port (see README, \"The status page\").",
      default: false,
    }),
    host: optional(
      text({
        description:
          "Address the page listens on. Default: 0.0.0.0 (every interface) when users are configured, else 127.0.0.1: without users there is no login, so the page is for this box only.",
        minLength: 1,
        maxLength: MAX_HOST,
      }),
    ),
    port: integer({ description: "TCP port of the page (0 picks a free port).", default: 8443, min: 0, max: 65535 }),
    tls: boolean({
      description: "HTTPS with the gateway's own certificate (pki/own); false serves plain HTTP, which sends passwords and session cookies readable by anyone on the network.",
      default: true,
    }),
    sessionTimeout: duration({ description: "A page login unused this long has to log in again.", default: "30m", min: "1m", max: "7d" }),
    updateInterval: duration({ description: "How often an open page is sent what changed (values, device states, the log).", default: "1s", min: "200ms", max: "1m" }),
    maxClients: count("Pages open at once (their update streams); more are refused until one closes.", 20, 1000),
    maxConnectionsPerAddress: count(
      "Connections one client address may hold at once (a browser opens at most 6 to one site); more are closed as they are accepted, before their TLS handshake. What a slowloris attacker from one address can hold.",
      16,
      10_000,
    ),
    headersTimeout: duration({
      description: "Longest a request's headers may take to arrive; for a connection's first request counted from its accept, the TLS handshake included. Connections slower than that are closed.",
      default: "10s",
      min: "1s",
      max: "5m",
    }),
    requestTimeout: duration({ description: "Longest a whole request (headers and body) may take to arrive.", default: "15s", min: "1s", max: "10m" }),
  },
  {
    description: "The status page: gateway, devices, live values, sessions, history and log, and Prometheus /metrics.",
    check(v, c) {
      ordered(c, "headersTimeout", v.headersTimeout, "requestTimeout", v.requestTimeout, fmtMs);
    },
  },
);

/** The log's levels, most important first (syslog's names; src/log.ts maps them to priorities). */
export const LOG_LEVELS = ["error", "warning", "notice", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const log = object(
  {
    level: enumOf(LOG_LEVELS, {
      description: "Least important messages written: error, warning, notice (devices back, reloads), info (starts, stops, changes) or debug.",
      default: "info",
    }),
  },
  { description: "What the gateway writes to its log (the journal under systemd)." },
);

export const gatewaySchema = object(
  {
    server,
    dataDir: path({
      description: "Folder for history and the PKI (certificates), relative to this file or absolute.",
      default: "../data",
    }),
    devices: optional(path({ description: "The device map (YAML), relative to this file or absolute." })),
    security,
    users,
    limits,
    transport,
    history: historySchema,
    northbound: optional(northboundSchema),
    web,
    log,
    update: updateSchema,
  },
  {
    description: "fieldgate gateway configuration.",
    check(v, c) {
      // The bench namespace takes index 1, which belongs to the device map when there is one.
      if (v.server.benchNamespace > 0 && v.devices !== undefined) {
        c.report(["server", "benchNamespace"], "expected 0 when a device map is given (devices): the bench namespace is for benchmark configs without devices");
      }
      // User names and certificates are taken only on signed endpoints (server/user-tokens.ts):
      // refuse configs in which nobody, or some user, could never open a session.
      const signed = v.security.securityPolicies.some((p) => p !== "None");
      const hasUsers = Object.keys(v.users).length > 0;
      if (!v.security.allowAnonymous && !hasUsers) {
        c.report(["security", "allowAnonymous"], "expected true when no users are configured: nobody could open a session");
      } else if (!v.security.allowAnonymous && !signed) {
        c.report(["security", "allowAnonymous"], "expected true when securityPolicies offers only None: users log in only on signed endpoints, so nobody could open a session");
      } else if (hasUsers && !signed) {
        c.report(["security", "securityPolicies"], "expected a signing policy (Basic256Sha256, ...) when users are configured: users log in only on signed endpoints");
      }
      // No default password: without users nobody can log in, so the page serves this box only.
      if (v.web.enabled && !hasUsers && v.web.host !== undefined && !isLoopbackHost(v.web.host)) {
        c.report(["web", "host"], `expected 127.0.0.1 when no users are configured, got ${v.web.host}: the page would be open to the network without a login (add users: with a password to serve it there)`);
      }
    },
  },
);

export type GatewayConfig = Infer<typeof gatewaySchema>;
export type ServerConfig = GatewayConfig["server"];
export type SecurityConfig = GatewayConfig["security"];
export type UsersConfig = GatewayConfig["users"];
export type LimitsConfig = GatewayConfig["limits"];
export type TransportConfig = GatewayConfig["transport"];
export type HistoryConfig = GatewayConfig["history"];
export type NorthboundSectionConfig = GatewayConfig["northbound"];
export type WebConfig = GatewayConfig["web"];
export type UpdateSection = GatewayConfig["update"];
export type SecurityPolicyName = (typeof SUPPORTED_SECURITY_POLICIES)[number];
