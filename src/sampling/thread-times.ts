// The calling thread's own clock on Linux: /proc/thread-self/schedstat holds the time it ran on
// a CPU and the time it waited, runnable, for one (ns). The loop trace reads it once per firing
// of the scheduler to tell a late slot that waited behind other processes from one that slept or
// worked (loop-trace.ts). One pread into a buffer kept for it, parsed in place, nothing
// allocated. Hypervisor steal time is in neither figure.
import { closeSync, openSync, readSync } from "node:fs";

export interface ThreadTimes {
  /** Reads the current figures into ranMs and waitedMs; false when they could not be read. */
  read(): boolean;
  /** Time the thread ran on a CPU, ms. */
  ranMs: number;
  /** Time the thread was runnable but waited for a CPU, ms. */
  waitedMs: number;
  close(): void;
}

class SchedStat implements ThreadTimes {
  ranMs = NaN;
  waitedMs = NaN;
  private readonly buf = Buffer.alloc(96);

  constructor(private fd: number) {}

  read(): boolean {
    if (this.fd < 0) return false;
    let n: number;
    try {
      n = readSync(this.fd, this.buf, 0, this.buf.length, 0);
    } catch {
      return false;
    }
    // "<ran ns> <waited ns> <timeslices>\n"
    const b = this.buf;
    let i = 0;
    let ran = 0;
    for (; i < n && b[i] !== 0x20; i++) ran = ran * 10 + (b[i]! - 0x30);
    let waited = 0;
    for (i++; i < n && b[i] !== 0x20; i++) waited = waited * 10 + (b[i]! - 0x30);
    if (i >= n) return false;
    this.ranMs = ran / 1e6;
    this.waitedMs = waited / 1e6;
    return true;
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

/** The calling thread's times, or undefined where /proc/thread-self/schedstat is missing (not Linux, no schedstats). */
export function openThreadTimes(): ThreadTimes | undefined {
  let fd: number;
  try {
    fd = openSync("/proc/thread-self/schedstat", "r");
  } catch {
    return undefined;
  }
  const t = new SchedStat(fd);
  if (!t.read()) {
    t.close();
    return undefined;
  }
  return t;
}
