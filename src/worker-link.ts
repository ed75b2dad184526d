// A link to a worker thread of the gateway (the history's, the device map's validation: DESIGN,
// the event loop is a shared resource): work that grows with the data runs on a thread of its
// own, and the link is the one way the main thread starts one and talks to it.
//
// One link per worker. Requests go by postMessage, each with a sequence number; the worker
// answers each one on a port of its own and then bumps a shared counter, so the main thread can
// also wait for an answer without its event loop (Atomics.wait, receiveMessageOnPort): for
// the history's flushAll() and the reads of tools and tests, never on a service's path. The link
// holds the event loop open only while answers are due: an idle worker never keeps a process
// alive. Its errors name the worker (`name`).
//
// A worker runs below the event loop (src/thread-priority.ts says why and how); its side of the
// link is worker-serve.ts, and its file is the one src/worker-file.ts chooses.
import { fileURLToPath } from "node:url";
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort, type ResourceLimits, type TransferListItem } from "node:worker_threads";
import { WORKER_YOUNG_GENERATION_MB } from "./runtime-flags.js";

export interface Reply {
  readonly seq: number;
  /** Set when the request threw in the worker. */
  readonly fault?: FaultInfo;
}

export interface FaultInfo {
  readonly message: string;
  readonly code?: string;
}

export type ReplyHandler<R> = (reply: R | undefined, err: Error | undefined) => void;

/** What a worker gets as workerData: its answer port and the shared counter. */
export interface LinkData {
  readonly replyPort: MessagePort;
  readonly answered: Int32Array;
}

export interface WorkerLinkOptions {
  /** What the worker is, for its errors ("history write worker"). */
  readonly name: string;
  readonly resourceLimits?: ResourceLimits;
  readonly transferList?: TransferListItem[];
  /** The worker ended on its own with an error or a non-zero exit code (not after ended()/terminate()). */
  readonly onExit?: (err: Error) => void;
}

/** An Error from a worker's FaultInfo, with its code (SQLITE_FULL, ...). */
export function faultError(f: FaultInfo): Error {
  return Object.assign(new Error(f.message), f.code === undefined ? {} : { code: f.code });
}

export function faultInfo(err: unknown): FaultInfo {
  const code = (err as { code?: unknown }).code;
  return { message: err instanceof Error ? err.message : String(err), code: typeof code === "string" ? code : undefined };
}

export class WorkerLink<Req extends object, Rep extends Reply> {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly answered: Int32Array;
  private readonly pending = new Map<number, ReplyHandler<Rep>>();
  private seq = 0;
  private exitCode: number | undefined;
  private exitError: Error | undefined;
  private readonly exited: Promise<void>;
  private readonly name: string;

  /** Starts the worker `file` with `data` (plus the link's own fields) as its workerData. */
  constructor(file: URL, data: object, options: WorkerLinkOptions) {
    this.name = options.name;
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.answered = new Int32Array(new SharedArrayBuffer(4));
    const linkData: LinkData = { replyPort: port2, answered: this.answered };
    this.worker = new Worker(file, {
      workerData: { ...data, ...linkData },
      transferList: [port2, ...(options.transferList ?? [])],
      // The young generation --max-semi-space-size gave workers before src/cli.ts settled it.
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB, ...options.resourceLimits },
      // Not the parent's: `node --input-type=module -e ...` would make the worker refuse its file.
      execArgv: [],
    });
    this.worker.unref();
    port1.on("message", (r: Rep) => this.dispatch(r));
    port1.unref();
    this.worker.on("error", (err) => (this.exitError = err));
    this.exited = new Promise((resolve) =>
      this.worker.once("exit", (code) => {
        this.exitCode = code;
        const err = this.exitError ?? new Error(`${this.name} ${fileURLToPath(file)} ended (exit code ${code})`);
        // Answers already sent are still on the port.
        this.drain();
        for (const [, handler] of this.pending) handler(undefined, err);
        this.pending.clear();
        this.port.close();
        if (code !== 0 || this.exitError) options.onExit?.(err);
        resolve();
      }),
    );
  }

  /** The worker is running (it has not exited). */
  get alive(): boolean {
    return this.exitCode === undefined;
  }

  /** The worker's thread id (-1 once it has stopped). */
  get threadId(): number {
    return this.worker.threadId;
  }

  /** Sends a request; `onReply` gets its answer (or the error that ended the worker). Returns its seq. */
  send(message: Req, onReply?: ReplyHandler<Rep>, transfer?: TransferListItem[]): number {
    const seq = ++this.seq;
    if (!this.alive) {
      onReply?.(undefined, this.exitError ?? new Error(`${this.name} has ended`));
      return seq;
    }
    this.pending.set(seq, onReply ?? ignore);
    if (this.pending.size === 1) this.port.ref();
    this.worker.postMessage({ ...message, seq }, transfer);
    return seq;
  }

  call(message: Req, transfer?: TransferListItem[]): Promise<Rep> {
    return new Promise((resolve, reject) => this.send(message, (r, err) => (err ? reject(err) : resolve(r!)), transfer));
  }

  /**
   * Blocks the calling thread until request `seq` is answered (other answers that come first
   * are handled in order), at most `timeoutMs`. Only for the history's flushAll(), tools and tests.
   */
  waitFor(seq: number, timeoutMs = 60_000): void {
    const end = performance.now() + timeoutMs;
    while (this.pending.has(seq)) {
      const seen = Atomics.load(this.answered, 0);
      this.drain();
      if (!this.pending.has(seq) || !this.alive) break;
      const left = end - performance.now();
      if (left <= 0 || Atomics.wait(this.answered, 0, seen, Math.min(left, 100)) === "timed-out") {
        if (performance.now() >= end) throw new Error(`${this.name} did not answer within ${timeoutMs} ms`);
        // An ended worker never bumps the counter: look again at whether it is alive.
        if (this.exitedQuietly()) break;
      }
    }
  }

  /** The request's answer, waited for without the event loop (see waitFor). */
  callSync(message: Req, timeoutMs?: number): Rep {
    let reply: Rep | undefined;
    let error: Error | undefined;
    const seq = this.send(message, (r, err) => {
      reply = r;
      error = err;
    });
    this.waitFor(seq, timeoutMs);
    if (error) throw error;
    if (reply === undefined) throw new Error(`${this.name} ended before it answered`);
    return reply;
  }

  /** Ends the worker once it has answered what it was sent (its handler closes its port). */
  async ended(): Promise<void> {
    // Held open until it has: a process that stops must not end before its worker.
    this.worker.ref();
    await this.exited;
  }

  /** Stops the worker at once; requests not answered get an error. */
  async terminate(): Promise<void> {
    this.worker.ref();
    if (this.alive) await this.worker.terminate();
    await this.exited;
  }

  private exitedQuietly(): boolean {
    // threadId is -1 once the thread has stopped, before the exit event is emitted.
    return this.worker.threadId === -1;
  }

  private drain(): void {
    for (let m = receiveMessageOnPort(this.port); m !== undefined; m = receiveMessageOnPort(this.port)) this.dispatch(m.message as Rep);
  }

  private dispatch(r: Rep): void {
    const handler = this.pending.get(r.seq);
    if (handler === undefined) return;
    this.pending.delete(r.seq);
    if (this.pending.size === 0) this.port.unref();
    handler(r.fault === undefined ? r : undefined, r.fault === undefined ? undefined : faultError(r.fault));
  }
}

function ignore(): void {}
