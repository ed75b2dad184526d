// Work that grows with the data (CreateMonitoredItems of 16,384 items, their deletion, a device
// map of 16,384 tags starting or reloading) runs in slices with a turn of the event loop between
// them (DESIGN: the event loop is a shared resource): the sampling slots that come due run in
// between.

import { loopTrace } from "./loop-trace.js";

/** Monitored items of one slice: ~3 µs each to create on this machine, so a slice stays well under 2 ms. */
export const ITEMS_PER_SLICE = 256;
/** Tags of one slice of a device's start: ~1-2 µs each per step (cache slots, nodes, poller). */
export const TAGS_PER_SLICE = 1024;

/** A turn of the event loop: timers (the sampling deadlines) and I/O run before the promise settles. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * `op` over `items` in slices of `size`, a turn between two: the results in order. `op` runs
 * at once for a request of one slice (the result is then not a promise).
 */
export function inSlices<I, R>(items: readonly I[], size: number, label: string, op: (part: readonly I[]) => R[]): R[] | Promise<R[]> {
  if (items.length <= size) return op(items);
  return (async () => {
    const out: R[] = [];
    for (let i = 0; i < items.length; i += size) {
      if (i > 0) await nextTurn();
      const start = performance.now();
      const part = op(items.slice(i, i + size));
      for (const r of part) out.push(r);
      loopTrace.end(label, start);
    }
    return out;
  })();
}

/**
 * Runs `steps` (a generator that yields where a slice may end) to its end: at once when `small`,
 * else one step per turn of the event loop, each timed for the loop trace under `label`.
 */
export function runSteps(steps: Generator<void, void, void>, small: boolean, label: string): void | Promise<void> {
  if (small) {
    while (!steps.next().done);
    return;
  }
  return (async () => {
    for (;;) {
      const start = performance.now();
      const done = steps.next().done;
      loopTrace.end(label, start);
      if (done) return;
      await nextTurn();
    }
  })();
}
