// `fieldgate update ...`: the operator's command and the units' (README, "Updates").
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ConfigError, loadGatewayConfig } from "../config/load.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import { entriesDir, listEntries } from "./boot-entries.js";
import { UpdateRefused, bundleSize } from "./bundle-format.js";
import { check } from "./check.js";
import { confirm } from "./confirm.js";
import { download, fetchHead } from "./fetch.js";
import { installBundle, startNewVersion, type UpdateContext } from "./flow.js";
import { Layout } from "./layout.js";
import type { RebootPolicy } from "./reboot.js";
import { UpdateStore, describeLast } from "./state.js";
import { runningVersion } from "./version.js";

export const UPDATE_USAGE = `  fieldgate update BUNDLE|URL [--reboot now|window|manual] [--force] [--ca FILE]
                                            verify a signed bundle (a file, or an https URL) and
                                            install it into the inactive root slot, for one trial
                                            boot; --force installs an older or the same version
  fieldgate update status                   running version, root slot, slots, last result
  fieldgate update check                    install from the inbox and update.url (the units run it)
  fieldgate update confirm                  confirm a trial boot or record a fall-back (at boot)`;

/** What confirm falls back to when gateway.yaml cannot be read: a broken config fails the trial anyway. */
const FALLBACK = { host: "127.0.0.1", port: 4840, trialTimeout: 300_000 };

function configPath(given: string | undefined): string {
  if (given !== undefined) return given;
  return existsSync("/etc/fieldgate/gateway.yaml") ? "/etc/fieldgate/gateway.yaml" : "config/gateway.yaml";
}

export async function updateCommand(argv: string[], out: (s: string) => void = console.log, err: (s: string) => void = console.error): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        config: { type: "string", short: "c" },
        reboot: { type: "string" },
        force: { type: "boolean" },
        ca: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
    });
  } catch (e) {
    err(`${e instanceof Error ? e.message : String(e)}\nusage:\n${UPDATE_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [what, extra] = positionals;
  if (values.help || what === undefined || extra !== undefined) {
    (values.help ? out : err)(`usage:\n${UPDATE_USAGE}`);
    return values.help ? 0 : 2;
  }
  if (values.reboot !== undefined && !["now", "window", "manual"].includes(values.reboot)) {
    err(`--reboot: expected now, window or manual, got "${values.reboot}"`);
    return 2;
  }
  const layout = new Layout();
  const store = new UpdateStore(layout.stateDir);
  const log = (line: string): void => {
    out(`fieldgate update: ${line}`);
    store.log(line);
  };

  const file = configPath(values.config);
  let config: GatewayConfig | undefined;
  try {
    config = loadGatewayConfig(file);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    if (what !== "confirm" && what !== "status") {
      err(e.message);
      return 1;
    }
    err(`${e.message}\nfieldgate update: going on with the defaults`);
  }

  if (what === "status") return status(layout, store, out);
  if (layout.real && process.getuid?.() !== 0) {
    err("fieldgate update: run it as root: it writes the root and boot partitions");
    return 1;
  }
  if (what === "confirm") {
    const host = config && config.server.host !== "0.0.0.0" && config.server.host !== "::" ? config.server.host : FALLBACK.host;
    return confirm(layout, store, {
      log,
      health: { host, port: config?.server.port ?? FALLBACK.port, timeoutMs: config?.update.trialTimeout ?? FALLBACK.trialTimeout },
    });
  }
  const u = config!.update;
  const ctx: UpdateContext = { layout, store, reboot: (values.reboot as RebootPolicy | undefined) ?? u.reboot, window: u.window, log };
  try {
    if (what === "check") {
      await check(ctx, { url: u.url, fetch: { ca: u.ca }, checkInterval: u.checkInterval });
      return 0;
    }
    let bundle = what;
    const isUrl = /^https?:\/\//.test(what);
    if (isUrl) {
      const ca = values.ca ?? u.ca;
      const head = await fetchHead(what, { ca });
      const size = head.size ?? bundleSize(JSON.parse(head.head.manifestBytes.toString("utf8")), head.head.payloadStart);
      bundle = join(layout.stateDir, "download.fgu");
      log(`downloading ${what}`);
      await download(what, bundle, size, { ca }, log);
    } else if (!existsSync(bundle)) {
      err(`fieldgate update: ${bundle}: no such file`);
      return 1;
    }
    try {
      const outcome = await installBundle(ctx, bundle, isUrl ? what : "the command line", values.force === true);
      if (!outcome.ok) {
        err(`fieldgate update: refused: ${outcome.message}`);
        return 1;
      }
      startNewVersion(ctx, outcome.installed);
      return 0;
    } finally {
      if (isUrl) rmSync(bundle, { force: true });
    }
  } catch (e) {
    if (e instanceof UpdateRefused) {
      log(`refused: ${e.message}`);
      store.record("refused", e.message);
      err(`fieldgate update: refused: ${e.message}`);
      return 1;
    }
    err(`fieldgate update: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}

function status(layout: Layout, store: UpdateStore, out: (s: string) => void): number {
  const running = runningVersion(layout.osRelease);
  const slot = layout.bootedSlot();
  out(`running:     fieldgate ${running.version}${slot ? ` from slot ${slot}` : running.appliance ? "" : " (not the appliance image: updates do not apply)"}`);
  try {
    readdirSync(entriesDir(layout.esp));
    const entries = listEntries(layout.esp);
    for (const s of ["A", "B"] as const) {
      const e = entries.find((x) => x.slot === s);
      const state = e === undefined ? "empty (no boot entry)" : e.triesLeft === undefined ? "confirmed" : e.triesLeft > 0 ? "installed, its trial boot is next" : "on its trial boot (or its trial failed)";
      out(`slot ${s}:      ${e ? `${e.title}, entry ${e.file}, install ${e.generation}: ` : ""}${state}`);
    }
  } catch {
    out(`slots:       (${layout.esp}/loader/entries cannot be read${process.getuid?.() === 0 ? "" : ": the boot partition is root's"})`);
  }
  const state = store.read();
  out(`last update: ${describeLast(state)}`);
  if (state.pending) out(`pending:     ${state.pending.version} in slot ${state.pending.slot}, installed ${state.pending.installedAt} from ${state.pending.source}`);
  if (state.url) out(`update.url:  last checked ${state.url.lastCheck}${state.url.lastVersion ? `, last installed ${state.url.lastVersion}` : ""}`);
  return 0;
}
