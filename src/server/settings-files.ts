// The settings files as the status page and its API change them (web/config-api.ts's
// SettingsSource): devices.yaml, gateway.yaml and, on the appliance, network.yaml (network-settings.ts).
//
// An apply does what a SIGHUP does, with the text the person sent instead of the file: it is
// validated by the one validator (a device map on a worker, like a reload), and only a valid one
// is written; a map with mistakes is refused with its issues and nothing changes (the last good
// map keeps polling). The write replaces the file whole (settings/atomic-file.ts: temp file,
// fsync, rename; the old one kept as <file>.previous), so a power cut leaves the old file or the
// new one. Then the map is applied as a reload applies it (devices unchanged keep polling), or
// gateway.yaml's users are swapped and the sections that need a restart are named. Each applied
// text is kept as a version (settings/config-versions.ts, <dataDir>/versions/<kind>/) with who,
// when and what it changed; the first apply from the page keeps the file it replaces as the
// version before it, so that there is always one to go back to. Applies of one file run one
// after the other.
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import type { DeviceConfig, DeviceMap } from "../config/device-map.js";
import type { KepwareDrivers } from "../config/kepware.js";
import type { KepwareAdded } from "../config/kepware-map.js";
import type { ConfigIssue } from "../config/errors.js";
import { gatewaySchema, type GatewayConfig } from "../config/gateway-config.js";
import { validateYaml } from "../config/load.js";
import type { ValidationResult } from "../config/validate.js";
import type { DeviceReading } from "../devices/read-once.js";
import { describeApply, type ApplyReport } from "../devices/map-changes.js";
import type { DeviceSearch, SearchStart, SearchState } from "../devices/device-search.js";
import type { EntriesAdded } from "../config/entry-yaml.js";
import { replaceFileOffLoop } from "../settings/atomic-file.js";
import { ConfigVersions, type VersionInfo } from "../settings/config-versions.js";
import type { ApplyOptions, ApplyResult, SettingsKind, SettingsSource, SettingsText } from "../web/config-api.js";
import { HttpError } from "../web/http.js";
import type { SettingsImportView } from "../web/page-render.js";
import type { UserReloadReport } from "./config-reload.js";
import { settingsImportView, type NetworkSettings, type NetworkStatus } from "./network-settings.js";

export interface SettingsFilesOptions {
  /** gateway.yaml (undefined: a gateway started from a config object, whose file cannot be edited). */
  readonly configFile: string | undefined;
  /** The config the gateway runs with (its `devices` names the device map). */
  readonly running: () => GatewayConfig;
  readonly dataDir: string;
  readonly log: { info(m: string): void; notice(m: string): void; warn(m: string): void };
  /** Applies a validated map as a reload does. */
  readonly applyDeviceMap: (map: DeviceMap) => Promise<ApplyReport>;
  /** gateway.yaml's reload (server.reloadConfig). */
  readonly reloadConfig: (next: GatewayConfig) => { readonly restartNeeded: readonly string[]; readonly users?: UserReloadReport };
  readonly readOnce: (device: DeviceConfig, map: DeviceMap) => Promise<DeviceReading>;
  /**
   * Device map text validated as a reload validates (the gateway's drivers, on the validation
   * worker when it has one); `issuesOnly`: the map itself is not wanted.
   */
  readonly validateMapText: (text: string, file: string, issuesOnly: boolean) => Promise<ValidationResult<DeviceMap>>;
  /** The drivers' Kepware forms, for a CSV made into a device. */
  readonly kepware: KepwareDrivers;
  /** network.yaml on the appliance; undefined elsewhere. */
  readonly network?: NetworkSettings;
  /** The editor's search for devices on a line. */
  readonly search: DeviceSearch;
  /** Device entries added to map text (entry-yaml.ts), as the composition root runs it: on the validation worker. */
  readonly addEntries: (text: string, devices: readonly Readonly<Record<string, unknown>>[], sections: Readonly<Record<string, unknown>>) => Promise<EntriesAdded | { readonly error: string }>;
}

function mtimeOf(file: string): Date | undefined {
  try {
    return statSync(file).mtime;
  } catch {
    return undefined;
  }
}

export function etagOf(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 32);
}

/** The line of a top-level `key:` in YAML text (1-based), or 1. */
function lineOfKey(text: string, key: string): number {
  const at = text.search(new RegExp(`^${key}:`, "m"));
  return at < 0 ? 1 : text.slice(0, at).split("\n").length;
}

const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? "" : "s"}`;

export class SettingsFiles implements SettingsSource {
  private readonly o: SettingsFilesOptions;
  private readonly kept = new Map<SettingsKind, ConfigVersions>();
  private readonly chains = new Map<SettingsKind, Promise<unknown>>();

  constructor(o: SettingsFilesOptions) {
    this.o = o;
  }

  unavailable(kind: SettingsKind): string | undefined {
    switch (kind) {
      case "devices":
        return this.o.running().devices === undefined ? "no device map is configured (devices: in gateway.yaml)" : undefined;
      case "gateway":
        return this.o.configFile === undefined ? "the gateway was started without a gateway.yaml to edit" : undefined;
      case "network":
        return this.o.network === undefined ? "network settings are the appliance's: this gateway does not manage its host's network" : this.o.network.unavailable();
    }
  }

  private fileOf(kind: SettingsKind): string {
    const why = this.unavailable(kind);
    if (why !== undefined) throw new HttpError(409, why);
    if (kind === "devices") return this.o.running().devices!;
    if (kind === "gateway") return this.o.configFile!;
    return this.o.network!.file;
  }

  read(kind: SettingsKind): SettingsText {
    const file = this.fileOf(kind);
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      // network.yaml is optional: without one, every port is on DHCP.
      if (kind === "network" && (err as NodeJS.ErrnoException).code === "ENOENT") text = "";
      else throw new HttpError(500, `cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
    return { text, file, etag: etagOf(text) };
  }

  async check(kind: SettingsKind, text: string): Promise<readonly ConfigIssue[]> {
    const file = this.fileOf(kind);
    if (kind === "devices") return (await this.validateMap(text, file, true)).issues;
    if (kind === "gateway") return this.validateGateway(text, file).issues;
    return this.o.network!.check(text);
  }

  versions(kind: SettingsKind): readonly VersionInfo[] {
    this.fileOf(kind);
    return this.versionsOf(kind).list();
  }

  versionText(kind: SettingsKind, id: number): string | undefined {
    this.fileOf(kind);
    return Number.isInteger(id) ? this.versionsOf(kind).text(id) : undefined;
  }

  apply(kind: SettingsKind, text: string, user: string, options: ApplyOptions = {}): Promise<ApplyResult> {
    const run = (): Promise<ApplyResult> => this.applyNow(kind, text, user, options);
    const result = (this.chains.get(kind) ?? Promise.resolve()).then(run, run);
    this.chains.set(
      kind,
      result.catch(() => undefined),
    );
    return result;
  }

  networkConfirm(user: string): Promise<ApplyResult> {
    const network = this.o.network;
    if (network === undefined) throw new HttpError(409, this.unavailable("network")!);
    return network.confirm(user, this.versionsOf("network"));
  }

  networkStatus(): NetworkStatus {
    const network = this.o.network;
    if (network === undefined) throw new HttpError(409, this.unavailable("network")!);
    return network.status();
  }

  async testRead(text: string, device: string): Promise<{ readonly issues: readonly ConfigIssue[] } | { readonly reading: DeviceReading }> {
    const file = this.fileOf("devices");
    const checked = await this.validateMap(text, file, false);
    if (!checked.ok) return { issues: checked.issues };
    const config = checked.value.devices.find((d) => d.name === device);
    if (config === undefined) {
      const names = checked.value.devices.map((d) => d.name);
      throw new HttpError(404, `no device "${device}" in the map${names.length > 0 ? ` (it has ${names.slice(0, 20).join(", ")})` : ""}`);
    }
    return { reading: await this.o.readOnce(config, checked.value) };
  }

  /**
   * The Kepware import is loaded when it is used: it edits the map's text with the full yaml
   * library, which a gateway otherwise never loads once its config is read (bench/RESULTS.md).
   */
  async kepware(body: Readonly<Record<string, unknown>>): Promise<KepwareAdded | { readonly error: string }> {
    return (await import("../config/kepware-map.js")).addKepwareDevice(body, this.o.kepware);
  }

  kepwareDrivers(): readonly string[] {
    return this.o.kepware.names.filter((n) => this.o.kepware.kepwareOf(n) !== undefined);
  }

  searchDrivers(): readonly string[] {
    return this.o.search.drivers();
  }

  searchState(): SearchState {
    return this.o.search.state();
  }

  startSearch(body: Readonly<Record<string, unknown>>, user: string): SearchStart {
    this.fileOf("devices");
    return this.o.search.start(body, user);
  }

  stopSearch(user: string): SearchState {
    return this.o.search.stop(user);
  }

  /** Ends a search under way (the gateway stops). */
  close(): Promise<void> {
    return this.o.search.close();
  }

  addFound(text: string): Promise<EntriesAdded | { readonly error: string }> {
    const s = this.o.search.state();
    if (s.state === "running") return Promise.resolve({ error: "the search is still running: wait for it, or stop it" });
    if (s.found.length === 0) return Promise.resolve({ error: "the last search found no device to add" });
    return this.o.addEntries(text, s.found.map((f) => f.entry), s.sections);
  }

  settingsImport(): SettingsImportView | undefined {
    return settingsImportView(join(this.o.dataDir, "settings-import.json"));
  }

  private versionsOf(kind: SettingsKind): ConfigVersions {
    let v = this.kept.get(kind);
    if (v === undefined) this.kept.set(kind, (v = new ConfigVersions(join(this.o.dataDir, "versions", kind))));
    return v;
  }

  private async applyNow(kind: SettingsKind, text: string, user: string, options: ApplyOptions): Promise<ApplyResult> {
    const file = this.fileOf(kind);
    const current = this.read(kind);
    if (options.ifMatch !== undefined && options.ifMatch !== current.etag) {
      return { ok: false, status: 409, message: `${basename(file)} changed on the gateway since it was read: load it again and redo the change`, issues: [] };
    }
    if (kind === "network") return this.o.network!.tryChange(text, user, options);
    const restored = options.restoredFrom === undefined ? "" : ` (version ${options.restoredFrom} restored)`;
    if (kind === "devices") {
      const checked = await this.validateMap(text, file, false);
      if (!checked.ok) return this.refused(file, checked.issues, "the last good map stays in use");
      const before = await this.write(file, text);
      const report = await this.o.applyDeviceMap(checked.value);
      const { summary, devices } = describeApply(report);
      const version = await this.versionsOf(kind).recordChange(current.text, before, text, { user, summary, restoredFrom: options.restoredFrom });
      this.o.log.notice(`status page: ${user} applied ${basename(file)}${restored} as version ${version.id}: ${summary}`);
      return { ok: true, version, message: `device map applied${restored}: ${summary}`, details: devices };
    }
    const checked = this.validateGateway(text, file);
    if (!checked.ok) return this.refused(file, checked.issues, "the settings in use stay");
    let next = checked.value;
    // A port given on the command line (--port) is not in the file: keep it.
    const onDisk = validateYaml(gatewaySchema, current.text, file);
    const running = this.o.running();
    if (onDisk.ok && onDisk.value.server.port !== running.server.port && next.server.port === onDisk.value.server.port) {
      next = { ...next, server: { ...next.server, port: running.server.port } };
    }
    const before = await this.write(file, text);
    const r = this.o.reloadConfig(next);
    const details: string[] = [];
    const u = r.users;
    if (u !== undefined && u.added.length + u.removed.length + u.changed.length > 0) {
      details.push(
        `users: ${[u.added.length ? `added ${u.added.join(", ")}` : "", u.removed.length ? `removed ${u.removed.join(", ")}` : "", u.changed.length ? `changed ${u.changed.join(", ")}` : ""].filter((p) => p !== "").join("; ")}` +
          `; ${plural(u.sessionsClosed, "session")} closed`,
      );
    }
    if (r.restartNeeded.length > 0) details.push(`takes effect at the next restart: ${r.restartNeeded.join(", ")}`);
    const summary = details.length > 0 ? details.join("; ") : "nothing that the gateway uses changed";
    const version = await this.versionsOf(kind).recordChange(current.text, before, text, { user, summary, restoredFrom: options.restoredFrom });
    this.o.log.notice(`status page: ${user} applied ${basename(file)}${restored} as version ${version.id}: ${summary}`);
    return {
      ok: true,
      version,
      message: r.restartNeeded.length > 0 ? `gateway settings saved${restored}; a restart is needed for ${r.restartNeeded.join(", ")}` : `gateway settings applied${restored}`,
      details,
      restartNeeded: r.restartNeeded,
    };
  }

  /** Replaces `file` with `text` (the old one kept as .previous); the time of the file as it was, for its version. */
  private async write(file: string, text: string): Promise<Date | undefined> {
    const at = mtimeOf(file);
    await replaceFileOffLoop(file, text, { keepPrevious: true });
    return at;
  }

  private refused(file: string, issues: readonly ConfigIssue[], stays: string): ApplyResult {
    this.o.log.warn(`status page: ${basename(file)} refused, ${plural(issues.length, "issue")}; ${stays}`);
    return { ok: false, status: 422, message: `refused: ${plural(issues.length, "issue")}; nothing was changed, ${stays}`, issues };
  }

  private validateMap(text: string, file: string, issuesOnly: boolean): Promise<ValidationResult<DeviceMap>> {
    return this.o.validateMapText(text, file, issuesOnly);
  }

  /**
   * gateway.yaml validated; and, where admins log in to the page with passwords now, refused when
   * it would leave none: nobody could change a setting from the page any more.
   */
  private validateGateway(text: string, file: string): ValidationResult<GatewayConfig> {
    const r = validateYaml(gatewaySchema, text, file);
    if (!r.ok) return r;
    const admins = (c: GatewayConfig): number => Object.values(c.users).filter((u) => u.role === "admin" && u.password !== undefined).length;
    if (admins(this.o.running()) > 0 && admins(r.value) === 0) {
      return {
        ok: false,
        issues: [{ file, line: lineOfKey(text, "users"), column: 1, path: "users", message: "no user with role admin and a password would be left: nobody could change settings from the status page any more" }],
      };
    }
    return r;
  }
}
