// The service manager's side of the appliance (systemd/fieldgate.service is Type=notify with
// WatchdogSec=): READY=1 once the server listens, WATCHDOG=1 from the event loop at half the
// watchdog interval, RELOADING=1/READY=1 around a SIGHUP reload, STOPPING=1 on the way out.
//
// Node has no AF_UNIX datagram sockets, and sd_notify(3) is one datagram to $NOTIFY_SOCKET. The
// choices were a native addon (one more thing to cross-compile for arm64 in image/build.sh, and
// the small ones on npm are unmaintained) or systemd's own `systemd-notify` binary, spawned per
// message with NotifyAccess=all in the unit. A ping every WatchdogSec/2 (10 s with the shipped
// unit) costs one short-lived child; `systemd-notify` waits for the manager to take the message
// (its BARRIER=1), so the child's exit does not race the manager's check of its cgroup.
//
// The watchdog ping is a task of a DeadlineScheduler (STYLE habit 5): when the event loop hangs,
// no ping is sent and systemd restarts the service. At most one ping child runs at a time; a ping
// due while the previous one still runs is skipped and counted, never queued.
// The other messages are state changes whose order matters (RELOADING=1 before READY=1, or the
// manager would wait for a reload that has already ended): they go one child at a time, in order.
import { spawn } from "node:child_process";
import type { ChildProcess, SpawnOptions } from "node:child_process";
import { DeadlineScheduler } from "../sampling/scheduler.js";
import type { ScheduledGroup, SampleTask } from "../sampling/scheduler.js";

/** The subset of child_process.spawn the notifier uses; tests substitute it. */
export type SpawnFunction = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

export interface SystemdNotifierOptions {
  /** Where NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID are read (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** The process's scheduler, when it has one; otherwise the notifier makes its own. */
  scheduler?: DeadlineScheduler;
  /** Default "systemd-notify" (found on PATH). */
  command?: string;
  spawn?: SpawnFunction;
  /** Default process.pid; compared with WATCHDOG_PID as sd_watchdog_enabled(3) does. */
  pid?: number;
  /** Where failures to notify are reported once (default console.error). */
  log?: (message: string) => void;
}

export interface SystemdNotifierStats {
  /** Messages handed to systemd-notify (watchdog pings included). */
  sent: number;
  /** Children that failed to start or exited non-zero. */
  failed: number;
  /** Watchdog pings not sent because the previous one was still running. */
  skippedPings: number;
}

const WATCHDOG_ARGS: readonly string[] = Object.freeze(["WATCHDOG=1"]);
const STOPPING_ARGS: readonly string[] = Object.freeze(["STOPPING=1"]);
const RELOADING_ARGS: readonly string[] = Object.freeze(["RELOADING=1"]);
const MAX_QUEUED = 16;

export class SystemdNotifier implements SampleTask {
  /** Milliseconds between watchdog pings, or undefined when the unit has no watchdog for us. */
  readonly watchdogIntervalMs: number | undefined;
  readonly stats: SystemdNotifierStats = { sent: 0, failed: 0, skippedPings: 0 };

  private readonly env: NodeJS.ProcessEnv;
  private readonly command: string;
  private readonly spawnFn: SpawnFunction;
  private readonly scheduler: DeadlineScheduler;
  private readonly log: (message: string) => void;
  private readonly spawnOptions: SpawnOptions;
  private group: ScheduledGroup | undefined;
  /** The ping child running, if any; at most one. */
  private ping: ChildProcess | undefined;
  /** The state-message child running, if any; at most one. */
  private current: ChildProcess | undefined;
  /** State messages waiting for the one in flight; rare (start, reload, stop), bounded anyway. */
  private readonly queue: (readonly string[])[] = [];
  private disabled = false;
  private warned = false;
  // Bound once: no closure per message. A child may emit both 'error' and 'exit'; the first one
  // ends it, the other listener is removed.
  private readonly onPingExit = (code: number | null): void => {
    this.endPing();
    if (code !== 0) this.failure(`systemd-notify WATCHDOG=1 exited with ${code}`);
  };
  private readonly onPingError = (err: Error): void => {
    this.endPing();
    this.startFailure(err);
  };
  private readonly onOtherExit = (code: number | null): void => {
    this.endCurrent();
    if (code !== 0) this.failure(`systemd-notify exited with ${code}`);
    this.next();
  };
  private readonly onOtherError = (err: Error): void => {
    this.endCurrent();
    this.startFailure(err);
    this.next();
  };

  /** The notifier for this process, or undefined when not started by systemd (NOTIFY_SOCKET unset). */
  static fromEnv(options: SystemdNotifierOptions = {}): SystemdNotifier | undefined {
    const env = options.env ?? process.env;
    const socket = env.NOTIFY_SOCKET;
    if (socket === undefined || socket === "") return undefined;
    return new SystemdNotifier(options);
  }

  private constructor(options: SystemdNotifierOptions) {
    this.env = options.env ?? process.env;
    this.command = options.command ?? "systemd-notify";
    this.spawnFn = options.spawn ?? (spawn as SpawnFunction);
    this.scheduler = options.scheduler ?? new DeadlineScheduler();
    this.log = options.log ?? ((m) => console.error(m));
    this.spawnOptions = { env: this.env, stdio: "ignore" };
    this.watchdogIntervalMs = watchdogInterval(this.env, options.pid ?? process.pid);
  }

  /** READY=1 (and STATUS= when given); starts the watchdog pings. */
  ready(status?: string): void {
    this.send(status === undefined ? ["READY=1"] : ["READY=1", `STATUS=${status}`]);
    if (this.watchdogIntervalMs !== undefined && this.group === undefined) {
      // First ping one interval from now: READY=1 itself resets the manager's watchdog timer.
      this.group = this.scheduler.every(this.watchdogIntervalMs, this, this.scheduler.now + this.watchdogIntervalMs);
    }
  }

  /** RELOADING=1 before a reload; call ready() when it is done. */
  reloading(): void {
    this.send(RELOADING_ARGS);
  }

  /** STATUS= line that `systemctl status` shows. */
  status(text: string): void {
    this.send([`STATUS=${text}`]);
  }

  /** STOPPING=1; stops the watchdog pings. */
  stopping(): void {
    this.stopWatchdog();
    this.send(STOPPING_ARGS);
  }

  /** Stops the pings without telling the manager anything (tests, or a process giving up). */
  stopWatchdog(): void {
    if (this.group !== undefined) {
      this.scheduler.cancel(this.group);
      this.group = undefined;
    }
  }

  /** The scheduler task: one WATCHDOG=1 per slot. */
  sample(): void {
    if (this.disabled) return;
    if (this.ping !== undefined) {
      this.stats.skippedPings++;
      return;
    }
    const child = this.start(WATCHDOG_ARGS);
    if (child === undefined) return;
    this.ping = child;
    child.once("exit", this.onPingExit);
    child.once("error", this.onPingError);
  }

  private send(args: readonly string[]): void {
    if (this.disabled) return;
    if (this.queue.length >= MAX_QUEUED) {
      this.failure(`more than ${MAX_QUEUED} notifications waiting; dropped ${args.join(" ")}`);
      return;
    }
    this.queue.push(args);
    this.next();
  }

  private next(): void {
    while (this.current === undefined && !this.disabled && this.queue.length > 0) {
      const child = this.start(this.queue.shift() as readonly string[]);
      if (child === undefined) continue;
      this.current = child;
      child.once("exit", this.onOtherExit);
      child.once("error", this.onOtherError);
    }
  }

  private endPing(): void {
    this.ping?.removeListener("exit", this.onPingExit).removeListener("error", this.onPingError);
    this.ping = undefined;
  }

  private endCurrent(): void {
    this.current?.removeListener("exit", this.onOtherExit).removeListener("error", this.onOtherError);
    this.current = undefined;
  }

  private start(args: readonly string[]): ChildProcess | undefined {
    this.stats.sent++;
    try {
      return this.spawnFn(this.command, args, this.spawnOptions);
    } catch (err) {
      this.startFailure(err);
      return undefined;
    }
  }

  private startFailure(err: unknown): void {
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    if (code === "ENOENT") {
      // No systemd-notify: nothing will ever get through, so stop trying (and pinging).
      this.disabled = true;
      this.queue.length = 0;
      this.stopWatchdog();
    }
    this.failure(`cannot run ${this.command}: ${err instanceof Error ? err.message : String(err)}`);
  }

  private failure(message: string): void {
    this.stats.failed++;
    if (this.warned) return;
    this.warned = true;
    this.log(`fieldgate: systemd notification failed (reported once): ${message}`);
  }
}

/** Half of WATCHDOG_USEC in ms, when the watchdog is meant for `pid` (sd_watchdog_enabled(3)). */
export function watchdogInterval(env: NodeJS.ProcessEnv, pid: number): number | undefined {
  const usec = Number(env.WATCHDOG_USEC);
  if (!Number.isFinite(usec) || usec <= 0) return undefined;
  const forPid = env.WATCHDOG_PID;
  if (forPid !== undefined && forPid !== "" && Number(forPid) !== pid) return undefined;
  return Math.max(1, Math.floor(usec / 2000));
}
