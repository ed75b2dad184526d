// Figures of another process from /proc (Linux): CPU time, RSS. The harness reads the server's
// own accounting instead of trusting anything the server reports about itself.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";

let clockTicks: number | undefined;

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (sysconf(_SC_CLK_TCK)). */
export function clockTicksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      // Linux has used 100 on every mainstream architecture; getconf is only missing on bare images.
      clockTicks = 100;
    }
  }
  return clockTicks;
}

export function procAvailable(pid: number): boolean {
  return existsSync(`/proc/${pid}/stat`);
}

/** User plus system CPU time of `pid` in microseconds, or NaN when /proc cannot say. */
export function cpuTimeMicros(pid: number): number {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return NaN;
  }
  // comm (field 2) may hold spaces and parentheses: fields are counted after the last ')'.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // rest[0] is field 3 (state), so utime (14) and stime (15) are rest[11] and rest[12].
  const ticks = Number(rest[11]) + Number(rest[12]);
  return (ticks * 1e6) / clockTicksPerSecond();
}

/**
 * Time the main thread of `pid` (or, with "thread-self", the calling thread) spent ready to run
 * but waiting for a CPU, in microseconds (/proc/.../schedstat, second field, ns), or NaN. On a
 * core of its own this stays near zero; when it grows, another process or thread held the core.
 */
export function runQueueWaitMicros(pid: number | "thread-self"): number {
  try {
    const fields = readFileSync(`/proc/${pid}/schedstat`, "latin1").trim().split(" ");
    return Number(fields[1]) / 1000;
  } catch {
    return NaN;
  }
}

/** One CPU's time from /proc/stat, µs: busy (user, nice, system, irq, softirq) and steal. */
export interface CoreTimes {
  busyMicros: number;
  /** Time the hypervisor ran something else while this virtual CPU had work (schedstat does not see it). */
  stealMicros: number;
}

/** CPU `cpu`'s times since boot (/proc/stat `cpuN` line), or NaN fields. */
export function coreTimes(cpu: number): CoreTimes {
  let text: string;
  try {
    text = readFileSync("/proc/stat", "latin1");
  } catch {
    return { busyMicros: NaN, stealMicros: NaN };
  }
  const line = text.split("\n").find((l) => l.startsWith(`cpu${cpu} `));
  if (line === undefined) return { busyMicros: NaN, stealMicros: NaN };
  // cpuN user nice system idle iowait irq softirq steal ...
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  const us = 1e6 / clockTicksPerSecond();
  return { busyMicros: (f[0]! + f[1]! + f[2]! + f[5]! + f[6]!) * us, stealMicros: (f[7] ?? NaN) * us };
}

export interface MemoryFigures {
  /** Resident set size, bytes (VmRSS). */
  rss: number;
  /** Peak resident set size, bytes (VmHWM). */
  peakRss: number;
  /**
   * The anonymous part of the RSS, bytes (RssAnon): the V8 heaps, malloc's arenas, thread
   * stacks. The rest of the RSS is pages of files (the node binary, shared libraries, native
   * addons), which the kernel can drop and read back.
   */
  rssAnon: number;
  /** Threads of the process (the main thread, V8's and libuv's pools, worker threads). */
  threads: number;
}

/** RSS of `pid` from /proc/<pid>/status; NaN fields when /proc cannot say. */
export function memoryOf(pid: number): MemoryFigures {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, "latin1");
  } catch {
    return { rss: NaN, peakRss: NaN, rssAnon: NaN, threads: NaN };
  }
  return {
    rss: statusKb(text, "VmRSS:") * 1024,
    peakRss: statusKb(text, "VmHWM:") * 1024,
    rssAnon: statusKb(text, "RssAnon:") * 1024,
    threads: statusKb(text, "Threads:"),
  };
}

function statusKb(text: string, key: string): number {
  const at = text.indexOf(key);
  if (at < 0) return NaN;
  return parseInt(text.slice(at + key.length), 10);
}

let tasksetPath: string | null | undefined;

/** Path of `taskset` (util-linux), or null when it is not installed. */
export function findTaskset(): string | null {
  if (tasksetPath === undefined) {
    tasksetPath = null;
    for (const dir of (process.env.PATH ?? "/usr/bin:/bin").split(":")) {
      if (dir && existsSync(`${dir}/taskset`)) {
        tasksetPath = `${dir}/taskset`;
        break;
      }
    }
  }
  return tasksetPath;
}

/**
 * Prefixes a command with `taskset -c <cpu>` when taskset exists. taskset execs the command, so
 * the child's pid is the command's own pid and /proc figures need no indirection.
 */
export function pinnedCommand(
  cpu: number | undefined,
  command: string,
  args: readonly string[],
): { command: string; args: string[]; pinned: boolean } {
  const taskset = cpu === undefined ? null : findTaskset();
  if (taskset === null || cpu === undefined) return { command, args: [...args], pinned: false };
  return { command: taskset, args: ["-c", String(cpu), command, ...args], pinned: true };
}

/** The CPUs this process may run on (Cpus_allowed_list), in order; [] when unknown. */
export function allowedCpus(): number[] {
  try {
    const text = readFileSync("/proc/self/status", "latin1");
    const m = /Cpus_allowed_list:\s*(\S+)/.exec(text);
    if (m) {
      const cpus: number[] = [];
      for (const part of m[1].split(",")) {
        const [a, b] = part.split("-").map(Number);
        for (let c = a; c <= (b ?? a); c++) cpus.push(c);
      }
      return cpus;
    }
  } catch {
    // Not Linux: no pinning.
  }
  return [];
}
