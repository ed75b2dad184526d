// The messages between the history writer (write-thread.ts) and its worker thread
// (write-worker.ts): what the worker starts with, what it is asked, and what it answers.
import type { DamagedFile } from "../storage/damaged.js";
import type { FaultInfo, Reply } from "../worker-link.js";
import type { MaintenanceOptions } from "./maintenance.js";
import type { HistoryStoreOptions } from "./store.js";

export interface WriteWorkerData {
  readonly file: string;
  readonly store: HistoryStoreOptions;
  readonly maintenance: MaintenanceOptions;
  readonly ring: SharedArrayBuffer;
  readonly capacity: number;
  /** Check the database (quick_check) before opening it: the first worker of a process. */
  readonly check: boolean;
  /** The spool file (spool.ts), when the writer has one. */
  readonly spool?: string;
}

export type WriteRequest =
  /** `replay`: store what the spool holds from an earlier run, then remove it. */
  | { readonly op: "open"; readonly replay?: boolean }
  | { readonly op: "declare"; readonly index: number; readonly key: string }
  | {
      readonly op: "tick";
      /** The batch: ring slots [from, from + count). */
      readonly from: number;
      readonly count: number;
      /** Encoded values of the batch's slots of the Other forms. */
      readonly slots?: number[];
      readonly values?: Uint8Array[];
      readonly now: number;
      /** Age retention waits: the clock is not known yet. */
      readonly holdAge: boolean;
    }
  | { readonly op: "compact" }
  | { readonly op: "close" };

export interface WriteReply extends Reply {
  readonly flushed?: number;
  readonly flushFault?: FaultInfo;
  readonly faults?: FaultInfo[];
  readonly retained?: number;
  readonly staged?: number;
  /** Files the worker moved aside since its last answer. */
  readonly damaged?: DamagedFile[];
  /** Samples of an earlier run's spool stored (the answer to an open with `replay`). */
  readonly replayed?: number;
}
