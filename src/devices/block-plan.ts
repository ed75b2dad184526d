// Coalescing (DESIGN: Sampling): the tags of one poll group become as few block reads as the
// protocol allows. Per data area, tags sorted by start are swept left to right and a block grows
// while the next tag starts within `maxGap` unused units of its end and the block stays within
// the area's request limit (BlockLimits: the driver's, lowered by the device's own settings).
// For intervals with a maximum length and gap, this greedy sweep gives the fewest blocks. A
// driver that reads a whole answer at once (a telegram of records) places every tag of a device
// at one unit of one area: they make one block.

/** What the planner needs of a tag (its codec's area and width, and where it starts). */
export interface Placed {
  readonly area: string;
  /** First unit. */
  readonly start: number;
  /** Units. */
  readonly width: number;
}

export interface BlockLimits {
  /** Unused units one block may span to join two tags. */
  readonly maxGap: number;
  /**
   * Most units one read of each area may ask for, in the order a cycle reads the areas; an area
   * not listed has no limit and is read after the listed ones.
   */
  readonly maxCount: Readonly<Record<string, number>>;
}

/** One read request and the tags it serves, with each tag's index into the returned data. */
export interface Block<T extends Placed> {
  readonly area: string;
  readonly start: number;
  readonly count: number;
  readonly tags: readonly T[];
}

/** Blocks in area then start order. A tag wider than the limit gets a block of its own. */
export function planBlocks<T extends Placed>(tags: readonly T[], limits: BlockLimits): Block<T>[] {
  const areas = Object.keys(limits.maxCount);
  const rank = (area: string): number => {
    const i = areas.indexOf(area);
    return i < 0 ? areas.length : i;
  };
  const byStart = (a: Placed, b: Placed): number => (a.area === b.area ? 0 : rank(a.area) - rank(b.area) || (a.area < b.area ? -1 : 1)) || a.start - b.start || b.width - a.width;
  // Maps usually list a device's tags in address order: then there is nothing to sort (a stable
  // sort would leave them as they are).
  let inOrder = true;
  for (let i = 1; i < tags.length && inOrder; i++) inOrder = byStart(tags[i - 1]!, tags[i]!) <= 0;
  const sorted = inOrder ? tags : [...tags].sort(byStart);
  const blocks: Block<T>[] = [];
  let current: T[] = [];
  let area: string | undefined;
  let max = Infinity;
  let start = 0;
  let end = 0;
  const close = () => {
    if (current.length > 0) blocks.push({ area: area!, start, count: end - start, tags: current });
    current = [];
  };
  for (const t of sorted) {
    const tEnd = t.start + t.width;
    const fits = current.length > 0 && t.area === area && t.start - end <= limits.maxGap && Math.max(end, tEnd) - start <= max;
    if (fits) {
      current.push(t);
      if (tEnd > end) end = tEnd;
      continue;
    }
    close();
    if (t.area !== area) max = Object.hasOwn(limits.maxCount, t.area) ? limits.maxCount[t.area]! : Infinity;
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
