// One log line when a device goes failing, demoted, and back (DevicePoller.onStateChange): what
// an engineer watching `journalctl -u fieldgate` needs to see that a PLC dropped off, why, and for
// how long it was gone. A device answering for the first time after a start or reload is a debug
// line: a map of 200 devices would otherwise open every start with 200 lines.
import type { DevicePoller, DeviceState } from "../devices/device-poller.js";
import type { LevelLog } from "../log.js";

/** "850 ms", "12.3 s", "4 min 10 s", "2 h 5 min", "3 d 4 h". */
export function humanDuration(ms: number): string {
  if (!(ms >= 0)) return "?";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const total = Math.round(s);
  const [d, h, m, sec] = [Math.floor(total / 86400), Math.floor(total / 3600) % 24, Math.floor(total / 60) % 60, total % 60];
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  return `${m} min ${sec} s`;
}

/** The listener to give DeviceRuntime (onStateChange). */
export function deviceStateLogger(log: LevelLog, now: () => number = Date.now): (device: DevicePoller, previous: DeviceState, downSince: number, failedCycles: number) => void {
  return (device, previous, downSince, failedCycles) => {
    const name = device.name;
    const c = device.config;
    const cause = device.lastError || "no answer";
    const down = downSince > 0 ? humanDuration(now() - downSince) : "";
    switch (device.state) {
      case "ok":
        if (previous === "waiting") {
          log.debug(`device ${name}: answering`);
        } else {
          const cycles = `${failedCycles} failed cycle${failedCycles === 1 ? "" : "s"}`;
          log.notice(`device ${name} back after ${down} (${cycles}${previous === "demoted" ? ", demoted" : ""}; last error: ${cause})`);
        }
        return;
      case "failing":
        log.warn(
          previous === "waiting"
            ? `device ${name} failing since start: ${cause}; retrying every ${humanDuration(c.retryBackoff)}, doubling up to ${humanDuration(c.maxBackoff)}`
            : `device ${name} failing: ${cause}; its values are Bad (last value kept), retrying every ${humanDuration(c.retryBackoff)}, doubling up to ${humanDuration(c.maxBackoff)}`,
        );
        return;
      case "demoted":
        log.warn(`device ${name} demoted after ${failedCycles} failed cycle${failedCycles === 1 ? "" : "s"}, down for ${down}: ${cause}; retried at most ${humanDuration(c.maxBackoff)} apart`);
        return;
      default:
        return;
    }
  };
}
