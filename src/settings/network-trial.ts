// "Apply, then go back after 2 minutes unless confirmed" for network settings, the way routers
// and `netplan try` do it, so that a wrong address never locks a person out of the box.
//
// The confirmed settings stay in /etc/fieldgate/network.yaml (the data partition) until the
// change is confirmed; the change on trial lives in RAM only (runDir, /run/fieldgate/network-trial:
// the candidate and its deadline) and in the files rendered from it in /run. So:
//   - the revert is a systemd timer (RevertTimer; a transient unit made with systemd-run), not a
//     timer of the gateway's process: it fires whether the gateway restarts or not;
//   - a reboot before the confirmation brings the old settings back by itself, since the boot
//     renders network.yaml, and /run starts empty (afterBoot() records that this happened);
//   - confirm installs the candidate as network.yaml (the old one kept as network.yaml.previous)
//     by the same atomic replace as every settings file.
// Confirm and revert each first rename the trial's state file away: whichever comes first owns
// the trial, the other finds none (a confirm a second after the timer fired says so).
//
// Needs root (it writes /run/systemd and runs networkctl): `fieldgate network try|confirm|revert`
// call it, and the unprivileged gateway (the page's API) reaches it through a request that a
// root unit carries out (network-requests.ts).
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { execFileSync } from "node:child_process";
import type { ConfigIssue } from "../config/errors.js";
import { networkSchema, validateNetworkYaml, type NetworkConfig } from "../config/network-config.js";
import { validateFile } from "../config/load.js";
import { replaceFile, writeSynced } from "./atomic-file.js";
import { renderNetwork } from "./network-render.js";
import { writeNetwork, type NetworkReloader, type NetworkTargets } from "./network-apply.js";

export const DEFAULT_TRIAL_SECONDS = 120;

export interface TrialPaths {
  /** The confirmed settings: /etc/fieldgate/network.yaml. */
  readonly config: string;
  /** The change on trial, in RAM: /run/fieldgate/network-trial. */
  readonly runDir: string;
  /** What the page shows (last outcome, pending change), kept across reboots: /var/lib/fieldgate/network-trial.json. */
  readonly statusFile: string;
}

/** Reverts after a time unless disarmed; must outlive the process that arms it. */
export interface RevertTimer {
  arm(seconds: number): void;
  disarm(): void;
}

export interface PendingTrial {
  readonly started: string;
  readonly deadline: string;
  readonly timeoutSeconds: number;
  /** Who asked (a user name, "command line"). */
  readonly by: string;
}

export interface TrialStatus {
  readonly format: 1;
  readonly pending?: PendingTrial;
  readonly last?: { readonly result: "confirmed" | "reverted"; readonly at: string; readonly reason: string; readonly started: string; readonly by: string };
}

export type TryOutcome =
  | { readonly ok: true; readonly pending: PendingTrial; readonly notes: readonly string[] }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[]; readonly busy?: PendingTrial };

export type EndOutcome = { readonly ok: true; readonly trial: PendingTrial; readonly notes: readonly string[] } | { readonly ok: false; readonly message: string };

export interface TrialDeps {
  readonly paths: TrialPaths;
  readonly targets: NetworkTargets;
  readonly timer: RevertTimer;
  readonly reloader: NetworkReloader;
  readonly now?: () => number;
}

export class NetworkTrial {
  private readonly now: () => number;

  constructor(private readonly deps: TrialDeps) {
    this.now = deps.now ?? Date.now;
  }

  private get candidateFile(): string {
    return join(this.deps.paths.runDir, "network.yaml");
  }
  private get stateFile(): string {
    return join(this.deps.paths.runDir, "trial.json");
  }

  /** The change on trial, if any. */
  pending(): PendingTrial | undefined {
    return readJson<PendingTrial>(this.stateFile);
  }

  status(): TrialStatus {
    const s = readJson<TrialStatus>(this.deps.paths.statusFile) ?? { format: 1 };
    const pending = this.pending();
    // The persistent file's pending entry may be from a boot that ended; /run is the truth.
    const { pending: _stale, ...rest } = s;
    return { ...rest, format: 1, ...(pending ? { pending } : {}) };
  }

  /**
   * Checks `text` (network.yaml as the person wrote it), and when it is valid applies it for
   * `timeoutSeconds`: the revert is armed before anything changes.
   */
  start(text: string, shown: string, timeoutSeconds: number, by: string): TryOutcome {
    const checked = validateNetworkYaml(text, shown);
    if (!checked.ok) return { ok: false, issues: checked.issues };
    const busy = this.pending();
    if (busy !== undefined) {
      return {
        ok: false,
        busy,
        issues: [{ file: shown, line: 0, column: 0, path: "", message: `a network change by ${busy.by} is on trial until ${busy.deadline}: confirm or revert it first` }],
      };
    }
    const started = this.now();
    const trial: PendingTrial = {
      started: new Date(started).toISOString(),
      deadline: new Date(started + timeoutSeconds * 1000).toISOString(),
      timeoutSeconds,
      by,
    };
    mkdirSync(this.deps.paths.runDir, { recursive: true, mode: 0o700 });
    writeSynced(this.candidateFile, text, 0o600);
    // The state file last: a trial exists once it does.
    replaceFile(this.stateFile, JSON.stringify(trial), { mode: 0o600 });
    this.writeStatus((s) => ({ ...s, pending: trial }));
    this.deps.timer.arm(timeoutSeconds);
    try {
      const applied = writeNetwork(renderNetwork(checked.value, `a change on trial by ${by} (until ${trial.deadline})`), this.deps.targets);
      this.deps.reloader.reload(applied);
      return { ok: true, pending: trial, notes: applied.notes };
    } catch (err) {
      // Half applied is worse than not at all: the confirmed settings again, at once.
      this.revert(`applying the change failed: ${err instanceof Error ? err.message : String(err)}`);
      throw err;
    }
  }

  /** Makes the change on trial the confirmed network.yaml. */
  confirm(by: string): EndOutcome {
    const claimed = this.claim();
    if (claimed === undefined) return { ok: false, message: this.nothingPending() };
    const text = readFileSync(this.candidateFile, "utf8");
    const dir = dirname(this.deps.paths.config);
    const gid = existsSync(dir) ? statSync(dir).gid : undefined;
    replaceFile(this.deps.paths.config, text, { keepPrevious: true, mode: 0o640, uid: 0, ...(gid === undefined ? {} : { gid }) });
    this.deps.timer.disarm();
    rmSync(this.deps.paths.runDir, { recursive: true, force: true });
    this.writeStatus(() => ({ format: 1, last: { result: "confirmed", at: this.iso(), reason: `confirmed by ${by}`, started: claimed.started, by: claimed.by } }));
    return { ok: true, trial: claimed, notes: [] };
  }

  /** Puts the confirmed settings back (the timer's way, or a person's). */
  revert(reason: string): EndOutcome {
    const claimed = this.claim();
    if (claimed === undefined) return { ok: false, message: this.nothingPending() };
    const { config, notes } = this.confirmedSettings();
    const applied = writeNetwork(renderNetwork(config, this.deps.paths.config), this.deps.targets);
    this.deps.reloader.reload(applied);
    this.deps.timer.disarm();
    rmSync(this.deps.paths.runDir, { recursive: true, force: true });
    this.writeStatus(() => ({ format: 1, last: { result: "reverted", at: this.iso(), reason, started: claimed.started, by: claimed.by } }));
    return { ok: true, trial: claimed, notes: [...notes, ...applied.notes] };
  }

  /** At boot: a change that was on trial when the gateway went down was not confirmed, and is gone. */
  afterBoot(): PendingTrial | undefined {
    const s = readJson<TrialStatus>(this.deps.paths.statusFile);
    if (s?.pending === undefined || this.pending() !== undefined) return undefined;
    const p = s.pending;
    this.writeStatus(() => ({ format: 1, last: { result: "reverted", at: this.iso(), reason: "the gateway restarted before the change was confirmed", started: p.started, by: p.by } }));
    return p;
  }

  private claim(): PendingTrial | undefined {
    const claimed = `${this.stateFile}.claimed`;
    try {
      renameSync(this.stateFile, claimed);
    } catch {
      return undefined;
    }
    return readJson<PendingTrial>(claimed) ?? { started: this.iso(), deadline: this.iso(), timeoutSeconds: 0, by: "unknown" };
  }

  private nothingPending(): string {
    const last = this.status().last;
    return last ? `no network change is on trial (the last one was ${last.result} at ${last.at}: ${last.reason})` : "no network change is on trial";
  }

  /** network.yaml as confirmed; a file that is missing or broken (never written so) gives the defaults: DHCP everywhere. */
  private confirmedSettings(): { config: NetworkConfig; notes: string[] } {
    const r = validateFile(networkSchema, this.deps.paths.config);
    if (r.ok) return { config: r.value, notes: [] };
    return { config: { ntp: [], ports: [] }, notes: [`${this.deps.paths.config} cannot be used (${r.issues[0]?.message}); every port is back on DHCP`] };
  }

  private writeStatus(change: (s: TrialStatus) => TrialStatus): void {
    const current = readJson<TrialStatus>(this.deps.paths.statusFile) ?? { format: 1 };
    mkdirSync(dirname(this.deps.paths.statusFile), { recursive: true });
    replaceFile(this.deps.paths.statusFile, `${JSON.stringify(change(current), null, 1)}\n`, { mode: 0o644 });
  }

  private iso(): string {
    return new Date(this.now()).toISOString();
  }
}

/**
 * The status for a reader without root (the page): the persistent file alone, whose `pending`
 * is the change on trial (a boot clears a stale one before the gateway starts: afterBoot).
 */
export function readTrialStatus(statusFile: string): TrialStatus {
  return readJson<TrialStatus>(statusFile) ?? { format: 1 };
}

function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as T;
  } catch {
    return undefined;
  }
}

/** The unit the revert timer runs as; `systemctl list-timers` shows it while a change is on trial. */
export const REVERT_UNIT = "fieldgate-network-revert";

/**
 * A transient timer of systemd's (systemd-run --on-active): it belongs to PID 1, so it fires
 * whether the gateway runs or not, and disappears at a reboot, which reverts by itself.
 */
export function systemdRevertTimer(fieldgate = "/usr/bin/fieldgate"): RevertTimer {
  const quiet = { stdio: "ignore" as const, timeout: 30_000 };
  const disarm = (): void => {
    try {
      execFileSync("systemctl", ["stop", `${REVERT_UNIT}.timer`], quiet);
    } catch {
      // Not armed (it fired, or never was).
    }
    try {
      execFileSync("systemctl", ["reset-failed", `${REVERT_UNIT}.service`, `${REVERT_UNIT}.timer`], quiet);
    } catch {
      // Nothing to reset.
    }
  };
  return {
    arm(seconds) {
      disarm();
      execFileSync(
        "systemd-run",
        [
          `--unit=${REVERT_UNIT}`,
          `--on-active=${seconds}s`,
          "--timer-property=AccuracySec=1s",
          "--description=fieldgate: revert a network change that was not confirmed",
          fieldgate,
          "network",
          "revert",
          "--reason",
          `not confirmed within ${seconds} s`,
        ],
        { stdio: ["ignore", "ignore", "inherit"], timeout: 30_000 },
      );
    },
    disarm() {
      // The timer's own service calls disarm while it runs: stopping the timer does not stop it.
      try {
        execFileSync("systemctl", ["stop", `${REVERT_UNIT}.timer`], quiet);
      } catch {
        // Already gone.
      }
    },
  };
}
