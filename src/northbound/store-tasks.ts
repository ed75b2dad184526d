// The edge node's work on its store-and-forward file that does not depend on the MQTT session
// (DESIGN: Northbound; the event loop is shared): a device's changes staged while there is no
// session to publish in and committed one slice per task, the retention run every few seconds in
// chunks, and the store ids of every tag made ahead in slices, so that an outage of a large map
// stages rows without inserting names.
import { performance } from "node:perf_hooks";
import { SLICE_MS } from "./births.js";
import { storeChanges } from "./device-data.js";
import type { DeviceRecord } from "./device-records.js";
import type { ForwardStore } from "./forward-store.js";
import type { ValueCache } from "../values/value-cache.js";

/** How often retention runs (maxAge, maxSize). */
const RETENTION_MS = 5000;

export class StoreTasks {
  private committing = false;
  private running = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: ForwardStore,
    private readonly values: ValueCache,
  ) {}

  start(): void {
    this.running = true;
    this.timer = setInterval(() => this.retention(), RETENTION_MS);
    this.timer.unref();
  }

  /** No slice runs after this; the store may be closed. */
  stop(): void {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Stages the device's pending changes and commits them soon. */
  storeDevice(rec: DeviceRecord): void {
    if (rec.pendingCount === 0) return;
    storeChanges(rec, this.store, this.values, Date.now());
    this.commitSoon();
  }

  /** Store ids for every tag of `records`, made in slices. */
  prepareIds(records: readonly DeviceRecord[]): void {
    const recs = [...records];
    let r = 0;
    let i = 0;
    const step = (): void => {
      if (!this.running) return;
      const deadline = performance.now() + SLICE_MS;
      for (; r < recs.length; r++, i = 0) {
        const rec = recs[r]!;
        for (; i < rec.tags.length; i++) {
          if (rec.storeIds[i] === 0) rec.storeIds[i] = this.store.metricId(rec.name, rec.tags[i]!.name);
          if ((i & 63) === 63 && performance.now() > deadline) {
            i++;
            setImmediate(step);
            return;
          }
        }
      }
    };
    setImmediate(step);
  }

  /** Commits staged changes, one slice per task. */
  private commitSoon(): void {
    if (this.committing) return;
    this.committing = true;
    setImmediate(() => {
      this.committing = false;
      if (this.running && this.store.commit() > 0) this.commitSoon();
    });
  }

  private retention(): void {
    if (this.running && this.store.retain() > 0) setImmediate(() => this.retention());
  }
}
