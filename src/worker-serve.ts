// The worker's side of a worker link (worker-link.ts has the main thread's side): what each
// worker of the gateway runs to answer its requests, at the priority every worker has.
import { lowerThisThread } from "./thread-priority.js";
import type { MessagePort, TransferListItem } from "node:worker_threads";
import { faultInfo, type LinkData } from "./worker-link.js";

/** An answer: the reply, what to transfer with it, and whether the worker ends after it. */
export interface Answer {
  readonly reply: object;
  readonly transfer?: TransferListItem[];
  readonly last?: boolean;
}

/**
 * The worker's side: answers each request with `handle`'s result (or the fault it threw), in
 * order. `handle` returns the answer and what to transfer with it, or a promise of them (work
 * that waits, such as WebCrypto's: requests that come meanwhile are answered after it); with
 * `last` the worker ends after this answer (its ports close, so the thread exits once its work
 * is done).
 */
export function serveLink<Req extends { readonly seq: number }>(parent: MessagePort, data: LinkData, handle: (request: Req) => Answer | Promise<Answer>): void {
  lowerThisThread();
  const post = (request: Req, out: Answer | undefined, err?: unknown): void => {
    if (out !== undefined) data.replyPort.postMessage({ ...out.reply, seq: request.seq }, out.transfer);
    else data.replyPort.postMessage({ seq: request.seq, fault: faultInfo(err) });
    Atomics.add(data.answered, 0, 1);
    Atomics.notify(data.answered, 0);
    if (out?.last === true) {
      parent.close();
      data.replyPort.close();
    }
  };
  /** The answer being waited for, when one is: later requests queue behind it. */
  let waiting: Promise<void> | undefined;
  const serve = (request: Req): Promise<void> | undefined => {
    let out: Answer | Promise<Answer>;
    try {
      out = handle(request);
    } catch (err) {
      post(request, undefined, err);
      return undefined;
    }
    if (!(out instanceof Promise)) {
      post(request, out);
      return undefined;
    }
    return out.then(
      (o) => post(request, o),
      (err: unknown) => post(request, undefined, err),
    );
  };
  parent.on("message", (request: Req) => {
    if (waiting !== undefined) {
      const next: Promise<void> = waiting.then(() => serve(request)).finally(() => {
        if (waiting === next) waiting = undefined;
      });
      waiting = next;
      return;
    }
    const p = serve(request);
    if (p === undefined) return;
    const next: Promise<void> = p.finally(() => {
      if (waiting === next) waiting = undefined;
    });
    waiting = next;
  });
}
