// The worker's side of a worker link (worker-link.ts has the main thread's side): what each
// worker of the gateway runs to answer its requests, at the priority every worker has.
import { lowerThisThread } from "./thread-priority.js";
import type { MessagePort, TransferListItem } from "node:worker_threads";
import { faultInfo, type LinkData } from "./worker-link.js";

/**
 * The worker's side: answers each request with `handle`'s result (or the fault it threw), in
 * order. `handle` returns the answer and what to transfer with it; with `last` the worker ends
 * after this answer (its ports close, so the thread exits once its work is done).
 */
export function serveLink<Req extends { readonly seq: number }>(
  parent: MessagePort,
  data: LinkData,
  handle: (request: Req) => { readonly reply: object; readonly transfer?: TransferListItem[]; readonly last?: boolean },
): void {
  lowerThisThread();
  parent.on("message", (request: Req) => {
    let last = false;
    try {
      const out = handle(request);
      last = out.last === true;
      data.replyPort.postMessage({ ...out.reply, seq: request.seq }, out.transfer);
    } catch (err) {
      data.replyPort.postMessage({ seq: request.seq, fault: faultInfo(err) });
    }
    Atomics.add(data.answered, 0, 1);
    Atomics.notify(data.answered, 0);
    if (last) {
      parent.close();
      data.replyPort.close();
    }
  });
}
