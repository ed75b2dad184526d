// What a reload changed, in words (src/devices/map-changes.ts): per device, its tags added,
// removed and changed by name (the first few, then a count) and its settings that differ.
import { describe, expect, it } from "vitest";
import { type DeviceMap } from "../../src/config/device-map.js";
import { mapSchema } from "../helpers/map.js";
import { validateYaml } from "../../src/config/load.js";
import type { ApplyReport } from "../../src/devices/device-runtime.js";
import { deviceChanges, describeApply, describeDevice, wholeDevice } from "../../src/devices/map-changes.js";
import { testSlicer, WorkClock } from "../helpers/slicer.js";

function parse(yaml: string): DeviceMap {
  const r = validateYaml(mapSchema, yaml, "devices.yaml");
  if (!r.ok) throw new Error(r.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`).join("\n"));
  return r.value;
}
const device = (tags: string[], extra = "") => parse(`devices:\n  - name: plc\n    driver: modbus-tcp\n    host: 10.0.0.5\n${extra}    tags:\n${tags.map((t) => `      - ${t}\n`).join("")}`).devices[0]!;
const tag = (i: number, extra = "") => `{ name: t${i}, address: holding:${i}${extra} }`;

describe("a device's changes", () => {
  it("name the tags added, removed and changed, the first five of each, and the settings that differ", async () => {
    const before = device(Array.from({ length: 20 }, (_, i) => tag(i)));
    const after = device(
      [...Array.from({ length: 20 }, (_, i) => (i < 3 ? null : i < 10 ? tag(i, ", scale: 2") : tag(i))).filter((t) => t !== null), tag(100), tag(101)],
      "    timeout: 3s\n    rate: 5s\n",
    );
    const c = await deviceChanges(before, after, testSlicer().task("test"));
    expect(c).toMatchObject({ device: "plc", kind: "changed", settings: ["timeout", "rate"] });
    expect([c.tagsAdded, c.tagsRemoved, c.tagsChanged]).toEqual([
      { count: 2, first: ["t100", "t101"] },
      { count: 3, first: ["t0", "t1", "t2"] },
      // Every tag's rate follows the device's: all 17 kept tags changed.
      { count: 17, first: ["t3", "t4", "t5", "t6", "t7"] },
    ]);
    expect(describeDevice(c)).toBe("plc: 2 tags added (t100, t101), 3 removed (t0, t1, t2), 17 changed (t3, t4, t5, t6, t7 and 12 more); settings changed: timeout, rate");
  });

  it("a device restarted for its link alone says so; one that came or went says its tags", async () => {
    const d = device([tag(1), tag(2)]);
    expect(describeDevice(await deviceChanges(d, d, testSlicer().task("test")))).toBe("plc: restarted, its link's settings changed (another device on it changed)");
    expect(describeDevice(wholeDevice(d, "added"))).toBe("plc: added with 2 tags (t1, t2)");
    expect(describeDevice(wholeDevice(device([tag(1)]), "removed"))).toBe("plc: removed with 1 tag (t1)");
  });

  it("compares a device of many tags in slices, and still finds every change", async () => {
    const n = 2053;
    const before = device(Array.from({ length: n }, (_, i) => tag(i % 60000)).map((t, i) => t.replace(/name: t\d+/, `name: t${i}`)));
    const after = device(before.tags.map((t, i) => `{ name: ${t.name}, address: holding:${i === n - 1 ? 9 : i % 60000} }`));
    // Each look at the clock takes 0.1 ms of its time: a slice of the test budget is ten looks.
    const task = testSlicer(new WorkClock(0.1)).task("test");
    const c = await deviceChanges(before, after, task);
    expect(c.tagsChanged).toEqual({ count: 1, first: [`t${n - 1}`] });
    expect(task.slices).toBeGreaterThan(2);
  });
});

describe("a reload's log", () => {
  it("is the summary, then a line a device, at most 20", () => {
    const d = device([tag(1)]);
    const details = Array.from({ length: 23 }, (_, i) => ({ ...wholeDevice(d, "added"), device: `d${i}` }));
    const report: ApplyReport = { added: details.map((x) => x.device), removed: [], changed: [], unchanged: ["x"], details };
    const { summary, devices } = describeApply(report);
    expect(summary).toBe(`added ${report.added.join(", ")}; 1 unchanged`);
    expect(devices).toHaveLength(21);
    expect(devices[0]).toBe("d0: added with 1 tag (t1)");
    expect(devices[20]).toBe("and 3 more devices");
  });
});
