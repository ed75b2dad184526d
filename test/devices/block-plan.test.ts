// Coalescing: the fewest block reads within the request limit and the max gap.
import { describe, expect, it } from "vitest";
import { blockOf, planBlocks, type Placed } from "../../src/devices/block-plan.js";

// Modbus's areas and limits, as its driver gives them.
const LIMITS = { maxGap: 10, maxCount: { coil: 2000, discrete: 2000, input: 125, holding: 125 } };

function reg(start: number, width = 1, area: Placed["area"] = "holding"): Placed {
  return { area, start, width };
}

function spans(tags: Placed[], limits = LIMITS): string[] {
  return planBlocks(tags, limits).map((b) => `${b.area}:${b.start}+${b.count}[${b.tags.length}]`);
}

describe("planBlocks", () => {
  it("joins neighbours and tags within the gap into one block", () => {
    expect(spans([reg(0), reg(1, 2), reg(3), reg(14)])).toEqual(["holding:0+15[4]"]);
  });

  it("splits at a gap wider than maxGap", () => {
    expect(spans([reg(0), reg(12)])).toEqual(["holding:0+1[1]", "holding:12+1[1]"]);
    expect(spans([reg(0), reg(11)])).toEqual(["holding:0+12[2]"]);
    expect(spans([reg(0), reg(1)], { ...LIMITS, maxGap: 0 })).toEqual(["holding:0+2[2]"]);
    expect(spans([reg(0), reg(2)], { ...LIMITS, maxGap: 0 })).toEqual(["holding:0+1[1]", "holding:2+1[1]"]);
  });

  it("keeps each block within 125 registers and 2000 bits", () => {
    const regs = Array.from({ length: 300 }, (_, i) => reg(i));
    expect(spans(regs)).toEqual(["holding:0+125[125]", "holding:125+125[125]", "holding:250+50[50]"]);
    const coils = Array.from({ length: 4500 }, (_, i) => reg(i, 1, "coil"));
    expect(spans(coils)).toEqual(["coil:0+2000[2000]", "coil:2000+2000[2000]", "coil:4000+500[500]"]);
  });

  it("never lets a multi-register tag straddle two blocks", () => {
    const tags = [...Array.from({ length: 62 }, (_, i) => reg(2 * i, 2)), reg(124, 4)];
    expect(spans(tags)).toEqual(["holding:0+124[62]", "holding:124+4[1]"]);
  });

  it("honours a per-device cap", () => {
    expect(spans(Array.from({ length: 40 }, (_, i) => reg(i)), { ...LIMITS, maxCount: { ...LIMITS.maxCount, holding: 16 } })).toEqual([
      "holding:0+16[16]",
      "holding:16+16[16]",
      "holding:32+8[8]",
    ]);
  });

  it("keeps areas apart, in area order, whatever the tag order", () => {
    expect(spans([reg(5, 1, "holding"), reg(0, 1, "coil"), reg(5, 1, "input"), reg(1, 1, "discrete"), reg(0, 1, "holding")])).toEqual([
      "coil:0+1[1]",
      "discrete:1+1[1]",
      "input:5+1[1]",
      "holding:0+6[2]",
    ]);
  });

  it("serves overlapping tags (a word and its bits) from one read", () => {
    expect(spans([reg(10, 2), reg(10), reg(11), reg(10, 1)])).toEqual(["holding:10+2[4]"]);
  });

  it("100 tags spread over 250 registers need the minimum of 2 requests", () => {
    const tags = Array.from({ length: 100 }, (_, i) => reg(Math.floor(i * 2.5), 1));
    expect(planBlocks(tags, LIMITS)).toHaveLength(2);
  });

  it("blockOf spans exactly its tags", () => {
    expect(blockOf([reg(7, 2), reg(3)])).toMatchObject({ area: "holding", start: 3, count: 6 });
  });
});
