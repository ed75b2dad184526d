// The V8 flags (and the one malloc setting) the gateway runs with: src/cli.ts's shebang (the installed `fieldgate` command,
// so the systemd service), `npm start`, the bench's fieldgate target and the soak all use these
// (test/cli/runtime-flags.test.ts checks that the first two say the same).
import { setFlagsFromString } from "node:v8";

// Each flag, and the V8 defaults kept, for a gateway whose event loop must meet 10 ms sampling
// deadlines, often pinned to one core (bench/RESULTS.md, "From src/runtime-flags.ts", has the
// measurements and the flags tried and refused):
// - --single-threaded-gc: on one core V8's concurrent marker shares the CPU with the main thread,
//   and incremental marking steps that wait for it hold the loop past deadlines.
// - no --optimize-for-size: it keeps the old generation at its live size, so a large heap runs a
//   full GC every second or so, each one longer than a slot.
// - --heap-growing-percent=50: the old generation grows to 1.5 x its live size before the next
//   full GC (V8's default lets it grow several times, and RSS with it).
// - --max-semi-space-size=2: a small young generation keeps each scavenge short.
// - --no-concurrent-recompilation: optimizing compiles run on the main thread, each a task of
//   the loop while the sampling and publishing paths warm up, and on the first seconds after a
//   first start and a reload. Compiling on helper threads instead, on a gateway pinned to one
//   core, costs every Read CPU for good, and the Read rate must not drop. A generator with hot
//   loops compiles whole, so such loops are functions of their own. A smaller inlining budget
//   shortens those compiles but makes every Read dearer.
// - the memory reducer stays on (V8's default): it runs a full GC some seconds after the
//   allocation rate drops, one atomic pause that no slot between two deadlines can avoid on a
//   large heap; without it the heap keeps what a burst grew it to. Memory coming back after an
//   attack decides it.
// - --harmony-rab-gsab-transfer: ArrayBuffer's transfer() (ES2024; standard from Node 21 on,
//   where this flag must go), with which the transport frees each socket read as soon as it is
//   handled (src/transport/chunk-framer.ts freeRead) instead of leaving it as garbage until V8
//   has counted tens of MB of it.
// - --expose-gc: with it, once a burst is over, the server runs one compacting GC that gives
//   back the old generation's pages the burst left (src/server/heap-return.ts says when and why:
//   the memory reducer does not always run after an attack). Nothing else calls gc().
export const GATEWAY_NODE_FLAGS: readonly string[] = [
  "--max-semi-space-size=2",
  "--single-threaded-gc",
  "--heap-growing-percent=50",
  "--no-concurrent-recompilation",
  "--harmony-rab-gsab-transfer",
  "--expose-gc",
];

/**
 * The environment the gateway runs with, beside its flags (the same places set it).
 *
 * MALLOC_MMAP_THRESHOLD_=65536 (glibc mallopt(3), M_MMAP_THRESHOLD): allocations of 64 KiB and
 * more get pages of their own that go back to the system when freed. Without a fixed threshold
 * glibc serves the first large block with mmap but then raises its threshold past every size it
 * has freed once, so later ones come from the heap or a worker thread's malloc arena, which keep
 * them resident: socket reads and the transport's buffer slabs after an attack, and a login's
 * scrypt (16 MiB of working memory, src/sessions/users.ts), one block for good per libuv worker
 * thread (bench/RESULTS.md, "From src/runtime-flags.ts").
 *
 * MALLOC_ARENA_MAX=1 (mallopt(3), M_ARENA_MAX): every thread allocates from the one arena. Each
 * thread that allocates otherwise gets an arena of its own, which keeps its pages after the thread
 * has ended: a first start's validation and certificate threads, the history's threads that come
 * and go. Small blocks still come from each thread's own cache (glibc's tcache) without the lock;
 * Reads and the history's writes cost the same (bench/RESULTS.md, "One malloc arena").
 */
export const GATEWAY_ENV: Readonly<Record<string, string>> = Object.freeze({ MALLOC_MMAP_THRESHOLD_: "65536", MALLOC_ARENA_MAX: "1" });

/** GATEWAY_ENV as `NAME=value` words, as the shebang and `npm start` write them. */
export function gatewayEnvWords(): string {
  return Object.entries(GATEWAY_ENV)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}

/**
 * Node's own modules (node:net, node:tls, node:worker_threads, ...) are compiled from a code cache
 * built into the node binary, which V8 accepts only when its flags hash the same as at the
 * cache's build (v8.cachedDataVersionTag()). Four of the flags above change that hash
 * (--single-threaded-gc and --no-concurrent-recompilation do not): with them every Node module
 * the gateway imports was compiled from source and a new cache of it kept in memory
 * (bench/RESULTS.md, "Node's code cache and the gateway's flags").
 *
 * Three of them are read once, as V8 makes the heap and the main context: the young
 * generation's size, gc() and ArrayBuffer's transfer() are in place before any module of ours
 * runs. src/cli.ts turns them back to V8's defaults as its first act (settleStartFlags), and the
 * hash is the binary's again. --heap-growing-percent is read at every full GC, so it is set again
 * once the gateway has started (restoreRunningFlags): only Node modules first loaded after that
 * (a worker thread's) miss the built-in cache, as all did before.
 */
const READ_AT_START: Readonly<Record<string, string>> = {
  "--max-semi-space-size=2": "--max-semi-space-size=0",
  "--harmony-rab-gsab-transfer": "--no-harmony-rab-gsab-transfer",
  "--expose-gc": "--no-expose-gc",
};
const READ_WHILE_RUNNING: Readonly<Record<string, string>> = {
  "--heap-growing-percent=50": "--heap-growing-percent=0",
};

/**
 * The young generation of a worker thread: V8's is two semi-spaces and a large-object space of
 * the same size, so 6 MB is --max-semi-space-size=2's, which no longer reaches a worker's heap
 * once settleStartFlags has run.
 */
export const WORKER_YOUNG_GENERATION_MB = 6;

/** The flags of `table` that `execArgv` (the process's) holds. */
function present(table: Readonly<Record<string, string>>, execArgv: readonly string[]): string[] {
  return Object.keys(table).filter((f) => execArgv.includes(f));
}

/**
 * Turns back to V8's defaults the gateway flags this process started with that V8 has already
 * applied, and --heap-growing-percent until restoreRunningFlags. Returns the flags turned back.
 */
export function settleStartFlags(execArgv: readonly string[] = process.execArgv): string[] {
  const settled = [...present(READ_AT_START, execArgv), ...present(READ_WHILE_RUNNING, execArgv)];
  for (const f of settled) setFlagsFromString(READ_AT_START[f] ?? READ_WHILE_RUNNING[f]!);
  return settled;
}

/** Sets again the flags V8 reads while running that settleStartFlags turned back. */
export function restoreRunningFlags(execArgv: readonly string[] = process.execArgv): void {
  for (const f of present(READ_WHILE_RUNNING, execArgv)) setFlagsFromString(f);
}
