// The threads a Node process has beside its event loop when the gateway starts: V8's platform
// workers (optimizing compiles, where V8 is let compile off the main thread: the shipped flags
// do not, src/runtime-flags.ts), libuv's thread pool (file system, scrypt), Node's own signal
// thread.
// None of them does work a sampling slot waits for, and on a gateway pinned to one core each
// competes with the event loop for it: an optimizing compile of 5-10 ms that ran while a slot
// was due made it late by as much (bench counters 16,384 items: the main thread waited 128 ms for
// its core in a 10 s window with no other process on it). Nice +10 lets the loop have the core
// when it wakes and still leaves them a share when the loop is busy all the time (a helper at
// SCHED_IDLE would never finish a compile under a Read load that keeps the core full).
import { readdirSync } from "node:fs";
import { setPriority } from "node:os";
import { isMainThread } from "node:worker_threads";

export const HELPER_NICE = 10;

/**
 * Lowers every thread of this process but the main one to HELPER_NICE (Linux, where a thread
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
      setPriority(id, HELPER_NICE);
      n++;
    } catch {
      // The thread ended meanwhile, or the nice value may not be changed here: it keeps its own.
    }
  }
  return n;
}
