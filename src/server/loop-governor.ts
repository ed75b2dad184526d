// Between client requests, the sampling deadlines come first. Node runs timers only once per
// turn of its loop, after every ready I/O callback: ten busy connections whose socket reads
// take 0.3-1 ms each (hundreds of small Reads) would make a sampling slot up to that much late
// times ten. So the scheduler runs any slot that came due: after each socket read (which is
// also timed for the loop trace) and every 16 requests within one (one clock read each).
// Slots run between two requests, never inside one: the previous response is queued whole.
// After each socket read, the sliced work that goes before client requests (the rest of a
// Publish: Slicer.soon) gets its next slice too, so ten busy connections do not each take a
// read before it.
// Task starts (socket-events.ts) are read on the monotonic clock, the scheduler's and the loop
// trace's in the gateway (compose.ts: systemClock).
import type { LoopTrace } from "../sampling/loop-trace.js";
import type { DeadlineScheduler } from "../sampling/scheduler.js";
import type { Slicer } from "../sampling/slices.js";
import type { TaskTimer } from "../transport/tcp-connection.js";
import { noteClientWork } from "../sampling/precise-timer.js";

export class LoopGovernor implements TaskTimer {
  constructor(
    private readonly scheduler: DeadlineScheduler,
    private readonly trace: LoopTrace,
    private readonly slicer: Pick<Slicer, "runSoon">,
  ) {}

  afterRead(start: number): void {
    // One clock read for the three: the scheduler's clock is the loop trace's (compose.ts).
    const now = this.scheduler.now;
    this.trace.end(this.trace.readLabel(), start, now);
    noteClientWork(now);
    this.scheduler.runDue(now);
    this.slicer.runSoon();
  }

  /** Between two requests of one read (every 16th: the dispatcher's yield point). */
  between(): void {
    const now = this.scheduler.now;
    noteClientWork(now);
    this.scheduler.runDue(now);
  }
}
