// `fieldgate update confirm`, run at every boot by fieldgate-trial.service (through the guard
// systemd/fieldgate-trial):
// - on a trial boot (the running slot's boot entry still has its counter) it waits for the
//   gateway to be healthy and then confirms the entry; when it is not healthy it records why and
//   returns TRIAL_FAILED, and the guard reboots: the boot loader then starts the other slot;
// - on any other boot after an install it records what became of it: a boot of the old slot
//   after the install's boot means that the trial failed (the new version did not come up, hung,
//   lost power or was found unhealthy) and that the boot loader went back by itself.
import { readFileSync, rmSync } from "node:fs";
import { bless, entryOf, removeSlot, titleVersion } from "./boot-entries.js";
import { waitHealthy, type Health, type HealthOptions } from "./health.js";
import { otherSlot, type Layout } from "./layout.js";
import type { UpdateStore } from "./state.js";
import { runningVersion } from "./version.js";

/** The guard's contract (systemd/fieldgate-trial): 0 confirmed or nothing to do, 3 unhealthy. */
export const TRIAL_FAILED = 3;

export interface ConfirmOptions {
  readonly health: Omit<HealthOptions, "log">;
  readonly log: (line: string) => void;
  /** The health check (tests replace it). */
  readonly check?: (opts: HealthOptions) => Promise<Health>;
}

export async function confirm(layout: Layout, store: UpdateStore, opts: ConfirmOptions): Promise<number> {
  const log = opts.log;
  const slot = layout.bootedSlot();
  if (slot === undefined) return 0;
  const running = runningVersion(layout.osRelease).version;
  const entry = entryOf(layout.esp, slot);
  const state = store.read();
  const pending = state.pending;

  if (entry?.triesLeft !== undefined) {
    const other = entryOf(layout.esp, otherSlot(slot));
    log(`trial boot of ${running} in slot ${slot} (${entry.file}); the gateway must be healthy within ${opts.health.timeoutMs / 1000} s`);
    const health = await (opts.check ?? waitHealthy)({ ...opts.health, log });
    if (health.ok) {
      const name = bless(layout.esp, entry);
      const from = pending?.from ?? titleVersion(other);
      log(`healthy: ${health.detail}; boot entry confirmed (${name}): slot ${slot} is the system now`);
      store.record("succeeded", `${running} runs from slot ${slot} (was ${from} in slot ${otherSlot(slot)}); its trial boot was healthy`, running, (s) => {
        const { pending: _, ...rest } = s;
        return rest;
      });
      return 0;
    }
    const back = other ? `${titleVersion(other)} in slot ${other.slot}` : `slot ${otherSlot(slot)}`;
    log(`not healthy: ${health.reason}; rebooting: the boot loader starts ${back}`);
    store.update((s) => ({ ...s, ...(s.pending ? { pending: { ...s.pending, failure: health.reason } } : {}) }));
    store.record("failed", `${running} in slot ${slot} failed its trial boot: ${health.reason}; going back to ${back}`, running);
    return TRIAL_FAILED;
  }

  if (pending === undefined) return 0;
  if (pending.slot === slot) {
    // Booted the new slot and its entry has no counter: confirmed (by a boot that stopped
    // before it could say so).
    if (state.last?.result !== "succeeded") {
      store.record("succeeded", `${running} runs from slot ${slot} (was ${pending.from} in slot ${pending.fromSlot})`, running, (s) => {
        const { pending: _, ...rest } = s;
        return rest;
      });
      log(`${running} in slot ${slot} was confirmed`);
    }
    return 0;
  }
  if (pending.bootId === layout.bootId()) return 0; // installed on this boot, not started yet

  let reason = pending.failure;
  if (reason === undefined) {
    try {
      reason = readFileSync(store.trialFailureFile, "utf8").trim();
    } catch {
      reason = "it did not confirm its trial boot (it did not start, hung, or the power went before it was healthy)";
    }
  }
  rmSync(store.trialFailureFile, { force: true });
  // The used-up entry would sort last anyway; removed, the slot is plainly free for the next install.
  removeSlot(layout.esp, pending.slot);
  const message = `${pending.version} in slot ${pending.slot} failed its trial boot: ${reason}; the boot loader went back to ${running} in slot ${slot} by itself`;
  log(message);
  store.record("failed", message, pending.version, (s) => {
    const { pending: _, ...rest } = s;
    return rest;
  });
  return 0;
}
