// A device map validated on a worker thread. A reload (SIGHUP, POST /api/reload): parsing and
// validating 10,000 tags is 100-200 ms, one task that held the event loop that sampling and
// every client share (DESIGN: "The event loop is a shared resource"; measured at 10,000 tags:
// the longest gap between two 1 ms timers was 162 ms during a reload). The worker sends the
// validated map back in pieces (validate-pieces.ts), one per turn of the loop. The gateway's
// first start validates on its own thread (nothing polls yet, and a worker would only add its
// own start), and once it listens has a worker validate the map again only to keep it in the
// cache: that write's JSON of the whole map (~10 ms at 10,000 tags, growing with the map), the
// cache key's hash (~3 ms) and TurboFan compiling a slicer of it (33 ms, on the loop: see
// runtime-flags.ts) stay off the loop that has begun to poll.
import { rmSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { workerFile } from "../worker-file.js";
import { deviceMapCacheFile, type DeviceMap } from "./device-map.js";
import { unfinishedCacheFile } from "./validated-cache.js";
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

function startWorker(job: ValidateJob, options: OffLoopOptions): Worker {
  // execArgv: not the parent's (a profiler's flags, `--input-type=module -e` would refuse the file).
  return new Worker(options.file ?? workerFile("config/validate-worker"), { workerData: job, execArgv: [] });
}

/**
 * validateDeviceMap(file, cacheDir), on a worker. Rejects only when the worker fails (it could
 * not start, or it ended before it answered): the caller may then validate on its own thread.
 */
export function validateDeviceMapOffLoop(file: string, cacheDir: string | undefined, options: OffLoopOptions = {}): Promise<ValidationResult<DeviceMap>> {
  const job: ValidateJob = { file, cacheDir, tagsPerPiece: options.tagsPerPiece ?? TAGS_PER_PIECE, answer: "map", nice: options.nice ?? 10 };
  return new Promise((resolve, reject) => {
    let worker: Worker;
    try {
      worker = startWorker(job, options);
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
        } else if (answer.kind === "piece") {
          if (assembly === undefined) throw new Error("device map piece before the map");
          assembly.add(answer.piece);
          left--;
        } else {
          throw new Error(`unexpected answer "${answer.kind}" from the validation worker`);
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

/** A keepDeviceMapOffLoop under way. */
export interface OffLoopKeep {
  /** Resolves whether the map was valid (and so kept); rejects when the worker failed. */
  readonly done: Promise<boolean>;
  /** Ends the worker if it is still at work, and removes a cache write it cut short. */
  stop(): Promise<void>;
}

/**
 * The device map validated again on a worker, only so that <cacheDir> keeps it for the next
 * start: what a first start's own validation left for later (validated-cache.ts CacheOptions).
 * The key is made from the text the worker reads, so a map edited meanwhile is kept as it is now.
 */
export function keepDeviceMapOffLoop(file: string, cacheDir: string, options: OffLoopOptions = {}): OffLoopKeep {
  const job: ValidateJob = { file, cacheDir, tagsPerPiece: 0, answer: "kept", nice: options.nice ?? 10 };
  let worker: Worker | undefined;
  let ended = false;
  const done = new Promise<boolean>((resolve, reject) => {
    try {
      worker = startWorker(job, options);
    } catch (err) {
      ended = true;
      reject(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    let valid: boolean | undefined;
    worker.on("message", (answer: WorkerAnswer) => {
      if (answer.kind === "kept") valid = answer.valid;
    });
    worker.on("error", (err) => reject(err));
    worker.on("exit", (code) => {
      ended = true;
      if (valid === undefined) reject(new Error(`device map cache worker ended (exit code ${code}) before it answered`));
      else resolve(valid);
    });
  });
  return {
    done,
    async stop(): Promise<void> {
      if (ended || worker === undefined) return;
      const thread = worker.threadId;
      await worker.terminate();
      rmSync(unfinishedCacheFile(deviceMapCacheFile(cacheDir), thread), { force: true });
    },
  };
}
