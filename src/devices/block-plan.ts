// Coalescing (DESIGN: Sampling; issue 4): the tags of one poll group become as few block reads
// as the protocol allows. Per area, tags sorted by address are swept left to right and a block
// grows while the next tag starts within `maxGap` unused registers (or bits) of its end and the
// block stays within the request limit (Modbus: 125 registers, 2000 bits; less for slaves that
// say so). For intervals with a maximum length and gap, this greedy sweep gives the fewest
// blocks.
import type { DataArea } from "./driver.js";

/** What the planner needs of a tag. */
export interface Placed {
  readonly area: DataArea;
  /** First register or bit. */
  readonly start: number;
  /** Registers or bits. */
  readonly width: number;
}

export interface BlockLimits {
  readonly maxRegisters: number;
  readonly maxBits: number;
  readonly maxGap: number;
}

/** One read request and the tags it serves, with each tag's index into the returned data. */
export interface Block<T extends Placed> {
  readonly area: DataArea;
  readonly start: number;
  readonly count: number;
  readonly tags: readonly T[];
}

const AREA_ORDER: Readonly<Record<DataArea, number>> = { coil: 0, discrete: 1, input: 2, holding: 3 };

export function isBitArea(area: DataArea): boolean {
  return area === "coil" || area === "discrete";
}

function byAddress(a: Placed, b: Placed): number {
  return AREA_ORDER[a.area] - AREA_ORDER[b.area] || a.start - b.start || b.width - a.width;
}

/** Blocks in area then address order. A tag wider than the limit gets a block of its own. */
export function planBlocks<T extends Placed>(tags: readonly T[], limits: BlockLimits): Block<T>[] {
  // Maps usually list a device's tags in address order: then there is nothing to sort (a stable
  // sort would leave them as they are).
  let inOrder = true;
  for (let i = 1; i < tags.length && inOrder; i++) inOrder = byAddress(tags[i - 1]!, tags[i]!) <= 0;
  const sorted = inOrder ? tags : [...tags].sort(byAddress);
  const blocks: Block<T>[] = [];
  let current: T[] = [];
  let area: DataArea | undefined;
  let start = 0;
  let end = 0;
  const close = () => {
    if (current.length > 0) blocks.push({ area: area!, start, count: end - start, tags: current });
    current = [];
  };
  for (const t of sorted) {
    const max = isBitArea(t.area) ? limits.maxBits : limits.maxRegisters;
    const tEnd = t.start + t.width;
    const fits = current.length > 0 && t.area === area && t.start - end <= limits.maxGap && Math.max(end, tEnd) - start <= max;
    if (fits) {
      current.push(t);
      if (tEnd > end) end = tEnd;
      continue;
    }
    close();
    area = t.area;
    start = t.start;
    end = tEnd;
    current.push(t);
  }
  close();
  return blocks;
}

/** A block spanning exactly `tags` (used when splitting a refused block). */
export function blockOf<T extends Placed>(tags: readonly T[]): Block<T> {
  let start = Infinity;
  let end = -Infinity;
  for (const t of tags) {
    if (t.start < start) start = t.start;
    if (t.start + t.width > end) end = t.start + t.width;
  }
  return { area: tags[0]!.area, start, count: end - start, tags };
}
