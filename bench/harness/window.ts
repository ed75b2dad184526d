// Used by the loads (in the load process) at the edges of their measurement window.

/** Asks a server that has the diagnostics report for one line (heap, GC totals) now. */
export function markWindowEdge(pid: number | undefined, diagnostics: boolean | undefined): void {
  if (pid === undefined || !diagnostics) return;
  try {
    process.kill(pid, "SIGUSR2");
  } catch {
    // The server is gone: the load sees its channels close.
  }
}
