// network.yaml from the status page, and what the page shows of the FIELDGATE drive's import.
//
// The gateway runs unprivileged; a network change is root's. So the page's change goes as a
// request that a root unit carries out (settings/network-requests.ts: "try" applies it with a
// revert armed, "confirm" keeps it), and this waits for the answer. Whether the host's network is
// the gateway's to change at all is whether that request folder exists (the appliance makes it,
// systemd/tmpfiles.conf); a gateway run from a checkout has none and offers no network settings.
import { readFileSync } from "node:fs";
import { formatIssue, type ConfigIssue } from "../config/errors.js";
import type { ConfigVersions } from "../settings/config-versions.js";
import type { ApplyResult } from "../web/config-api.js";
import type { SettingsImportView } from "../web/page-render.js";

/** What settings-files.ts asks of the network side. */
export interface NetworkSettings {
  /** network.yaml: /etc/fieldgate/network.yaml. */
  readonly file: string;
  /** Undefined when requests can be made; else why not. */
  unavailable(): string | undefined;
  check(text: string): readonly ConfigIssue[];
  /** Applies `text` on trial (reverted unless confirmed in time). */
  tryChange(text: string, user: string, restoredFrom?: number): Promise<ApplyResult>;
  /** Keeps the change on trial; it becomes a version of `versions`. */
  confirm(user: string, versions: ConfigVersions): Promise<ApplyResult>;
  /** The change on trial and the last outcome, as the page shows them. */
  status(): unknown;
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
