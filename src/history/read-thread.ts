// HistoryRead off the event loop: the main thread's side of the read worker (read-worker.ts).
//
// One job (one HistoryRead request) is in the worker at a time; the others wait here, at most
// maxQueued of them (more are refused with BadServerTooBusy: the client may try
// again). A job whose client has gone (its session or channel closed) while it waited is dropped
// before it reaches the worker; one already in the worker runs to its end and its answer is
// dropped by the channel. The worker starts with the first read and ends once no read has come
// for idleStop (60 s): its thread (an isolate, its modules, a SQLite connection and page cache)
// is memory a gateway whose historian reads once an hour would otherwise keep for nothing; the
// next read starts a new one (its start-up is off the event loop). stop()
// refuses what waits (BadShutdown) and ends the worker. A worker that dies (out of its heap bound)
// fails the job it had and is started again for the next.
//
// Before a job, the writer is asked to move what it staged into the tags' tables (prepare), and
// waited for at most prepareWait: its thread may be busy for long (checking a large database,
// storing a spool, waiting for a lock; every step of it slow on a slow CPU), and a read never
// waits for that. A job whose prepare did not say that the tables hold every flushed sample in
// time reads the staging table and the spool beside them (read-overlay.ts): the same values.
import type { ResourceLimits } from "node:worker_threads";
import { UaStatusError } from "../ua/errors.js";
import { StatusCodes } from "../ua/generated/status-codes.js";
import { withBodies, type EncodedNodeResult, type HistoryReadJob, type NodeReadResult } from "./read-job.js";
import { WorkerLink, type Reply } from "../worker-link.js";
import { builtFile } from "../worker-file.js";

export interface ReadWorkerData {
  readonly file: string;
  readonly cacheSize?: number;
  /** Where the worker encodes the bodies. */
  readonly bodies: SharedArrayBuffer;
  /** The writer's spool file (spool.ts), read by jobs with `overlay`. */
  readonly spool?: string;
}

export type ReadRequest =
  /** `overlay`: the tags' tables may lack flushed samples; read the staging table and the spool too. */
  | { readonly op: "read"; readonly job: HistoryReadJob; readonly overlay?: boolean }
  | { readonly op: "close" };

export interface ReadReply extends Reply {
  readonly results?: EncodedNodeResult[];
  /** The worker's new, bigger memory for the bodies (with this job's in it). */
  readonly bodies?: SharedArrayBuffer;
}

export interface ReadThreadOptions {
  /** The database file (the writer's). */
  readonly file: string;
  /** Requests waiting for the worker; more are refused. */
  readonly maxQueued: number;
  /** The read connection's page cache in bytes (default 4 MiB: reads are mostly sequential). */
  readonly cacheSize?: number;
  /**
   * Run before each job goes to the worker: the writer moves what it has staged. Resolves to
   * true when the tags' tables then hold every flushed sample; otherwise (false, a rejection, or
   * no answer within prepareWait) the job reads with the overlay.
   */
  readonly prepare?: () => Promise<boolean>;
  /** ms a job waits for prepare at most (default PREPARE_WAIT). */
  readonly prepareWait?: number;
  /** The writer's spool file, for the overlay. */
  readonly spool?: string;
  readonly resourceLimits?: ResourceLimits;
  /** ms without a read after which the worker ends (default IDLE_STOP; the next read starts one). */
  readonly idleStop?: number;
  readonly onError?: (err: unknown) => void;
}

interface Waiting {
  readonly job: HistoryReadJob;
  /** The bodies stay valid until releaseBodies (else for the turn the results come in). */
  readonly hold: boolean;
  readonly abandoned: (() => boolean) | undefined;
  readonly resolve: (results: NodeReadResult[]) => void;
  readonly reject: (err: unknown) => void;
}

const DEFAULT_CACHE = 4 << 20;
/** The bodies' shared memory to start with: a read of 100,000 Doubles is about 1.8 MB. */
const BODIES = 4 << 20;
/** Default ReadThreadOptions.idleStop: a historian that polls every few seconds keeps its worker. */
export const IDLE_STOP = 60_000;
/** Default ReadThreadOptions.prepareWait: a running writer moves what it staged in milliseconds. */
export const PREPARE_WAIT = 1000;

export class HistoryReadThread {
  private readonly options: ReadThreadOptions;
  private link: WorkerLink<ReadRequest, ReadReply> | undefined;
  private readonly waiting: Waiting[] = [];
  private current: Waiting | undefined;
  /** The results of the last job while their bodies (views of `bodies`) are in use: the next job waits. */
  private lent: readonly NodeReadResult[] | undefined;
  private stopped = false;
  private bodies: SharedArrayBuffer | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Workers ended for idleness that have not exited yet (stop() waits for them). */
  private readonly retiring = new Set<Promise<void>>();

  constructor(options: ReadThreadOptions) {
    this.options = options;
  }

  /** Worker threads running: 0 or 1, and those ended for idleness until they have exited. */
  get threads(): number {
    return (this.link?.alive ? 1 : 0) + this.retiring.size;
  }

  /** Jobs waiting, and the one in the worker. */
  get pending(): number {
    return this.waiting.length + (this.current ? 1 : 0);
  }

  /**
   * Runs a job in the worker. `abandoned` is asked before it starts: true drops it (rejected
   * with BadSessionClosed; nobody is waiting for the answer). The results' bodies are views of
   * the worker's shared memory: valid for the turn they come in, or with `hold` until
   * releaseBodies(results), before which no other job starts.
   */
  read(job: HistoryReadJob, abandoned?: () => boolean, hold = false): Promise<NodeReadResult[]> {
    if (this.stopped) return Promise.reject(new UaStatusError(StatusCodes.BadShutdown));
    if (this.waiting.length >= this.options.maxQueued) return Promise.reject(new UaStatusError(StatusCodes.BadServerTooBusy, `${this.waiting.length} HistoryRead requests waiting`));
    this.disarm();
    return new Promise((resolve, reject) => {
      this.waiting.push({ job, hold, abandoned, resolve, reject });
      this.next();
    });
  }

  /**
   * The bodies of `results` (the last job's) are no longer needed (the response that carries
   * them is laid out, over one or several turns of the loop): the next job may overwrite them.
   */
  releaseBodies(results: readonly NodeReadResult[]): void {
    if (this.lent !== results) return;
    this.lent = undefined;
    setImmediate(next, this);
  }

  /** @internal Starts the next job that waits. */
  next(): void {
    if (this.current !== undefined || this.lent !== undefined || this.stopped) return;
    const w = this.waiting.shift();
    if (w === undefined) {
      this.armIdle();
      return;
    }
    if (w.abandoned?.()) {
      w.reject(new UaStatusError(StatusCodes.BadSessionClosed, "the client has gone"));
      this.next();
      return;
    }
    this.current = w;
    const prepare = this.options.prepare;
    if (prepare === undefined) {
      this.run(w, false);
      return;
    }
    let settled = false;
    const go = (complete: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      this.run(w, !complete);
    };
    const timer = setTimeout(go, this.options.prepareWait ?? PREPARE_WAIT, false);
    prepare().then(go, (err: unknown) => {
      // The writer's trouble is its own (reported by it): the read goes on with the overlay.
      this.options.onError?.(err);
      go(false);
    });
  }

  private run(w: Waiting, overlay: boolean): void {
    if (this.stopped || this.current !== w) return;
    this.worker().send({ op: "read", job: w.job, overlay }, (r, err) => this.finish(w, r, err));
  }

  private finish(w: Waiting, r: ReadReply | undefined, err: unknown): void {
    if (this.current !== w) return;
    this.current = undefined;
    if (err !== undefined || r?.results === undefined) {
      const code = (err as { code?: string } | undefined)?.code;
      this.options.onError?.(err);
      w.reject(new UaStatusError(code === "ERR_WORKER_OUT_OF_MEMORY" ? StatusCodes.BadOutOfMemory : StatusCodes.BadInternalError, err instanceof Error ? err.message : "no answer"));
      setImmediate(next, this);
      return;
    }
    if (r.bodies) this.bodies = r.bodies;
    // The next job overwrites the bodies: it starts after this turn, in which the awaiting
    // service has copied them, or with `hold` once the caller has released them (releaseBodies:
    // the response that carries them is laid out over several turns).
    const results = withBodies(r.results, new Uint8Array(this.bodies!));
    if (w.hold) this.lent = results;
    else setImmediate(next, this);
    w.resolve(results);
  }

  private armIdle(): void {
    if (this.link === undefined || this.idleTimer !== undefined) return;
    this.idleTimer = setTimeout(retireIdle, this.options.idleStop ?? IDLE_STOP, this);
    this.idleTimer.unref();
  }

  private disarm(): void {
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  /** @internal The idle timer's work: ends the worker when no read came meanwhile. */
  retire(): void {
    this.idleTimer = undefined;
    const link = this.link;
    if (link === undefined || this.current !== undefined || this.lent !== undefined || this.waiting.length > 0 || this.stopped) return;
    // A read that comes while it ends gets a new worker.
    this.link = undefined;
    this.bodies = undefined;
    const ended = endLink(link).finally(() => this.retiring.delete(ended));
    this.retiring.add(ended);
  }

  /**
   * The database file was replaced (a damaged one moved aside): the worker's connection is on
   * the old file. It ends after the job it runs; the next job starts a worker on the new one.
   */
  reopen(): void {
    const link = this.link;
    if (link === undefined) return;
    this.link = undefined;
    const ended = endLink(link).finally(() => this.retiring.delete(ended));
    this.retiring.add(ended);
  }

  private worker(): WorkerLink<ReadRequest, ReadReply> {
    if (this.link?.alive) return this.link;
    this.bodies = new SharedArrayBuffer(BODIES);
    const data: ReadWorkerData = { file: this.options.file, cacheSize: this.options.cacheSize ?? DEFAULT_CACHE, bodies: this.bodies, spool: this.options.spool };
    this.link = new WorkerLink<ReadRequest, ReadReply>(builtFile("history/read-worker"), data, { name: "history read worker", resourceLimits: this.options.resourceLimits });
    return this.link;
  }

  /** Refuses what waits and what runs (BadShutdown) and ends the worker. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.disarm();
    const refused = [...this.waiting];
    if (this.current) refused.push(this.current);
    this.waiting.length = 0;
    this.current = undefined;
    for (const w of refused) w.reject(new UaStatusError(StatusCodes.BadShutdown));
    const link = this.link;
    this.link = undefined;
    await Promise.all([...this.retiring]);
    if (link?.alive) await endLink(link);
  }
}

/** Has the worker close its connection and end, after the job it may be running. */
async function endLink(link: WorkerLink<ReadRequest, ReadReply>): Promise<void> {
  try {
    // A job of 100,000 values takes a fraction of a second.
    await Promise.race([link.call({ op: "close" }).then(() => link.ended()), new Promise<void>((r) => setTimeout(r, 5000).unref())]);
  } catch {
    // it ended on its own
  }
  await link.terminate();
}

function next(reader: HistoryReadThread): void {
  reader.next();
}

function retireIdle(reader: HistoryReadThread): void {
  reader.retire();
}
