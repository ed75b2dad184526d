// `fieldgate run`: the gateway's process from its config to its stop.
//
//   config -> server (device map) -> start (OPC UA listens, devices poll; history and
//   northbound start on their own) -> "listening" -> status page -> READY=1 -> reloads -> stop
//
// Signals are taken from the first instruction on (src/signals.ts): a SIGTERM or SIGINT at any
// point ends the start after the step under way and stops what was started, with status 0; a
// SIGHUP before the gateway is up is kept and applied once it is (one reload, however many came).
// The optional parts never stop the rest: a history or northbound database that cannot be used
// is moved aside or left out by its part (storage/damaged.ts), a status page that cannot start
// is logged and the gateway runs without it.
import { ConfigError, formatIssue, loadGatewayConfig, validateConfigFile } from "../config/load.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import { takeSignals, type HeldSignal } from "../signals.js";
import { restoreRunningFlags } from "../runtime-flags.js";
import type { WebServer } from "../web/web-server.js";
import { diagnosticsRequested, installDiagnosticsReport } from "./diagnostics-report.js";
import { Logger } from "../log.js";
import { FieldgateServer } from "./server.js";
import { requestFolderBackend } from "./network-settings.js";
import { SystemdNotifier } from "./systemd-notify.js";

/** What the signals asked for, as the start goes on. */
class SignalState {
  /** The first SIGTERM or SIGINT. */
  stopSignal: HeldSignal | undefined = undefined;
  /** SIGHUPs that came before the gateway was up. */
  queuedReloads = 0;
  private reload: (() => void) | undefined;
  private wake: (() => void) | undefined;
  /** Resolves at the first SIGTERM or SIGINT. */
  readonly stopped = new Promise<HeldSignal>((resolve) => (this.wake = () => resolve(this.stopSignal!)));

  readonly on = (signal: HeldSignal): void => {
    if (signal === "SIGHUP") {
      if (this.stopSignal !== undefined) return;
      if (this.reload === undefined) this.queuedReloads++;
      else this.reload();
      return;
    }
    if (this.stopSignal !== undefined) return;
    this.stopSignal = signal;
    this.wake!();
  };

  get stopping(): boolean {
    return this.stopSignal !== undefined;
  }

  /** The gateway is up: reloads run from now on, and the queued ones (as one) at once. */
  up(reload: () => void): void {
    this.reload = reload;
    if (this.queuedReloads > 0) reload();
  }
}

export async function runGateway(configFile: string, portOverride: string | undefined): Promise<number> {
  const signals = new SignalState();
  takeSignals(signals.on);
  let config: GatewayConfig;
  try {
    config = loadGatewayConfig(configFile);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 1;
    }
    throw err;
  }
  if (portOverride !== undefined) {
    const port = Number(portOverride);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      console.error(`--port: expected an integer between 0 and 65535, got "${portOverride}"`);
      return 2;
    }
    config = { ...config, server: { ...config.server, port } };
  }
  const log = new Logger({ level: config.log.level });
  // Opt-in (bench): heap and GC pause totals on SIGUSR2 and at exit.
  if (diagnosticsRequested()) installDiagnosticsReport();
  if (signals.stopping) return stoppedBefore(log, signals, "anything started");
  let server: FieldgateServer;
  try {
    // Loads the device map: a bad one is refused before anything starts.
    // The network settings are the page's where the appliance made the request folder for them.
    server = new FieldgateServer(config, log, { configFile, networkBackend: requestFolderBackend(config.dataDir) });
  } catch (err) {
    if (err instanceof ConfigError) {
      log.error(err.message);
      return 1;
    }
    throw err;
  }
  if (signals.stopping) return stoppedBefore(log, signals, "anything started");
  try {
    await server.start();
  } catch (err) {
    log.error(
      isAddressInUse(err)
        ? addressInUse("opc.tcp", config.server.host, config.server.port, `server.port in ${configFile}, or run with --port N (0: any free port)`)
        : `the gateway did not start: ${err instanceof Error ? err.message : String(err)}`,
    );
    await server.stop();
    return 1;
  }
  let web: WebServer | undefined;
  let status = `listening on ${server.endpointUrl}`;
  log.info(status);
  if (config.web.enabled && !signals.stopping) {
    try {
      web = await (await import("../web/web-server.js")).startStatusPage(server, log);
      log.info(`status page on ${web.url}${web.loginRequired ? "" : " (this box only: no users configured, no login)"}`);
    } catch (err) {
      // An optional part: OPC UA and the devices go on without it.
      const why = isAddressInUse(err)
        ? addressInUse("status page", config.web.host ?? (server.users.acceptsPasswords ? "0.0.0.0" : "127.0.0.1"), config.web.port, `web.port in ${configFile} (0: any free port), or web.enabled: false`)
        : `status page did not start: ${err instanceof Error ? err.message : String(err)}`;
      log.error(`${why}. The gateway runs without its status page; a restart tries again`);
      status += "; the status page did not start (see the log)";
    }
  }
  // Under systemd (Type=notify): READY=1 now, then watchdog pings; nothing when run by hand.
  const notifier = SystemdNotifier.fromEnv({ log: (m) => log.warn(m) });
  if (!signals.stopping) {
    notifier?.ready(status);
    // Started: the Node modules a gateway loads are loaded (src/runtime-flags.ts).
    restoreRunningFlags();
    signals.up(reloader({ server, web: () => web, config, configFile, portOverride, log, notifier, status, signals }));
  }
  const signal = await signals.stopped;
  log.info(`${signal}, closing channels and sessions`);
  notifier?.stopping();
  try {
    await Promise.all([web?.close(), server.stop()]);
    return 0;
  } catch (err) {
    log.error(`error while stopping: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return 1;
  }
}

function stoppedBefore(log: Logger, signals: SignalState, what: string): number {
  log.info(`${signals.stopSignal}: stopped before ${what}`);
  return 0;
}

/**
 * The SIGHUP handler once the gateway is up: `systemctl reload` (ExecReload) sends it. gateway.yaml
 * (its users) and the device map are read again; a refused file is logged and what was loaded
 * last stays in use. Reloads run one after the other.
 */
function reloader(o: {
  readonly server: FieldgateServer;
  readonly web: () => WebServer | undefined;
  readonly config: GatewayConfig;
  readonly configFile: string;
  readonly portOverride: string | undefined;
  readonly log: Logger;
  readonly notifier: SystemdNotifier | undefined;
  /** The STATUS= line of READY=1. */
  readonly status: string;
  readonly signals: SignalState;
}): () => void {
  const { server, web, config, configFile, portOverride, log, notifier, status, signals } = o;
  let reloading: Promise<unknown> = Promise.resolve();
  return () => {
    reloading = reloading.then(async () => {
      if (signals.stopping) return;
      notifier?.reloading();
      log.info(signals.queuedReloads > 0 ? "SIGHUP during the start: reloading the gateway config and the device map now that it is up" : "SIGHUP: reloading the gateway config and the device map");
      signals.queuedReloads = 0;
      const issues = validateConfigFile(configFile);
      if (issues.length > 0) {
        for (const issue of issues) log.error(`reload refused: ${formatIssue(issue)}`);
        log.error(`reload refused: ${issues.length} issue(s) in ${configFile}; the users loaded last stay in use`);
      } else {
        try {
          let next = loadGatewayConfig(configFile);
          // --port is not in the file: keep it, or every reload would report a changed server section.
          if (portOverride !== undefined) next = { ...next, server: { ...next.server, port: config.server.port } };
          server.reloadConfig(next);
          web()?.usersChanged();
        } catch (err) {
          log.error(`reload of the gateway config failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      try {
        await server.reloadDevices();
      } catch (err) {
        log.error(`reload failed: ${err instanceof Error ? err.message : String(err)}`);
      }
      notifier?.ready(status);
    });
  };
}

function isAddressInUse(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE";
}

/** EADDRINUSE in words: who holds the port is a look away, and the way out is named. */
function addressInUse(what: string, host: string, port: number, choose: string): string {
  return `${what}: port ${port} on ${host} is already in use by another program (another fieldgate?); \`ss -ltnp 'sport = :${port}'\` shows which. Choose another port with ${choose}`;
}
