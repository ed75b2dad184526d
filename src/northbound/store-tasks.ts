// The edge node's work on its store-and-forward file that does not depend on the MQTT session
// (DESIGN: Northbound; the event loop is shared): a device's changes staged while there is no
// session to publish in and committed in the gateway's slices, the retention run every few seconds
// in chunks, and the store ids of every tag made ahead in slices, so that an outage of a large map
// stages rows without inserting names.
import type { Slicer } from "../sampling/slices.js";
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
    private readonly slicer: Slicer,
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

  /** Store ids for every tag of `records`, made in the gateway's slices. */
  prepareIds(records: readonly DeviceRecord[]): void {
    const recs = [...records];
    let r = 0;
    let i = 0;
    const slicer = this.slicer;
    const step = (): void => {
      if (!this.running) return;
      const end = slicer.end();
      for (; r < recs.length; r++, i = 0) {
        const rec = recs[r]!;
        for (; i < rec.tags.length; i++) {
          if (rec.storeIds[i] === 0) rec.storeIds[i] = this.store.metricId(rec.name, rec.tags[i]!.name);
          if ((i & 63) === 63 && slicer.now() >= end) {
            i++;
            slicer.later(step, undefined, IDS_LABEL);
            return;
          }
        }
      }
    };
    slicer.later(step, undefined, IDS_LABEL);
  }

  /** Commits staged changes in the gateway's slices (each commit one transaction of the store's). */
  private commitSoon(): void {
    if (this.committing) return;
    this.committing = true;
    this.slicer.later(commitSlice, this, COMMIT_LABEL);
  }

  /** @internal Commits until the slice is spent or nothing is staged. */
  commitSome(): void {
    this.committing = false;
    if (!this.running) return;
    const end = this.slicer.end();
    let left = this.store.commit();
    while (left > 0 && this.slicer.now() < end) left = this.store.commit();
    if (left > 0) this.commitSoon();
  }

  /** Retention (maxAge, maxSize) in bounded deletes, in the gateway's slices. */
  private retention(): void {
    if (!this.running) return;
    const end = this.slicer.end();
    let more = this.store.retain() > 0;
    while (more && this.slicer.now() < end) more = this.store.retain() > 0;
    if (more) this.slicer.later(retentionSlice, this, RETENTION_LABEL);
  }

  /** @internal */
  retentionSome(): void {
    this.retention();
  }
}

/** The loop trace's names of the store's slices. */
const IDS_LABEL = "Sparkplug store ids (a slice)";
const COMMIT_LABEL = "Sparkplug store commit (a slice)";
const RETENTION_LABEL = "Sparkplug store retention (a slice)";

function commitSlice(tasks: StoreTasks): void {
  tasks.commitSome();
}

function retentionSlice(tasks: StoreTasks): void {
  tasks.retentionSome();
}
