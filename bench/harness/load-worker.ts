// Entry of the load process: receives one {load, params} over IPC, runs it, sends the result
// back and exits. Spawned by load-process.ts, usually under `taskset -c <cpu>`.
import { LOADS, type LoadName } from "../scenarios/loads.js";
import type { WorkerReply, WorkerRequest } from "./load-process.js";

function reply(message: WorkerReply): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(message, undefined, undefined, () => resolve());
  });
}

let done = false;

process.once("message", (raw: unknown) => {
  const request = raw as WorkerRequest;
  void (async () => {
    try {
      let result: unknown;
      if (request.module !== undefined && request.exportName !== undefined) {
        const mod = (await import(request.module)) as Record<string, unknown>;
        const fn = mod[request.exportName];
        if (typeof fn !== "function") throw new Error(`${request.module} exports no function ${request.exportName}`);
        result = await (fn as (p: unknown) => Promise<unknown>)(request.params);
      } else {
        if (!(request.load in LOADS)) throw new Error(`unknown load ${String(request.load)}`);
        const run = LOADS[request.load as LoadName] as (p: unknown) => Promise<unknown>;
        result = await run(request.params);
      }
      await reply({ type: "result", result });
    } catch (err) {
      const e = err as Error & { code?: string };
      await reply({ type: "error", message: e.message ?? String(err), code: e.code });
    }
    done = true;
    process.disconnect?.();
  })();
});

// An orphaned load (the harness was interrupted) must not keep hammering the server.
process.once("disconnect", () => {
  if (!done) process.exit(1);
});

if (!process.send) {
  process.stderr.write("load-worker: start me through bench/harness/load-process.ts (needs an IPC channel)\n");
  process.exit(2);
}
