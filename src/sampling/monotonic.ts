// The process's monotonic clock in ms (performance.now()): what deadlines, the loop trace's task
// times and the sliced jobs' budgets are read on. Read through the module's import of
// node:perf_hooks, never through the global `performance`: in Node 20 that global is a lazy
// getter on globalThis, run again at every read, and a socket read reads the clock more than once.
import { performance } from "node:perf_hooks";

export function monotonicNow(): number {
  return performance.now();
}
