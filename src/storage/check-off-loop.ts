// quick_check of a database on a worker thread (check-worker.ts), for a part whose database is
// opened on the event loop (the northbound's store): the check reads every page of the file, so
// its time grows with the file (bench/RESULTS.md has it per size); the loop that polls and serves
// clients keeps running meanwhile. The move aside of a damaged file is the caller's (renames, on
// its own thread), once the verdict is in: stop() can end the worker at any moment.
import { Worker } from "node:worker_threads";
import { workerFile } from "../worker-file.js";
import type { CheckVerdict, SqliteFileInfo } from "./sqlite-check.js";

export interface CheckJob {
  readonly file: string;
  readonly info: SqliteFileInfo;
  /** How much lower than the event loop the worker runs (src/thread-priority.ts). */
  readonly nice: number;
}

/** A check under way. */
export interface OffLoopCheck {
  /** The verdict (undefined: sound, or no file); rejects when the worker failed or was stopped. */
  readonly done: Promise<CheckVerdict | undefined>;
  /** Ends the worker if it is still at work. */
  stop(): Promise<void>;
}

export function checkOffLoop(file: string, info: SqliteFileInfo, options: { readonly nice?: number; readonly workerFile?: URL } = {}): OffLoopCheck {
  const job: CheckJob = { file, info, nice: options.nice ?? 10 };
  let worker: Worker | undefined;
  let ended = false;
  const done = new Promise<CheckVerdict | undefined>((resolve, reject) => {
    try {
      // execArgv: not the parent's (`node --input-type=module -e` would refuse the file).
      worker = new Worker(options.workerFile ?? workerFile("storage/check-worker"), { workerData: job, execArgv: [] });
    } catch (err) {
      ended = true;
      reject(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    let verdict: CheckVerdict | null | undefined;
    worker.on("message", (v: CheckVerdict | null) => (verdict = v));
    worker.on("error", (err) => reject(err));
    worker.on("exit", (code) => {
      ended = true;
      if (verdict === undefined) reject(new Error(`the check of ${file} ended (exit code ${code}) before it answered`));
      else resolve(verdict ?? undefined);
    });
  });
  return {
    done,
    async stop(): Promise<void> {
      if (ended || worker === undefined) return;
      await worker.terminate();
    },
  };
}
