// A device map validated on a worker thread, for a reload (SIGHUP, POST /api/reload): parsing
// and validating 10,000 tags is 100-200 ms, one task that held the event loop that sampling and
// every client share (DESIGN: "The event loop is a shared resource"; measured at 10,000 tags:
// the longest gap between two 1 ms timers was 162 ms during a reload). The worker sends the
// validated map back in pieces (validate-pieces.ts), one per turn of the loop. The gateway's
// first start validates on its own thread: nothing polls yet.
import { Worker } from "node:worker_threads";
import { workerFile } from "../worker-file.js";
import type { DeviceMap } from "./device-map.js";
import type { ValidationResult } from "./validate.js";
import { MapAssembly, type ValidateJob, type WorkerAnswer } from "./validate-pieces.js";

/** Tags per piece of the map coming back: ~1 ms of the loop's time each (structured clone). */
export const TAGS_PER_PIECE = 500;

export interface OffLoopOptions {
  readonly tagsPerPiece?: number;
  /** How much lower than the event loop the worker runs (default 10). */
  readonly nice?: number;
  /** The worker's file (tests); default the built config/validate-worker. */
  readonly file?: URL;
}

/**
 * validateDeviceMap(file, cacheDir), on a worker. Rejects only when the worker fails (it could
 * not start, or it ended before it answered): the caller may then validate on its own thread.
 */
export function validateDeviceMapOffLoop(file: string, cacheDir: string | undefined, options: OffLoopOptions = {}): Promise<ValidationResult<DeviceMap>> {
  const job: ValidateJob = { file, cacheDir, tagsPerPiece: options.tagsPerPiece ?? TAGS_PER_PIECE, nice: options.nice ?? 10 };
  return new Promise((resolve, reject) => {
    let worker: Worker;
    try {
      // execArgv: not the parent's (a profiler's flags, `--input-type=module -e` would refuse the file).
      worker = new Worker(options.file ?? workerFile("config/validate-worker"), { workerData: job, execArgv: [] });
    } catch (err) {
      reject(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    let assembly: MapAssembly | undefined;
    let left = 0;
    let settled = false;
    const finish = (result: ValidationResult<DeviceMap> | Error): void => {
      if (settled) return;
      settled = true;
      if (result instanceof Error) {
        void worker.terminate();
        reject(result);
      } else {
        resolve(result);
      }
    };
    worker.on("message", (answer: WorkerAnswer) => {
      try {
        if (answer.kind === "refused") {
          finish({ ok: false, issues: answer.issues });
          return;
        }
        if (answer.kind === "valid") {
          assembly = new MapAssembly(answer.head);
          left = answer.pieces;
        } else {
          if (assembly === undefined) throw new Error("device map piece before the map");
          assembly.add(answer.piece);
          left--;
        }
        if (left === 0) finish({ ok: true, value: assembly.map, issues: [] });
        else worker.postMessage("next");
      } catch (err) {
        finish(err instanceof Error ? err : new Error(String(err)));
      }
    });
    worker.on("error", (err) => finish(err));
    worker.on("exit", (code) => finish(new Error(`device map validation worker ended (exit code ${code}) before it answered`)));
  });
}
