// What the System object and `fieldgate update status` show: the running version, the root slot
// it booted from and the last update's result. Read from files any user may read (os-release,
// the kernel command line, /data/update/state.json): the gateway itself runs unprivileged.
import { readFile } from "node:fs/promises";
import { Layout, type Slot } from "./layout.js";
import { UpdateStore, describeLast, type UpdateState } from "./state.js";
import { runningVersion } from "./version.js";

export interface UpdateStatus {
  readonly runningVersion: string;
  /** Undefined when not booted from an A/B slot (a checkout, a test). */
  readonly rootSlot: Slot | undefined;
  readonly lastResult: string;
}

export async function readUpdateStatus(layout = new Layout()): Promise<UpdateStatus> {
  const running = runningVersion(layout.osRelease);
  let state: UpdateState = { format: 1 };
  try {
    state = JSON.parse(await readFile(new UpdateStore(layout.stateDir).file, "utf8")) as UpdateState;
  } catch {
    // No update yet (or not the appliance).
  }
  return { runningVersion: running.version, rootSlot: layout.bootedSlot(), lastResult: describeLast(state) };
}
