// quick_check of a database on a worker thread (check-worker.ts, on the one worker link), for a
// part whose database is opened on the event loop (the northbound's store): the check reads
// every page of the file, so its time grows with the file (bench/RESULTS.md has it per size);
// the loop that polls and serves clients keeps running meanwhile. The move aside of a damaged
// file is the caller's (renames, on its own thread), once the verdict is in: stop() can end the
// worker at any moment.
import { builtFile } from "../worker-file.js";
import { WorkerLink, type Reply } from "../worker-link.js";
import type { CheckVerdict, SqliteFileInfo } from "./sqlite-check.js";

export interface CheckRequest {
  readonly file: string;
  readonly info: SqliteFileInfo;
}

interface CheckReply extends Reply {
  readonly verdict: CheckVerdict | null;
}

/** A check under way. */
export interface OffLoopCheck {
  /** The verdict (undefined: sound, or no file); rejects when the worker failed or was stopped. */
  readonly done: Promise<CheckVerdict | undefined>;
  /** Ends the worker if it is still at work. */
  stop(): Promise<void>;
}

export function checkOffLoop(file: string, info: SqliteFileInfo, options: { readonly workerFile?: URL } = {}): OffLoopCheck {
  let link: WorkerLink<CheckRequest, CheckReply> | undefined;
  let done: Promise<CheckVerdict | undefined>;
  try {
    link = new WorkerLink<CheckRequest, CheckReply>(options.workerFile ?? builtFile("storage/check-worker"), {}, { name: `check of ${file}` });
    done = link.call({ file, info }).then((r) => r.verdict ?? undefined);
  } catch (err) {
    done = Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
  return {
    done,
    async stop(): Promise<void> {
      if (link?.alive) await link.terminate();
    },
  };
}
