// Puts rendered network settings (network-render.ts) into the running system. On the appliance
// every target is in RAM or the kernel, never on the read-only root:
//   port files         /run/systemd/network (networkd reads /run before /etc and /usr/lib)
//   NTP servers        /run/systemd/timesyncd.conf.d/fieldgate.conf
//   hostname           the kernel's (/proc/sys/kernel/hostname, what sethostname(2) sets); the
//                      image's /etc/hostname (fieldgate) is the name until this runs at boot
//   time zone          /etc/localtime on the root is a link to /run/fieldgate/localtime, made
//                      here as a link into /usr/share/zoneinfo; without it glibc and Node use UTC
// so the files are made again at every boot (fieldgate-settings.service, before networkd) from
// /etc/fieldgate/network.yaml, and a reboot always brings back the settings of that file.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fsyncDir, replaceFile } from "./atomic-file.js";
import { PORT_FILE_PREFIX, TIMESYNCD_DROP_IN, type RenderedNetwork } from "./network-render.js";

export interface NetworkTargets {
  readonly networkDir: string;
  readonly timesyncdDir: string;
  /** Where the time zone's link goes (/etc/localtime points at it); undefined: left alone. */
  readonly localtime?: string;
  /** The kernel's hostname file; undefined: left alone. */
  readonly hostnameFile?: string;
  /** The name the image gives the box (/etc/hostname), used when the file names none. */
  readonly defaultHostname?: string;
  readonly zoneinfo: string;
}

/** The appliance's targets. */
export function applianceTargets(): NetworkTargets {
  let defaultHostname = "fieldgate";
  try {
    defaultHostname = readFileSync("/etc/hostname", "utf8").trim() || defaultHostname;
  } catch {
    // The image always has one; a checkout's machine keeps the default.
  }
  return {
    networkDir: "/run/systemd/network",
    timesyncdDir: "/run/systemd/timesyncd.conf.d",
    localtime: "/run/fieldgate/localtime",
    hostnameFile: "/proc/sys/kernel/hostname",
    defaultHostname,
    zoneinfo: "/usr/share/zoneinfo",
  };
}

/** Targets for `fieldgate network apply --out DIR` without --system: files only, beside each other. */
export function folderTargets(networkDir: string): NetworkTargets {
  return { networkDir, timesyncdDir: join(dirname(networkDir), "timesyncd.conf.d"), zoneinfo: "/usr/share/zoneinfo" };
}

export interface AppliedNetwork {
  /** Port files written or removed. */
  readonly networkChanged: boolean;
  readonly timesyncdChanged: boolean;
  /** What could not be applied as written, in words (a time zone the box has no data for). */
  readonly notes: readonly string[];
}

/** Writes what changed; files of ours that the settings no longer name are removed. */
export function writeNetwork(rendered: RenderedNetwork, t: NetworkTargets): AppliedNetwork {
  const notes: string[] = [];
  mkdirSync(t.networkDir, { recursive: true, mode: 0o755 });
  let networkChanged = false;
  for (const [name, text] of rendered.networkFiles) {
    if (writeIfChanged(join(t.networkDir, name), text)) networkChanged = true;
  }
  for (const name of readdirSync(t.networkDir)) {
    if (name.startsWith(PORT_FILE_PREFIX) && name.endsWith(".network") && !rendered.networkFiles.has(name)) {
      unlinkSync(join(t.networkDir, name));
      networkChanged = true;
    }
  }
  if (networkChanged) fsyncDir(t.networkDir);

  const dropIn = join(t.timesyncdDir, TIMESYNCD_DROP_IN);
  let timesyncdChanged = false;
  if (rendered.timesyncd !== undefined) {
    mkdirSync(t.timesyncdDir, { recursive: true, mode: 0o755 });
    timesyncdChanged = writeIfChanged(dropIn, rendered.timesyncd);
  } else if (existsSync(dropIn)) {
    unlinkSync(dropIn);
    timesyncdChanged = true;
  }

  if (t.hostnameFile !== undefined) {
    const name = rendered.hostname ?? t.defaultHostname;
    if (name !== undefined && readOr(t.hostnameFile, "").trim() !== name) writeFileSync(t.hostnameFile, `${name}\n`);
  }
  if (t.localtime !== undefined) setTimeZone(t.localtime, rendered.timeZone, t.zoneinfo, notes);
  return { networkChanged, timesyncdChanged, notes };
}

function setTimeZone(link: string, zone: string | undefined, zoneinfo: string, notes: string[]): void {
  const current = readLinkOr(link);
  if (zone === undefined || zone === "UTC") {
    if (current !== undefined) unlinkSync(link);
    return;
  }
  const target = join(zoneinfo, zone);
  if (!existsSync(target)) {
    notes.push(`time zone ${zone}: this system has no ${target} (tzdata); the clock stays in UTC`);
    if (current !== undefined) unlinkSync(link);
    return;
  }
  if (current === target) return;
  mkdirSync(dirname(link), { recursive: true, mode: 0o755 });
  const tmp = `${link}.new`;
  if (readLinkOr(tmp) !== undefined) unlinkSync(tmp);
  symlinkSync(target, tmp);
  renameSync(tmp, link);
}

function writeIfChanged(file: string, text: string): boolean {
  if (readOr(file, undefined) === text) return false;
  replaceFile(file, text, { mode: 0o644 });
  return true;
}

function readOr<T>(file: string, fallback: T): string | T {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return fallback;
  }
}

function readLinkOr(link: string): string | undefined {
  try {
    return readlinkSync(link);
  } catch {
    return undefined;
  }
}

/** Tells the running services about changed files; at boot nothing runs yet and nothing is told. */
export interface NetworkReloader {
  reload(applied: AppliedNetwork): void;
}

/**
 * networkctl reload: networkd reads the .network files again and reconfigures the links whose
 * file changed, and only those (networkctl(1)), so a port the change does not touch keeps its
 * connections. timesyncd reads its drop-ins only at start.
 */
export const systemdReloader: NetworkReloader = {
  reload(applied) {
    if (applied.networkChanged) execFileSync("networkctl", ["reload"], { stdio: "inherit", timeout: 30_000 });
    if (applied.timesyncdChanged) execFileSync("systemctl", ["try-restart", "systemd-timesyncd.service"], { stdio: "inherit", timeout: 30_000 });
  },
};
