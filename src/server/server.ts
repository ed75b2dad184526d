// The server object, the composition root's: it holds the gateway's parts (compose.ts makes
// them from the config, in order) and owns their start, their orderly stop and the reloads.
import { deviceMapSchema, tagNodeIdText, validateDeviceMap, type DeviceMap } from "../config/device-map.js";
import { addDeviceEntriesOffLoop, keepDeviceMapOffLoop, validateDeviceMapOffLoop, validateDeviceMapTextOffLoop, type OffLoopKeep } from "../config/validate-off-loop.js";
import type { EntriesAdded } from "../config/entry-yaml.js";
import { DeviceSearch } from "../devices/device-search.js";
import type { ValidationResult } from "../config/validate.js";
import { formatIssue, validateYaml, type ConfigIssue } from "../config/load.js";
import type { ApplyReport } from "../devices/device-runtime.js";
import { lowerHelperThreads } from "../thread-priority.js";
import { describeApply } from "../devices/map-changes.js";
import { loopTrace } from "../sampling/loop-trace.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import type { UaTcpServer } from "./listener.js";
import { MessageSecurityMode, ServerState } from "../ua/generated/enums.js";
import { dirname, join, resolve } from "node:path";
import { Pki } from "../security/pki.js";
import { POLICY_ALGORITHMS, SecurePolicy } from "../security/policies.js";
import type { SecurityPolicy } from "../security/security-policy.js";
import type { EndpointDescription } from "../ua/generated/types.js";
import { advertisedHost, buildEndpoints } from "./endpoints.js";
import type { ServerCore } from "../services/server-core.js";
import { changesNeedingRestart, reloadUsers, type UserReloadReport } from "./config-reload.js";
import { leveled, Logger, type ServerLog } from "../log.js";
import type { BufferPool } from "../transport/buffer-pool.js";
import type { DriverRegistry } from "../devices/registry.js";
import { builtinDrivers } from "../../drivers/builtin.js";
import { builtFile } from "../worker-file.js";
import { composeGateway, securePolicyNames, type GatewayParts } from "./compose.js";
import { SettingsFiles } from "./settings-files.js";
import { NetworkRequests, requestFolder, type NetworkBackend } from "./network-settings.js";
import { readTrend, type TrendPoints } from "../history/trend.js";
import { stringNodeId } from "../ua/builtins.js";
import { nodeIdToString } from "../ua/node-id.js";
import { cliCommand } from "../package-info.js";

export interface FieldgateServerOptions {
  /**
   * The appliance's network requests (its root unit carries them out; `fieldgate run` hands
   * over requestFolderBackend): with them, and the request folder <dataDir>/network-request
   * present, the page and its API change network.yaml (beside gateway.yaml) on trial.
   */
  readonly networkBackend?: NetworkBackend;
  /** The gateway.yaml the config came from: log lines name it in the commands they suggest. */
  readonly configFile?: string;
  /**
   * The drivers a device map may name; default the built-in ones (drivers/builtin.ts), whose
   * maps a worker validates off the event loop (server/validate-worker.ts). Maps of other
   * drivers are validated on the loop.
   */
  readonly drivers?: DriverRegistry;
}

// The parts are the server's own fields (compose.ts's GatewayParts): `server.history`, ...
export interface FieldgateServer extends GatewayParts {}

export class FieldgateServer implements ServerCore {
  /** The device map in use: the last one that loaded (a refused reload keeps it). */
  deviceMap: DeviceMap | undefined;
  /** Set by start() when a signing policy is configured. */
  pki: Pki | undefined = undefined;
  /** The settings files as the status page and its API change them. */
  readonly settings: SettingsFiles;
  private readonly benchMap: DeviceMap | undefined;
  private readonly policies: Map<string, SecurityPolicy>;
  private readonly transport: UaTcpServer;
  private readonly log: ServerLog;
  private readonly configFile: string | undefined;
  /** start() has begun: stop() undoes what it did, also when it failed half-way. */
  private started = false;
  /** Whether a newly validated device map is still to be kept in the cache (start, by a worker). */
  private cacheToKeep: boolean;
  private cacheKeeping: OffLoopKeep | undefined;
  private readonly drivers: DriverRegistry;
  /** The worker file that validates maps with `drivers`, when there is one (the built-in drivers'). */
  private readonly mapWorker: (() => URL) | undefined;

  constructor(config: GatewayConfig, log: ServerLog = new Logger(), options: FieldgateServerOptions = {}) {
    this.log = log;
    this.configFile = options.configFile;
    this.drivers = options.drivers ?? builtinDrivers();
    this.mapWorker = options.drivers === undefined ? () => builtFile("server/validate-worker") : undefined;
    const made = composeGateway(config, log, this, this.drivers, this.mapWorker !== undefined);
    Object.assign(this, made.parts);
    ({ deviceMap: this.deviceMap, benchMap: this.benchMap, policies: this.policies, transport: this.transport, cacheToKeep: this.cacheToKeep } = made);
    this.settings = new SettingsFiles({
      configFile: options.configFile === undefined ? undefined : resolve(options.configFile),
      running: () => this.config,
      dataDir: config.dataDir,
      log: leveled(log),
      applyDeviceMap: (map) => this.applyDeviceMap(map),
      reloadConfig: (next) => this.reloadConfig(next),
      readOnce: (device, map) => this.deviceRuntime.readOnce(device, map),
      validateMapText: (text, file, issuesOnly) => this.validateMapText(text, file, issuesOnly),
      kepware: this.drivers,
      search: new DeviceSearch({ drivers: this.drivers, running: () => this.deviceMap, log: leveled(log) }),
      addEntries: (text, devices, sections) => this.addEntries(text, devices, sections),
      network:
        options.networkBackend === undefined || options.configFile === undefined
          ? undefined
          : new NetworkRequests({
              file: join(dirname(resolve(options.configFile)), "network.yaml"),
              requestDir: requestFolder(config.dataDir),
              backend: options.networkBackend,
              log: leveled(log),
            }),
    });
  }

  /** Tag `tag` of device `device` from the history, as points for a chart (history/trend.ts). */
  trend(device: string, tag: string, from: number, to: number): Promise<TrendPoints> {
    return readTrend(this.history, nodeIdToString(stringNodeId(tagNodeIdText(device, tag), this.devices.namespaceIndex)), from, to);
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

  /** Opens the PKI (creating the gateway certificate on first start) and registers the signing policies. */
  private async openSecurity(): Promise<void> {
    const names = securePolicyNames(this.config);
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
      trustCommand: `${cliCommand()} cert trust${this.configFile === undefined ? "" : ` --config ${resolve(this.configFile)}`}`,
      onRefused: (certificate, status) => this.events.audit.certificateRefused(certificate, status),
      onDamaged: this.damagedFiles.note,
    });
    this.pki = pki;
    const modes = new Set(this.offers.filter((o) => o.securityMode !== MessageSecurityMode.None).map((o) => o.securityMode));
    for (const n of names) this.policies.set(POLICY_ALGORITHMS[n].uri, new SecurePolicy(POLICY_ALGORITHMS[n], modes, pki));
  }

  async start(): Promise<void> {
    this.started = true;
    loopTrace.start();
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
    if (this.cacheToKeep && this.config.devices !== undefined && this.mapWorker !== undefined) {
      this.cacheToKeep = false;
      let keeping: OffLoopKeep;
      try {
        keeping = keepDeviceMapOffLoop(this.config.devices, join(this.config.dataDir, "cache"), { file: this.mapWorker() });
      } catch (err) {
        keeping = { done: Promise.reject(err instanceof Error ? err : new Error(String(err))), stop: async () => undefined };
      }
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
    return { ok: true, issues: [], report: await this.applyDeviceMap(result.value) };
  }

  /**
   * Applies a validated device map as a reload does: what changed starts, stops or restarts,
   * the other devices keep polling (the status page's Apply, after its own validation).
   */
  async applyDeviceMap(map: DeviceMap): Promise<ApplyReport> {
    this.deviceMap = map;
    const report = await this.deviceRuntime.apply(map);
    this.logApply(report);
    // One GeneralModelChangeEvent for the whole reload (Part 5 §6.4.33).
    this.events.flushModelChanges();
    this.northbound.devicesChanged();
    return report;
  }

  /** Device map text validated as a reload validates its file (the status page's edits, before they are written). */
  private async validateMapText(text: string, file: string, issuesOnly: boolean): Promise<ValidationResult<DeviceMap>> {
    if (this.mapWorker === undefined) return validateYaml(deviceMapSchema(this.drivers), text, file);
    try {
      return await validateDeviceMapTextOffLoop(text, file, { file: this.mapWorker(), issuesOnly });
    } catch (err) {
      this.log.warn(`status page: the validation worker failed (${err instanceof Error ? err.message : String(err)}); validating on the event loop instead`);
      return validateYaml(deviceMapSchema(this.drivers), text, file);
    }
  }

  /**
   * Device entries added to map text being edited (a search's finds), on the validation worker:
   * the whole map is parsed and printed again. A search's bus must be the map's bus of that name.
   */
  private async addEntries(text: string, devices: readonly Readonly<Record<string, unknown>>[], sections: Readonly<Record<string, unknown>>): Promise<EntriesAdded | { readonly error: string }> {
    // The yaml library is loaded here only when the worker cannot do it: an idle gateway keeps
    // none of it in its heap.
    const here = async () => (await import("../config/entry-yaml.js")).addDeviceEntries(text, devices, sections, { sameSections: true });
    if (this.mapWorker === undefined) return here();
    try {
      return await addDeviceEntriesOffLoop(text, devices, sections, true, { file: this.mapWorker() });
    } catch (err) {
      this.log.warn(`status page: the editing worker failed (${err instanceof Error ? err.message : String(err)}); adding the devices on the event loop instead`);
      return here();
    }
  }

  /** The map validated on a worker (config/validate-off-loop.ts), or here if the worker fails or the drivers have none. */
  private async validateForReload(file: string, cacheDir: string): Promise<ValidationResult<DeviceMap>> {
    if (this.mapWorker === undefined) return validateDeviceMap(file, this.drivers, cacheDir);
    try {
      return await validateDeviceMapOffLoop(file, cacheDir, { file: this.mapWorker() });
    } catch (err) {
      this.log.warn(`reload: the validation worker failed (${err instanceof Error ? err.message : String(err)}); validating on the event loop instead`);
      return validateDeviceMap(file, this.drivers, cacheDir);
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

  private logApply(r: ApplyReport): void {
    const { summary, devices } = describeApply(r);
    this.log.info(`device map: ${summary}`);
    for (const line of devices) this.log.info(`device map: ${line}`);
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
    await this.settings.close();
    await this.deviceRuntime.stop();
    // After the transport: no HistoryRead is still awaited; queued samples are written first.
    await this.history.close();
    loopTrace.stop();
    this.log.info("stopped");
  }
}
