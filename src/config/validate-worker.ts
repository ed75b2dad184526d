// The device map validation of a worker thread (validate-off-loop.ts): validates one device map
// (validateDeviceMap, with its cache; or a text given, as the status page's editor sends it), says
// whether it is valid, then hands the map over one piece per request of the main thread, so that
// no message takes the event loop long to take in; or, asked only to keep the cache (a first
// start's), says whether it was valid and nothing more; or adds device entries to a map being
// edited (entry-yaml.ts), which parses it whole. The worker's own file (the composition
// root's, src/server/validate-worker.ts) gives the drivers a map may name.
import { parentPort, workerData } from "node:worker_threads";
import type { LinkData } from "../worker-link.js";
import { serveLink } from "../worker-serve.js";
import { deviceMapSchema, validateDeviceMap, type MapDrivers } from "./device-map.js";
import { validateYaml } from "./load.js";
import { addDeviceEntries } from "./entry-yaml.js";
import { piecesOf, type MapPiece, type ValidateRequest, type WorkerAnswer } from "./validate-pieces.js";

/** Answers the main thread's requests on this worker, validating with `drivers`. */
export function serveDeviceMapValidation(drivers: MapDrivers): void {
  let pieces: MapPiece[] = [];
  let next = 0;
  serveLink<ValidateRequest & { readonly seq: number }>(parentPort!, workerData as LinkData, (req) => {
    if (req.op === "entries") {
      return { reply: { kind: "entries", result: addDeviceEntries(req.text, req.devices, req.sections, { sameSections: req.sameSections }) } satisfies WorkerAnswer, last: true };
    }
    if (req.op === "next") {
      const piece = pieces[next++];
      if (piece === undefined) throw new Error("no piece of the device map is left");
      return { reply: { kind: "piece", piece } satisfies WorkerAnswer, last: next === pieces.length };
    }
    const result = req.op === "validate" && req.text !== undefined ? validateYaml(deviceMapSchema(drivers), req.text, req.file) : validateDeviceMap(req.file, drivers, req.cacheDir);
    if (req.op === "keep") return { reply: { kind: "kept", valid: result.ok } satisfies WorkerAnswer, last: true };
    if (!result.ok) return { reply: { kind: "refused", issues: result.issues } satisfies WorkerAnswer, last: true };
    if (req.issuesOnly) return { reply: { kind: "valid", head: { ...result.value, devices: [] }, pieces: 0 } satisfies WorkerAnswer, last: true };
    const cut = piecesOf(result.value, req.tagsPerPiece);
    pieces = cut.pieces;
    next = 0;
    return { reply: { kind: "valid", head: cut.head, pieces: pieces.length } satisfies WorkerAnswer, last: pieces.length === 0 };
  });
}
