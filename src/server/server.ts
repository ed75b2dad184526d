// The server object: wires config → address space (namespace 0, the test namespace) → services
// → transport. It owns the start and the orderly stop; each part knows only its neighbours.
import { NamespaceRegistry } from "../address-space/namespace-registry.js";
import { Ns0Manager } from "../address-space/ns0-manager.js";
import { createTestNamespace } from "../testing/test-namespace.js";
import { benchDeviceMap, createBenchNamespace } from "../testing/bench-namespace.js";
import { DeviceNamespace } from "../address-space/device-namespace.js";
import { SystemObject } from "../address-space/system-object.js";
import { loadDeviceMap, validateDeviceMap, type DeviceMap } from "../config/device-map.js";
import { keepDeviceMapOffLoop, validateDeviceMapOffLoop, type OffLoopKeep } from "../config/validate-off-loop.js";
import type { ValidationResult } from "../config/validate.js";
import { formatIssue, type ConfigIssue } from "../config/load.js";
import { DeviceRuntime, type ApplyReport } from "../devices/device-runtime.js";
import { builtinDrivers } from "../../drivers/builtin.js";
import { ValueCache } from "../values/value-cache.js";
import { systemClock } from "../sampling/clock.js";
import { DeadlineScheduler } from "../sampling/scheduler.js";
import { lowerHelperThreads } from "../sampling/helper-threads.js";
import { loopTrace } from "../sampling/loop-trace.js";
import { attachSliceGate, detachSliceGate, SliceGate } from "../sampling/slices.js";
import { HeapReturn } from "./heap-return.js";
import { LoopGovernor, ResponsePacer } from "./loop-governor.js";
import { DiagnosticsNamespace, type PollGroupReport } from "../subscriptions/diagnostics.js";
import { ServerDiagnostics } from "../diagnostics/server-diagnostics.js";
import { SessionNodes } from "../diagnostics/session-nodes.js";
import { SubscriptionEngine } from "../subscriptions/engine.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import type { TransportLimits } from "../transport/limits.js";
import { UaTcpServer } from "./listener.js";
import { DEFAULT_DECODING_LIMITS } from "../ua/binary-reader.js";
import { MessageSecurityMode, ServerState } from "../ua/generated/enums.js";
import { join, resolve } from "node:path";
import { HandshakeLimiter } from "../security/handshake-limiter.js";
import { Pki } from "../security/pki.js";
import { POLICY_ALGORITHMS, SecurePolicy, type SecurePolicyName } from "../security/policies.js";
import { SecurityPolicyNone, type SecurityPolicy } from "../security/security-policy.js";
import type { ApplicationDescription, EndpointDescription } from "../ua/generated/types.js";
import { packageVersion } from "../package-info.js";
import { Dispatcher } from "./dispatcher.js";
import { advertisedHost, applicationDescription, buildEndpoints, endpointOffers, type EndpointOffer } from "./endpoints.js";
import type { ServiceLimits } from "./limits.js";
import type { ServerCore } from "../services/server-core.js";
import { SessionManager, type Session, type SessionCloseReason } from "./session.js";
import { SERVICES } from "./services.js";
import { GatewayHistory, publishHistoryCapabilities } from "../history/history.js";
import { clockSynchronized } from "./systemd-notify.js";
import type { Role } from "./roles.js";
import { UserDirectory, userEntries } from "./users.js";
import { changesNeedingRestart, reloadUsers, type UserReloadReport } from "./config-reload.js";
import { MethodTable } from "../address-space/methods.js";
import { ServerEvents } from "../events/server-events.js";
import { MAX_SELECT_CLAUSES, MAX_WHERE_ELEMENTS } from "../events/event-filter.js";
import { registerServerMethods } from "./server-methods.js";
import { Alarms } from "../alarms/alarms.js";
import { DeviceAlarms } from "../alarms/device-alarms.js";
import { Northbound } from "../northbound/northbound.js";
import { leveled, Logger, type ServerLog } from "./log.js";
import { deviceStateLogger } from "./device-log.js";
import type { BufferPool } from "../transport/buffer-pool.js";
import { DamagedFiles } from "../storage/damaged.js";

export type { ServerLog } from "./log.js";

export interface FieldgateServerOptions {
  /** The gateway.yaml the config came from: log lines name it in the commands they suggest. */
  readonly configFile?: string;
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

export class FieldgateServer implements ServerCore {
  readonly config: GatewayConfig;
  readonly limits: Readonly<ServiceLimits>;
  readonly registry = new NamespaceRegistry();
  readonly sessions: SessionManager;
  readonly application: ApplicationDescription;
  readonly allowAnonymous: boolean;
  readonly anonymousRole: Role;
  readonly users: UserDirectory;
  readonly ns0: Ns0Manager;
  /** History store and writer; `history.writer` is the HistorySink the device namespace feeds. */
  readonly history: GatewayHistory;
  /** The one deadline scheduler of the process: sampling, publishing cycles, device polls. */
  readonly scheduler = new DeadlineScheduler(systemClock, loopTrace);
  /** Where the server's sliced work ends its slices: before the scheduler's next deadline. */
  readonly slices = new SliceGate(this.scheduler, systemClock);
  /** The latest value of every device tag (and of the bench namespace's). */
  readonly values = new ValueCache();
  readonly subscriptions: SubscriptionEngine;
  /** The Methods the Call service runs (Part 4 §5.11). */
  readonly methods: MethodTable;
  /** Event monitored items, the server's own events and its audit events. */
  readonly events: ServerEvents;
  /** The conditions (Part 9) and their methods; deviceAlarms keeps one per device. */
  readonly alarms: Alarms;
  readonly deviceAlarms: DeviceAlarms;
  /** Base Info Diagnostics (Server/ServerDiagnostics) and the sessions' diagnostics objects. */
  readonly serverDiagnostics: ServerDiagnostics;
  readonly sessionNodes: SessionNodes;
  /** urn:fieldgate:devices (ns=1 with a device map): Objects/Devices (the device map) and Objects/System. */
  readonly devices: DeviceNamespace;
  /** urn:fieldgate:bench at ns=1, with `server.benchNamespace: N` (then there is no device map). */
  readonly bench: DeviceNamespace | undefined;
  readonly deviceRuntime: DeviceRuntime;
  readonly system: SystemObject;
  /** The device map in use: the last one that loaded (a refused reload keeps it). */
  deviceMap: DeviceMap | undefined;
  private readonly benchMap: DeviceMap | undefined;
  readonly diagnostics: DiagnosticsNamespace;
  /** The Sparkplug B edge node of `northbound.sparkplug` (nothing runs without the section). */
  readonly northbound: Northbound;
  /** Set by start() when a signing policy is configured. */
  pki: Pki | undefined = undefined;
  /** Files found damaged and moved aside (storage/damaged.ts): logged, on the page, in /metrics, an event. */
  readonly damagedFiles: DamagedFiles;
  /** The policy/mode pairs of the endpoints (None first when offered). */
  readonly offers: readonly EndpointOffer[];
  readonly handshakes: HandshakeLimiter;
  /** Filled by start(): None always (discovery, Part 4 §5.4), signing policies once the PKI is open. */
  private readonly policies = new Map<string, SecurityPolicy>([[SecurityPolicyNone.uri, SecurityPolicyNone]]);
  private readonly transport: UaTcpServer;
  private readonly log: ServerLog;
  /** Gives back the heap pages a burst left (the pool's trim tells it when one is over). */
  readonly heapReturn: HeapReturn;
  private readonly configFile: string | undefined;
  /** start() has begun: stop() undoes what it did, also when it failed half-way. */
  private started = false;
  /** Whether a newly validated device map is still to be kept in the cache (start, by a worker). */
  private cacheToKeep = false;
  private cacheKeeping: OffLoopKeep | undefined;

  constructor(config: GatewayConfig, log: ServerLog = new Logger(), options: FieldgateServerOptions = {}) {
    this.config = config;
    this.log = log;
    this.heapReturn = new HeapReturn({ log });
    this.configFile = options.configFile;
    this.damagedFiles = new DamagedFiles(leveled(log));
    const l = config.limits;
    this.limits = { ...l };
    this.allowAnonymous = config.security.allowAnonymous;
    this.anonymousRole = config.security.anonymousRole;
    const lockout = config.security.lockout;
    this.users = new UserDirectory(userEntries(config.users), {
      lockout: { maxFailuresPerUser: lockout.maxFailuresPerUser, maxFailuresPerAddress: lockout.maxFailuresPerAddress, duration: lockout.duration },
    });
    this.application = applicationDescription(config.server.applicationUri, config.server.productUri, config.server.applicationName);
    this.sessions = new SessionManager({
      maxSessions: l.maxSessions,
      minSessionTimeout: l.minSessionTimeout,
      maxSessionTimeout: l.maxSessionTimeout,
      onSessionClosed: (session, reason) => {
        this.subscriptions.sessionClosed(session);
        this.sessionEnded(session, reason);
      },
    });
    this.ns0 = new Ns0Manager(this.registry, {
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
    });
    this.methods = new MethodTable(this.registry);
    this.ns0.methodAccess = (id, role) => this.methods.access(id, role);
    // Namespaces: 0, then 1 (the device map, or the bench namespace), diagnostics, test.
    // The bench namespace's devices are polled like a map's: the counters at the fastest
    // sampling interval granted, so that items sampling at it are fed by every poll.
    const bench = config.server.benchNamespace;
    this.bench = bench > 0 ? createBenchNamespace(this.registry, this.values) : undefined;
    // Index 1 with a device map (the bench namespace is refused alongside one). Throws
    // ConfigError for a bad map: nothing has started yet.
    // A valid map is cached in <dataDir>/cache: a restart with it unchanged skips validating it.
    // Its write (JSON of the whole map, ~10 ms at 10,000 tags on one core) is not done here: a
    // first start listens that much sooner, and start() has a worker keep it (validate-off-loop.ts).
    this.deviceMap =
      config.devices === undefined ? undefined : loadDeviceMap(config.devices, join(config.dataDir, "cache"), { defer: () => void (this.cacheToKeep = true), onDamaged: this.damagedFiles.note });
    this.benchMap = bench > 0 ? benchDeviceMap(bench, l.minSamplingInterval) : undefined;
    this.devices = new DeviceNamespace(this.registry, { values: this.values });
    this.deviceRuntime = new DeviceRuntime({
      scheduler: this.scheduler,
      clock: systemClock,
      nodes: this.bench ?? this.devices,
      values: this.values,
      drivers: builtinDrivers(),
      log,
      trace: loopTrace,
      onStateChange: deviceStateLogger(leveled(log)),
    });
    this.subscriptions = new SubscriptionEngine({ registry: this.registry, scheduler: this.scheduler, clock: systemClock, limits: l, slices: this.slices });
    this.events = new ServerEvents({ registry: this.registry, subscriptions: this.subscriptions, serverUri: config.server.applicationUri });
    registerServerMethods(this.methods, this.registry, this.subscriptions, this.events.items);
    this.damagedFiles.onReport = (d) => this.events.damagedFile(d);
    this.devices.onModelChange = (change) => this.events.noteModelChange(change);
    this.alarms = new Alarms(this.events, this.subscriptions, this.registry);
    this.alarms.registerMethods(this.methods);
    this.deviceAlarms = new DeviceAlarms(this.alarms, this.bench ?? this.devices);
    this.diagnostics = new DiagnosticsNamespace(this.registry, this.scheduler, this.subscriptions, systemClock, {
      trace: loopTrace,
      pollGroups: () => pollGroupReports(this.deviceRuntime),
    });
    if (config.server.testNamespace) createTestNamespace(this.registry, this.ns0);
    this.serverDiagnostics = new ServerDiagnostics(this.sessions, this.subscriptions, this.events.items);
    this.serverDiagnostics.publish(this.ns0);
    // After every other namespace: the indices clients already know stay where they were.
    this.sessionNodes = new SessionNodes(this.registry, this.sessions, this.serverDiagnostics);
    this.sessions.sessionNamespace = this.sessionNodes.namespaceIndex;
    this.ns0.extraReferences = (nodeId) => this.sessionNodes.summaryReferences(nodeId);
    // Only the appliance (fieldgate.service, Type=notify: NOTIFY_SOCKET set) boots with a clock
    // that may be wrong; run by hand or by tests the host's clock is trusted.
    this.history = new GatewayHistory(config.history, config.dataDir, (m) => log.warn(m), {
      clockSynchronized: process.env.NOTIFY_SOCKET ? clockSynchronized : undefined,
      info: (m) => log.info(m),
      onDamaged: this.damagedFiles.note,
    });
    publishHistoryCapabilities(this.ns0, this.history);
    this.devices.history = this.history.writer;
    this.system = new SystemObject(this.devices.ns, {
      dataDir: config.dataDir,
      pollLateness: this.deviceRuntime.pollLateness,
      history: this.history.writer,
    });
    this.northbound = new Northbound({
      values: this.values,
      devices: this.devices,
      runtime: this.deviceRuntime,
      deviceMap: () => this.deviceMap,
      dataDir: config.dataDir,
      log,
      onDamaged: this.damagedFiles.note,
    });
    const decodingLimits = {
      ...DEFAULT_DECODING_LIMITS,
      maxStringLength: l.maxStringLength,
      maxByteStringLength: l.maxByteStringLength,
      maxArrayLength: l.maxArrayLength,
    };
    const dispatcher = new Dispatcher(this, SERVICES, decodingLimits, log);
    const governor = new LoopGovernor(this.scheduler, loopTrace);
    dispatcher.yieldPoint = () => governor.between();
    const sec = config.security;
    this.offers = endpointOffers(
      this.securePolicyNames().map((n) => POLICY_ALGORITHMS[n]),
      sec.securityModes.map((m) => (m === "Sign" ? MessageSecurityMode.Sign : MessageSecurityMode.SignAndEncrypt)),
      sec.securityPolicies.includes("None"),
    );
    this.handshakes = new HandshakeLimiter(sec.handshakes);
    this.transport = new UaTcpServer({
      host: config.server.host,
      port: config.server.port,
      limits: transportLimits(config.transport, l.maxChannels),
      handler: dispatcher,
      serverUri: config.server.applicationUri,
      policies: this.policies,
      handshakes: this.handshakes,
      timer: governor,
      pacer: new ResponsePacer(this.slices, loopTrace),
      onTrim: (slabs) => this.heapReturn.trimmed(slabs),
    });
  }

  get port(): number {
    return this.transport.port;
  }

  /** The process-wide chunk buffer pool (metrics). */
  get bufferPool(): BufferPool {
    return this.transport.pool;
  }

  /** Secure channels (TCP connections) open now. */
  get channelCount(): number {
    let n = 0;
    for (const _ of this.transport.channels()) n++;
    return n;
  }

  /** The URL clients use, with the host name for a wildcard listener. */
  get endpointUrl(): string {
    return `opc.tcp://${advertisedHost(this.config.server.host)}:${this.port}`;
  }

  endpoints(endpointUrl: string | undefined): EndpointDescription[] {
    return buildEndpoints(
      {
        application: this.application,
        allowAnonymous: this.allowAnonymous,
        passwords: this.users.acceptsPasswords,
        certificates: this.users.acceptsCertificates,
        defaultUrl: this.endpointUrl,
        offers: this.offers,
        serverCertificate: this.pki?.ownCertificate,
      },
      endpointUrl,
    );
  }

  private securePolicyNames(): SecurePolicyName[] {
    return this.config.security.securityPolicies.filter((p): p is SecurePolicyName => p !== "None");
  }

  /** Opens the PKI (creating the gateway certificate on first start) and registers the signing policies. */
  private async openSecurity(): Promise<void> {
    const names = this.securePolicyNames();
    if (names.length === 0) return;
    const sec = this.config.security;
    const pki = await Pki.open({
      root: join(this.config.dataDir, "pki"),
      applicationUri: this.config.server.applicationUri,
      applicationName: this.config.server.applicationName,
      certificateValidityDays: Math.max(1, Math.round(sec.certificateValidity / 86_400_000)),
      maxChainLength: sec.maxChainLength,
      maxRejected: sec.maxRejectedCertificates,
      log: (m) => (m.startsWith("created ") ? this.log.info(m) : this.log.warn(m)),
      trustCommand: this.configFile === undefined ? undefined : `fieldgate cert trust --config ${resolve(this.configFile)}`,
      onDamaged: this.damagedFiles.note,
    });
    this.pki = pki;
    pki.onRefused = (certificate, status) => this.events.audit.certificateRefused(certificate, status);
    const modes = new Set(this.offers.filter((o) => o.securityMode !== MessageSecurityMode.None).map((o) => o.securityMode));
    for (const n of names) this.policies.set(POLICY_ALGORITHMS[n].uri, new SecurePolicy(POLICY_ALGORITHMS[n], modes, pki));
  }

  async start(): Promise<void> {
    this.started = true;
    loopTrace.start();
    // Device map starts and reloads slice by this server's deadlines too.
    attachSliceGate(this.slices);
    lowerHelperThreads();
    await this.openSecurity();
    await this.transport.listen();
    this.sessions.start();
    this.diagnostics.start();
    this.system.start(this.scheduler);
    const map = this.deviceMap ?? this.benchMap;
    if (map) this.logApply(await this.deviceRuntime.apply(map));
    this.events.flushModelChanges();
    // An optional part: it starts on its own (its store is checked first, on a worker) and a
    // failure leaves the rest running (northbound.ts).
    this.northbound.apply(this.config.northbound).catch((err: unknown) => this.log.warn(`northbound: ${err instanceof Error ? err.message : String(err)}`));
    // The history writer's worker thread last: on a gateway of one core its start-up (an isolate
    // of its own, SQLite) would otherwise share the core with the device map's start. Samples
    // polled before it runs wait in its queue, as they do between two flushes.
    this.history.start();
    this.events.systemStatus(ServerState.Running, "The server started.");
    if (this.cacheToKeep && this.config.devices !== undefined) {
      this.cacheToKeep = false;
      const keeping = keepDeviceMapOffLoop(this.config.devices, join(this.config.dataDir, "cache"));
      this.cacheKeeping = keeping;
      keeping.done.then(
        () => undefined,
        (err: unknown) => {
          // Only the next start is slower: it validates the map again. A stop ends the worker: nothing to say then.
          if (this.cacheKeeping === keeping) this.log.warn(`device map cache not written: ${err instanceof Error ? err.message : String(err)}`);
        },
      );
    }
  }

  /**
   * Reads the device map again (SIGHUP) and applies what changed: devices and tags added,
   * removed or changed appear in the address space, the others keep polling. A map with
   * mistakes is refused with every issue logged; the last good map stays in use.
   */
  async reloadDevices(): Promise<{ readonly ok: boolean; readonly issues: readonly ConfigIssue[]; readonly report?: ApplyReport }> {
    const file = this.config.devices;
    if (file === undefined) {
      this.log.warn("reload: no device map configured (devices: in the gateway config)");
      return { ok: false, issues: [] };
    }
    const result = await this.validateForReload(file, join(this.config.dataDir, "cache"));
    if (!result.ok) {
      for (const issue of result.issues) this.log.warn(`reload refused: ${formatIssue(issue)}`);
      this.log.warn(`reload refused: ${result.issues.length} issue(s) in ${file}; still polling the last good device map`);
      return { ok: false, issues: result.issues };
    }
    this.deviceMap = result.value;
    const report = await this.deviceRuntime.apply(result.value);
    this.logApply(report);
    // One GeneralModelChangeEvent for the whole reload (Part 5 §6.4.33).
    this.events.flushModelChanges();
    this.northbound.devicesChanged();
    return { ok: true, issues: [], report };
  }

  /** The map validated on a worker (config/validate-off-loop.ts), or here if the worker fails. */
  private async validateForReload(file: string, cacheDir: string): Promise<ValidationResult<DeviceMap>> {
    try {
      return await validateDeviceMapOffLoop(file, cacheDir);
    } catch (err) {
      this.log.warn(`reload: the validation worker failed (${err instanceof Error ? err.message : String(err)}); validating on the event loop instead`);
      return validateDeviceMap(file, cacheDir);
    }
  }

  /**
   * gateway.yaml read again (SIGHUP): its users take effect now (server/config-reload.ts); other
   * changed sections are named as needing a restart. With `security` changed the users wait
   * for the restart too: they were validated against the new security section, not this one.
   */
  reloadConfig(next: GatewayConfig): { readonly restartNeeded: readonly string[]; readonly users?: UserReloadReport } {
    const restartNeeded = changesNeedingRestart(this.config, next);
    // The northbound section applies at once (an edge node with the new settings replaces the old).
    this.northbound.apply(next.northbound).catch((err: unknown) => this.log.warn(`reload: northbound: ${err instanceof Error ? err.message : String(err)}`));
    if (restartNeeded.length > 0) this.log.warn(`reload: ${restartNeeded.join(", ")} changed in the gateway config: takes effect at the next restart`);
    if (restartNeeded.includes("security")) {
      this.log.warn("reload: users not reloaded either: they go with the security section at the next restart");
      return { restartNeeded };
    }
    const users = reloadUsers(this.users, this.sessions, next.users);
    if (users.added.length + users.removed.length + users.changed.length > 0) {
      const parts = [
        users.added.length ? `added ${users.added.join(", ")}` : "",
        users.removed.length ? `removed ${users.removed.join(", ")}` : "",
        users.changed.length ? `changed ${users.changed.join(", ")}` : "",
      ].filter((p) => p !== "");
      this.log.info(`users: ${parts.join("; ")}; ${users.sessionsClosed} session(s) closed, ${users.sessionsRerolled} given a new role`);
    }
    return { restartNeeded, users };
  }

  /** Part 5 §12.9 SessionTimeoutCount / SessionAbortCount, and the session's audit event (§6.4.7). */
  private sessionEnded(session: Session, reason: SessionCloseReason): void {
    const d = this.serverDiagnostics;
    if (reason === "timeout") d.sessionTimeouts++;
    else if (reason === "evicted" || reason === "revoked") d.sessionAborts++;
    if (reason === "closed" || reason === "shutdown") return; // CloseSession audits itself; a stop is the server's
    this.events.audit.sessionEnded({ sessionId: session.sessionId, userId: session.userId, auditEntryId: "" }, reason === "timeout" ? "timeout" : "terminated");
  }

  private logApply(r: ApplyReport): void {
    const parts = [
      r.added.length ? `added ${r.added.join(", ")}` : "",
      r.removed.length ? `removed ${r.removed.join(", ")}` : "",
      r.changed.length ? `changed ${r.changed.join(", ")}` : "",
      `${r.unchanged.length} unchanged`,
    ].filter((p) => p !== "");
    this.log.info(`device map: ${parts.join("; ")}`);
  }

  /** Closes sessions and channels; resolves when every socket is gone. */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    // A server stopped at once keeps no cache: its data folder may be going away (tests).
    const keeping = this.cacheKeeping;
    this.cacheKeeping = undefined;
    if (keeping) await keeping.stop();
    this.ns0.setServerState(ServerState.Shutdown);
    // Part 5 §6.4.31: clients waiting with a Publish request hear of the shutdown before their
    // sessions close; one turn of the loop lets those responses out.
    this.events.systemStatus(ServerState.Shutdown, "The server is shutting down.");
    if (this.events.deliverNow(this.subscriptions) > 0) await new Promise((resolve) => setImmediate(resolve));
    this.sessions.closeAll();
    this.subscriptions.stop();
    this.diagnostics.stop();
    this.handshakes.clear();
    this.system.stop();
    await this.transport.close();
    // Before the devices: the edge node's NDEATH goes out, and its store takes the last changes.
    await this.northbound.stop();
    await this.deviceRuntime.stop();
    // After the transport: no HistoryRead is still awaited; queued samples are written first.
    await this.history.close();
    loopTrace.stop();
    detachSliceGate(this.slices);
    this.log.info("stopped");
  }
}
