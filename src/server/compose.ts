// The gateway's parts, made in order from its config, each handed what it needs of the parts
// made before it (and a function for the few it needs of parts made after it): the composition
// root's construction. The server object (server.ts) holds the parts and runs their start, stop
// and reloads; no part is given the server object but the dispatcher, as the ServerCore its
// services see.
import { NamespaceRegistry } from "../address-space/namespace-registry.js";
import { Ns0Manager } from "../address-space/ns0-manager.js";
import { createTestNamespace } from "../testing/test-namespace.js";
import { benchDeviceMap, createBenchNamespace } from "../testing/bench-namespace.js";
import { DeviceNamespace } from "../address-space/device-namespace.js";
import { SystemObject } from "../address-space/system-object.js";
import { loadDeviceMap, type DeviceMap } from "../config/device-map.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import { DeviceRuntime } from "../devices/device-runtime.js";
import type { DriverRegistry } from "../devices/registry.js";
import { ValueCache } from "../values/value-cache.js";
import { clockSynchronized, systemClock } from "../sampling/clock.js";
import { DeadlineScheduler } from "../sampling/scheduler.js";
import { loopTrace } from "../sampling/loop-trace.js";
import { Slicer } from "../sampling/slices.js";
import { HeapReturn } from "./heap-return.js";
import { LoopGovernor } from "./loop-governor.js";
import { DiagnosticsNamespace, type PollGroupReport } from "../subscriptions/diagnostics.js";
import { ServerDiagnostics } from "../diagnostics/server-diagnostics.js";
import { SessionNodes } from "../diagnostics/session-nodes.js";
import { SubscriptionEngine } from "../subscriptions/engine.js";
import type { TransportLimits } from "../transport/limits.js";
import { UaTcpServer } from "./listener.js";
import { DEFAULT_DECODING_LIMITS } from "../ua/binary-reader.js";
import { MessageSecurityMode } from "../ua/generated/enums.js";
import { join } from "node:path";
import { HandshakeLimiter } from "../security/handshake-limiter.js";
import { POLICY_ALGORITHMS, type SecurePolicyName } from "../security/policies.js";
import { SecurityPolicyNone, type SecurityPolicy } from "../security/security-policy.js";
import { packageVersion } from "../package-info.js";
import { Dispatcher } from "./dispatcher.js";
import { applicationDescription, endpointOffers, type EndpointOffer } from "./endpoints.js";
import type { ServerCore } from "../services/server-core.js";
import { SessionManager, type Session, type SessionCloseReason } from "../sessions/session.js";
import { SERVICES } from "./services.js";
import { GatewayHistory, publishHistoryCapabilities } from "../history/history.js";
import { UserDirectory, userEntries } from "../sessions/users.js";
import { MethodTable } from "../address-space/methods.js";
import { ServerEvents } from "../events/server-events.js";
import { MAX_SELECT_CLAUSES, MAX_WHERE_ELEMENTS } from "../events/event-filter.js";
import { registerServerMethods } from "./server-methods.js";
import { Alarms } from "../alarms/alarms.js";
import { DeviceAlarms } from "../alarms/device-alarms.js";
import { Northbound } from "../northbound/northbound.js";
import { leveled, type ServerLog } from "../log.js";
import { deviceStateLogger } from "./device-log.js";
import { DamagedFiles } from "../storage/damaged.js";

/** The parts of a gateway, as the server object shows them: what services see of it (ServerCore), and the rest. */
export interface GatewayParts extends Omit<ServerCore, "history" | "pki" | "endpoints"> {
  readonly config: GatewayConfig;
  readonly ns0: Ns0Manager;
  /** History store and writer; `history.writer` is the HistorySink the device namespace feeds. */
  readonly history: GatewayHistory;
  /** The one deadline scheduler of the process: sampling, publishing cycles, device polls. */
  readonly scheduler: DeadlineScheduler;
  /** The latest value of every device tag (and of the bench namespace's). */
  readonly values: ValueCache;
  /** The conditions (Part 9) and their methods; deviceAlarms keeps one per device. */
  readonly alarms: Alarms;
  readonly deviceAlarms: DeviceAlarms;
  /** The sessions' diagnostics objects (Base Info Diagnostics: ServerCore's serverDiagnostics). */
  readonly sessionNodes: SessionNodes;
  /** urn:fieldgate:devices (ns=1 with a device map): Objects/Devices (the device map) and Objects/System. */
  readonly devices: DeviceNamespace;
  /** urn:fieldgate:bench at ns=1, with `server.benchNamespace: N` (then there is no device map). */
  readonly bench: DeviceNamespace | undefined;
  readonly deviceRuntime: DeviceRuntime;
  readonly system: SystemObject;
  readonly diagnostics: DiagnosticsNamespace;
  /** The Sparkplug B edge node of `northbound.sparkplug` (nothing runs without the section). */
  readonly northbound: Northbound;
  /** The policy/mode pairs of the endpoints (None first when offered). */
  readonly offers: readonly EndpointOffer[];
  readonly handshakes: HandshakeLimiter;
  /** Gives back the heap pages a burst left (the pool's trim tells it when one is over). */
  readonly heapReturn: HeapReturn;
  /** Files found damaged and moved aside (storage/damaged.ts): logged, on the page, in /metrics, an event. */
  readonly damagedFiles: DamagedFiles;
}

/** What the server's lifecycle alone uses of what was made. */
export interface Composition {
  readonly parts: GatewayParts;
  readonly transport: UaTcpServer;
  /** None now (discovery, Part 4 §5.4); start() adds the signing policies once the PKI is open. */
  readonly policies: Map<string, SecurityPolicy>;
  /** The device map of config.devices, loaded now (undefined without one). */
  readonly deviceMap: DeviceMap | undefined;
  /** The bench namespace's map, with `server.benchNamespace: N`. */
  readonly benchMap: DeviceMap | undefined;
  /** A valid map was loaded without being kept in the cache: start() has a worker keep it. */
  readonly cacheToKeep: boolean;
}

/** What the parts need of the server that holds them: the ServerCore of the services, and the device map in use. */
export type GatewayOwner = ServerCore & { readonly deviceMap: DeviceMap | undefined };

/** The signing policies of the config (every one but None). */
export function securePolicyNames(config: GatewayConfig): SecurePolicyName[] {
  return config.security.securityPolicies.filter((p): p is SecurePolicyName => p !== "None");
}

/**
 * What one slice of the gateway's sliced work may hold the event loop, ms, its closing included
 * (DESIGN: the event loop is a shared resource): the one budget of every sliced job, handed to
 * them with the Slicer made here.
 */
const SLICE_BUDGET_MS = 1;

/**
 * Makes the gateway's parts, its devices polled by `drivers`. Throws ConfigError for a bad device
 * map, before the history's database is opened. `keepOffLoop`: a worker can keep a newly valid
 * map in the cache once the gateway listens (else it is kept at once).
 */
export function composeGateway(config: GatewayConfig, log: ServerLog, owner: GatewayOwner, drivers: DriverRegistry, keepOffLoop: boolean): Composition {
  const l = config.limits;
  const registry = new NamespaceRegistry();
  const scheduler = new DeadlineScheduler(systemClock, loopTrace);
  const slicer = new Slicer({ budgetMs: SLICE_BUDGET_MS, deadlines: scheduler, clock: systemClock, trace: loopTrace });
  const values = new ValueCache();
  const heapReturn = new HeapReturn({ log });
  // First: the device map's cache, the history and the northbound report what they move aside.
  const damagedFiles = new DamagedFiles(leveled(log));
  const lockout = config.security.lockout;
  const users = new UserDirectory(userEntries(config.users), {
    lockout: { maxFailuresPerUser: lockout.maxFailuresPerUser, maxFailuresPerAddress: lockout.maxFailuresPerAddress, duration: lockout.duration },
  });
  const application = applicationDescription(config.server.applicationUri, config.server.productUri, config.server.applicationName);
  // The sessions' diagnostics namespace comes after every other (see below); until then, 0.
  let sessionNodes: SessionNodes | undefined;
  const sessions = new SessionManager({
    maxSessions: l.maxSessions,
    minSessionTimeout: l.minSessionTimeout,
    maxSessionTimeout: l.maxSessionTimeout,
    onSessionClosed: (session, reason) => {
      subscriptions.sessionClosed(session);
      sessionEnded(session, reason);
    },
    sessionNamespace: () => sessionNodes?.namespaceIndex ?? 0,
  });
  const methods = new MethodTable(registry);
  const ns0 = new Ns0Manager(registry, {
    applicationUri: config.server.applicationUri,
    buildInfo: {
      productUri: config.server.productUri,
      manufacturerName: "fieldgate",
      productName: "fieldgate",
      softwareVersion: packageVersion(),
      buildNumber: packageVersion(),
      buildDate: Date.now(),
    },
    capabilities: {
      ...l,
      maxBrowseContinuationPoints: l.maxBrowseContinuationPoints,
      minSupportedSampleRate: l.minSamplingInterval,
      maxSelectClauseParameters: MAX_SELECT_CLAUSES,
      maxWhereClauseParameters: MAX_WHERE_ELEMENTS,
    },
    auditing: true,
    methodAccess: (id, role) => methods.access(id, role),
    extraReferences: (nodeId) => sessionNodes?.summaryReferences(nodeId),
  });
  // Namespaces: 0, then 1 (the device map, or the bench namespace), diagnostics, test.
  // The bench namespace's devices are polled like a map's: the counters at the fastest
  // sampling interval granted, so that items sampling at it are fed by every poll.
  const benchCounters = config.server.benchNamespace;
  const bench = benchCounters > 0 ? createBenchNamespace(registry, values) : undefined;
  // Index 1 with a device map (the bench namespace is refused alongside one). Throws
  // ConfigError for a bad map: nothing has started yet.
  // A valid map is cached in <dataDir>/cache: a restart with it unchanged skips validating it.
  // Its write (JSON of the whole map, which grows with it) is not done here: a
  // first start listens that much sooner, and start() has a worker keep it (validate-off-loop.ts).
  let cacheToKeep = false;
  const deviceMap =
    config.devices === undefined
      ? undefined
      : loadDeviceMap(
          config.devices,
          drivers,
          join(config.dataDir, "cache"),
          keepOffLoop ? { defer: () => void (cacheToKeep = true), onDamaged: damagedFiles.note } : { onDamaged: damagedFiles.note },
        );
  const benchMap = benchCounters > 0 ? benchDeviceMap(benchCounters, l.minSamplingInterval, drivers) : undefined;
  // Only the appliance (fieldgate.service, Type=notify: NOTIFY_SOCKET set) boots with a clock
  // that may be wrong; run by hand or by tests the host's clock is trusted.
  const history = new GatewayHistory(config.history, config.dataDir, (m) => log.warn(m), {
    clockSynchronized: process.env.NOTIFY_SOCKET ? clockSynchronized : undefined,
    info: (m) => log.info(m),
    onDamaged: damagedFiles.note,
  });
  publishHistoryCapabilities(ns0, history);
  const devices = new DeviceNamespace(registry, { values, history: history.writer, onModelChange: (change) => events.noteModelChange(change) });
  const deviceRuntime = new DeviceRuntime({
    scheduler,
    clock: systemClock,
    nodes: bench ?? devices,
    values,
    drivers,
    log,
    slicer,
    onStateChange: deviceStateLogger(leveled(log)),
  });
  const subscriptions = new SubscriptionEngine({ registry, scheduler, clock: systemClock, limits: l, slicer });
  const events = new ServerEvents({ registry, subscriptions, serverUri: config.server.applicationUri });
  registerServerMethods(methods, registry, subscriptions, events.items);
  damagedFiles.onReport = (d) => events.damagedFile(d);
  const alarms = new Alarms(events, subscriptions, registry);
  alarms.registerMethods(methods);
  const deviceAlarms = new DeviceAlarms(alarms, bench ?? devices);
  const diagnostics = new DiagnosticsNamespace(registry, scheduler, subscriptions, systemClock, {
    trace: loopTrace,
    pollGroups: () => pollGroupReports(deviceRuntime),
  });
  if (config.server.testNamespace) createTestNamespace(registry, ns0);
  const serverDiagnostics = new ServerDiagnostics(sessions, subscriptions, events.items);
  serverDiagnostics.publish(ns0);
  // After every other namespace: the indices clients already know stay where they were.
  sessionNodes = new SessionNodes(registry, sessions, serverDiagnostics);
  const system = new SystemObject(devices.ns, { dataDir: config.dataDir, pollLateness: deviceRuntime.pollLateness, history: history.writer });
  const northbound = new Northbound({ values, devices, runtime: deviceRuntime, deviceMap: () => owner.deviceMap, dataDir: config.dataDir, log, onDamaged: damagedFiles.note, slicer });

  /** Part 5 §12.9 SessionTimeoutCount / SessionAbortCount, and the session's audit event (§6.4.7). */
  function sessionEnded(session: Session, reason: SessionCloseReason): void {
    if (reason === "timeout") serverDiagnostics.sessionTimeouts++;
    else if (reason === "evicted" || reason === "revoked") serverDiagnostics.sessionAborts++;
    if (reason === "closed" || reason === "shutdown") return; // CloseSession audits itself; a stop is the server's
    events.audit.sessionEnded({ sessionId: session.sessionId, userId: session.userId, auditEntryId: "" }, reason === "timeout" ? "timeout" : "terminated");
  }

  const decodingLimits = { ...DEFAULT_DECODING_LIMITS, maxStringLength: l.maxStringLength, maxByteStringLength: l.maxByteStringLength, maxArrayLength: l.maxArrayLength };
  const governor = new LoopGovernor(scheduler, loopTrace, slicer);
  const dispatcher = new Dispatcher(owner, SERVICES, decodingLimits, log, () => governor.between());
  const sec = config.security;
  const offers = endpointOffers(
    securePolicyNames(config).map((n) => POLICY_ALGORITHMS[n]),
    sec.securityModes.map((m) => (m === "Sign" ? MessageSecurityMode.Sign : MessageSecurityMode.SignAndEncrypt)),
    sec.securityPolicies.includes("None"),
  );
  const handshakes = new HandshakeLimiter(sec.handshakes);
  const policies = new Map<string, SecurityPolicy>([[SecurityPolicyNone.uri, SecurityPolicyNone]]);
  const transport = new UaTcpServer({
    host: config.server.host,
    port: config.server.port,
    limits: transportLimits(config.transport, l.maxChannels),
    handler: dispatcher,
    serverUri: config.server.applicationUri,
    policies,
    handshakes,
    timer: governor,
    pacer: slicer,
    onTrim: (slabs) => heapReturn.trimmed(slabs),
  });
  const parts: GatewayParts = {
    config, limits: { ...l }, registry, sessions, application, allowAnonymous: sec.allowAnonymous, anonymousRole: sec.anonymousRole, users, ns0, history,
    scheduler, slicer, values, subscriptions, methods, events, alarms, deviceAlarms, serverDiagnostics, sessionNodes, devices, bench, deviceRuntime,
    system, diagnostics, northbound, offers, handshakes, heapReturn, damagedFiles,
  };
  return { parts, transport, policies, deviceMap, benchMap, cacheToKeep };
}

function transportLimits(t: GatewayConfig["transport"], maxChannels: number): Partial<TransportLimits> {
  return {
    receiveBufferSize: t.receiveBufferSize,
    sendBufferSize: t.sendBufferSize,
    maxMessageSize: t.maxMessageSize,
    maxChunkCount: t.maxChunkCount,
    helloTimeoutMs: t.helloTimeout,
    incompleteMessageTimeoutMs: t.incompleteMessageTimeout,
    maxPendingBytesPerChannel: t.maxPendingBytesPerChannel,
    memoryLimit: t.memoryLimit,
    sendTimeoutMs: t.sendTimeout,
    responseHighWater: t.highWaterMark,
    responseLowWater: t.lowWaterMark,
    minTokenLifetimeMs: t.minTokenLifetime,
    maxTokenLifetimeMs: t.maxTokenLifetime,
    defaultTokenLifetimeMs: t.maxTokenLifetime,
    maxChannels,
  };
}

/** The poll groups of the running devices, for the diagnostics namespace. */
function pollGroupReports(runtime: DeviceRuntime): PollGroupReport[] {
  const out: PollGroupReport[] = [];
  for (const p of runtime.pollers()) {
    for (const g of p.groups) {
      const s = g.scheduled;
      out.push({ device: p.name, interval: g.interval, samples: s?.samples ?? 0, skipped: s?.skipped ?? 0, overruns: s?.overruns ?? 0, backedOff: g.backedOff });
    }
  }
  return out;
}
