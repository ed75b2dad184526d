// The worker of check-off-loop.ts: PRAGMA quick_check of one database (sqlite-check.ts
// quickCheck, read-only), answered with the verdict; it moves nothing itself, so that a stop
// that ends it at any moment leaves every file where it was.
import { parentPort, workerData } from "node:worker_threads";
import type { LinkData } from "../worker-link.js";
import { serveLink } from "../worker-serve.js";
import { quickCheck } from "./sqlite-check.js";
import type { CheckRequest } from "./check-off-loop.js";

serveLink<CheckRequest & { readonly seq: number }>(parentPort!, workerData as LinkData, (req) => ({
  reply: { verdict: quickCheck(req.file, req.info) ?? null },
  last: true,
}));
