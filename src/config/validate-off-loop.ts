// A device map validated on a worker thread. A reload (SIGHUP, POST /api/reload): parsing and
// validating a large map is one task that grows with it, on the event loop that sampling and
// every client share (DESIGN: "The event loop is a shared resource"). The worker sends the
// validated map back in pieces (validate-pieces.ts), one per turn of the loop. The gateway's
// first start validates on its own thread (nothing polls yet, and a worker would only add its
// own start), and once it listens has a worker validate the map again only to keep it in the
// cache: that write's JSON of the whole map, the cache key's hash and TurboFan compiling a
// slicer of it (on the loop: see runtime-flags.ts) stay off the loop that has begun to poll.
import { rmSync } from "node:fs";
import { WorkerLink, type Reply } from "../worker-link.js";
import { deviceMapCacheFile, type DeviceMap } from "./device-map.js";
import { unfinishedCacheFile } from "./validated-cache.js";
import type { EntriesAdded } from "./entry-yaml.js";
import type { ValidationResult } from "./validate.js";
import { MapAssembly, type ValidateRequest, type WorkerAnswer } from "./validate-pieces.js";

/** Tags per piece of the map coming back: a short task of the loop each (structured clone). */
export const TAGS_PER_PIECE = 500;

export interface OffLoopOptions {
  /**
   * The worker's file: one that serves serveDeviceMapValidation (validate-worker.ts) with the
   * drivers the map may name (the gateway's: the built server/validate-worker).
   */
  readonly file: URL;
  readonly tagsPerPiece?: number;
}

type ValidateLink = WorkerLink<ValidateRequest, WorkerAnswer & Reply>;

function startWorker(name: string, options: OffLoopOptions): ValidateLink {
  return new WorkerLink(options.file, {}, { name });
}

function unexpected(answer: WorkerAnswer): Error {
  return new Error(`unexpected answer "${answer.kind}" from the device map validation worker`);
}

/**
 * validateDeviceMap(file, cacheDir), on a worker. Rejects only when the worker fails (it could
 * not start, or it ended before it answered): the caller may then validate on its own thread.
 */
export function validateDeviceMapOffLoop(file: string, cacheDir: string | undefined, options: OffLoopOptions): Promise<ValidationResult<DeviceMap>> {
  return validateOffLoop({ op: "validate", file, cacheDir, tagsPerPiece: options.tagsPerPiece ?? TAGS_PER_PIECE }, options);
}

/**
 * Device map text validated on a worker as if it were `file` (named in the issues; its folder
 * anchors relative paths), not read from it: a map edited in the status page before it is
 * written. With `issuesOnly` the map itself does not come back (a check: its value is an empty
 * map). Rejects only when the worker fails.
 */
export function validateDeviceMapTextOffLoop(text: string, file: string, options: OffLoopOptions & { readonly issuesOnly?: boolean }): Promise<ValidationResult<DeviceMap>> {
  return validateOffLoop({ op: "validate", file, cacheDir: undefined, tagsPerPiece: options.tagsPerPiece ?? TAGS_PER_PIECE, text, issuesOnly: options.issuesOnly }, options);
}

async function validateOffLoop(request: ValidateRequest & { readonly op: "validate" }, options: OffLoopOptions): Promise<ValidationResult<DeviceMap>> {
  const link = startWorker("device map validation worker", options);
  try {
    const first = await link.call(request);
    if (first.kind === "refused") return { ok: false, issues: first.issues };
    if (first.kind !== "valid") throw unexpected(first);
    const assembly = new MapAssembly(first.head);
    // One piece per answer, each taken in on a turn of the loop of its own.
    for (let left = first.pieces; left > 0; left--) {
      const answer = await link.call({ op: "next" });
      if (answer.kind !== "piece") throw unexpected(answer);
      assembly.add(answer.piece);
    }
    return { ok: true, value: assembly.map, issues: [] };
  } catch (err) {
    void link.terminate();
    throw err;
  }
}

/**
 * addDeviceEntries(text, devices, sections) on a worker: the map being edited parsed and printed
 * again there (a second or more for a map of 10,000 tags). Rejects only when the worker fails.
 */
export async function addDeviceEntriesOffLoop(
  text: string,
  devices: readonly Readonly<Record<string, unknown>>[],
  sections: Readonly<Record<string, unknown>>,
  sameSections: boolean,
  options: OffLoopOptions,
): Promise<EntriesAdded | { readonly error: string }> {
  const link = startWorker("device map editing worker", options);
  try {
    const answer = await link.call({ op: "entries", text, devices, sections, sameSections });
    if (answer.kind !== "entries") throw unexpected(answer);
    return answer.result;
  } catch (err) {
    void link.terminate();
    throw err;
  }
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
export function keepDeviceMapOffLoop(file: string, cacheDir: string, options: OffLoopOptions): OffLoopKeep {
  let link: ValidateLink | undefined;
  let done: Promise<boolean>;
  try {
    link = startWorker("device map cache worker", options);
    done = link.call({ op: "keep", file, cacheDir }).then((answer) => {
      if (answer.kind !== "kept") throw unexpected(answer);
      return answer.valid;
    });
  } catch (err) {
    done = Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
  return {
    done,
    async stop(): Promise<void> {
      if (link === undefined || !link.alive) return;
      const thread = link.threadId;
      await link.terminate();
      rmSync(unfinishedCacheFile(deviceMapCacheFile(cacheDir), thread), { force: true });
    },
  };
}
