// `fieldgate run | validate | cert | update | import | export | settings | network`: the gateway service and its
// operators' tools (src/cli.ts is the command that loads this).
import { parseArgs } from "node:util";
import { validateDeviceMapFile } from "./config/device-map.js";
import { validateNetworkFile } from "./config/network-config.js";
import { ConfigError, formatIssue, loadGatewayConfig, validateConfigFile, type ConfigIssue } from "./config/load.js";
import { diagnosticsRequested, installDiagnosticsReport } from "./server/diagnostics-report.js";
import { FieldgateServer } from "./server/server.js";
import { hashPassword } from "./sessions/users.js";
import { SystemdNotifier } from "./server/systemd-notify.js";
import { Logger } from "./log.js";
import type { WebServer } from "./web/web-server.js";

// The operators' tools (cert, update, import, export) and the status page are imported when
// they are used: a gateway that runs without them does not load their modules (the update
// machinery, the Kepware CSV tools with the full yaml library), which cost start time and
// memory at rest (bench/RESULTS.md, issue 14).
async function usage(): Promise<string> {
  const [{ CERT_USAGE }, { UPDATE_USAGE }, { EXPORT_USAGE, IMPORT_USAGE }, { SETTINGS_USAGE, NETWORK_USAGE }] = await Promise.all([
    import("./security/cert-cli.js"),
    import("./update/cli.js"),
    import("./config/kepware-cli.js"),
    import("./settings/cli.js"),
  ]);
  return `usage:
  fieldgate run --config FILE [--port N]    run the gateway
  fieldgate validate --config FILE          check a config and the device map it names, and exit
                                            (0 = valid)
  fieldgate validate --devices FILE         check a device map alone
  fieldgate validate --network FILE         check network settings (network.yaml)
  fieldgate password                        read a password (stdin; no echo on a terminal) and
                                            print its hash for users.<name>.password
${CERT_USAGE}
${UPDATE_USAGE}
${IMPORT_USAGE}
${EXPORT_USAGE}
${SETTINGS_USAGE}
${NETWORK_USAGE}
  fieldgate help | --help                   print this`;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "help" || command === "--help" || command === "-h") {
    console.log(await usage());
    return 0;
  }
  // `cert`, `update`, `import` and `export` take positionals: they parse their own arguments.
  // (`settings` and `network` never come here: src/cli.ts runs src/settings/main.ts for them.)
  if (command === "cert") return (await import("./security/cert-cli.js")).certCommand(rest);
  if (command === "update") return (await import("./update/cli.js")).updateCommand(rest);
  if (command === "import") return (await import("./config/kepware-cli.js")).importCommand(rest);
  if (command === "export") return (await import("./config/kepware-cli.js")).exportCommand(rest);
  const { values } = parseArgs({
    args: rest,
    options: {
      config: { type: "string", short: "c" },
      devices: { type: "string" },
      network: { type: "string" },
      port: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: false,
  });
  if (values.help || command === undefined) {
    // No command at all is a mistake (exit 2); asking for help is not.
    (command === undefined ? console.error : console.log)(await usage());
    return command === undefined ? 2 : 0;
  }
  const configFile = values.config ?? "config/gateway.yaml";
  switch (command) {
    case "validate":
      return validate(
        (values.devices === undefined && values.network === undefined) || values.config !== undefined ? configFile : undefined,
        values.devices,
        values.network,
      );
    case "run":
      return run(configFile, values.port);
    case "password":
      return password();
    default:
      console.error(`unknown command "${command}"\n${await usage()}`);
      return 2;
  }
}

async function run(configFile: string, portOverride: string | undefined): Promise<number> {
  let config;
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
  let server: FieldgateServer;
  try {
    // Loads the device map: a bad one is refused before anything starts.
    server = new FieldgateServer(config, log, { configFile });
  } catch (err) {
    if (err instanceof ConfigError) {
      log.error(err.message);
      return 1;
    }
    throw err;
  }
  try {
    await server.start();
  } catch (err) {
    if (!isAddressInUse(err)) throw err;
    log.error(addressInUse("opc.tcp", config.server.host, config.server.port, `server.port in ${configFile}, or run with --port N (0: any free port)`));
    await server.stop();
    return 1;
  }
  log.info(`listening on ${server.endpointUrl}`);
  let web: WebServer | undefined;
  if (config.web.enabled) {
    try {
      web = await (await import("./web/web-server.js")).startStatusPage(server, log);
      log.info(`status page on ${web.url}${web.auth.loginRequired ? "" : " (this box only: no users configured, no login)"}`);
    } catch (err) {
      const message = isAddressInUse(err)
        ? addressInUse("status page", config.web.host ?? (server.users.acceptsPasswords ? "0.0.0.0" : "127.0.0.1"), config.web.port, `web.port in ${configFile} (0: any free port), or web.enabled: false`)
        : `status page did not start: ${err instanceof Error ? err.message : String(err)}`;
      log.error(message);
      await server.stop();
      return 1;
    }
  }
  // Under systemd (Type=notify): READY=1 now, then watchdog pings; nothing when run by hand.
  const notifier = SystemdNotifier.fromEnv({ log: (m) => log.warn(m) });
  notifier?.ready(`listening on ${server.endpointUrl}`);
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals): void => {
      if (stopping) return;
      stopping = true;
      log.info(`${signal}, closing channels and sessions`);
      notifier?.stopping();
      Promise.all([web?.close(), server.stop()]).then(
        () => resolve(0),
        (err: unknown) => {
          log.error(`error while stopping: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
          resolve(1);
        },
      );
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    // `systemctl reload` (ExecReload) sends SIGHUP; Node's default would end the process.
    // gateway.yaml (its users) and the device map are read again; a refused file is logged and
    // what was loaded last stays in use.
    let reloading: Promise<unknown> = Promise.resolve();
    process.on("SIGHUP", () => {
      reloading = reloading.then(async () => {
        notifier?.reloading();
        log.info("SIGHUP: reloading the gateway config and the device map");
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
            web?.auth.usersChanged();
          } catch (err) {
            log.error(`reload of the gateway config failed: ${err instanceof Error ? err.message : String(err)}`);
          }
        }
        try {
          await server.reloadDevices();
        } catch (err) {
          log.error(`reload failed: ${err instanceof Error ? err.message : String(err)}`);
        }
        notifier?.ready(`listening on ${server.endpointUrl}`);
      });
    });
  });
}

function isAddressInUse(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE";
}

/** EADDRINUSE in words: who holds the port is a look away, and the way out is named. */
function addressInUse(what: string, host: string, port: number, choose: string): string {
  return `${what}: port ${port} on ${host} is already in use by another program (another fieldgate?); \`ss -ltnp 'sport = :${port}'\` shows which. Choose another port with ${choose}`;
}

/** `fieldgate validate`: the gateway config and the device map it names, or a device map or network.yaml alone. */
function validate(configFile: string | undefined, devicesFile: string | undefined, networkFile: string | undefined): number {
  const checked: string[] = [];
  const issues: ConfigIssue[] = [];
  if (configFile !== undefined) {
    const own = validateConfigFile(configFile);
    issues.push(...own);
    checked.push(configFile);
    if (own.length === 0 && devicesFile === undefined) devicesFile = loadGatewayConfig(configFile).devices;
  }
  if (devicesFile !== undefined) {
    issues.push(...validateDeviceMapFile(devicesFile));
    checked.push(devicesFile);
  }
  if (networkFile !== undefined) {
    issues.push(...validateNetworkFile(networkFile));
    checked.push(networkFile);
  }
  for (const i of issues) console.error(formatIssue(i));
  if (issues.length === 0) for (const f of checked) console.log(`${f}: valid`);
  return issues.length === 0 ? 0 : 1;
}

/** `fieldgate password`: the hash to paste into gateway.yaml; the password itself is never stored. */
async function password(): Promise<number> {
  let pw: string | undefined;
  if (process.stdin.isTTY) {
    pw = await readHidden("Password: ");
    if (pw !== undefined && (await readHidden("Again: ")) !== pw) {
      console.error("fieldgate: the passwords differ");
      return 1;
    }
  } else {
    // From a pipe: the first line, without its line ending.
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    pw = /^[^\r\n]*/.exec(Buffer.concat(chunks).toString("utf8"))![0];
  }
  if (!pw) {
    console.error("fieldgate: no password given");
    return 1;
  }
  console.log(await hashPassword(pw));
  return 0;
}

/** Reads one line from the terminal in raw mode, echoing nothing; undefined on Ctrl-C or Ctrl-D. */
function readHidden(prompt: string): Promise<string | undefined> {
  const stdin = process.stdin;
  // Raw mode before the prompt: a fast typist (or a script) must not beat it to the echo.
  stdin.setRawMode(true);
  stdin.resume();
  process.stderr.write(prompt);
  return new Promise((resolve) => {
    let line = "";
    const onData = (data: Buffer): void => {
      for (const ch of data.toString("utf8")) {
        if (ch === "\r" || ch === "\n" || ch === "\u0003" || ch === "\u0004") {
          stdin.off("data", onData);
          stdin.setRawMode(false);
          stdin.pause();
          process.stderr.write("\n");
          resolve(ch === "\r" || ch === "\n" ? line : undefined);
          return;
        }
        if (ch === "\u007f" || ch === "\b") line = line.slice(0, -1);
        else line += ch;
      }
    };
    stdin.on("data", onData);
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // Everything was closed; if a stray handle still holds the loop, do not hang the service manager.
    setTimeout(() => process.exit(code), 2000).unref();
  },
  (err: unknown) => {
    console.error("fieldgate:", err instanceof Error ? err.message : err);
    process.exitCode = 1;
  },
);
