// The history database's upkeep beside the flushes, on the connection that writes: moving
// staged samples into their tags' tables (store.ts explains the staging table), and retention by
// age and by size, each a bounded step per writer tick.
import type { HistoryStore, Series } from "./store.js";

export interface MaintenanceOptions {
  /** Samples written per transaction by the writer: sizes the steps below. */
  readonly flushCount: number;
  /** Samples older than this (ms) are deleted; 0 keeps them. */
  readonly maxAge?: number;
  /** ms between moves of staged samples into their tags' tables (default 60 s; see store.ts). */
  readonly compactInterval?: number;
  /** Staged samples that trigger a move before compactInterval (default 50,000). */
  readonly compactCount?: number;
  /** Rows retention may delete per tick (default max(10000, 2 * flushCount)). */
  readonly retentionBudget?: number;
}

const AGE_CHECK_INTERVAL = 10_000;

export class StoreMaintenance {
  private readonly store: HistoryStore;
  private readonly options: MaintenanceOptions;
  private nextAgeCheck = 0;
  private ageCursor = 0;
  private sizeCutoff: number | undefined;
  private trimming = false;
  private compacting = false;
  private lastCompaction: number;

  constructor(store: HistoryStore, options: MaintenanceOptions, now: number) {
    this.store = store;
    this.options = options;
    this.lastCompaction = now;
  }

  /** A write failed on the size cap (max_page_count) before retention caught up: trim first. */
  full(): void {
    this.trimming = true;
  }

  /**
   * One bounded step of retention: rows older than maxAge (unless `holdAge`: the clock is not
   * known yet, and a clock ahead of time would delete recent history), then the oldest rows
   * while the database holds more than its size budget. Returns the rows deleted.
   */
  retain(now: number, holdAge: boolean): number {
    let budget = this.options.retentionBudget ?? Math.max(10_000, 2 * this.options.flushCount);
    const start = budget;
    const maxAge = this.options.maxAge ?? 0;
    const all = [...this.store.allSeries()];
    if (all.length === 0) return 0;
    // No enclosing transaction: every delete commits on its own (store.deleteBefore), so the WAL
    // can be checkpointed between them and stays within its budget.
    if (maxAge > 0 && !holdAge && now >= this.nextAgeCheck) {
      const cutoff = now - maxAge;
      while (budget > 0 && this.ageCursor < all.length) {
        const deleted = this.store.deleteBefore(all[this.ageCursor], cutoff, budget);
        budget -= deleted;
        if (budget > 0) this.ageCursor++;
      }
      if (this.ageCursor >= all.length) {
        this.ageCursor = 0;
        this.nextAgeCheck = now + AGE_CHECK_INTERVAL;
      }
    }
    budget = this.trimToSize(all, budget);
    this.shrinkFile();
    return start - budget;
  }

  /** Size retention: deletes the oldest samples of every series, a time step at a time. */
  private trimToSize(all: readonly Series[], budget: number): number {
    const fileBudget = this.store.fileBudget;
    if (fileBudget === 0) return budget;
    const used = this.store.usedBytes();
    if (used > fileBudget * 0.9) this.trimming = true;
    while (this.trimming && budget > 0) {
      if (this.store.usedBytes() <= fileBudget * 0.75) {
        this.trimming = false;
        this.sizeCutoff = undefined;
        break;
      }
      if (this.sizeCutoff === undefined) {
        let oldest = Infinity;
        let newest = -Infinity;
        for (const s of all) {
          const o = this.store.oldest(s, false);
          if (o !== undefined && o < oldest) oldest = o;
          const n = this.store.newest(s, false);
          if (n !== undefined && n > newest) newest = n;
        }
        if (oldest === Infinity) {
          this.trimming = false;
          break;
        }
        // A twentieth of the stored time span per step: fair to every series, and bounded.
        this.sizeCutoff = oldest + Math.max(1000, (newest - oldest) / 20);
      }
      let removed = 0;
      for (const s of all) {
        if (budget <= 0) break;
        const d = this.store.deleteBefore(s, this.sizeCutoff, budget);
        removed += d;
        budget -= d;
      }
      if (budget > 0 || removed === 0) this.sizeCutoff = undefined; // this step is done
    }
    return budget;
  }

  /**
   * Gives free pages back when the file itself is over its budget (a database opened with a
   * smaller maxSize than it has grown to). Within the budget free pages stay for reuse: moving
   * pages around to shrink a file that will grow again only wears the card.
   */
  private shrinkFile(): void {
    const fileBudget = this.store.fileBudget;
    if (fileBudget === 0 || this.store.fileBytes() <= fileBudget) return;
    this.trimming = true;
    const free = this.store.freePages();
    if (free > 0) {
      this.store.incrementalVacuum(Math.min(free, 256));
      this.store.applyPageLimit();
    }
  }

  /**
   * Moves staged samples into their tags' tables when due (compactInterval, compactCount), a
   * bounded number per tick until the staging table is empty.
   */
  compactStep(now: number): void {
    const staged = this.store.staged;
    if (staged === 0) return;
    // Under a size cap the staging table may hold an eighth of the budget (rows of ~32 bytes).
    const budget = this.store.fileBudget;
    const threshold = Math.min(this.options.compactCount ?? 50_000, budget > 0 ? Math.max(100, budget / 256) : Infinity);
    if (!this.compacting && staged < threshold && now - this.lastCompaction < (this.options.compactInterval ?? 60_000)) return;
    this.compacting = true;
    this.store.compact(Math.max(20_000, 2 * this.options.flushCount));
    if (this.store.staged === 0) {
      this.compacting = false;
      this.lastCompaction = now;
    }
  }
}
