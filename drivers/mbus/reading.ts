// One readout of a meter as the poll groups get it (BlockData): the fixed header of its first
// telegram and the records of all its telegrams in order, and how a tag finds its record in it:
// by its place (`record: 2`) or by what it is (`quantity: Volume`, storage, function, tariff,
// subunit), so that a tag keeps its record when a meter's firmware reorders them.
import type { FixedHeader, MbusRecord, RecordFunction } from "./records.js";

/** What a tag's record is, as the device map names it. */
export interface RecordSelector {
  /** The quantity's key (quantityKey): its name in lower case, letters and digits only. */
  readonly quantity: string;
  readonly storage: number;
  readonly function: RecordFunction;
  readonly tariff: number;
  readonly subunit: number;
}

/** "Flow temperature", "flowTemperature", "flow_temperature" name one quantity. */
export function quantityKey(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, "");
}

export function selects(s: RecordSelector, r: MbusRecord): boolean {
  return r.storage === s.storage && r.function === s.function && r.tariff === s.tariff && r.subunit === s.subunit && quantityKey(r.quantity) === s.quantity;
}

export class MbusReading {
  constructor(
    readonly header: FixedHeader | undefined,
    readonly records: readonly MbusRecord[],
    /** Telegrams the readout took. */
    readonly telegrams: number,
    /** The A field of the answers: the meter's primary address. */
    readonly address: number,
  ) {}

  /**
   * The record `s` selects: the first that matches without combinable VIFEs (a plain value),
   * else the first that matches at all.
   */
  select(s: RecordSelector): MbusRecord | undefined {
    let any: MbusRecord | undefined;
    for (const r of this.records) {
      if (!selects(s, r)) continue;
      if (r.extensions.length === 0) return r;
      any ??= r;
    }
    return any;
  }
}
