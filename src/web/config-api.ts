// The settings files through HTTP, for the page's editor and for scripts (README: "The settings
// API"): devices.yaml, gateway.yaml and network.yaml read, checked, applied, their last versions
// listed and restored; a test read of one device of a map being edited; a Kepware CSV made into
// a device of it; the last import of the FIELDGATE drive. What it reads and asks of the gateway
// is SettingsSource, which the composition root (src/server) provides: the page writes no file
// and applies nothing itself.
//
//   GET  /api/config                          the files offered, and why one is not
//   GET  /api/config/<kind>                   the running file (text/yaml; ?download: as a file)
//   POST /api/config/<kind>/check             body: the text; 200 [issues]
//   POST /api/config/<kind>                   body: the text (If-Match: the ETag read); 200 {version, ...} or 422 {issues}
//                                             (network: ?timeout=S, seconds on trial before the revert, 10-3600; default 120)
//   GET  /api/config/<kind>/versions          the last applied versions, newest first
//   GET  /api/config/<kind>/versions/<id>     one version's text
//   POST /api/config/<kind>/versions/<id>/restore
//   POST /api/config/network/confirm          keep the network change on trial
//   GET  /api/config/network/status           the change on trial, the last outcome
//   POST /api/config/devices/test-read        {text, device}: the device's tags read once
//   GET  /api/config/devices/kepware          the drivers a Kepware CSV can be made a device of
//   POST /api/config/devices/kepware          {text, csv, device, driver?, host?, port?, station?}: the map with the device added
//   GET  /api/config/devices/search           the search for devices: the drivers that can, what it found
//   POST /api/config/devices/search           {driver?, bus: {port, baudRate?, parity?}, busName?} or {host, port},
//                                             seconds?, timeout? (ms per answer): starts it (202)
//   POST /api/config/devices/search/stop      ends it; what it found stays
//   POST /api/config/devices/search/add       {text}: the map with the devices found added (not applied)
//   GET  /api/settings-import                 the FIELDGATE drive's last import
//
// Reading is for every logged-in user, gateway.yaml's passwords hidden from all but admins; the
// rest is an admin's (web-server.ts checks who may act before a POST reaches here). Every change
// is logged with its user.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ConfigIssue } from "../config/errors.js";
import type { DeviceReading } from "../devices/read-once.js";
import type { KepwareAdded } from "../config/kepware-map.js";
import type { EntriesAdded } from "../config/entry-yaml.js";
import type { SearchStart, SearchState } from "../devices/device-search.js";
import type { VersionInfo } from "../settings/config-versions.js";
import type { Logger } from "../log.js";
import { HttpError, json, readBody, readJson, send } from "./http.js";
import type { SettingsImportView } from "./page-render.js";
import type { Principal } from "./auth.js";
import { dataValueText, quality } from "./status-view.js";
import { statusCodeName, StatusCodes } from "../ua/generated/status-codes.js";

export const SETTINGS_KINDS = ["devices", "gateway", "network"] as const;
export type SettingsKind = (typeof SETTINGS_KINDS)[number];

/**
 * Most bytes of a settings file sent to the API: room for a device map of 10,000 tags written
 * out in the shipped map's style, with units and descriptions (bench/RESULTS.md: its size).
 */
export const MAX_SETTINGS_BODY = 8 * 1024 * 1024;
/** A Kepware CSV (its rows and the map it goes into travel together). */
export const MAX_KEPWARE_BODY = 2 * MAX_SETTINGS_BODY;
/** A search's request (a few settings). */
const MAX_BODY = 4096;

export interface SettingsText {
  readonly text: string;
  /** The file's path on the gateway. */
  readonly file: string;
  /** A hash of the text: an apply with If-Match is refused (409) when the file changed since. */
  readonly etag: string;
}

export type ApplyResult =
  | {
      readonly ok: true;
      /** The version recorded (absent for a network change on trial: recorded when confirmed). */
      readonly version?: VersionInfo;
      readonly message: string;
      /** What changed, a line each. */
      readonly details: readonly string[];
      /** Sections of gateway.yaml that take effect at the next restart. */
      readonly restartNeeded?: readonly string[];
      /** A network change on trial until `deadline` (ISO 8601), reverted unless confirmed. */
      readonly pending?: { readonly deadline: string; readonly timeoutSeconds: number };
    }
  | { readonly ok: false; readonly status: 409 | 422 | 503; readonly message: string; readonly issues: readonly ConfigIssue[] };

export interface ApplyOptions {
  /** The ETag the text was read with: refused when the file changed since. */
  readonly ifMatch?: string;
  /** The version the text is (a restore). */
  readonly restoredFrom?: number;
  /** network.yaml: seconds on trial before it is reverted unless confirmed. */
  readonly trialSeconds?: number;
}

/** Seconds a network change may stay on trial: as `fieldgate network try --timeout` takes them. */
export const TRIAL_SECONDS_RANGE = [10, 3600] as const;

/** What the settings API reads and asks of the gateway. */
export interface SettingsSource {
  /** Undefined when `kind` can be read and changed here; else why not (in words). */
  unavailable(kind: SettingsKind): string | undefined;
  read(kind: SettingsKind): SettingsText;
  check(kind: SettingsKind, text: string): Promise<readonly ConfigIssue[]>;
  apply(kind: SettingsKind, text: string, user: string, options?: ApplyOptions): Promise<ApplyResult>;
  versions(kind: SettingsKind): readonly VersionInfo[];
  versionText(kind: SettingsKind, id: number): string | undefined;
  networkConfirm(user: string): Promise<ApplyResult>;
  networkStatus(): { readonly pending?: { readonly deadline: string; readonly by: string } };
  /** The device `device` of the map `text` (not applied) read once; its issues when the map is not valid. */
  testRead(text: string, device: string): Promise<{ readonly issues: readonly ConfigIssue[] } | { readonly reading: DeviceReading }>;
  /** The map `body.text` with the Kepware CSV `body.csv` made into device `body.device` (not applied); or what is wrong. */
  kepware(body: Readonly<Record<string, unknown>>): Promise<KepwareAdded | { readonly error: string }>;
  /** The drivers whose devices a Kepware CSV can become, the default first. */
  kepwareDrivers(): readonly string[];
  /** The FIELDGATE drive's last import, when there was one. */
  settingsImport(): SettingsImportView | undefined;
  /** The search for devices on a line (devices/device-search.ts): the drivers that can search. */
  searchDrivers(): readonly string[];
  searchState(): SearchState;
  startSearch(body: Readonly<Record<string, unknown>>, user: string): SearchStart;
  stopSearch(user: string): SearchState;
  /** The map `text` with what the last search found added (not applied); or why not. */
  addFound(text: string): Promise<EntriesAdded | { readonly error: string }>;
}

/** A test read as the page shows it: each tag's value in words, its status and the driver's error. */
function readingView(r: DeviceReading): unknown {
  return {
    device: r.device,
    requests: r.requests,
    roundTrip: r.roundTrip,
    ...(r.error === undefined ? {} : { error: r.error }),
    tags: r.tags.map((t) => {
      const status = t.value.statusCode ?? StatusCodes.Good;
      return { name: t.name, value: dataValueText(t.value), status: statusCodeName(status), quality: quality(status), ...(t.error === undefined ? {} : { error: t.error }) };
    }),
  };
}

/**
 * gateway.yaml as a viewer sees it: every `password:` value (the users' scrypt hashes, which a
 * viewer could try offline; the MQTT broker's password itself) replaced, the rest as it is.
 */
export function hideSecrets(text: string): string {
  return text.replace(/(\bpassword\s*:\s*)("(?:[^"\\\n]|\\.)*"|'(?:[^'\n]|'')*'|[^\s,}#][^,}#\n]*?)(?=\s*(?:[,}#\n]|$))/g, '$1"(hidden: admins only)"');
}

function kindOf(s: string | undefined): SettingsKind {
  if (s !== undefined && (SETTINGS_KINDS as readonly string[]).includes(s)) return s as SettingsKind;
  throw new HttpError(404, `no settings file "${s ?? ""}": expected one of ${SETTINGS_KINDS.join(", ")}`);
}

/** ?timeout=S of a network change, checked; undefined: the default. */
function trialTimeout(kind: SettingsKind, query: URLSearchParams): number | undefined {
  const given = query.get("timeout");
  if (given === null) return undefined;
  const [min, max] = TRIAL_SECONDS_RANGE;
  const n = Number(given);
  if (kind !== "network") throw new HttpError(400, "timeout: only a network change is on trial");
  if (!/^\d+$/.test(given) || n < min || n > max) throw new HttpError(400, `timeout: expected whole seconds from ${min} to ${max}, got "${given.slice(0, 20)}"`);
  return n;
}

function refused(res: ServerResponse, r: ApplyResult & { ok: false }): void {
  json(res, r.status, { error: r.message, issues: r.issues });
}

/** The settings routes: true when `path` was one of them (answered or thrown). */
export async function settingsRoute(
  req: IncomingMessage,
  res: ServerResponse,
  o: { readonly path: string; readonly method: string; readonly query: URLSearchParams; readonly who: Principal; readonly source: SettingsSource; readonly log: Logger; readonly onUsersChanged: () => void },
): Promise<boolean> {
  const { path, method, source, who } = o;
  if (path === "/api/settings-import" && method === "GET") {
    json(res, 200, source.settingsImport() ?? null);
    return true;
  }
  if (!path.startsWith("/api/config")) return false;
  const parts = path.split("/").slice(3);
  if (parts.length === 0 || (parts.length === 1 && parts[0] === "")) {
    if (method !== "GET") throw new HttpError(405, "method not allowed");
    json(res, 200, SETTINGS_KINDS.map((k) => ({ kind: k, unavailable: source.unavailable(k) ?? null })));
    return true;
  }
  const kind = kindOf(parts[0]);
  const why = source.unavailable(kind);
  if (why !== undefined) throw new HttpError(409, why);
  const rest = parts.slice(1);
  const route = `${method} ${rest.map((p) => (/^\d+$/.test(p) ? "<id>" : p)).join("/")}`;
  const id = rest.length >= 2 ? Number(rest[1]) : NaN;
  const kept = (): string => {
    const text = source.versionText(kind, id);
    if (text === undefined) throw new HttpError(404, `no version ${rest[1]} of ${kind} is kept`);
    return text;
  };
  /** An apply's answer: 200, or its refusal's status with the issues. */
  const answer = (r: ApplyResult): void => {
    if (!r.ok) return refused(res, r);
    if (kind === "gateway") o.onUsersChanged();
    json(res, 200, r);
  };
  switch (route) {
    case "GET ": {
      const f = source.read(kind);
      const text = kind === "gateway" && who.role !== "admin" ? hideSecrets(f.text) : f.text;
      const base = f.file.slice(f.file.lastIndexOf("/") + 1);
      const headers: Record<string, string> = { etag: `"${f.etag}"` };
      if (o.query.has("download")) headers["content-disposition"] = `attachment; filename="${base.replace(/[^A-Za-z0-9._-]/g, "_")}"`;
      send(res, 200, "text/yaml; charset=utf-8", text, headers);
      return true;
    }
    case "POST check": {
      json(res, 200, await source.check(kind, await readBody(req, MAX_SETTINGS_BODY)));
      return true;
    }
    case "POST ": {
      const ifMatch = req.headers["if-match"];
      const trialSeconds = trialTimeout(kind, o.query);
      const text = await readBody(req, MAX_SETTINGS_BODY);
      o.log.info(`status page: ${who.user} applies ${kind} settings (${Buffer.byteLength(text)} bytes)`);
      answer(await source.apply(kind, text, who.user, { ifMatch: typeof ifMatch === "string" ? ifMatch.replace(/^W\//, "").replace(/"/g, "") : undefined, trialSeconds }));
      return true;
    }
    case "GET versions":
      json(res, 200, source.versions(kind));
      return true;
    case "GET versions/<id>":
      send(res, 200, "text/yaml; charset=utf-8", kind === "gateway" && who.role !== "admin" ? hideSecrets(kept()) : kept());
      return true;
    case "POST versions/<id>/restore": {
      const text = kept();
      o.log.info(`status page: ${who.user} restores version ${id} of the ${kind} settings`);
      answer(await source.apply(kind, text, who.user, { restoredFrom: id }));
      return true;
    }
  }
  if (kind === "network" && route === "POST confirm") {
    answer(await source.networkConfirm(who.user));
    return true;
  }
  if (kind === "network" && route === "GET status") {
    json(res, 200, source.networkStatus());
    return true;
  }
  if (kind === "devices" && route === "POST test-read") {
    const body = await readJson(req, MAX_SETTINGS_BODY, '{"text": "<the map>", "device": "<name>"}');
    if (typeof body.text !== "string" || typeof body.device !== "string") throw new HttpError(400, 'expected JSON {"text": "<the map>", "device": "<name>"}');
    o.log.info(`status page: ${who.user} test-reads device ${body.device.slice(0, 64)}`);
    const r = await source.testRead(body.text, body.device);
    if ("issues" in r) {
      json(res, 422, { error: "the map has mistakes: fix them first", issues: r.issues });
      return true;
    }
    json(res, 200, readingView(r.reading));
    return true;
  }
  if (kind === "devices" && route === "GET search") {
    json(res, 200, { drivers: source.searchDrivers(), ...source.searchState() });
    return true;
  }
  if (kind === "devices" && route === "POST search") {
    const started = source.startSearch(await readJson(req, MAX_BODY, '{"driver": "...", "bus": {"port": "/dev/ttyUSB0"}} or {"host": "...", "port": N}'), who.user);
    if (!started.ok) throw new HttpError(started.status, started.message);
    json(res, 202, started.state);
    return true;
  }
  if (kind === "devices" && route === "POST search/stop") {
    json(res, 200, source.stopSearch(who.user));
    return true;
  }
  if (kind === "devices" && route === "POST search/add") {
    const body = await readJson(req, MAX_SETTINGS_BODY, '{"text": "<the map>"}');
    if (typeof body.text !== "string") throw new HttpError(400, 'expected JSON {"text": "<the map>"}');
    const r = await source.addFound(body.text);
    if ("error" in r) throw new HttpError(409, r.error);
    o.log.info(`status page: ${who.user} adds ${r.added.length} device(s) found by the search to the map being edited (not applied yet)`);
    json(res, 200, r);
    return true;
  }
  if (kind === "devices" && route === "GET kepware") {
    json(res, 200, { drivers: source.kepwareDrivers() });
    return true;
  }
  if (kind === "devices" && route === "POST kepware") {
    const body = await readJson(req, MAX_KEPWARE_BODY, '{"text", "csv", "device", ...}');
    const r = await source.kepware(body);
    if ("error" in r) throw new HttpError(400, r.error);
    o.log.info(`status page: ${who.user} imports ${r.converted} of ${r.rows} Kepware rows as device ${String(body.device).slice(0, 64)} (not applied yet)`);
    json(res, 200, r);
    return true;
  }
  throw new HttpError(404, "not found");
}
