// A worker thread of the gateway (the history's, the device map's validation on a reload) runs
// below the event loop. On a server pinned to one core the kernel would otherwise hand the core
// to a worker the moment it wakes, in the middle of a sampling task (measured: a 0.1 ms task of
// the loop took 3-8 ms of wall time); lowered, the loop runs first and the workers take the
// time it leaves. On two cores they run beside it. Linux keeps these per thread: the loop's
// thread keeps its own.
import { execFile } from "node:child_process";
import { readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";

/** Lowers the calling thread: nice +`nice` (relative to its own), then SCHED_IDLE where chrt may. */
export function lowerThisThread(nice: number): void {
  try {
    // pid 0: this thread alone. Raising a nice value needs no privilege.
    setPriority(0, Math.min(19, getOwnNice() + nice));
  } catch {
    // Not permitted here (a container without the capability to change it): run as we are.
  }
  idleThisThread();
}

/**
 * Moves this thread to SCHED_IDLE (sched(7)): it runs only when nothing else wants the core.
 * Nice +10 still left the kernel handing a busy reader thread slices while a sampling slot was
 * due (on a server pinned to one core, 26-28 of 30 late slots with no task of ours to blame).
 * Node has no call for it, so util-linux's chrt does it, once per thread, without waiting; where
 * chrt is missing or refused, the nice value stays.
 */
function idleThisThread(): void {
  let tid: string | undefined;
  try {
    tid = readlinkSync("/proc/thread-self").split("/").at(-1);
  } catch {
    return;
  }
  if (tid === undefined || !/^\d+$/.test(tid)) return;
  const child = execFile("chrt", ["--idle", "-p", "0", tid], { timeout: 5000 }, ignore);
  child.on("error", ignore);
  child.unref();
}

function ignore(): void {}

function getOwnNice(): number {
  try {
    return getPriority(0);
  } catch {
    return 0;
  }
}
