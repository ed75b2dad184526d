// The worker's side of a history link (thread.ts has the main thread's side). A module of its
// own so that the gateway's main thread, which only starts workers, does not load what only a
// worker runs: child_process (with dgram and the socket lists it pulls in) is needed for chrt
// (src/thread-priority.ts), and nowhere on the main thread's start.
import { lowerThisThread } from "./thread-priority.js";
import type { MessagePort, TransferListItem } from "node:worker_threads";
import { faultInfo, type LinkData } from "./worker-link.js";

/**
 * The worker's side: answers each request with `handle`'s result (or the fault it threw), in
 * order. `handle` returns the answer and what to transfer with it; `undefined` ends the worker
 * after answering nothing more (its port closes, so the thread exits once its work is done).
 */
export function serveLink<Req extends { readonly seq: number }>(
  parent: MessagePort,
  data: LinkData,
  handle: (request: Req) => { readonly reply: object; readonly transfer?: TransferListItem[]; readonly last?: boolean },
): void {
  lowerThisThread(data.nice);
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
