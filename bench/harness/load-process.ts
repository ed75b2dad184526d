// Runs a load in its own process, pinned to one core, so that the load client and the server
// under test never compete for the same CPU; or inline, for tests and for machines with one core.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { LOADS, type LoadName, type LoadParams, type LoadResult } from "../scenarios/loads.js";
import { pinnedCommand } from "./proc.js";

export interface WorkerRequest {
  load: LoadName;
  params: LoadParams<LoadName>;
  /** Instead of `load`: a module URL and the name of its exported load function. */
  module?: string;
  exportName?: string;
}

export type WorkerReply =
  | { type: "result"; result: unknown }
  | { type: "error"; message: string; code?: string };

export interface LoadPlacement {
  /** Run in this process instead of a child. */
  inline?: boolean;
  /** CPU to pin the load process to (ignored inline). */
  cpu?: number;
  /** Extra node flags for the load process. */
  nodeFlags?: readonly string[];
  /**
   * Run the load process under SCHED_FIFO with this priority (chrt, needs CAP_SYS_NICE): it runs
   * as soon as its socket has data, ahead of the ordinary processes sharing its core.
   */
  realtimePriority?: number;
}

export interface LoadRun<N extends LoadName> {
  result: LoadResult<N>;
  /** CPU the load process was pinned to, or undefined. */
  pinnedCpu: number | undefined;
  inline: boolean;
}

/** The compiled worker next to this module (dist/bench/harness/load-worker.js). */
export function workerPath(): string {
  return fileURLToPath(new URL("./load-worker.js", import.meta.url));
}

export async function runLoad<N extends LoadName>(load: N, params: LoadParams<N>, placement: LoadPlacement): Promise<LoadRun<N>> {
  if (placement.inline) {
    const run = LOADS[load] as (p: LoadParams<N>) => Promise<LoadResult<N>>;
    return { result: await run(params), pinnedCpu: undefined, inline: true };
  }
  return spawnLoad<LoadResult<N>>({ load, params }, placement);
}

/**
 * The plug point for scenarios outside the LOADS table: runs `exportName` of the module at
 * `moduleUrl` (usually the caller's `import.meta.url`) with `params` (plain data: it crosses
 * IPC) in the load process, or inline. The function must return plain data too.
 */
export async function runModuleLoad<P, R>(moduleUrl: string, exportName: string, params: P, placement: LoadPlacement): Promise<{ result: R; pinnedCpu: number | undefined; inline: boolean }> {
  if (placement.inline) {
    const mod = (await import(moduleUrl)) as Record<string, unknown>;
    const fn = mod[exportName];
    if (typeof fn !== "function") throw new Error(`${moduleUrl} exports no function ${exportName}`);
    return { result: (await (fn as (p: P) => Promise<R>)(params)) as R, pinnedCpu: undefined, inline: true };
  }
  return spawnLoad<R>({ load: "read", params: params as unknown as LoadParams<LoadName>, module: moduleUrl, exportName }, placement);
}

/** The command that starts the load process `worker` as `placement` asks (pinned, SCHED_FIFO, node flags). */
export function loadCommand(placement: LoadPlacement, worker: string): { command: string; args: string[]; pinned: boolean } {
  const priority = placement.realtimePriority ?? 0;
  // Under SCHED_FIFO the main thread is never preempted by the process's own helper threads on
  // its core, and V8's main thread can wait on them (concurrent sweeping reposts its task until
  // the helper has run: the loop spins at 100 % of the core). GC and optimizing compiles on the
  // main thread, as the gateway runs (src/runtime-flags.ts).
  const fifoFlags = priority > 0 ? ["--single-threaded-gc", "--no-concurrent-recompilation"] : [];
  const pinned = pinnedCommand(placement.cpu, process.execPath, [...fifoFlags, ...(placement.nodeFlags ?? []), worker]);
  return priority > 0 ? { ...pinned, command: "chrt", args: ["-f", String(priority), pinned.command, ...pinned.args] } : pinned;
}

async function spawnLoad<R>(request: WorkerRequest, placement: LoadPlacement): Promise<{ result: R; pinnedCpu: number | undefined; inline: boolean }> {
  const worker = workerPath();
  if (!existsSync(worker)) throw new Error(`${worker} is missing: build first (npm run build), or run the load inline`);
  const cmd = loadCommand(placement, worker);
  const child = spawn(cmd.command, cmd.args, { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const finished = new Promise<R>((resolve, reject) => {
    let settled = false;
    child.once("message", (raw: unknown) => {
      settled = true;
      const reply = raw as WorkerReply;
      if (reply.type === "result") resolve(reply.result as R);
      else reject(Object.assign(new Error(`load process: ${reply.message}`), { code: reply.code }));
    });
    child.once("error", (err) => {
      if (settled) return;
      settled = true;
      reject(err);
    });
    child.once("exit", (code, signal) => {
      if (settled) return;
      settled = true;
      reject(new Error(`load process exited (code ${code}, signal ${signal}) without a result`));
    });
    child.send(request);
  });
  let result: R;
  try {
    result = await finished;
  } finally {
    // The worker exits by itself once its sockets close; one that hangs must not outlive the run.
    if (child.exitCode === null && child.signalCode === null) {
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      timer.unref();
      child.once("exit", () => clearTimeout(timer));
    }
  }
  return { result, pinnedCpu: cmd.pinned ? placement.cpu : undefined, inline: false };
}
