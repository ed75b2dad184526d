// The load functions a load process can run, by name. A scenario's load runs either in a
// separate process pinned to its own core (the harness default) or in the caller's process
// (tests); both go through this table so that the two paths run the same code.
// A scenario in its own module can skip this table: `runModuleLoad(import.meta.url, "fnName", ...)`
// in harness/load-process.ts runs any exported load function in the load process.
import { runConnectLoad } from "./connect-load.js";
import { runReadLoad } from "./read-load.js";
import { runServiceLoad } from "./service-load.js";
import { runSubLoad } from "./sub-load.js";

export const LOADS = {
  read: runReadLoad,
  service: runServiceLoad,
  connect: runConnectLoad,
  sub: runSubLoad,
} as const;

export type LoadName = keyof typeof LOADS;
export type LoadParams<N extends LoadName> = Parameters<(typeof LOADS)[N]>[0];
export type LoadResult<N extends LoadName> = Awaited<ReturnType<(typeof LOADS)[N]>>;
