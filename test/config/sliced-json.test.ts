// sliced-json.ts: the text is JSON.stringify's for plain data, a large value is written over
// several turns of the event loop, and a write abandoned on the way leaves no file behind.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { writeJsonInSlices } from "../../src/config/sliced-json.js";
import { SliceGate } from "../../src/sampling/slices.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function target(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "fg-sliced-json-"));
  dirs.push(dir);
  return { dir, file: join(dir, "out.json") };
}

function deviceMap(devices: number, tags: number): unknown {
  return {
    buses: [],
    devices: Array.from({ length: devices }, (_, d) => ({
      name: `plc${d}`,
      driver: "simulator",
      unitId: 1,
      rate: 1000,
      note: undefined,
      writeRoles: ["operator", "admin"],
      tags: Array.from({ length: tags }, (_, t) => ({ name: `tag${t}`, address: { area: "holding", offset: 100 + t }, type: "uint16", scale: 1.5, history: t % 2 === 0, unit: t % 3 ? null : "°C \"quoted\"" })),
    })),
  };
}

describe("a value written as JSON in slices", () => {
  it("is the text JSON.stringify gives, for small and large plain data", async () => {
    const values: unknown[] = [
      null,
      42,
      "a \"string\" with \\ and \n",
      [],
      {},
      [1, undefined, "x"],
      { a: undefined, b: [[[]]], c: { d: { e: [true, false, -0.5e-7] } } },
      Array.from({ length: 1000 }, (_, i) => i),
      deviceMap(3, 700),
    ];
    for (const v of values) {
      const { file } = target();
      expect(await writeJsonInSlices(file, v)).toBe(true);
      expect(readFileSync(file, "utf8")).toBe(JSON.stringify(v));
    }
  });

  it("goes over several turns of the event loop for a 10,000-tag map, and leaves only the file", async () => {
    const { dir, file } = target();
    const value = deviceMap(10, 1000);
    let turns = 0;
    let counting = true;
    const tick = (): void => {
      turns++;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    // Slices of 1 ms cut by length only (no sampling deadlines here).
    const done = await writeJsonInSlices(file, value, () => false, new SliceGate());
    counting = false;
    expect(done).toBe(true);
    expect(readFileSync(file, "utf8")).toBe(JSON.stringify(value));
    expect(turns).toBeGreaterThan(1);
    expect(readdirSync(dir)).toEqual(["out.json"]);
  });

  it("writes nothing when abandoned between two slices", async () => {
    const { dir, file } = target();
    const done = await writeJsonInSlices(file, deviceMap(10, 1000), () => true, new SliceGate());
    expect(done).toBe(false);
    expect(existsSync(file)).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });
});
