// `fieldgate settings ...` and `fieldgate network ...`: the FAT drive's import at boot, and the
// network settings (rendered for systemd-networkd; tried with a way back). README, "The
// appliance image" and "First hour".
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import type { MapDrivers } from "../config/device-map.js";
import { formatIssue } from "../config/errors.js";
import { networkSchema } from "../config/network-config.js";
import { validateFile } from "../config/load.js";
import { applianceTargets, folderTargets, systemdReloader, writeNetwork, type NetworkTargets } from "./network-apply.js";
import { renderNetwork } from "./network-render.js";
import { REQUEST_DIR, serveNetworkRequest } from "./network-requests.js";
import { DEFAULT_TRIAL_SECONDS, NetworkTrial, systemdRevertTimer, type RevertTimer, type TrialPaths } from "./network-trial.js";

export const SETTINGS_USAGE = `  fieldgate settings import --from DIR --to DIR [--ssh DIR] [--status FILE] [--versions DIR]
                                            apply the settings files in DIR (the FAT drive's
                                            fieldgate/ folder) if every one is valid, write
                                            IMPORT-RESULT.txt there, and keep each file as a
                                            version for the status page (default: versions/
                                            beside the status file; at boot, as root)
  fieldgate settings status [--status FILE] the last import's result`;

export const NETWORK_USAGE = `  fieldgate network apply --config FILE --out DIR [--system] [--boot] [--reload]
                                            render network.yaml for systemd-networkd into DIR
                                            (/run/systemd/network on the appliance); --system
                                            also sets the hostname and time zone
  fieldgate network try --config FILE [--timeout S]
                                            apply FILE now, and go back to the settings before
                                            it after S seconds (120) unless confirmed
  fieldgate network confirm                 keep the change on trial (as /etc/fieldgate/network.yaml)
  fieldgate network revert                  go back to /etc/fieldgate/network.yaml now
  fieldgate network status                  the change on trial, and the last one's outcome
  fieldgate network serve                   carry out the gateway's waiting request (try,
                                            confirm, revert; fieldgate-network-request.path)
  try, confirm, revert, status and serve take --root DIR: the appliance's folders under DIR
  (/etc/fieldgate, /var/lib/fieldgate, /run), to try them out without root: the port files go to
  DIR/run/systemd/network, nothing running is told, the hostname and time zone stay, and no
  revert timer is armed (\`fieldgate network revert --root DIR\` does what it would)`;

const STATUS_FILE = "/var/lib/fieldgate/settings-import.json";
const TRIAL_PATHS: TrialPaths = {
  config: "/etc/fieldgate/network.yaml",
  runDir: "/run/fieldgate/network-trial",
  statusFile: "/var/lib/fieldgate/network-trial.json",
};
/** The appliance's paths of a trial, its request folder and its port files, under `root` ("/": the appliance itself). */
function networkPaths(root: string): { trial: TrialPaths; requests: string; networkDir: string } {
  const under = (p: string): string => (root === "/" ? p : join(root, p));
  return {
    trial: { config: under(TRIAL_PATHS.config), runDir: under(TRIAL_PATHS.runDir), statusFile: under(TRIAL_PATHS.statusFile) },
    requests: under(REQUEST_DIR),
    networkDir: under("/run/systemd/network"),
  };
}

type Out = (s: string) => void;

type Options = NonNullable<ParseArgsConfig["options"]>;
type Parsed = { values: Record<string, string | boolean | undefined>; positionals: string[] };

/** parseArgs with positionals and -h; undefined (after saying why) when the arguments do not parse. */
function parse(argv: string[], options: Options, usage: string, err: Out): Parsed | undefined {
  try {
    const r = parseArgs({ args: argv, options: { ...options, help: { type: "boolean", short: "h" } }, allowPositionals: true });
    return { values: r.values as Parsed["values"], positionals: r.positionals };
  } catch (e) {
    err(`${e instanceof Error ? e.message : String(e)}\nusage:\n${usage}`);
    return undefined;
  }
}

/** `drivers`: the gateway's driver registry, made only for an import (a device map is checked against it). */
export async function settingsCommand(argv: string[], drivers: () => MapDrivers, out: Out = console.log, err: Out = console.error): Promise<number> {
  const parsed = parse(argv, { from: { type: "string" }, to: { type: "string" }, ssh: { type: "string" }, status: { type: "string" }, versions: { type: "string" } }, SETTINGS_USAGE, err);
  if (parsed === undefined) return 2;
  const { values, positionals } = parsed;
  const [what, extra] = positionals;
  const str = (k: string): string | undefined => values[k] as string | undefined;
  if (values.help || extra !== undefined || (what !== "import" && what !== "status")) {
    (values.help ? out : err)(`usage:\n${SETTINGS_USAGE}`);
    return values.help ? 0 : 2;
  }
  // The import's modules (every schema, the device map's unit table) only for this command:
  // `network apply` runs at every boot.
  const { importSettings, readStatus } = await import("./import.js");
  const statusFile = str("status") ?? STATUS_FILE;
  if (what === "status") {
    const s = readStatus({ statusFile });
    out(s === undefined ? "no settings were imported from a FAT drive yet" : s.text.trimEnd());
    return 0;
  }
  const from = str("from");
  const to = str("to");
  if (from === undefined || to === undefined) {
    err(`fieldgate settings import: --from DIR and --to DIR are needed\nusage:\n${SETTINGS_USAGE}`);
    return 2;
  }
  // The gateway's data folder holds both the status file and the versions the page keeps.
  const versionsDir = str("versions") ?? join(dirname(statusFile), "versions");
  const outcome = await importSettings({ from, configDir: to, sshDir: str("ssh") ?? "/data/etc/ssh", statusFile, versionsDir }, drivers());
  switch (outcome.result) {
    case "nothing":
      out(`fieldgate settings: nothing to import in ${from}`);
      return 0;
    case "refused":
      for (const i of outcome.issues) err(`fieldgate settings: refused: ${formatIssue(i)}`);
      err(`fieldgate settings: ${outcome.files.join(", ") || "the set"} not applied (${outcome.issues.length} issue(s)); nothing changed${outcome.unchanged ? " (the same set as before: the drive was not written)" : ""}`);
      return 3;
    case "applied":
      for (const n of outcome.notes) err(`fieldgate settings: ${n}`);
      {
        // admin-password.txt is removed from the drive, never moved: a set of it alone moves nothing.
        const moved = outcome.files.some((f) => f !== "admin-password.txt") ? `moved to ${outcome.movedTo} on the drive` : "admin-password.txt removed from the drive";
        out(`fieldgate settings: applied ${outcome.files.join(", ")}${outcome.resumed ? " (finishing an import that a restart interrupted)" : ""}; ${moved}`);
      }
      return 0;
  }
}

export async function networkCommand(argv: string[], out: Out = console.log, err: Out = console.error): Promise<number> {
  const parsed = parse(
    argv,
    {
      config: { type: "string", short: "c" },
      out: { type: "string" },
      system: { type: "boolean" },
      boot: { type: "boolean" },
      reload: { type: "boolean" },
      timeout: { type: "string" },
      reason: { type: "string" },
      root: { type: "string" },
    },
    NETWORK_USAGE,
    err,
  );
  if (parsed === undefined) return 2;
  const { values, positionals } = parsed;
  const [what, extra] = positionals;
  const str = (k: string): string | undefined => values[k] as string | undefined;
  if (values.help || what === undefined || extra !== undefined) {
    (values.help ? out : err)(`usage:\n${NETWORK_USAGE}`);
    return values.help ? 0 : 2;
  }
  const say = (s: string): void => out(`fieldgate network: ${s}`);
  const fail = (s: string): void => err(`fieldgate network: ${s}`);

  if (what === "apply") {
    const config = str("config");
    const dir = str("out");
    if (config === undefined || dir === undefined) {
      fail(`--config FILE and --out DIR are needed\nusage:\n${NETWORK_USAGE}`);
      return 2;
    }
    const boot = values.boot === true;
    const targets: NetworkTargets = boot || values.system ? { ...applianceTargets(), networkDir: dir } : folderTargets(dir);
    const r = validateFile(networkSchema, config);
    let settings = r.ok ? r.value : undefined;
    if (!r.ok) {
      for (const i of r.issues) fail(formatIssue(i));
      // At boot a box must come up reachable: the defaults (DHCP everywhere) rather than nothing.
      if (!boot) return 1;
      fail("every port gets DHCP and a link-local address until the file is fixed");
      settings = { ntp: [], ports: [] };
    }
    const applied = writeNetwork(renderNetwork(settings!, config), targets);
    for (const n of applied.notes) fail(n);
    if (values.reload) systemdReloader.reload(applied);
    if (boot) {
      const ended = trial().afterBoot();
      if (ended) fail(`the network change on trial since ${ended.started} (by ${ended.by}) was not confirmed before the restart: the settings of ${config} are back`);
    }
    say(`${config}: ${settings!.ports.length} port(s) of their own, rendered into ${dir}${applied.networkChanged ? "" : " (unchanged)"}`);
    return r.ok ? 0 : 1;
  }

  const root = str("root");
  const paths = networkPaths(root ?? "/");
  if (what === "status") {
    const s = trial(root).status();
    if (s.pending) say(`a change by ${s.pending.by} is on trial since ${s.pending.started}: reverted at ${s.pending.deadline} unless confirmed (fieldgate network confirm)`);
    else say("no change is on trial");
    if (s.last) say(`the last one was ${s.last.result} at ${s.last.at}: ${s.last.reason}`);
    return 0;
  }
  if (root === undefined && process.getuid?.() !== 0) {
    fail(`${what}: run it as root (it changes the running network), or with --root DIR to try it on a copy of the appliance's folders`);
    return 1;
  }
  const t = trial(root);
  const by = process.env.SUDO_USER ? `${process.env.SUDO_USER} (command line)` : "the command line";
  switch (what) {
    case "try": {
      const config = str("config");
      const seconds = str("timeout") === undefined ? DEFAULT_TRIAL_SECONDS : Number(str("timeout"));
      if (config === undefined) {
        fail(`try: --config FILE is needed\nusage:\n${NETWORK_USAGE}`);
        return 2;
      }
      if (!Number.isInteger(seconds) || seconds < 10 || seconds > 3600) {
        fail(`--timeout: expected a whole number of seconds from 10 to 3600, got "${str("timeout")}"`);
        return 2;
      }
      let text: string;
      try {
        text = readFileSync(config, "utf8");
      } catch (e) {
        fail(`${config}: ${(e as Error).message}`);
        return 1;
      }
      const r = t.start(text, config, seconds, by);
      if (!r.ok) {
        for (const i of r.issues) fail(formatIssue(i));
        return 1;
      }
      for (const n of r.notes) fail(n);
      say(`${config} applied; it is undone at ${r.pending.deadline} unless you run \`fieldgate network confirm\` (from the new address) before`);
      return 0;
    }
    case "serve": {
      const r = serveNetworkRequest(paths.requests, t);
      if (r === undefined) say("no request is waiting");
      else if (r.ok) say(`request ${r.id}: done${r.pending ? `; undone at ${r.pending.deadline} unless confirmed` : ""}`);
      else fail(`request ${r.id}: refused: ${r.message ?? r.issues?.map(formatIssue).join("; ")}`);
      return 0;
    }
    case "confirm":
    case "revert": {
      const r = what === "confirm" ? t.confirm(by) : t.revert(str("reason") ?? `reverted by ${by}`);
      if (!r.ok) {
        fail(r.message);
        return 1;
      }
      for (const n of r.notes) fail(n);
      say(what === "confirm" ? `the change of ${r.trial.started} is kept: it is ${paths.trial.config} now (the one before is network.yaml.previous)` : `the change of ${r.trial.started} is undone: the settings of ${paths.trial.config} are back`);
      return 0;
    }
    default:
      fail(`unknown command "${what}"\nusage:\n${NETWORK_USAGE}`);
      return 2;
  }
}

/** Not armed: under --root nothing reverts by itself; `fieldgate network revert --root DIR` is the timer's part. */
const NO_TIMER: RevertTimer = { arm: () => undefined, disarm: () => undefined };

/** The trial of the appliance, or under `root` with its files alone (networkPaths). */
function trial(root?: string): NetworkTrial {
  if (root === undefined) return new NetworkTrial({ paths: TRIAL_PATHS, targets: applianceTargets(), timer: systemdRevertTimer(), reloader: systemdReloader });
  const p = networkPaths(root);
  return new NetworkTrial({ paths: p.trial, targets: folderTargets(p.networkDir), timer: NO_TIMER, reloader: { reload: () => undefined } });
}
