// A Publish on a channel that a large response is leaving in slices (transport/output-slicer.ts)
// waits for the channel instead of forcing the rest of that response out in one task: the
// subscription is late meanwhile, keeps its notifications, does not lose lifetime for a request
// that is queued, and answers the request once the channel is free.
import { describe, expect, it } from "vitest";
import { changes, Fixture, settle } from "./fixture.js";

describe("Publish behind a response leaving in slices", () => {
  it("sends nothing while the channel is busy, then the queued notifications once it is free", async () => {
    const f = await Fixture.start();
    await f.now();
    const s = f.session();
    const id = f.subscribe(s, { interval: 100 });
    const x = f.variable("x", { feedInterval: 50, value: 1 });
    f.monitor(s, id, f.nodeId("x"), { samplingInterval: 50, clientHandle: 7, queueSize: 10 });
    f.publish(s);
    await f.advance(100);
    expect(changes(f.take()[0]?.response?.notificationMessage)).toEqual([[7, 1, 0]]);

    f.channel.sendBusy = true;
    f.publish(s);
    f.set(x, 2);
    await f.advance(60);
    f.set(x, 3);
    // Several publishing cycles pass with the request queued: the fixture's channel throws if
    // anything is sent while it is busy, so an answer here would be a failed test.
    await f.advance(300);
    expect(f.take()).toEqual([]);

    f.channel.free();
    await settle();
    const [a] = f.take();
    expect(changes(a?.response?.notificationMessage)).toEqual([
      [7, 2, 0],
      [7, 3, 0],
    ]);
  });

  it("a subscription whose only request waits for a busy channel does not expire", async () => {
    const f = await Fixture.start();
    await f.now();
    const s = f.session();
    // Lifetime 3 cycles of 100 ms: without a queued request it would expire after 300 ms.
    const id = f.subscribe(s, { interval: 100, keepAlive: 1, lifetime: 3 });
    f.variable("y", { feedInterval: 50, value: 5 });
    f.monitor(s, id, f.nodeId("y"), { samplingInterval: 50, clientHandle: 3 });
    f.publish(s);
    await f.advance(100);
    expect(changes(f.take()[0]?.response?.notificationMessage)).toEqual([[3, 5, 0]]);
    f.channel.sendBusy = true;
    f.publish(s);
    await f.advance(1000);
    expect(f.take()).toEqual([]);
    f.channel.free();
    await settle();
    const [a] = f.take();
    // The keep-alive that fell due meanwhile, not a StatusChangeNotification of a timed-out subscription.
    expect(a?.response?.subscriptionId).toBe(id);
    expect(a?.response?.notificationMessage.notificationData ?? []).toEqual([]);
  });
});
