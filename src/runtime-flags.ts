// The V8 flags (and the one malloc setting) the gateway runs with: src/cli.ts's shebang (the installed `fieldgate` command,
// so the systemd service), `npm start`, the bench's fieldgate target and the soak all use these
// (test/cli/runtime-flags.test.ts checks that the first two say the same).
//
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
 */
export const GATEWAY_ENV: Readonly<Record<string, string>> = Object.freeze({ MALLOC_MMAP_THRESHOLD_: "65536" });

/** GATEWAY_ENV as `NAME=value` words, as the shebang and `npm start` write them. */
export function gatewayEnvWords(): string {
  return Object.entries(GATEWAY_ENV)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}
