// The settings a person left in the FAT drive's fieldgate/ folder, read and checked as one set:
// each file with the validator of its kind (src/config: the same messages with file:line:column
// as `fieldgate validate`), and the set as a whole (a devices.yaml that the gateway.yaml would
// not use is a mistake, not a file to copy). Nothing is written here; import.ts applies a set
// only when this found no issue at all.
//
// The files come from Windows and macOS editors: a UTF-8 byte order mark is dropped, CRLF line
// ends become LF, text that is not UTF-8 is refused where config-text.ts finds it, and the
// mistakes of file names are named in words (Notepad's ".txt" added to a name, .yml, *.pub).
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { deviceMapSchema, type MapDrivers } from "../config/device-map.js";
import type { ConfigIssue } from "../config/errors.js";
import { gatewaySchema, type GatewayConfig } from "../config/gateway-config.js";
import { readConfigText } from "../config/config-text.js";
import { validateFile, validateYaml } from "../config/load.js";
import { networkSchema } from "../config/network-config.js";
import type { Schema } from "../config/schema.js";
import { PASSWORD_FILE, readPasswordFile, withAdmin, type DrivePassword } from "./admin-password.js";
import { checkAuthorizedKeys } from "./authorized-keys.js";

/** The files the folder may hold, by the name they have there (any case). */
export const SETTINGS_FILES = ["gateway.yaml", "devices.yaml", "network.yaml", "authorized_keys", PASSWORD_FILE] as const;
export type SettingsName = (typeof SETTINGS_FILES)[number];

/** Larger than any device map a gateway serves (10,000 tags are about 1.5 MiB). */
const MAX_BYTES = 16 * 1024 * 1024;

export interface SetFile {
  readonly name: SettingsName;
  /** Its name in the folder, as the person wrote it (Devices.yaml). */
  readonly shown: string;
  /** The text to install: no byte order mark, LF line ends. */
  readonly text: string;
  /** Of the bytes in the folder: tells the same file from an edited one later. */
  readonly sha256: string;
  /** authorized_keys: the key lines; empty turns SSH off. */
  readonly keys?: readonly string[];
  /** A settings file's content as validated (what its version's summary compares). */
  readonly value?: unknown;
  /** admin-password.txt: the user and the password (its `text` and `sha256` are empty: nothing of it is kept). */
  readonly password?: DrivePassword;
  /** gateway.yaml: the gateway's own with the user of admin-password.txt, not a file of the drive. */
  readonly derived?: boolean;
}

export interface CheckedSet {
  readonly files: readonly SetFile[];
  readonly issues: readonly ConfigIssue[];
}

export interface SetTargets {
  /** Where gateway.yaml, devices.yaml and network.yaml go: /etc/fieldgate. */
  readonly configDir: string;
  /** The drivers a device map may name (the gateway's registry). */
  readonly drivers: MapDrivers;
}

/** Names that look like one of ours with an editor's or a person's slip, and what to do about it. */
function nearMiss(lower: string): string | undefined {
  for (const name of SETTINGS_FILES) {
    if (lower === `${name}.txt`) return `Notepad added ".txt" to the name: rename it to ${name} (in Explorer: View, File name extensions shows the whole name)`;
    if (name.endsWith(".yaml") && lower === name.replace(/\.yaml$/, ".yml")) return `rename it to ${name} (.yaml, not .yml)`;
  }
  if (lower === "authorized_keys.pub" || (lower.endsWith(".pub") && lower.startsWith("id_"))) {
    return "a public key goes into a file named authorized_keys (no extension), one key per line";
  }
  return undefined;
}

/**
 * Reads and checks the set in `from`; an empty `files` with no issue means there is nothing to
 * import. With admin-password.txt, the gateway.yaml of the set (or the gateway's own, added to
 * the set) has its user, and is checked with it.
 */
export async function readSet(from: string, targets: SetTargets): Promise<CheckedSet> {
  const issues: ConfigIssue[] = [];
  const files: SetFile[] = [];
  let names: string[];
  try {
    names = readdirSync(from);
  } catch {
    return { files, issues };
  }
  const byName = new Map<SettingsName, string>();
  for (const entry of names) {
    const lower = entry.toLowerCase();
    const ours = SETTINGS_FILES.find((n) => n === lower);
    if (ours !== undefined) {
      if (byName.has(ours)) issues.push(whole(entry, `${byName.get(ours)} and ${entry} are the same file for the gateway: keep one`));
      else byName.set(ours, entry);
      continue;
    }
    const miss = nearMiss(lower);
    if (miss !== undefined) issues.push(whole(entry, miss));
  }
  for (const name of SETTINGS_FILES) {
    const shown = byName.get(name);
    if (shown === undefined) continue;
    if (name === PASSWORD_FILE) {
      const pw = readPasswordFile(join(from, shown), shown);
      // Never its text, nor a digest of it: a fast hash of a password is a way to guess it.
      if ("file" in pw) issues.push(pw);
      files.push({ name, shown, text: "", sha256: "", ...("file" in pw ? {} : { password: pw }) });
      continue;
    }
    const read = readText(join(from, shown), shown);
    if ("file" in read) {
      issues.push(read);
      continue;
    }
    files.push({ name, shown, text: read.text, sha256: read.sha256 });
  }
  let gateway: GatewayConfig | null | undefined;
  const checked = files.map((f) =>
    checkFile(f, targets, issues, (g) => {
      gateway = g;
    }),
  );
  checkTogether(checked, gateway, targets, issues);
  const pw = checked.find((f) => f.password !== undefined);
  if (pw === undefined || gateway === null) return { files: checked, issues };
  return { files: await addAdmin(checked, pw.password!, gateway, targets, issues), issues };
}

/**
 * The set's files with the user of admin-password.txt in the set's gateway.yaml (`gateway`, as
 * validated), or in a copy of the gateway's own added to the set; issues of the file with the
 * user (users log in on signed endpoints only, ...) are the set's.
 */
async function addAdmin(files: SetFile[], pw: DrivePassword, gateway: GatewayConfig | undefined, targets: SetTargets, issues: ConfigIssue[]): Promise<SetFile[]> {
  const own = files.find((f) => f.name === "gateway.yaml");
  let base: SetFile & { readonly value?: GatewayConfig };
  if (own !== undefined) base = { ...own, value: gateway };
  else {
    const file = join(targets.configDir, "gateway.yaml");
    const read = readConfigText(file);
    if (!read.ok) {
      issues.push({ ...read.issue, message: `(the gateway's own, which ${pw.user} would be added to) ${read.issue.message}` });
      return files;
    }
    const r = validateYaml(gatewaySchema, read.text, file, resolve(targets.configDir));
    if (!r.ok) {
      for (const i of r.issues) issues.push({ ...i, message: `(the gateway's own, which ${pw.user} would be added to) ${i.message}` });
      return files;
    }
    base = { name: "gateway.yaml", shown: "gateway.yaml", text: read.text, sha256: "", value: r.value, derived: true };
  }
  const shown = base.derived ? "gateway.yaml (on the gateway)" : base.shown;
  const added = await withAdmin(base.text, pw, base.value?.users[pw.user]);
  if ("error" in added) {
    issues.push(whole(shown, `${pw.user} of ${PASSWORD_FILE} cannot be added to it: ${added.error}`));
    return files;
  }
  const r = validateYaml(gatewaySchema, added.text, shown, resolve(targets.configDir));
  if (!r.ok) {
    for (const i of r.issues) issues.push({ ...i, message: `(with the user ${pw.user} of ${PASSWORD_FILE}) ${i.message}` });
    return files;
  }
  const next: SetFile = { ...base, text: added.text, value: r.value };
  return own !== undefined ? files.map((f) => (f === own ? next : f)) : [next, ...files];
}

/** The schema of a settings file: the one validator's, as everywhere. */
export function settingsSchema(name: Exclude<SettingsName, "authorized_keys" | typeof PASSWORD_FILE>, drivers: MapDrivers): Schema {
  return name === "gateway.yaml" ? gatewaySchema : name === "devices.yaml" ? deviceMapSchema(drivers) : networkSchema;
}

function whole(file: string, message: string): ConfigIssue {
  return { file, line: 0, column: 0, path: "", message };
}

/**
 * The file's text as the config readers take it (src/config/config-text.ts: UTF-8 or an issue
 * at the first byte that is not), without a byte order mark and with LF line ends.
 */
function readText(file: string, shown: string): { text: string; sha256: string } | ConfigIssue {
  try {
    if (statSync(file).size > MAX_BYTES) return whole(shown, `larger than ${MAX_BYTES / 1048576} MiB: not a settings file`);
  } catch (err) {
    return whole(shown, `cannot be read: ${(err as Error).message}`);
  }
  const read = readConfigText(file);
  if (!read.ok) return { ...read.issue, file: shown };
  return { text: read.text.replace(/^\ufeff/, "").replace(/\r\n/g, "\n"), sha256: sha256Of(file) };
}

/** Of the file's bytes: tells the file imported from one edited since. */
export function sha256Of(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

function checkFile(f: SetFile, targets: SetTargets, issues: ConfigIssue[], gateway: (g: GatewayConfig | null) => void): SetFile {
  // Relative paths inside a file resolve where it will live, not on the drive.
  const dir = resolve(targets.configDir);
  switch (f.name) {
    case "gateway.yaml": {
      const r = validateYaml(gatewaySchema, f.text, f.shown, dir);
      issues.push(...r.issues);
      if (r.ok) checkDataDir(f, r.value, targets, issues);
      gateway(r.ok ? r.value : null);
      return r.ok ? { ...f, value: r.value } : f;
    }
    case "devices.yaml":
    case "network.yaml": {
      const r = validateYaml(settingsSchema(f.name, targets.drivers), f.text, f.shown, dir);
      issues.push(...r.issues);
      return r.ok ? { ...f, value: r.value } : f;
    }
    case "authorized_keys": {
      const r = checkAuthorizedKeys(f.text, f.shown);
      issues.push(...r.issues);
      return { ...f, keys: r.keys };
    }
    case PASSWORD_FILE:
      // Checked as it was read; it changes the gateway.yaml (addAdmin).
      return f;
  }
}

/**
 * A gateway.yaml from a checkout or another machine names its own data folder (../data): on this
 * gateway that would leave the history and certificates behind on the read-only root. The
 * running gateway.yaml's dataDir is the one a new file must keep.
 */
function checkDataDir(f: SetFile, next: GatewayConfig, targets: SetTargets, issues: ConfigIssue[]): void {
  const current = validateFile(gatewaySchema, join(targets.configDir, "gateway.yaml"));
  if (!current.ok || current.value.dataDir === next.dataDir) return;
  const m = /^dataDir:[ \t]*/m.exec(f.text);
  const line = m ? f.text.slice(0, m.index).split("\n").length : 0;
  issues.push({
    file: f.shown,
    line,
    column: m ? m[0].length + 1 : 0,
    path: "dataDir",
    message: `expected ${current.value.dataDir} (where this gateway keeps its history and certificates), got ${next.dataDir}${m ? "" : " (the default, as the file does not set it)"}: write dataDir: ${current.value.dataDir}`,
  });
}

/**
 * The device map the gateway will read must be the one in the set, when the set has one.
 * `gateway`: the set's gateway.yaml, validated (null: it has issues of its own; undefined: none).
 */
function checkTogether(files: readonly SetFile[], gateway: GatewayConfig | null | undefined, targets: SetTargets, issues: ConfigIssue[]): void {
  const gatewayFile = files.find((f) => f.name === "gateway.yaml");
  const devicesFile = files.find((f) => f.name === "devices.yaml");
  let devicesPath: string | undefined;
  let shownGateway = "gateway.yaml (on the gateway)";
  if (gatewayFile !== undefined) {
    if (!gateway) return;
    devicesPath = gateway.devices;
    shownGateway = gatewayFile.shown;
  } else {
    const r = validateFile(gatewaySchema, join(targets.configDir, "gateway.yaml"));
    if (!r.ok) return;
    devicesPath = r.value.devices;
  }
  const ours = resolve(targets.configDir, "devices.yaml");
  if (devicesFile !== undefined && devicesPath !== ours) {
    issues.push(whole(devicesFile.shown, `${shownGateway} ${devicesPath === undefined ? "names no device map (devices:)" : `names ${devicesPath} as the device map`}, so this devices.yaml would not be used: set devices: ./devices.yaml`));
  } else if (devicesFile === undefined && gatewayFile !== undefined && devicesPath !== undefined && devicesPath !== ours) {
    // The map the new gateway.yaml names is already on the gateway: it must be a good one.
    for (const i of validateFile(deviceMapSchema(targets.drivers), devicesPath).issues) issues.push({ ...i, message: `(the device map ${gatewayFile.shown} names) ${i.message}` });
  }
}
