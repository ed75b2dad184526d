#!/usr/bin/env node
// `fieldgate run | validate`: the entry point of the gateway service and of its operators' tools.
import { parseArgs } from "node:util";
import { ConfigError, loadGatewayConfig, validateConfigFile } from "./config/load.js";
import { diagnosticsRequested, installDiagnosticsReport } from "./server/diagnostics-report.js";
import { FieldgateServer } from "./server/server.js";
import { SystemdNotifier } from "./server/systemd-notify.js";

const USAGE = `usage:
  fieldgate run --config FILE [--port N]    run the gateway
  fieldgate validate --config FILE          check a config and exit (0 = valid)`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: { config: { type: "string", short: "c" }, port: { type: "string" }, help: { type: "boolean", short: "h" } },
    allowPositionals: false,
  });
  if (values.help || command === undefined || command === "help") {
    console.log(USAGE);
    return command === undefined ? 2 : 0;
  }
  const configFile = values.config ?? "config/gateway.yaml";
  switch (command) {
    case "validate": {
      const issues = validateConfigFile(configFile);
      for (const i of issues) console.error(`${i.file}:${i.line}:${i.column}: ${i.path ? i.path + ": " : ""}${i.message}`);
      if (issues.length === 0) console.log(`${configFile}: valid`);
      return issues.length === 0 ? 0 : 1;
    }
    case "run":
      return run(configFile, values.port);
    default:
      console.error(`unknown command "${command}"\n${USAGE}`);
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
  // Opt-in (bench): heap and GC pause totals on SIGUSR2 and at exit.
  if (diagnosticsRequested()) installDiagnosticsReport();
  const server = new FieldgateServer(config);
  await server.start();
  console.log(`fieldgate: listening on ${server.endpointUrl}`);
  // Under systemd (Type=notify): READY=1 now, then watchdog pings; nothing when run by hand.
  const notifier = SystemdNotifier.fromEnv();
  notifier?.ready(`listening on ${server.endpointUrl}`);
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals): void => {
      if (stopping) return;
      stopping = true;
      console.log(`fieldgate: ${signal}, closing channels and sessions`);
      notifier?.stopping();
      server.stop().then(
        () => resolve(0),
        (err: unknown) => {
          console.error("fieldgate: error while stopping:", err);
          resolve(1);
        },
      );
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    // `systemctl reload` (ExecReload) sends SIGHUP; Node's default would end the process.
    process.on("SIGHUP", () => {
      notifier?.reloading();
      console.log("fieldgate: SIGHUP: this build cannot reload the device map yet; the running configuration is kept");
      notifier?.ready(`listening on ${server.endpointUrl}`);
    });
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
