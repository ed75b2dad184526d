// The update state on the data partition (/data/update): state.json, what the System object and
// `fieldgate update status` show, and update.log, a step-by-step account that outlives reboots
// (the journal is in RAM: the log of a trial boot that failed would go with it). Both are read
// by every version that may run from either slot, so their shape only ever grows.
import { appendFileSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Slot } from "./layout.js";

export type UpdateResult = "installed" | "succeeded" | "failed" | "refused";

export interface UpdateState {
  readonly format: 1;
  /** The install waiting for, or in, its trial boot. */
  readonly pending?: {
    readonly slot: Slot;
    readonly version: string;
    readonly from: string;
    readonly fromSlot: Slot;
    readonly installedAt: string;
    /** The boot that installed it: a later boot without a confirmation means the trial failed. */
    readonly bootId: string;
    readonly source: string;
    /** Why its trial boot failed, recorded by that boot. */
    readonly failure?: string;
  };
  /** The last update's outcome. */
  readonly last?: {
    readonly result: UpdateResult;
    readonly at: string;
    readonly message: string;
    readonly version?: string;
  };
  /** The checks of update.url. */
  readonly url?: { readonly lastCheck: string; readonly lastVersion?: string };
}

const EMPTY: UpdateState = { format: 1 };
/** update.log is cut to its last half beyond this. */
const LOG_LIMIT = 256 * 1024;

export class UpdateStore {
  constructor(readonly dir: string) {}

  get file(): string {
    return join(this.dir, "state.json");
  }
  get logFile(): string {
    return join(this.dir, "update.log");
  }
  /** Written by the trial wrapper (systemd/fieldgate-trial) when the check itself could not run. */
  get trialFailureFile(): string {
    return join(this.dir, "trial-failure");
  }

  read(): UpdateState {
    try {
      const s = JSON.parse(readFileSync(this.file, "utf8")) as UpdateState;
      return typeof s === "object" && s !== null ? { ...s, format: 1 } : EMPTY;
    } catch {
      return EMPTY;
    }
  }

  /** Replaces the state atomically (write, fsync, rename): a power cut leaves the old or the new one. */
  write(state: UpdateState): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o755 });
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(state, null, 1)}\n`, { mode: 0o644 });
    const fd = openSync(tmp, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.file);
  }

  update(change: (s: UpdateState) => UpdateState): UpdateState {
    const next = change(this.read());
    this.write(next);
    return next;
  }

  /** Sets the last result (and returns the new state). */
  record(result: UpdateResult, message: string, version?: string, extra: (s: UpdateState) => UpdateState = (s) => s): UpdateState {
    return this.update((s) => extra({ ...s, last: { result, at: new Date().toISOString(), message, ...(version === undefined ? {} : { version }) } }));
  }

  /** One line of update.log; failures to log never stop an update. */
  log(line: string): void {
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o755 });
      appendFileSync(this.logFile, `${new Date().toISOString()} ${line}\n`, { mode: 0o644 });
      if (statSync(this.logFile).size > LOG_LIMIT) {
        const text = readFileSync(this.logFile, "utf8");
        writeFileSync(this.logFile, text.slice(text.indexOf("\n", text.length / 2) + 1));
      }
    } catch {
      // A read-only or full data partition: the console still has it.
    }
  }
}

/** The text the System object's LastUpdateResult shows. */
export function describeLast(state: UpdateState): string {
  const last = state.last;
  if (last === undefined) return "none";
  return `${last.result}: ${last.message} (${last.at})`;
}
