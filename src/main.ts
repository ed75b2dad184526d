// `fieldgate run | validate | cert | update | import | export | settings | network`: the gateway
// service and its operators' tools (src/cli.ts is the command that loads this), and the commands
// its drivers add (DriverCommand: `fieldgate <name> ...`, loaded when run).
import { parseArgs } from "node:util";
import { validateDeviceMapFile } from "./config/device-map.js";
import { validateNetworkFile } from "./config/network-config.js";
import { builtinDrivers } from "../drivers/builtin.js";
import { formatIssue, loadGatewayConfig, validateConfigFile, type ConfigIssue } from "./config/load.js";
import { passwordProblem } from "./config/credentials.js";
import { runGateway } from "./server/gateway-run.js";
import { hashPassword } from "./sessions/users.js";
import { releaseSignals } from "./signals.js";

// The operators' tools (cert, update, import, export) and the status page (server/gateway-run.ts)
// are imported when they are used: a gateway that runs without them does not load their modules (the update
// machinery, the Kepware CSV tools with the full yaml library), which cost start time and
// memory at rest (bench/RESULTS.md).
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
${builtinDrivers().commandList().map((c) => c.usage).join("\n")}
  fieldgate help | --help                   print this`;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Only the gateway keeps the signals src/cli.ts holds; a tool ends on them as usual.
  if (command !== "run") releaseSignals();
  if (command === "help" || command === "--help" || command === "-h") {
    console.log(await usage());
    return 0;
  }
  // `cert`, `update`, `import` and `export` take positionals: they parse their own arguments.
  // (`settings` and `network` never come here: src/cli.ts runs src/settings-main.ts for them.)
  if (command === "cert") return (await import("./security/cert-cli.js")).certCommand(rest);
  if (command === "update") return (await import("./update/cli.js")).updateCommand(rest);
  if (command === "import") return (await import("./config/kepware-cli.js")).importCommand(rest, builtinDrivers());
  if (command === "export") return (await import("./config/kepware-cli.js")).exportCommand(rest, builtinDrivers());
  const drivers = builtinDrivers();
  const driverCommand = command === undefined ? undefined : drivers.commandNamed(command);
  if (driverCommand !== undefined) {
    return driverCommand.run(rest, { drivers, out: (s) => void process.stdout.write(s), err: (s) => void process.stderr.write(s) });
  }
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
      return runGateway(configFile, values.port);
    case "password":
      return password();
    default:
      console.error(`unknown command "${command}"\n${await usage()}`);
      return 2;
  }
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
    issues.push(...validateDeviceMapFile(devicesFile, builtinDrivers()));
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
  // The same rule as the FIELDGATE drive's admin-password.txt: one rule for every password set.
  const problem = passwordProblem(pw);
  if (problem !== undefined) {
    console.error(`fieldgate: password: ${problem}`);
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
