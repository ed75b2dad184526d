// The floor under the counters scenario's lateness: the gateway's own DeadlineScheduler in an
// otherwise empty Node process (two 10 ms groups 0.9 ms apart and a 100 ms one, as the counters
// server has; tasks that do nothing), pinned to the server's core, with the gateway's flags. What
// it measures is what libuv's whole-ms timers and the machine give any slot before the gateway
// does any work: measured here on an idle loop, p50 0.7, p99 1.7, p99.9 2.7 ms over 4,200 slots.
// `counters --timer-floor S` runs it for S seconds before each fieldgate case; run on its own:
// `taskset -c 0 node dist/bench/scenarios/timer-floor.js 20`.
import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { GATEWAY_NODE_FLAGS } from "../../src/runtime-flags.js";
import { systemClock, type Clock } from "../../src/sampling/clock.js";
import { LoopTrace } from "../../src/sampling/loop-trace.js";
import { DeadlineScheduler } from "../../src/sampling/scheduler.js";

export interface TimerFloor {
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  slots: number;
  /** Late slots (> 2 ms) by cause, as the stall tracer names them. */
  causes: Record<string, number>;
}

/** The bare scheduler on `clock`, reporting to `trace`; `figures()` reads it, `stop()` ends it. */
export function startTimerFloor(clock: Clock, trace: LoopTrace): { figures(): TimerFloor; stop(): void } {
  const s = new DeadlineScheduler(clock, trace);
  const t0 = clock.now() + 5;
  const noop = { sample: () => undefined, label: "a bare slot" };
  s.every(10, noop, t0);
  s.every(10, noop, t0 + 0.9);
  s.every(100, noop, t0 + 0.3);
  return {
    figures() {
      const causes: Record<string, number> = {};
      for (const st of trace.recentStalls()) causes[st.cause || "nothing timed"] = (causes[st.cause || "nothing timed"] ?? 0) + 1;
      return { p50Ms: s.latencyQuantile(0.5), p99Ms: s.latencyQuantile(0.99), p999Ms: s.latencyQuantile(0.999), slots: s.totals.samples, causes };
    },
    stop: () => s.stop(),
  };
}

/** Runs the bare scheduler in this process for `seconds`. */
export function measureTimerFloor(seconds: number): Promise<TimerFloor> {
  const trace = new LoopTrace();
  trace.start();
  const floor = startTimerFloor(systemClock, trace);
  return new Promise((resolve) =>
    setTimeout(() => {
      resolve(floor.figures());
      floor.stop();
      trace.stop();
    }, seconds * 1000),
  );
}

/** The same in a child process with the gateway's node flags, pinned to `cpu` (taskset) when given. */
export function timerFloorOnCore(cpu: number | undefined, seconds: number): Promise<TimerFloor> {
  // From source (vitest) the child still runs dist/'s build of this file.
  const here = fileURLToPath(import.meta.url);
  const self = here.endsWith(".ts") ? join(dirname(here), "..", "..", "dist", "bench", "scenarios", "timer-floor.js") : here;
  const args = [...GATEWAY_NODE_FLAGS, self, String(seconds)];
  const [cmd, argv] = cpu === undefined ? [process.execPath, args] : ["taskset", ["-c", String(cpu), process.execPath, ...args]];
  return new Promise((resolve, reject) => {
    execFile(cmd, argv, { timeout: (seconds + 30) * 1000 }, (err, stdout) => {
      if (err) return reject(err);
      try {
        resolve(JSON.parse(stdout.trim().split("\n").at(-1)!) as TimerFloor);
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const seconds = Number(process.argv[2] ?? 20);
  void measureTimerFloor(seconds > 0 ? seconds : 20).then((f) => {
    process.stdout.write(`${JSON.stringify(f)}\n`);
    process.exit(0);
  });
}
