// A worker's side of the worker link (src/worker-serve.ts) with a handler that answers some
// requests with a promise (the certificate worker's WebCrypto): every answer comes in the order of
// the requests, a rejected promise answers with its fault, and the worker goes on answering.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { WorkerLink, type Reply } from "../../src/worker-link.js";
import { distFile, missingBuild, requirePeers, skipWithout } from "../helpers/built.js";

const unbuilt = missingBuild("src/worker-serve.js");

interface Req {
  readonly op: "later" | "now" | "fail later";
  readonly id: number;
}
interface Rep extends Reply {
  readonly id?: number;
}

/** A worker that answers "later" after 30 ms, "now" at once and fails "fail later" after 10 ms. */
function workerSource(): string {
  return `
import { parentPort, workerData } from "node:worker_threads";
import { serveLink } from ${JSON.stringify(pathToFileURL(distFile("src/worker-serve.js")).href)};
const wait = (ms) => new Promise((r) => setTimeout(r, ms));
serveLink(parentPort, workerData, (req) => {
  if (req.op === "now") return { reply: { id: req.id } };
  if (req.op === "later") return wait(30).then(() => ({ reply: { id: req.id } }));
  return wait(10).then(() => { throw new Error("refused " + req.id); });
});
`;
}

describe.skipIf(skipWithout(unbuilt))("serveLink with answers that wait", () => {
  beforeAll(() => requirePeers(unbuilt));
  const dirs: string[] = [];
  const links: WorkerLink<Req, Rep>[] = [];
  afterEach(async () => {
    for (const l of links.splice(0)) await l.terminate();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("answers in the order of the requests, a rejection as its fault", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fieldgate-serve-link-"));
    dirs.push(dir);
    const file = join(dir, "worker.mjs");
    writeFileSync(file, workerSource());
    const link = new WorkerLink<Req, Rep>(pathToFileURL(file), {}, { name: "test worker" });
    links.push(link);
    const order: string[] = [];
    const call = (op: Req["op"], id: number): Promise<void> =>
      link.call({ op, id }).then(
        (r) => void order.push(`${op} ${r.id}`),
        (err: Error) => void order.push(`${op} ${id}: ${err.message}`),
      );
    await Promise.all([call("later", 1), call("now", 2), call("fail later", 3), call("now", 4), call("later", 5)]);
    expect(order).toEqual(["later 1", "now 2", "fail later 3: refused 3", "now 4", "later 5"]);
    // Nothing waits any more: a request is answered at once again.
    await call("now", 6);
    expect(order.at(-1)).toBe("now 6");
  }, 30_000);
});
