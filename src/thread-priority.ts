// Every thread of the gateway beside its event loop runs below it, at one nice value set here:
// its worker threads (the history's, the device map's validation: lowerThisThread) and Node's
// own helper threads (lowerHelperThreads). On a server pinned to one core the kernel would
// otherwise hand the core to a worker the moment it wakes, in the middle of a sampling task
// (measured: a 0.1 ms task of the loop took 3-8 ms of wall time); lowered, the loop runs first
// and the workers take the time it leaves. On two cores they run beside it. Linux keeps these
// per thread: the loop's thread keeps its own.
import { execFile } from "node:child_process";
import { readdirSync, readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import { isMainThread } from "node:worker_threads";

/** How much lower than the event loop's a thread beside it runs (nice, relative to the process's). */
export const WORKER_NICE = 10;

/** Lowers the calling thread (a worker): nice +WORKER_NICE (relative to its own), then SCHED_IDLE where chrt may. */
export function lowerThisThread(): void {
  try {
    // pid 0: this thread alone. Raising a nice value needs no privilege.
    setPriority(0, Math.min(19, getOwnNice() + WORKER_NICE));
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

// Node's helper threads, the threads a Node process has beside its event loop when the gateway
// starts: V8's platform workers (optimizing compiles, where V8 is let compile off the main thread: the shipped flags
// do not, src/runtime-flags.ts), libuv's thread pool (file system, scrypt), Node's own signal
// thread.
// None of them does work a sampling slot waits for, and on a gateway pinned to one core each
// competes with the event loop for it: an optimizing compile of 5-10 ms that ran while a slot
// was due made it late by as much (bench counters 16,384 items: the main thread waited 128 ms for
// its core in a 10 s window with no other process on it). Nice +10 lets the loop have the core
// when it wakes and still leaves them a share when the loop is busy all the time (a helper at
// SCHED_IDLE would never finish a compile under a Read load that keeps the core full).

/**
 * Lowers every thread of this process but the main one to WORKER_NICE (Linux, where a thread
 * id is a target of setpriority(2)); threads started later (history workers) set their own.
 * Returns how many were lowered; 0 where /proc/self/task is missing or off the main thread.
 */
export function lowerHelperThreads(): number {
  if (!isMainThread) return 0;
  let tids: string[];
  try {
    tids = readdirSync("/proc/self/task");
  } catch {
    return 0;
  }
  let n = 0;
  for (const tid of tids) {
    const id = Number(tid);
    if (!Number.isInteger(id) || id === process.pid) continue;
    try {
      setPriority(id, WORKER_NICE);
      n++;
    } catch {
      // The thread ended meanwhile, or the nice value may not be changed here: it keeps its own.
    }
  }
  return n;
}
