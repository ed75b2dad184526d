// The V8 flags (and the one malloc setting) the gateway runs with: src/cli.ts's shebang (the installed `fieldgate` command,
// so the systemd service), `npm start`, the bench's fieldgate target and the soak all use these
// (test/cli/runtime-flags.test.ts checks that the first two say the same).
//
// Measured on this 2-core machine, the server pinned to one core (bench counters with 16,384
// items at 10 ms; Read 10 x 100; idle with 10,000 tags), against the earlier
// --optimize-for-size --no-concurrent-recompilation:
// - --single-threaded-gc: on one core, V8's concurrent marker shares the CPU with the main
//   thread, and incremental marking steps that wait for it took 10-20 ms each (16 KB marked in
//   16.8 ms): every full GC skipped slots. Single-threaded, the steps stay under ~1.5 ms.
// - no --optimize-for-size: it keeps the old generation at live size x 1.1, so with 16,384
//   items (a 40 MB heap) a full "reduce" GC ran every ~1.2 s, ~25 ms each: 2-3 % of the 10 ms
//   slots skipped, every item short of its samples. Without it: none in steady state.
// - --heap-growing-percent=50: the old generation may grow to 1.5 x its live size before the
//   next full GC (V8's default lets it reach ~4 x: RSS 90 instead of 71 MB under Read load).
// - --max-semi-space-size=2: a young generation of 2 x 2 MB; scavenges stay ~0.5 ms.
// - --no-concurrent-recompilation: optimizing compiles on the main thread. Each then runs on the
//   event loop, 2-10 ms (--trace-opt at 1,024 counters: listOnTimeout 10.4 ms, skipReportOf
//   9.8, poll 8.3, runSlot 8.2), and each is a late slot: lateness p99.9 at 1,024 items 8.6-9.0
//   ms with it, 3.5-6.7 without (every item >= 99 % of its samples either way). It stays because
//   compiling on helper threads, on a gateway pinned to one core, costs every Read: bench read,
//   one run, 2 rounds each, load 1.2-3.6, the same build with and without this flag (helper
//   threads at nice +10, src/thread-priority.ts, in both): 10 x 100 585,594 against
//   494,362 Reads/s (1.70 against 2.02 µs of CPU per Read), 10 x 1000 714,484 against 579,837
//   (1.40 against 1.73 µs); without the nice +10 as well, 528,258 and 597,161. Beside 4,096
//   counters a Read 10 x 100 load got 534-562k Reads/s with it, 442-463k without. Not a warm-up
//   effect: after a 30 s warm-up the helper threads' build still took 2.10 against 1.77 µs per
//   Read (10 x 100) and 1.84 against 1.61 (10 x 1000). Issue 14 asks for no loss of Read rate.
//   The compiles are a start-up transient: they come as the sampling and publishing paths
//   become hot, for ~10-20 s at 1,024 counters; after a 60 s warm-up a 20 s window had none.
//   With 10,000 device tags they are the longest tasks of the first seconds after a first start
//   and of a reload (--trace-opt beside a 1 ms-tick probe, pinned to one core): Node's
//   listOnTimeout 20-27 ms with the poll callbacks inlined, a poll group's deliver 13-14, a
//   reload's DevicePoller and planBlocks 14-16. A generator with hot loops compiles whole, 33 ms
//   (the reload's syncSteps, a sliced JSON writer), so such loops are functions of their own.
//   --max-inlined-bytecode-size-cumulative=460 (V8's 920) was measured and refused: the longest
//   of those gaps after a first start 15-17 against 20-32 ms, but Reads cost 4.0-4.4 against
//   3.5 µs of CPU (bench read 10 x 100) and 3.7-4.2 against 3.0 (10 x 1000), 2 rounds A B A B,
//   load 0.6-1.2.
// Result (with the earlier flag): counters 16,384 pass (99.9 %, lateness p99 2.3 ms, was 97-98 %
// and 5-7 ms); Read 10 x 100 1.51 instead of 1.76 µs of CPU per Read; idle RSS with 10,000 tags
// unchanged (72 MB); RSS under Read load 71 instead of 67 MB.
// - the memory reducer stays on (V8's default; --no-memory-reducer was measured): it runs a
//   full "reduce" GC some seconds after the allocation rate drops, one atomic pause of ~15-30 ms
//   at 16,384 items (a 40 MB heap, single-threaded), which no slot between two 10 ms deadlines
//   can avoid, and a heap small enough to make it short is not in sight. Without it the
//   heap keeps what a burst grew it to: bench hostile (50 flooders, 20 slow readers, 20 s), RSS
//   60 s after against the baseline +8.9 MB without it, -2.0 MB with it (issue 14: <= +8 MB);
//   counters 16,384 (20 s window, A then B): lateness p99 / p99.9 1.4 / 5.3 ms with it, 3.4 / 6.8
//   without (that round 15 % of its core taken by other tasks), GC max 32.5 vs 20.1 ms. Earlier
//   (one run): p99.9 4.3 vs 5.5 ms and GC max 7.8 vs 15.5 without, RSS 40 s after +13.8 vs +3.6.
//   Memory coming back after an attack decides it; the reduce pause is one late slot or two.
// - --harmony-rab-gsab-transfer: ArrayBuffer's transfer() (ES2024; standard from Node 21 on,
//   where this flag must go), with which the transport frees each socket read as soon as it is
//   handled (src/transport/chunk-framer.ts freeRead) instead of leaving it as garbage until V8
//   has counted tens of MB of it: a gateway with a 4 MiB budget under a 100 MB chunk flood
//   peaked 6-7 MB above its RSS before the flood with it, 8-35 MB without.
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
 * them resident:
 * - socket reads and the transport's buffer slabs (issue 14): bench hostile (50 chunk flooders,
 *   20 slow readers, 20 s), RSS 60 s after against the baseline +48 MB without, +30 MB at
 *   128 KiB, +6 MB at 64 KiB; Read rates unchanged;
 * - a login's scrypt (16 MiB of working memory, src/sessions/users.ts) on a libuv worker thread:
 *   after ten logins the process held ~64 MB more for good, one block per worker (bench web, 10
 *   pages logging in: RSS 146 instead of 80 MB, measured with a 4 MiB threshold, which 64 KiB
 *   covers).
 */
export const GATEWAY_ENV: Readonly<Record<string, string>> = Object.freeze({ MALLOC_MMAP_THRESHOLD_: "65536" });

/** GATEWAY_ENV as `NAME=value` words, as the shebang and `npm start` write them. */
export function gatewayEnvWords(): string {
  return Object.entries(GATEWAY_ENV)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}
