// Samples taken before the system clock is synchronized (a gateway without a real-time clock
// boots at 1970 or at the image's date): the writer holds them on the monotonic clock and stores
// them at their corrected times once the clock-sync probe says so, gives up after clockSyncWait,
// drops (and counts) what it holds at a stop, and keeps age retention from running on a wrong
// clock. The clocks and the probe are injected: no real time passes.
import { afterEach, describe, expect, it, vi } from "vitest";
import { HistoryStore } from "../../src/history/store.js";
import { clockSynchronized } from "../../src/sampling/clock.js";
import { HistoryWriter } from "../../src/history/writer.js";
import { BuiltinType, scalar } from "../../src/ua/builtins.js";
import { startGateway } from "../helpers/gateway.js";
import { dbl, node, tempHistory, T0, type TempHistory } from "./helpers.js";

/** A wall clock that can step and a monotonic clock that cannot. */
function clocks(wallAtBoot: number) {
  let mono = 5_000;
  let offset = wallAtBoot - mono;
  return {
    now: () => mono + offset,
    monotonic: () => mono,
    advance(ms: number) {
      mono += ms;
    },
    /** NTP sets the clock: the wall clock jumps to `wall`. */
    step(wall: number) {
      offset = wall - mono;
    },
  };
}

const BOOT_1970 = 86_400_000; // 1970-01-02: the epoch plus the time a board takes to boot
let h: TempHistory | undefined;

afterEach(() => {
  h?.cleanup();
  h = undefined;
  vi.useRealTimers();
});

function stored(t: TempHistory, name = "a"): { t: number; v: unknown; s: number }[] {
  const s = t.store.find(node(name));
  if (!s) return [];
  return t.store.read(s, -8.64e15, 8.64e15, true, 1_000_000).map((d) => ({ t: d.sourceTimestamp!, v: d.value?.value, s: d.statusCode ?? 0 }));
}

describe("history before the clock is synchronized", () => {
  it("holds samples and stores them at their corrected times once the clock is synchronized", () => {
    const c = clocks(BOOT_1970);
    let synced = false;
    const log: string[] = [];
    h = tempHistory({ now: c.now, monotonic: c.monotonic, clockSynchronized: () => synced, clockSyncWait: 600_000, log: (m) => log.push(m) });
    const w = h.writer;
    w.declare(node("a"));
    expect(w.stats.waitingForClock).toBe(true);
    // Three polls a second apart on the wrong clock, as the poller stamps them.
    for (let i = 0; i < 3; i++) {
      w.record(node("a"), dbl(i, c.now()));
      c.advance(1000);
    }
    w.tick();
    expect(stored(h)).toEqual([]);
    expect(w.queued).toBe(3);
    // NTP steps the clock to real time; two more polls before the probe notices.
    c.step(T0 + 3000);
    for (let i = 3; i < 5; i++) {
      w.record(node("a"), dbl(i, c.now()));
      c.advance(1000);
    }
    synced = true;
    w.tick();
    expect(w.stats.waitingForClock).toBe(false);
    expect(w.stats.restamped).toBe(5);
    // Every sample at its true time: one second apart, the first at T0.
    expect(stored(h)).toEqual([0, 1, 2, 3, 4].map((i) => ({ t: T0 + i * 1000, v: i, s: 0 })));
    expect(log.join("\n")).toMatch(/synchronized \(it moved \+\d+\.\d{3} s\); 5 held sample\(s\) stored at corrected times/);
    // From now on samples are stored as they come.
    w.record(node("a"), dbl(5, c.now()));
    w.tick();
    expect(stored(h).at(-1)).toEqual({ t: T0 + 5000, v: 5, s: 0 });
    expect(w.stats.recorded).toBe(w.stats.flushed + w.queued + w.stats.dropped);
  });

  it("stores with the clock's time after clockSyncWait without synchronization", () => {
    const c = clocks(BOOT_1970);
    const log: string[] = [];
    const probe = vi.fn(() => false);
    h = tempHistory({ now: c.now, monotonic: c.monotonic, clockSynchronized: probe, clockSyncWait: 60_000, log: (m) => log.push(m) });
    const w = h.writer;
    w.declare(node("a"));
    w.record(node("a"), dbl(1, c.now()));
    c.advance(59_000);
    w.tick();
    expect(stored(h)).toEqual([]);
    c.advance(1000);
    w.tick();
    expect(stored(h)).toEqual([{ t: BOOT_1970, v: 1, s: 0 }]);
    expect(w.stats.restamped).toBe(0);
    expect(log.join("\n")).toMatch(/not synchronized after 60 s; storing samples with its time from now on \(1 held sample/);
    // The probe is not asked again.
    const asked = probe.mock.calls.length;
    w.tick();
    expect(probe.mock.calls.length).toBe(asked);
  });

  it("drops and counts what it holds when stopped before the clock is known", () => {
    const c = clocks(BOOT_1970);
    h = tempHistory({ now: c.now, monotonic: c.monotonic, clockSynchronized: () => false });
    const w = h.writer;
    w.declare(node("a"));
    for (let i = 0; i < 4; i++) w.record(node("a"), dbl(i, c.now() + i));
    w.close();
    expect(w.stats.dropped).toBe(4);
    expect(w.stats.flushed).toBe(0);
    expect(w.stats.recorded).toBe(w.stats.flushed + w.queued + w.stats.dropped);
  });

  it("drops the oldest held samples when the queue is full, and stores the rest restamped", () => {
    const c = clocks(BOOT_1970);
    let synced = false;
    h = tempHistory({ now: c.now, monotonic: c.monotonic, clockSynchronized: () => synced, queueSize: 3, flushCount: 2 });
    const w = h.writer;
    w.declare(node("a"));
    for (let i = 0; i < 5; i++) {
      w.record(node("a"), { value: scalar(BuiltinType.Int32, i), sourceTimestamp: c.now() });
      c.advance(100);
    }
    expect(w.stats.dropped).toBe(2);
    c.step(T0 + 500);
    synced = true;
    w.tick();
    w.tick();
    expect(stored(h).map((x) => [x.t, x.v])).toEqual([
      [T0 + 200, 2],
      [T0 + 300, 3],
      [T0 + 400, 4],
    ]);
  });

  it("keeps age retention from deleting history while the clock is not known", () => {
    // History of an earlier run, at real times.
    const c = clocks(T0);
    h = tempHistory({ now: c.now, monotonic: c.monotonic });
    h.writer.declare(node("a"));
    h.writer.record(node("a"), dbl(1, T0));
    h.writer.flushAll();
    h.writer.close();
    // Rebooted with a clock ten years ahead and a 30-day retention.
    const ahead = clocks(T0 + 10 * 365 * 86_400_000);
    let synced = false;
    const store = new HistoryStore(h.file);
    const w = new HistoryWriter(store, {
      flushInterval: 1000,
      flushCount: 100,
      queueSize: 100,
      maxAge: 30 * 86_400_000,
      now: ahead.now,
      monotonic: ahead.monotonic,
      clockSynchronized: () => synced,
    });
    try {
      w.declare(node("a"));
      w.tick();
      expect(w.retain()).toBe(0);
      expect(store.read(store.find(node("a"))!, -8.64e15, 8.64e15, true, 10).length).toBe(1);
      // Once the clock is synchronized (here to a time that really is ten years later) it runs.
      synced = true;
      w.tick();
      expect(w.stats.retained).toBe(1);
    } finally {
      w.close();
    }
  });

  it("does not spin the event loop while holding a full batch", async () => {
    vi.useFakeTimers();
    const c = clocks(BOOT_1970);
    const probe = vi.fn(() => false);
    h = tempHistory({ now: c.now, monotonic: c.monotonic, clockSynchronized: probe, flushInterval: 1000, flushCount: 2, queueSize: 100 });
    const w = h.writer;
    w.declare(node("a"));
    w.start();
    for (let i = 0; i < 10; i++) w.record(node("a"), dbl(i, c.now() + i));
    await vi.advanceTimersByTimeAsync(2500);
    // The constructor asks once; then one tick a flushInterval, not one a millisecond.
    expect(probe.mock.calls.length).toBeLessThanOrEqual(4);
    expect(w.queued).toBe(10);
  });
});


describe("the server's clock probe", () => {
  it("is systemd-timesyncd's flag under systemd (NOTIFY_SOCKET), and absent otherwise", async () => {
    const saved = process.env.NOTIFY_SOCKET;
    try {
      delete process.env.NOTIFY_SOCKET;
      const byHand = await startGateway();
      expect(byHand.server.history.writer.stats.waitingForClock).toBe(false);
      await byHand.stop();
      // The server never writes to the socket itself (cli.ts does): a name is enough here.
      process.env.NOTIFY_SOCKET = "/nonexistent/notify";
      const service = await startGateway();
      expect(service.server.history.writer.stats.waitingForClock).toBe(!clockSynchronized());
      await service.stop();
    } finally {
      if (saved === undefined) delete process.env.NOTIFY_SOCKET;
      else process.env.NOTIFY_SOCKET = saved;
    }
  }, 30_000);
});
