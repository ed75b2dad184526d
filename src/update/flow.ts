// One install, from whatever source: install, record a refusal where the System object shows it,
// and start the new version as the reboot policy says. Shared by the command line, the inbox and
// the URL check.
import { UpdateRefused } from "./bundle-format.js";
import { install, type Installed } from "./install.js";
import type { Layout } from "./layout.js";
import { scheduleReboot, type RebootPolicy } from "./reboot.js";
import type { UpdateStore } from "./state.js";

export interface UpdateContext {
  readonly layout: Layout;
  readonly store: UpdateStore;
  readonly reboot: RebootPolicy;
  readonly window: string;
  /** Each step, to the console (the journal, when a unit runs it) and to update.log. */
  readonly log: (line: string) => void;
}

export type Outcome = { readonly ok: true; readonly installed: Installed } | { readonly ok: false; readonly message: string };

/** Installs `file`; a refusal is recorded and returned, other errors (I/O) are recorded and thrown. */
export async function installBundle(ctx: UpdateContext, file: string, source: string, force = false): Promise<Outcome> {
  try {
    return { ok: true, installed: await install(ctx.layout, ctx.store, file, { source, force, log: ctx.log }) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof UpdateRefused) {
      ctx.log(`refused: ${message}`);
      ctx.store.record("refused", message);
      return { ok: false, message };
    }
    ctx.log(`failed: ${message}`);
    ctx.store.record("failed", `the install of ${file} stopped: ${message}; the running system is untouched`);
    throw err;
  }
}

/** After a successful install: reboot now, plan it for the window, or leave it to the operator. */
export function startNewVersion(ctx: UpdateContext, installed: Installed, policy: RebootPolicy = ctx.reboot): string {
  ctx.log(`installed ${installed.version} in slot ${installed.slot} (was ${installed.from}); reboot policy: ${policy}`);
  return scheduleReboot(ctx.layout, policy, ctx.window, ctx.log);
}
