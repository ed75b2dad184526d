// network.yaml from the status page, and what the page shows of the FIELDGATE drive's import.
//
// The gateway runs unprivileged; a network change is root's. So the page's change goes as a
// request that a root unit carries out (the appliance's network requests: "try" applies the
// text with a revert armed, "confirm" keeps it as network.yaml), and this waits for the answer.
// The requests, their answers, the trial's status and network.yaml's validator are the
// settings layer's (NetworkBackend: the composition root hands them over); what is decided here
// is what the page and the API say, and that a confirmed change becomes a version of
// network.yaml like any applied file. Whether the host's network is the gateway's to change at
// all is whether the appliance made the request folder; a gateway run from a checkout has none
// and offers no network settings.
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { formatIssue, type ConfigIssue } from "../config/errors.js";
import { validateNetworkYaml } from "../config/network-config.js";
import type { ConfigVersions } from "../settings/config-versions.js";
import { networkResponse, submitNetworkRequest } from "../settings/network-requests.js";
import { readTrialStatus } from "../settings/network-trial.js";
import type { ApplyResult } from "../web/config-api.js";
import type { SettingsImportView } from "../web/page-render.js";

/** What settings-files.ts asks of the network side. */
export interface NetworkSettings {
  /** network.yaml: /etc/fieldgate/network.yaml. */
  readonly file: string;
  /** Undefined when requests can be made; else why not. */
  unavailable(): string | undefined;
  check(text: string): readonly ConfigIssue[];
  /** Applies `text` on trial (reverted unless confirmed in time: `trialSeconds`, default NETWORK_TRIAL_SECONDS). */
  tryChange(text: string, user: string, options?: { readonly restoredFrom?: number; readonly trialSeconds?: number }): Promise<ApplyResult>;
  /** Keeps the change on trial; it becomes a version of `versions`. */
  confirm(user: string, versions: ConfigVersions): Promise<ApplyResult>;
  /** The change on trial, the last outcome and the file in use, as the page shows them. */
  status(): NetworkStatus;
}

/** A change on trial, as the appliance's trial status gives it. */
export interface PendingChange {
  readonly started: string;
  /** ISO 8601: when it is reverted unless confirmed. */
  readonly deadline: string;
  readonly timeoutSeconds: number;
  readonly by: string;
}

export interface NetworkStatus {
  readonly pending?: PendingChange;
  readonly last?: { readonly result: string; readonly at: string; readonly reason: string; readonly by: string };
  /** network.yaml in use, validated (for the form); undefined when it has issues (then `currentIssues`). */
  readonly current?: unknown;
  readonly currentIssues?: readonly string[];
}

/** The appliance's network requests (settings/network-requests.ts and network-trial.ts, root's side carrying them out). */
export interface NetworkBackend {
  /** Leaves a request for the root unit; refused while another waits. */
  submit(request: { readonly action: "try" | "confirm" | "revert"; readonly by: string; readonly text?: string; readonly timeoutSeconds?: number }): { ok: true; id: string } | { ok: false; message: string };
  /** The answer to request `id`, once there is one. */
  response(id: string): { readonly ok: boolean; readonly issues?: readonly ConfigIssue[]; readonly pending?: PendingChange; readonly message?: string } | undefined;
  /** The change on trial and the last outcome (the status file the root side keeps). */
  trialStatus(): { readonly pending?: PendingChange; readonly last?: NetworkStatus["last"] };
  /** network.yaml's one validator. */
  validate(text: string, file: string): { readonly ok: boolean; readonly issues: readonly ConfigIssue[]; readonly value?: unknown };
}

/** Where the gateway leaves its requests for the root unit, in its data folder (systemd/tmpfiles.conf makes it on the appliance). */
export const requestFolder = (dataDir: string): string => join(dataDir, "network-request");

/**
 * The appliance's back end: requests left in <dataDir>/network-request for root's
 * fieldgate-network-request.path, and the trial's status in <dataDir>/network-trial.json, which
 * root's side keeps (settings/network-trial.ts). The appliance's data folder is /var/lib/fieldgate,
 * where the root unit looks.
 */
export function requestFolderBackend(dataDir: string): NetworkBackend {
  const dir = requestFolder(dataDir);
  const statusFile = join(dataDir, "network-trial.json");
  return {
    submit: (request) => submitNetworkRequest(dir, request),
    response: (id) => networkResponse(dir, id),
    trialStatus: () => readTrialStatus(statusFile),
    validate: (text, file) => validateNetworkYaml(text, file),
  };
}

export interface NetworkRequestOptions {
  readonly file: string;
  readonly backend: NetworkBackend;
  /** The request folder: its absence means the network is not this gateway's to change. */
  readonly requestDir: string;
  /** How long a change stays on trial unless confirmed. */
  readonly trialSeconds?: number;
  /** Longest wait for the root unit's answer (it renders and reloads networkd). */
  readonly answerTimeout?: number;
  readonly pollInterval?: number;
  readonly log: { notice(m: string): void; warn(m: string): void };
}

export const NETWORK_TRIAL_SECONDS = 120;

/** network.yaml changed through the appliance's root unit, waiting for each answer. */
export class NetworkRequests implements NetworkSettings {
  readonly file: string;
  private readonly o: NetworkRequestOptions;

  constructor(o: NetworkRequestOptions) {
    this.o = o;
    this.file = o.file;
  }

  unavailable(): string | undefined {
    try {
      if (statSync(this.o.requestDir).isDirectory()) return undefined;
    } catch {
      // Not made: no root unit carries requests out here.
    }
    return `network settings are the appliance's: ${this.o.requestDir} does not exist, so no root unit would carry a change out`;
  }

  check(text: string): readonly ConfigIssue[] {
    return this.o.backend.validate(text, this.file).issues;
  }

  async tryChange(text: string, user: string, options: { readonly restoredFrom?: number; readonly trialSeconds?: number } = {}): Promise<ApplyResult> {
    const { restoredFrom } = options;
    const issues = this.check(text);
    if (issues.length > 0) {
      return { ok: false, status: 422, message: `refused: ${issues.length} issue(s); nothing was changed, the network settings in use stay`, issues };
    }
    const seconds = options.trialSeconds ?? this.o.trialSeconds ?? NETWORK_TRIAL_SECONDS;
    const answer = await this.ask({ action: "try", by: user, text, timeoutSeconds: seconds });
    if ("failed" in answer) return answer.failed;
    if (!answer.ok) {
      const list = answer.issues ?? [];
      return { ok: false, status: list.length > 0 ? 422 : 409, message: answer.message ?? list.map(formatIssue).join("; "), issues: list };
    }
    const pending = answer.pending ?? { started: new Date().toISOString(), deadline: new Date(Date.now() + seconds * 1000).toISOString(), timeoutSeconds: seconds, by: user };
    const restored = restoredFrom === undefined ? "" : ` (version ${restoredFrom} restored)`;
    this.o.log.notice(`status page: ${user} applied network settings on trial${restored} until ${pending.deadline}; reverted unless confirmed`);
    return {
      ok: true,
      message: `network settings applied on trial${restored} until ${pending.deadline.replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC")}: open the page at the new address and confirm there, or they are undone`,
      details: [],
      pending: { deadline: pending.deadline, timeoutSeconds: pending.timeoutSeconds },
    };
  }

  async confirm(user: string, versions: ConfigVersions): Promise<ApplyResult> {
    const trial = this.o.backend.trialStatus().pending;
    const answer = await this.ask({ action: "confirm", by: user });
    if ("failed" in answer) return answer.failed;
    if (!answer.ok) return { ok: false, status: 409, message: answer.message ?? "not confirmed", issues: [] };
    const summary = trial === undefined ? `confirmed by ${user}` : `tried by ${trial.by} at ${trial.started}, confirmed by ${user}`;
    // network.yaml.previous is the file the confirmation replaced: the version before, if none is kept yet.
    const version = await versions.recordChange(this.previous(), undefined, this.text(), { user, summary });
    this.o.log.notice(`status page: ${user} confirmed the network settings on trial (version ${version.id})`);
    return { ok: true, version, message: "network settings confirmed: they stay", details: [summary] };
  }

  status(): NetworkStatus {
    const s = this.o.backend.trialStatus();
    const checked = this.o.backend.validate(this.text(), this.file);
    return {
      ...(s.pending ? { pending: s.pending } : {}),
      ...(s.last ? { last: s.last } : {}),
      ...(checked.ok ? { current: checked.value } : { currentIssues: checked.issues.map(formatIssue) }),
    };
  }

  /** network.yaml as in use ("" without one: every port on DHCP). */
  private text(): string {
    return readOr(this.file);
  }

  /** The network.yaml a confirmation replaced (kept by root's side as network.yaml.previous). */
  private previous(): string {
    return readOr(`${this.file}.previous`);
  }

  /** Leaves a request and waits for its answer; `failed` when none came or it could not be left. */
  private async ask(request: Parameters<NetworkBackend["submit"]>[0]): Promise<NonNullable<ReturnType<NetworkBackend["response"]>> | { failed: ApplyResult }> {
    const left = this.o.backend.submit(request);
    if (!left.ok) return { failed: { ok: false, status: 409, message: left.message, issues: [] } };
    const end = Date.now() + (this.o.answerTimeout ?? 60_000);
    const every = this.o.pollInterval ?? 250;
    for (;;) {
      const answer = this.o.backend.response(left.id);
      if (answer !== undefined) return answer;
      if (Date.now() > end) {
        this.o.log.warn(`status page: no answer to the network ${request.action} request: is fieldgate-network-request.path running?`);
        return { failed: { ok: false, status: 503, message: `the network ${request.action} was not carried out: no answer from the gateway's network unit (fieldgate-network-request.path)`, issues: [] } };
      }
      await new Promise((r) => setTimeout(r, every));
    }
  }
}

function readOr(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/** The status file of the FIELDGATE drive's last import (settings-import.json), in the page's words; undefined without one. */
export function settingsImportView(statusFile: string): SettingsImportView | undefined {
  let s: { result?: unknown; at?: unknown; files?: unknown; issues?: unknown };
  try {
    s = JSON.parse(readFileSync(statusFile, "utf8")) as typeof s;
  } catch {
    return undefined;
  }
  if (typeof s !== "object" || s === null || typeof s.result !== "string" || typeof s.at !== "string") return undefined;
  const files = Array.isArray(s.files) ? s.files.filter((f): f is string => typeof f === "string") : [];
  const issues = Array.isArray(s.issues) ? (s.issues as ConfigIssue[]).filter((i) => typeof i === "object" && i !== null && typeof i.message === "string").map(formatIssue) : [];
  return { result: s.result, at: s.at.replace("T", " ").replace(/\.\d+Z$/, " UTC").replace(/Z$/, " UTC"), files, issues };
}
