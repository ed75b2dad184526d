// How long a subscription with something to send waited, and why (Part 4 §5.13.1.2: Late): for a
// Publish request the client had not sent, or for its channel, busy with a large response while
// requests were queued. And which queue overflows (§5.12.1.5) happened while it waited for the
// client. On the fake clock: one counter sampled every 10 ms (at 0, 10, ...) into a queue of 5,
// publishing cycles at 105, 205, ... (the subscription made at t = 5; a poll's values reach the
// items a few ms after it starts, here before the cycles).
import { describe, expect, it } from "vitest";
import { DiagnosticsNamespace } from "../../src/subscriptions/diagnostics.js";
import { BuiltinType } from "../../src/ua/builtins.js";
import { COUNTER, Fixture, changes, settle } from "./fixture.js";

async function setUp() {
  const f = await Fixture.start({}, 1);
  await f.now();
  await f.advance(5, 1);
  const s = f.session();
  const id = f.subscribe(s, { interval: 100 });
  f.monitor(s, id, COUNTER(1), { samplingInterval: 10, queueSize: 5, clientHandle: 1 });
  // The first cycle (t = 105) answers the first request.
  f.publish(s);
  await f.advance(100, 1);
  expect(f.take().map((a) => a.t)).toEqual([105]);
  return { f, s, overflowed: f.engine.stats.queueOverflows };
}

describe("the time a late subscription waits, and the overflows meanwhile", () => {
  it("times the wait for a Publish request the client had not sent and counts the overflows of that time apart", async () => {
    const { f, s, overflowed } = await setUp();
    const st = f.engine.stats;
    // 105..205: ten samples into a queue of five, a request-less wait not begun yet.
    await f.advance(100, 1);
    expect(st.queueOverflows - overflowed).toBe(5);
    expect(st.lateQueueOverflows).toBe(0);
    expect(st.latePublishes).toBe(1);
    // Late since 205: the wait under way is counted before it ends.
    await f.advance(30, 1);
    expect(f.engine.publishWaits()).toEqual({ latePublishMs: 30, channelWaitMs: 0 });
    await f.advance(20, 1);
    // 210..250: five samples, each overflowing while the subscription waited for the client.
    expect(st.queueOverflows - overflowed).toBe(10);
    expect(st.lateQueueOverflows).toBe(5);
    f.publish(s);
    const [a] = f.take();
    expect(a.t).toBe(255);
    // The queue of five kept the newest; the oldest kept carries the Overflow InfoBit.
    const got = changes(a.response!.notificationMessage);
    expect(got.map(([, v]) => Number(v))).toEqual([22, 23, 24, 25, 26]);
    expect(got[0][2]).not.toBe(0);
    expect(got.slice(1).map(([, , status]) => status)).toEqual([0, 0, 0, 0]);
    expect(st.latePublishMs).toBe(50);
    // Answered: the wait ended, and the overflows that follow are not the client's.
    f.publish(s);
    await f.advance(100, 1);
    expect(f.engine.publishWaits()).toEqual({ latePublishMs: 50, channelWaitMs: 0 });
    expect(st.lateQueueOverflows).toBe(5);
  });

  it("times a wait for a busy channel with a request queued apart, and its overflows are not the client's", async () => {
    const { f, s, overflowed } = await setUp();
    const st = f.engine.stats;
    f.channel.sendBusy = true;
    f.publish(s);
    // The cycle at 205 finds the request but not its channel: late, waiting for the channel.
    await f.advance(160, 1);
    expect(f.take()).toEqual([]);
    expect(f.engine.publishWaits()).toEqual({ latePublishMs: 0, channelWaitMs: 60 });
    expect(st.queueOverflows - overflowed).toBe(11);
    expect(st.lateQueueOverflows).toBe(0);
    f.channel.free();
    await settle();
    expect(f.take().map((x) => x.t)).toEqual([265]);
    expect(st.channelWaitMs).toBe(60);
    expect(st.latePublishMs).toBe(0);
  });

  it("a session's wait counts once however many of its subscriptions are late, and ends with the session", async () => {
    const { f, s } = await setUp();
    const other = f.subscribe(s, { interval: 100 });
    f.monitor(s, other, COUNTER(1), { samplingInterval: 10, queueSize: 5, clientHandle: 2 });
    // Both late from their next cycles (205; the second, made at 105, from its first).
    await f.advance(140, 1);
    expect(f.engine.publishWaits().latePublishMs).toBe(40);
    f.engine.sessionClosed(s);
    expect(f.engine.stats.latePublishMs).toBe(40);
    await f.advance(100, 1);
    expect(f.engine.publishWaits().latePublishMs).toBe(40);
  });

  it("shows the waits and the late overflows in the diagnostics namespace", async () => {
    const { f, overflowed } = await setUp();
    const diag = new DiagnosticsNamespace(f.registry, f.scheduler, f.engine, f.clock);
    await f.advance(150, 1);
    diag.refresh();
    const variant = (name: string) => diag.namespace.variable(`Subscriptions.${name}`)!.value.value;
    expect(variant("LatePublishTime")).toMatchObject({ dataType: BuiltinType.Double, value: 50 });
    expect(variant("ChannelWaitTime")).toMatchObject({ dataType: BuiltinType.Double, value: 0 });
    expect(variant("LateQueueOverflows")).toMatchObject({ dataType: BuiltinType.UInt64, value: 5n });
    expect(variant("QueueOverflows")).toMatchObject({ dataType: BuiltinType.UInt64, value: BigInt(overflowed + 10) });
  });
});
