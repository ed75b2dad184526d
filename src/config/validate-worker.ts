// The worker of validate-off-loop.ts: validates one device map (validateDeviceMap, with its
// cache), says whether it is valid, then hands the map over one piece per request of the main
// thread, so that no message takes the event loop long to take in; or, for a job that only keeps
// the cache (a first start's), says whether it was valid and nothing more.
import { parentPort, workerData } from "node:worker_threads";
import { lowerThisThread } from "../thread-priority.js";
import { validateDeviceMap } from "./device-map.js";
import { piecesOf, type ValidateJob, type WorkerAnswer } from "./validate-pieces.js";

const job = workerData as ValidateJob;
const port = parentPort!;
lowerThisThread(job.nice);
const result = validateDeviceMap(job.file, job.cacheDir);
if (job.answer === "kept") {
  port.postMessage({ kind: "kept", valid: result.ok } satisfies WorkerAnswer);
  port.close();
} else if (!result.ok) {
  port.postMessage({ kind: "refused", issues: result.issues } satisfies WorkerAnswer);
  port.close();
} else {
  const { head, pieces } = piecesOf(result.value, job.tagsPerPiece);
  port.postMessage({ kind: "valid", head, pieces: pieces.length } satisfies WorkerAnswer);
  let next = 0;
  // One piece per "next": the main thread asks when it has taken in the last one.
  port.on("message", () => {
    const piece = pieces[next++];
    if (piece === undefined) {
      port.close();
      return;
    }
    port.postMessage({ kind: "piece", piece } satisfies WorkerAnswer);
    if (next === pieces.length) port.close();
  });
}
