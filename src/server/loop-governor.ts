// Between client requests, the sampling deadlines come first. Node runs timers only once per
// turn of its loop, after every ready I/O callback: ten busy connections whose socket reads
// take 0.3-1 ms each (hundreds of small Reads) would make a sampling slot up to that much late
// times ten. So the scheduler runs any slot that came due: after each socket read (which is
// also timed for the loop trace) and every 16 requests within one (one clock read each).
// Slots run between two requests, never inside one: the previous response is queued whole.
import type { LoopTrace } from "../sampling/loop-trace.js";
import type { DeadlineScheduler } from "../sampling/scheduler.js";
import type { TaskTimer } from "../transport/tcp-connection.js";
import type { OutputPacer } from "../transport/output-slicer.js";
import type { SliceGate } from "../sampling/slices.js";
import { noteClientWork } from "../sampling/precise-timer.js";

export class LoopGovernor implements TaskTimer {
  constructor(
    private readonly scheduler: DeadlineScheduler,
    private readonly trace: LoopTrace,
  ) {}

  afterRead(start: number): void {
    this.trace.end(this.trace.readLabel(), start);
    noteClientWork();
    this.scheduler.runDue();
  }

  /** Between two requests of one read (every 16th: the dispatcher's yield point). */
  between(): void {
    noteClientWork();
    this.scheduler.runDue();
  }
}

/** The later slices of a large response, timed for the loop trace under one label. */
const RESPONSE_SLICE = "a response's later slice";

/**
 * The slices of a large response (transport/output-slicer.ts) end where the server's SliceGate
 * says: 1 ms, or 0.5 ms before the next sampling deadline; the next runs after a turn, with the
 * slots due by then run first (and after the deadline when it is too near for a slice).
 */
export class ResponsePacer implements OutputPacer {
  constructor(
    private readonly gate: SliceGate,
    private readonly trace: LoopTrace,
  ) {}

  now(): number {
    return this.gate.now();
  }

  end(): number {
    return this.gate.end();
  }

  later<A>(fn: (arg: A) => void, arg: A): void {
    this.gate.later(timedSlice<A>, { fn, arg, trace: this.trace });
  }
}

interface Slice<A> {
  readonly fn: (arg: A) => void;
  readonly arg: A;
  readonly trace: LoopTrace;
}

function timedSlice<A>(s: Slice<A>): void {
  const start = performance.now();
  s.fn(s.arg);
  s.trace.end(RESPONSE_SLICE, start);
}
