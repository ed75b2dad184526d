// The load functions a load process can run, by name. A scenario's load runs either in a
// separate process pinned to its own core (the harness default) or in the caller's process
// (tests); both go through this table so that the two paths run the same code.
import { runReadLoad } from "./read-load.js";

export const LOADS = {
  read: runReadLoad,
} as const;

export type LoadName = keyof typeof LOADS;
export type LoadParams<N extends LoadName> = Parameters<(typeof LOADS)[N]>[0];
export type LoadResult<N extends LoadName> = Awaited<ReturnType<(typeof LOADS)[N]>>;
