// The request queue of a link: pooled jobs in one singly linked FIFO, so queueing a request
// allocates nothing but its Promise.
import type { DeviceLinkCounters, DriverError } from "../../src/devices/driver.js";
import type { ModbusUnitHealth } from "./options.js";

export type JobResult = Uint16Array | Uint8Array | undefined;

export class UnitStats implements ModbusUnitHealth, DeviceLinkCounters {
  requests = 0;
  errors = 0;
  timeouts = 0;
  exceptions = 0;
  mismatchedReplies = 0;
  lastError: string | undefined = undefined;
  lastRoundTrip: number | undefined = undefined;
}

export class Job {
  fc = 0;
  unitId = 0;
  address = 0;
  count = 0;
  values: Uint16Array | Uint8Array | null = null;
  /** FC5/FC6 sequences (forceSingleRegisterWrite): index of the next item; `steps` in all. */
  step = 0;
  steps = 1;
  busyLeft = 0;
  backoff = 0;
  /** Busy backoff: not to be sent before this time (performance.now() ms). */
  notBefore = 0;
  sentAt = 0;
  sawBadFrame = false;
  /** The last reply received for another request while this one was in flight, in words; "" when none. */
  mismatch = "";
  /** How many such replies. */
  mismatches = 0;
  unit: UnitStats | null = null;
  resolve: ((v: JobResult) => void) | null = null;
  reject: ((e: DriverError) => void) | null = null;
  next: Job | null = null;
}

/**
 * A whole, well-formed reply received while `job` was in flight that is not its answer: counted
 * for the job's device (DeviceLinkCounters) and named in the job's failure if it fails.
 */
export function noteMismatch(job: Job, what: string): void {
  job.mismatch = what;
  job.mismatches++;
  job.unit!.mismatchedReplies++;
}

const POOL = 32;

// The Promise executor is module-level: it hands resolve/reject over through these two slots,
// so making a request's promise creates no closure of our own.
let capturedResolve: Job["resolve"] = null;
let capturedReject: Job["reject"] = null;
function capture(resolve: NonNullable<Job["resolve"]>, reject: NonNullable<Job["reject"]>): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

export class JobQueue {
  head: Job | null = null;
  private tail: Job | null = null;
  length = 0;
  private readonly pool: Job[] = [];

  /** A job from the pool with its promise; the caller fills the request fields. */
  acquire(): { job: Job; promise: Promise<JobResult> } {
    const job = this.pool.pop() ?? new Job();
    const promise = new Promise<JobResult>(capture);
    job.resolve = capturedResolve;
    job.reject = capturedReject;
    capturedResolve = capturedReject = null;
    return { job, promise };
  }

  release(job: Job): void {
    job.resolve = job.reject = null;
    job.values = null;
    job.unit = null;
    job.next = null;
    if (this.pool.length < POOL) this.pool.push(job);
  }

  push(job: Job): void {
    job.next = null;
    if (this.tail === null) this.head = job;
    else this.tail.next = job;
    this.tail = job;
    this.length++;
  }

  pushFront(job: Job): void {
    job.next = this.head;
    this.head = job;
    if (this.tail === null) this.tail = job;
    this.length++;
  }

  /** Unlinks and returns the first job whose busy backoff has passed, or null. */
  takeReady(now: number): Job | null {
    let prev: Job | null = null;
    for (let j = this.head; j !== null; prev = j, j = j.next) {
      if (j.notBefore > now) continue;
      if (prev === null) this.head = j.next;
      else prev.next = j.next;
      if (this.tail === j) this.tail = prev;
      j.next = null;
      this.length--;
      return j;
    }
    return null;
  }

  /** The earliest time a queued job may be sent. */
  soonest(): number {
    let t = Infinity;
    for (let j = this.head; j !== null; j = j.next) if (j.notBefore < t) t = j.notBefore;
    return t;
  }

  /** Empties the queue and returns its jobs as a chain (through `next`). */
  drain(): Job | null {
    const head = this.head;
    this.head = this.tail = null;
    this.length = 0;
    return head;
  }
}
