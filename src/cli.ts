#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=65536 MALLOC_ARENA_MAX=1 node --max-semi-space-size=2 --single-threaded-gc --heap-growing-percent=50 --no-concurrent-recompilation --harmony-rab-gsab-transfer --expose-gc
// `fieldgate run | validate | cert | update | import | export`: the entry point of the gateway service and of its operators' tools.
// The environment and the V8 flags above are src/runtime-flags.ts's, which says why each.
//
// The code it runs (src/main.ts and what it imports) comes from one bundled file that `npm run
// build` makes of the compiled modules (src/build/bundle.ts, dist/bundle/): importing the
// gateway's modules one by one takes about twice as long on a start and leaves more memory
// behind (bench/RESULTS.md). Without a fresh bundle it runs the compiled modules themselves
// (src/worker-file.ts chooses, as for workers).
import { settleStartFlags } from "./runtime-flags.js";
import { holdSignals } from "./signals.js";
import { builtFile } from "./worker-file.js";

// First: V8 has applied the flags it reads at start, and Node's modules from here on are compiled
// from the node binary's own code cache (src/runtime-flags.ts).
settleStartFlags();
// Before anything else is loaded: a SIGHUP or SIGTERM from here on is kept for main.ts to act on
// (src/signals.ts), not the end of a half-started process.
holdSignals();

// `settings` and `network` run at every boot before the gateway: their own entry (src/settings-main.ts).
const own = process.argv[2] === "settings" || process.argv[2] === "network";
await import(builtFile(own ? "settings-main" : "main").href);
