// The worker of check-off-loop.ts: PRAGMA quick_check of one database (sqlite-check.ts
// quickCheck, read-only), answered with the verdict; it moves nothing itself, so that a stop
// that ends it at any moment leaves every file where it was.
import { parentPort, workerData } from "node:worker_threads";
import { lowerThisThread } from "../thread-priority.js";
import { quickCheck } from "./sqlite-check.js";
import type { CheckJob } from "./check-off-loop.js";

const job = workerData as CheckJob;
lowerThisThread(job.nice);
parentPort!.postMessage(quickCheck(job.file, job.info) ?? null);
parentPort!.close();
