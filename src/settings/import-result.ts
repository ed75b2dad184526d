// What the import tells people: IMPORT-RESULT.txt beside the files on the FAT drive (read in
// Notepad on the laptop that wrote them: CRLF line ends, plain words, every issue as
// file:line:column with the setting and what was expected), and the status file in the data
// folder that the status page reads (settings-import.json), in the same words.
import { formatIssue, type ConfigIssue } from "../config/errors.js";
import type { SettingsName } from "./import-set.js";

export const RESULT_FILE = "IMPORT-RESULT.txt";

export type ImportResult = "applied" | "refused";

/** The status file's content (settings-import.json): the last import that did something. */
export interface ImportStatus {
  readonly format: 1;
  readonly result: ImportResult;
  readonly at: string;
  /** The files of the set, by their names in the folder. */
  readonly files: readonly string[];
  readonly issues: readonly ConfigIssue[];
  /** Where an applied set went on the drive: applied/<id>. */
  readonly movedTo?: string;
  /** Of the set's files and the issues: a refused set found again unchanged at the next boot is not written again. */
  readonly fingerprint: string;
  /** IMPORT-RESULT.txt's text, LF line ends. */
  readonly text: string;
}

const WHAT: Readonly<Record<SettingsName, string>> = {
  "gateway.yaml": "the gateway's settings (OPC UA server, security, users, history)",
  "devices.yaml": "the device map",
  "network.yaml": "the network settings (addresses, hostname, time)",
  authorized_keys: "SSH keys",
  "admin-password.txt": "a user's password",
};

/** "2026-12-05 14:02 UTC": unambiguous in every plant. */
export function stamp(d: Date): string {
  return `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export function refusedText(at: Date, files: readonly string[], issues: readonly ConfigIssue[]): string {
  const lines = [
    `fieldgate: settings from this folder, ${stamp(at)}`,
    "",
    "NOT APPLIED. Nothing was changed: the gateway runs with its previous settings.",
    "",
    `What to fix (file:line:column, the setting, what was expected):`,
    "",
    ...issues.map((i) => `  ${formatIssue(i)}`),
    "",
    "In Notepad, Ctrl+G goes to a line; View > Status bar shows the line and column of the cursor.",
    ...(issues.some((i) => /UTF-8/.test(i.message)) ? ["To save a file as UTF-8 in Notepad: File > Save as, Encoding: UTF-8."] : []),
    "Fix the files in this folder, then put the card or stick back into the gateway and start it.",
    "Every file of the folder is applied together, or none: nothing changes until all are right.",
    "",
    `Files read: ${files.join(", ") || "none"}`,
  ];
  return `${lines.join("\n")}\n`;
}

/**
 * A file of an applied set: `user` of admin-password.txt, `kept` when the file was edited on the
 * drive after the import (it stays); `derived`: the gateway's own gateway.yaml, not listed.
 */
export interface AppliedFile {
  readonly name: SettingsName;
  readonly shown: string;
  readonly keys?: readonly string[];
  readonly user?: string;
  readonly kept?: boolean;
  readonly derived?: boolean;
}

export function appliedText(at: Date, all: readonly AppliedFile[], movedTo: string): string {
  const files = all.filter((f) => !f.derived);
  const width = Math.max(...files.map((f) => f.shown.length));
  const moved = files.some((f) => f.name !== "admin-password.txt");
  const lines = [
    `fieldgate: settings from this folder, ${stamp(at)}`,
    "",
    "APPLIED. The gateway uses these settings from now on:",
    "",
    ...files.map((f) => `  ${f.shown.padEnd(width)}  ${describe(f)}`),
    "",
    ...(moved
      ? [
          `The files were moved to ${movedTo.replace(/\//g, "\\")}\\ so that the next start does not apply`,
          "them again over changes made since (on the status page, or over SSH).",
        ]
      : []),
    "To change something again, put a new file into this folder.",
  ];
  return `${lines.join("\n")}\n`;
}

function describe(f: AppliedFile): string {
  if (f.name === "admin-password.txt") {
    const set = `the password of user ${f.user ?? "admin"} was set`;
    return f.kept ? `${set}; ${f.shown} was changed since, so it stays and is applied at the next start` : `${set}; ${f.shown} was removed from the drive`;
  }
  if (f.name !== "authorized_keys") return WHAT[f.name];
  const n = f.keys?.length ?? 0;
  return n === 0 ? "SSH keys: none, so SSH is off" : `SSH keys: ${n} key${n === 1 ? "" : "s"}; SSH is on (user root, key only)`;
}

/** Notepad before Windows 10 1809 shows a file with LF line ends as one long line. */
export const crlf = (text: string): string => text.replace(/\r?\n/g, "\r\n");
