// Starting a newly installed version: at once, at the next maintenance window, or when an
// operator reboots. Windows are transient systemd timers (systemd-run --on-calendar), so that
// `systemctl list-timers` shows the planned reboot and `systemctl stop fieldgate-update-reboot.timer`
// cancels it; a reboot for any other reason before then starts the new version too.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import type { Layout } from "./layout.js";
import { inWindow, nextWindowStart, parseWindow } from "./window.js";

export type RebootPolicy = "now" | "window" | "manual";

const TIMER = "fieldgate-update-reboot";

/** Runs a command of the real system; under a test root it is written to <root>/run/fieldgate-reboot instead. */
function system(layout: Layout, args: string[]): { ok: boolean; out: string } {
  if (!layout.real) {
    mkdirSync(layout.path("run"), { recursive: true });
    writeFileSync(layout.path("run/fieldgate-reboot"), `${args.join(" ")}\n`, { flag: "a" });
    return { ok: true, out: "" };
  }
  const r = spawnSync(args[0], args.slice(1), { encoding: "utf8" });
  return { ok: r.status === 0, out: `${r.stdout ?? ""}${r.stderr ?? ""}`.trim() };
}

/** What was done, for the log and the person at the command line. */
export function scheduleReboot(layout: Layout, policy: RebootPolicy, window: string, log: (line: string) => void, now = new Date()): string {
  if (policy === "manual") {
    const m = "the new version starts at the next reboot (systemctl reboot); until then this one keeps running";
    log(m);
    return m;
  }
  if (policy === "window") {
    const w = parseWindow(window);
    if (!inWindow(w, now)) {
      const at = nextWindowStart(w, now);
      const pad = (n: number): string => String(n).padStart(2, "0");
      const stamp = `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${pad(at.getHours())}:${pad(at.getMinutes())}:00`;
      // A timer left by an earlier install is replaced.
      system(layout, ["systemctl", "stop", `${TIMER}.timer`]);
      system(layout, ["systemctl", "reset-failed", `${TIMER}.service`]);
      const r = system(layout, ["systemd-run", `--unit=${TIMER}`, `--on-calendar=${stamp}`, "--timer-property=AccuracySec=1s", "--description=fieldgate update: reboot into the new version", "/usr/bin/systemctl", "reboot"]);
      if (!r.ok) throw new Error(`could not schedule the reboot for ${stamp}: ${r.out}`);
      const m = `reboot planned for ${stamp} (maintenance window ${window}); cancel with: systemctl stop ${TIMER}.timer`;
      log(m);
      return m;
    }
    log(`inside the maintenance window ${window}: rebooting now`);
  } else {
    log("rebooting now");
  }
  const r = system(layout, ["systemctl", "reboot"]);
  if (!r.ok) throw new Error(`systemctl reboot failed: ${r.out}`);
  return "rebooting now";
}
