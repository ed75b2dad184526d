// A Publish built in slices keeps out of the sampling deadlines (src/sampling/slices.ts): on the
// engine's FakeClock, a publishing cycle due just before a poll puts its message off until the
// poll has run, and one with room sends at once.
import { describe, expect, it } from "vitest";
import { changes, Fixture } from "./fixture.js";

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A fixture (1 ms Publish slices) whose subscription's cycles fall `phase` ms after the bench counters' polls (every 10 ms from 0). */
async function publishingAt(phase: number) {
  const f = await Fixture.start({}, 10, 1);
  await f.now();
  f.clock.advance(phase);
  await turns(1);
  const s = f.session();
  const id = f.subscribe(s, { interval: 100 });
  f.variable("x", { feedInterval: 50, value: 5 });
  f.monitor(s, id, f.nodeId("x"), { samplingInterval: 50, clientHandle: 7 });
  f.publish(s);
  return f;
}

describe("Publish slices and the sampling deadlines", () => {
  it("puts a message off when its cycle comes 0.25 ms before a poll, and sends it once the poll has run", async () => {
    const f = await publishingAt(9.75);
    const poll = f.runtime.pollers()[0]!.groups[0]!.scheduled!;
    f.clock.advance(100); // 109.75: the publishing cycle; the counters' poll is due at 110
    await turns(3);
    expect(f.take()).toEqual([]);
    const before = poll.samples;
    f.clock.advance(0.25);
    expect(poll.samples).toBe(before + 1);
    await turns(2);
    const [a] = f.take();
    expect(a?.t).toBe(110);
    expect(changes(a!.response!.notificationMessage).map((c) => c[0])).toEqual([7]);
  });

  it("sends at once when the next poll is far enough", async () => {
    const f = await publishingAt(5);
    f.clock.advance(100); // 105: the next poll is at 110
    await turns(1);
    const [a] = f.take();
    expect(a?.t).toBe(105);
    expect(changes(a!.response!.notificationMessage).map((c) => c[0])).toEqual([7]);
  });
});
