// One record per Sparkplug device (a device of the map), with what the northbound has reported
// of each of its tags: the last value and status published or stored (report by exception,
// Sparkplug 3.0 §2.2, tck-id-operational-behavior-data-publish-dbirth-change), the tags changed
// in the current poll cycle, and each tag's alias in the current session. Kept in typed arrays:
// a poll cycle of 10,000 changed tags marks, compares and encodes them without allocating.
import type { DeviceConfig, TagConfig } from "../config/device-map.js";
import { sameConfig, tagSlotKey } from "../devices/device-runtime.js";
import { BuiltinType, type StatusCode } from "../ua/builtins.js";
import type { ValueCache } from "../values/value-cache.js";
import { dataTypeOf } from "./metrics.js";
import type { DataType } from "./sparkplug-codec.js";

/** Where a device stands in the current Sparkplug session. */
export const enum DeviceSession {
  /** No DBIRTH in this session (not connected yet, or demoted before its birth). */
  Unborn = 0,
  /** Its DBIRTH is being encoded: its changes wait. */
  Birthing = 1,
  /** Born: its changes are DDATA. */
  Born = 2,
  /** DDEATH published (demoted): nothing until it answers again and is born again. */
  Dead = 3,
}

export class DeviceRecord {
  readonly name: string;
  readonly config: DeviceConfig;
  readonly tags: readonly TagConfig[];
  /** Value cache slot of each tag, in the order of config.tags. */
  readonly slots: Int32Array;
  /** Sparkplug datatype of each tag. */
  readonly types: Uint8Array;
  /** Alias of each tag in the current session (assigned at the DBIRTH). */
  readonly aliases: Float64Array;
  /** Store-and-forward metric id of each tag (0 until first stored). */
  readonly storeIds: Int32Array;
  /** Last value and status reported (published or stored), per tag; lastKind 0: none yet. */
  readonly lastNum: Float64Array;
  readonly lastStatus: Uint32Array;
  /** Source timestamp of the value last reported. */
  readonly lastTs: Float64Array;
  /** 1 once a value was reported; 2 when it was a non-number (kept in lastObj). */
  readonly lastKind: Uint8Array;
  readonly lastObj: unknown[];
  /** Indices of tags changed since the last flush; `marked` says which are in the list. */
  readonly pending: Int32Array;
  pendingCount = 0;
  readonly marked: Uint8Array;
  /** Tags whose value must be published at the next flush even if unchanged (a DCMD's answer). */
  readonly forced: Uint8Array;
  /** Per tag, how many times a value was reported: a DCMD's answer is skipped when a DDATA already carried one. */
  readonly reports: Uint32Array;
  /** The edge node's birth sequence the aliases were assigned in (a Rebirth assigns them anew). */
  aliasBirth = -1;
  session: DeviceSession = DeviceSession.Unborn;
  /** The alias → tag index of this device's aliases (commands). */
  readonly byAlias = new Map<number, number>();
  readonly byName = new Map<string, number>();

  constructor(config: DeviceConfig, values: ValueCache) {
    this.name = config.name;
    this.config = config;
    this.tags = config.tags;
    const n = config.tags.length;
    this.slots = new Int32Array(n);
    this.types = new Uint8Array(n);
    this.aliases = new Float64Array(n);
    this.storeIds = new Int32Array(n);
    this.lastNum = new Float64Array(n);
    this.lastStatus = new Uint32Array(n);
    this.lastTs = new Float64Array(n);
    this.lastKind = new Uint8Array(n);
    this.lastObj = new Array<unknown>(n).fill(undefined);
    this.pending = new Int32Array(n);
    this.marked = new Uint8Array(n);
    this.forced = new Uint8Array(n);
    this.reports = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      const t = config.tags[i]!;
      const slot = values.slotOf(tagSlotKey(config.name, t.name));
      this.slots[i] = slot;
      // The type the tag's driver publishes it as, which the runtime gave its slot.
      this.types[i] = dataTypeOf(values.info(slot)?.builtinType ?? BuiltinType.Null);
      this.byName.set(t.name, i);
    }
  }

  mark(index: number): void {
    if (this.marked[index] !== 0) return;
    this.marked[index] = 1;
    this.pending[this.pendingCount++] = index;
  }

  /** Clears the changed list (after a birth, which reports every tag). */
  clearPending(): void {
    for (let k = 0; k < this.pendingCount; k++) this.marked[this.pending[k]!] = 0;
    this.pendingCount = 0;
  }

  /**
   * Whether tag `i` differs from what was last reported (value or status; a forced tag always
   * does); if so the current value becomes the reported one and the timestamp to report it
   * with is returned (its source timestamp, or `now` for a change of status alone, which keeps
   * the value's time), else -1. Numbers are compared as numbers (NaN equals NaN), other values
   * by identity: the poller keeps the Variant of an unchanged string, and a DataValue is never
   * mutated.
   */
  takeChange(i: number, values: ValueCache, now: number): number {
    const slot = this.slots[i]!;
    const status = values.statusOf(slot);
    const forced = this.forced[i] !== 0;
    this.forced[i] = 0;
    const has = values.hasValue(slot);
    const n = has ? values.numberOf(slot) : NaN;
    if (has && n === n) {
      if (!forced && this.lastKind[i] === 1 && this.lastNum[i] === n && this.lastStatus[i] === status) return -1;
      this.lastKind[i] = 1;
      this.lastNum[i] = n;
    } else {
      const v = has ? values.get(slot).value?.value : undefined;
      const kind = has ? 2 : 3;
      if (!forced && this.lastKind[i] === kind && sameObject(this.lastObj[i], v) && this.lastStatus[i] === status) return -1;
      this.lastKind[i] = kind;
      this.lastObj[i] = v;
    }
    this.lastStatus[i] = status;
    this.reports[i]++;
    const ts = values.sourceTimestampOf(slot);
    const at = ts > 0 && ts !== this.lastTs[i] ? ts : now;
    this.lastTs[i] = ts;
    return at;
  }

  /** Drops the first `k` entries of the pending list (they were handled). */
  dropPending(k: number): void {
    if (k >= this.pendingCount) {
      this.pendingCount = 0;
      return;
    }
    this.pending.copyWithin(0, k, this.pendingCount);
    this.pendingCount -= k;
  }

  /** Gives the tags aliases from `next` on (unless they have some from this `birth` sequence); returns the next free alias. */
  assignAliases(birth: number, next: number): number {
    if (this.aliasBirth === birth) return next;
    this.aliasBirth = birth;
    this.byAlias.clear();
    for (let i = 0; i < this.tags.length; i++) {
      this.aliases[i] = next;
      this.byAlias.set(next, i);
      next++;
    }
    return next;
  }

  /** The status last reported of tag `i`. */
  reportedStatus(i: number): StatusCode {
    return this.lastStatus[i]!;
  }

  type(i: number): DataType {
    return this.types[i]! as DataType;
  }
}

/** The tags' slots are still theirs (a device stopped and started again keeps its slots). */
function sameSlots(r: DeviceRecord, values: ValueCache): boolean {
  for (let i = 0; i < r.tags.length; i++) if (values.slotOf(tagSlotKey(r.name, r.tags[i]!.name)) !== r.slots[i]) return false;
  return true;
}

function sameObject(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === "number" && typeof b === "number" && a !== a && b !== b);
}

/**
 * The records of the devices the gateway publishes, and the slot → (record, tag) map the cache
 * observer uses. Rebuilt on a map reload for the devices that changed.
 */
export class DeviceTable {
  private readonly byName = new Map<string, DeviceRecord>();
  /** Per cache slot: the record's index in `list` + 1 (0: not published), and the tag's index. */
  private slotRecord = new Int32Array(0);
  private slotTag = new Int32Array(0);
  private list: DeviceRecord[] = [];

  get records(): readonly DeviceRecord[] {
    return this.list;
  }

  get(name: string): DeviceRecord | undefined {
    return this.byName.get(name);
  }

  /** The record of a cache slot's device and the tag's index in it, or undefined. */
  ownerOf(slot: number): DeviceRecord | undefined {
    const r = slot < this.slotRecord.length ? this.slotRecord[slot]! : 0;
    return r === 0 ? undefined : this.list[r - 1];
  }

  tagOf(slot: number): number {
    return this.slotTag[slot]!;
  }

  /** Replaces the records with those of `configs` (kept when their config is unchanged: a reload re-reads every device). */
  rebuild(configs: readonly DeviceConfig[], values: ValueCache): { added: DeviceRecord[]; removed: DeviceRecord[]; changed: DeviceRecord[] } {
    const added: DeviceRecord[] = [];
    const changed: DeviceRecord[] = [];
    const next = new Map<string, DeviceRecord>();
    for (const c of configs) {
      const old = this.byName.get(c.name);
      if (old !== undefined && sameConfig(old.config, c) && sameSlots(old, values)) {
        next.set(c.name, old);
        continue;
      }
      const rec = new DeviceRecord(c, values);
      next.set(c.name, rec);
      (old === undefined ? added : changed).push(rec);
    }
    const removed: DeviceRecord[] = [];
    for (const [name, rec] of this.byName) if (!next.has(name)) removed.push(rec);
    this.byName.clear();
    for (const [name, rec] of next) this.byName.set(name, rec);
    this.list = [...next.values()];
    this.index();
    return { added, removed, changed };
  }

  private index(): void {
    let max = 0;
    for (const r of this.list) for (let i = 0; i < r.slots.length; i++) max = Math.max(max, r.slots[i]! + 1);
    this.slotRecord = new Int32Array(max);
    this.slotTag = new Int32Array(max);
    this.list.forEach((r, k) => {
      for (let i = 0; i < r.slots.length; i++) {
        const s = r.slots[i]!;
        if (s < 0) continue;
        this.slotRecord[s] = k + 1;
        this.slotTag[s] = i;
      }
    });
  }
}
