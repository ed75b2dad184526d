// The worker's side of a history link (thread.ts has the main thread's side). A module of its
// own so that the gateway's main thread, which only starts workers, does not load what only a
// worker runs: child_process (with dgram and the socket lists it pulls in) is needed here for
// chrt, and nowhere on the main thread's start.
import { execFile } from "node:child_process";
import { readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import type { MessagePort, TransferListItem } from "node:worker_threads";
import { faultInfo, type LinkData } from "./thread.js";

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
  try {
    // pid 0: this thread alone. Raising a nice value needs no privilege.
    setPriority(0, Math.min(19, getOwnNice() + data.nice));
  } catch {
    // Not permitted here (a container without the capability to change it): run as we are.
  }
  idleThisThread();
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

/**
 * Moves this thread to SCHED_IDLE (sched(7)): it runs only when nothing else wants the core.
 * Nice +10 still left the kernel handing a busy reader thread slices while a sampling slot was
 * due (on a server pinned to one core, 26-28 of 30 late slots with no task of ours to blame).
 * Node has no call for it, so util-linux's chrt does it, once per worker, without waiting; where
 * chrt is missing or refused, nice +10 stays.
 */
function idleThisThread(): void {
  let tid: string | undefined;
  try {
    tid = readlinkSync("/proc/thread-self").split("/").at(-1);
  } catch {
    return;
  }
  if (tid === undefined || !/^\d+$/.test(tid)) return;
  const child = execFile("chrt", ["--idle", "-p", "0", tid], { timeout: 5000 }, ignore);
  child.on("error", ignore);
  child.unref();
}

function ignore(): void {}

function getOwnNice(): number {
  try {
    return getPriority(0);
  } catch {
    return 0;
  }
}
