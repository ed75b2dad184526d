// A MonitoredItem (Part 4 §5.12.1): the last value it reported, its DataChangeFilter, and its
// queue of notifications (§5.12.1.5). Samples arrive through the ValueSink methods, from a
// sampling pass or from its value cache slot when it is fed at its source's rate; a change goes
// into the queue and the item tells its subscription once that it has something to report.
//
// The queue is a ring of preallocated slots. A slot holds either a DataValue by reference (the
// manager's own object: node managers never mutate a DataValue they handed out) or a number
// with its status and timestamps, so sampling a counter allocates nothing.
//
// A publishing cycle takes what the queues hold when it begins (Part 4 §5.13.1.1: at the end
// of each publishing interval the queued notifications are sent to the client), but a message
// of many notifications is written in slices of the event loop, one part after another; an
// item whose part comes after the next sample would find its queue full and lose its oldest,
// already taken, notification. So what a cycle took stays in the ring only until its part is sent
// (nothing is lost if that send fails) and is not counted against the queue size: samples
// taken meanwhile have a full queue of their own, and the overflow policy applies to them.
import type { AttributeRead, ValueSource } from "../address-space/node-manager.js";
import type { BuiltinType, DataValue } from "../ua/builtins.js";
import { DataChangeTrigger, MonitoringMode, type TimestampsToReturn } from "../ua/generated/enums.js";
import { AttributeIds } from "../ua/generated/node-ids.js";
import { numbersDiffer, valueChanged, type ChangeFilter } from "./data-change.js";
import type { ValueSink } from "../values/value-sink.js";

/** What an item needs from its subscription. */
export interface ItemOwner {
  /** The item has queued notifications to report (called once until they are taken). */
  notify(item: MonitoredItem): void;
  /**
   * The number of the owner's latest publishing cycle, and whether that cycle is still sending
   * what it took (its message goes out in parts): items listed before it began are being taken.
   */
  readonly cycle: number;
  readonly cycleOpen: boolean;
  /** `n` notifications were dropped by the item's full queue (Part 4 §5.12.1.5): counted by the owner. */
  overflowed(n: number): void;
}

export interface ItemStats {
  /** Notifications dropped because an item's queue was full. */
  queueOverflows: number;
  /** Of those, dropped while their subscription waited for a Publish request to send them with (Part 4 §5.13.1.2 Late). */
  lateQueueOverflows: number;
}

/** One queued notification. */
export class QueueSlot {
  /** The value by reference; undefined when the number fields hold it. */
  dv: DataValue | undefined = undefined;
  type = 0;
  num = 0;
  status = 0;
  sourceTs = 0;
  serverTs = 0;
  /** Part 4 §5.12.1.5: the Overflow InfoBit goes on this notification. */
  overflow = false;
}

const enum LastKind {
  None = 0,
  Number = 1,
  DataValue = 2,
}

/** The hooks sampling keeps on an item (see sampler.ts). */
export interface SamplingHooks {
  /** The value cache slot of its node, when it has one (bound once, at creation). */
  source: ValueSource | undefined;
  /** The sampling group that samples it, if any. */
  group: object | undefined;
  groupIndex: number;
  /** Its batch within the group (the items of one value cache, or of one namespace) and its place there. */
  batch: object | undefined;
  batchIndex: number;
  /** The watch of its slot while it is sampled or fed (see sampler.ts). */
  watch: object | undefined;
  /** Fed by its slot's changes instead of being sampled. */
  fed: boolean;
}

export class MonitoredItem implements ValueSink, SamplingHooks {
  readonly id: number;
  readonly owner: ItemOwner;
  /** The ReadValueId, reused for every batch read of this item. */
  readonly read: AttributeRead;
  readonly isValue: boolean;
  clientHandle: number;
  mode: MonitoringMode;
  timestamps: TimestampsToReturn;
  /** Revised sampling interval, ms. */
  samplingInterval: number;
  /** The client asked for the publishing interval (a negative samplingInterval). */
  followsPublishing: boolean;
  queueSize: number;
  discardOldest: boolean;
  filter: ChangeFilter;

  source: ValueSource | undefined = undefined;
  group: object | undefined = undefined;
  groupIndex = -1;
  batch: object | undefined = undefined;
  batchIndex = -1;
  watch: object | undefined = undefined;
  fed = false;
  /** The skip count of its source when it was attached; what it missed before (see Sampler.skippedSamples). */
  skipBase = 0;
  skipCarried = 0;

  /** Items this one triggers (SetTriggering, Part 4 §5.12.1.6). */
  links: MonitoredItem[] | undefined = undefined;
  /** In the subscription's list of items to report. */
  inNotifyList = false;
  /** The owner's cycle when the item was listed (notify): a later cycle is taking its queue. */
  listedIn = 0;
  /** Notifications at the head of the queue that the owner's cycle `heldIn` took and has yet to send. */
  private held = 0;
  private heldIn = -1;
  /** Queued values to report although the item is only Sampling (it was triggered). */
  triggered = false;
  deleted = false;

  private lastKind = LastKind.None;
  private lastType = 0;
  private lastNum = 0;
  private lastStatus = 0;
  private lastSourceTs = 0;
  private lastDv: DataValue | undefined = undefined;

  /** The ring: queueSize slots, twice that while a cycle holds some (see held). */
  private slots: QueueSlot[] = [];
  /** The ring's size (its slots are made as they are first used). */
  private cap: number;
  private head = 0;
  count = 0;

  constructor(init: {
    id: number;
    owner: ItemOwner;
    read: AttributeRead;
    clientHandle: number;
    mode: MonitoringMode;
    timestamps: TimestampsToReturn;
    samplingInterval: number;
    followsPublishing: boolean;
    queueSize: number;
    discardOldest: boolean;
    filter: ChangeFilter;
  }) {
    this.id = init.id;
    this.owner = init.owner;
    this.read = init.read;
    this.isValue = init.read.attributeId === AttributeIds.Value;
    this.clientHandle = init.clientHandle;
    this.mode = init.mode;
    this.timestamps = init.timestamps;
    this.samplingInterval = init.samplingInterval;
    this.followsPublishing = init.followsPublishing;
    this.queueSize = init.queueSize;
    this.cap = init.queueSize;
    this.discardOldest = init.discardOldest;
    this.filter = init.filter;
  }

  // ---- ValueSink ----------------------------------------------------------------------------

  offerNumber(type: BuiltinType, value: number, status: number, sourceTimestamp: number, serverTimestamp: number): void {
    if (this.lastKind === LastKind.Number && this.lastType === type && this.lastStatus === status) {
      const trigger = this.filter.trigger;
      if (trigger === DataChangeTrigger.Status) return;
      const moved = numbersDiffer(value, this.lastNum, this.filter.deadband);
      if (!moved && (trigger !== DataChangeTrigger.StatusValueTimestamp || sourceTimestamp === this.lastSourceTs)) return;
    }
    this.lastKind = LastKind.Number;
    this.lastType = type;
    this.lastNum = value;
    this.lastStatus = status;
    this.lastSourceTs = sourceTimestamp;
    this.lastDv = undefined;
    const slot = this.push();
    slot.dv = undefined;
    slot.type = type;
    slot.num = value;
    slot.status = status;
    slot.sourceTs = sourceTimestamp;
    slot.serverTs = serverTimestamp;
    this.queued();
  }

  offerDataValue(dv: DataValue, serverTimestamp: number): void {
    // The same object as the last one reported: nothing changed (the common case for cached values).
    if (dv === this.lastDv) return;
    const status = dv.statusCode ?? 0;
    if (this.lastKind === LastKind.DataValue && status === this.lastStatus) {
      const last = this.lastDv as DataValue;
      const trigger = this.filter.trigger;
      const deadband = this.filter.deadband;
      let changed = trigger !== DataChangeTrigger.Status && valueChanged(dv.value, last.value, deadband);
      if (!changed && trigger === DataChangeTrigger.StatusValueTimestamp) {
        changed = dv.sourceTimestamp !== last.sourceTimestamp || (dv.sourcePicoseconds ?? 0) !== (last.sourcePicoseconds ?? 0);
      }
      if (!changed) {
        // Equal values: remember this object so the next identical sample takes the fast path.
        // Within a deadband the reference stays the last value reported.
        if (deadband === 0 || trigger === DataChangeTrigger.Status) this.lastDv = dv;
        return;
      }
    }
    this.lastKind = LastKind.DataValue;
    this.lastStatus = status;
    this.lastDv = dv;
    const slot = this.push();
    slot.dv = dv;
    slot.serverTs = serverTimestamp;
    this.queued();
  }

  // ---- queue --------------------------------------------------------------------------------

  /**
   * How many queued notifications the owner's open publishing cycle took and has not sent yet:
   * counted at the first sample after the cycle began (before it, the queue held only what the
   * cycle took), and less each one sent (shift).
   */
  private heldByCycle(): number {
    const o = this.owner;
    if (!this.inNotifyList || !o.cycleOpen || this.listedIn === o.cycle) return 0;
    if (this.heldIn !== o.cycle) {
      this.heldIn = o.cycle;
      // At most a queue's worth (more is left only after a message that did not go out), so
      // the ring of twice the queue size holds what was taken and a full queue behind it.
      this.held = this.count < this.queueSize ? this.count : this.queueSize;
    }
    return this.held;
  }

  /** The slot for a new notification, applying the overflow policy of Part 4 §5.12.1.5. */
  private push(): QueueSlot {
    const size = this.queueSize;
    // A queue of one holds the newest value only, whatever a cycle took.
    const held = size === 1 || this.count === 0 ? 0 : this.heldByCycle();
    if (held > 0) return this.pushBehind(held);
    // More than the queue holds is left from a cycle whose message did not go out.
    if (this.count > size) this.trim();
    let index: number;
    if (this.count < size) {
      index = this.ringIndex(this.count);
      this.count++;
    } else if (size === 1) {
      // A queue of one always holds the newest value, without the Overflow bit.
      index = this.head;
      this.owner.overflowed(1);
    } else if (this.discardOldest) {
      // The oldest goes and the new one takes the place after the newest: in a ring grown for a
      // cycle's hold (twice the queue size) that is not the slot the oldest leaves.
      this.slots[this.head].dv = undefined;
      this.head = this.ringIndex(1);
      index = this.ringIndex(size - 1);
      this.slot(this.head).overflow = true;
      this.owner.overflowed(1);
    } else {
      index = this.ringIndex(size - 1);
      this.owner.overflowed(1);
      const s = this.slot(index);
      s.overflow = true;
      return s;
    }
    const s = this.slot(index);
    s.overflow = false;
    return s;
  }

  /**
   * push() while the first `held` notifications are a cycle's: the queue of the size the client
   * asked for is what follows them, in a ring of twice that size.
   */
  private pushBehind(held: number): QueueSlot {
    const size = this.queueSize;
    if (this.cap < 2 * size) this.grow(2 * size);
    const own = this.count - held;
    if (own < size) {
      const s = this.slot(this.ringIndex(this.count));
      this.count++;
      s.overflow = false;
      return s;
    }
    this.owner.overflowed(1);
    if (!this.discardOldest) {
      const s = this.slot(this.ringIndex(this.count - 1));
      s.overflow = true;
      return s;
    }
    // The oldest of its own queue goes: the slots behind it move up one, and the freed slot
    // takes the new notification at the end.
    const slots = this.slots;
    const oldest = slots[this.ringIndex(held)];
    for (let k = held; k < this.count - 1; k++) slots[this.ringIndex(k)] = slots[this.ringIndex(k + 1)];
    slots[this.ringIndex(this.count - 1)] = oldest;
    slots[this.ringIndex(held)].overflow = true;
    oldest.dv = undefined;
    oldest.overflow = false;
    return oldest;
  }

  /** Drops notifications by the overflow policy until the queue holds its size. */
  private trim(): void {
    const size = this.queueSize;
    let dropped = 0;
    if (this.discardOldest) {
      while (this.count > size) {
        this.shift();
        dropped++;
      }
      this.slots[this.head].overflow = true;
    } else {
      dropped = this.count - size;
      for (; this.count > size; this.count--) this.slots[this.ringIndex(this.count - 1)].dv = undefined;
      this.slots[this.ringIndex(size - 1)].overflow = true;
    }
    this.owner.overflowed(dropped);
  }

  /** The ring's index of the k-th oldest notification. */
  private ringIndex(k: number): number {
    const cap = this.cap;
    const i = this.head + k;
    return i < cap ? i : i - cap;
  }

  /** A larger ring, the queued notifications first, then the old ring's free slots. */
  private grow(cap: number): void {
    const next = new Array<QueueSlot>(cap);
    const old = this.cap;
    for (let k = 0; k < old; k++) next[k] = this.slots[this.ringIndex(k)] ?? new QueueSlot();
    for (let k = old; k < cap; k++) next[k] = new QueueSlot();
    this.slots = next;
    this.cap = cap;
    this.head = 0;
  }

  private slot(index: number): QueueSlot {
    let s = this.slots[index];
    if (s === undefined) {
      // The ring at its size (a pushed-to [] would reserve 17 entries for a queue of one).
      if (this.slots.length === 0) this.slots = new Array<QueueSlot>(this.queueSize);
      s = new QueueSlot();
      this.slots[index] = s;
    }
    return s;
  }

  private queued(): void {
    if (this.mode === MonitoringMode.Reporting) {
      if (!this.inNotifyList) this.owner.notify(this);
    }
    const links = this.links;
    if (links !== undefined) for (let i = 0; i < links.length; i++) links[i].trigger();
  }

  /** A triggering item queued a notification: report what this Sampling item holds. */
  trigger(): void {
    if (this.mode !== MonitoringMode.Sampling || this.count === 0) return;
    this.triggered = true;
    if (!this.inNotifyList) this.owner.notify(this);
  }

  /** Whether the subscription should take this item's queue now. */
  get reportable(): boolean {
    return this.count > 0 && !this.deleted && (this.mode === MonitoringMode.Reporting || (this.triggered && this.mode === MonitoringMode.Sampling));
  }

  /** The oldest queued notification (count > 0). */
  peek(): QueueSlot {
    return this.slots[this.head];
  }

  /** The k-th oldest queued notification (k < count), left in the queue. */
  peekAt(k: number): QueueSlot {
    return this.slots[this.ringIndex(k)];
  }

  /** Drops the oldest queued notification, releasing its value. */
  shift(): void {
    const s = this.slots[this.head];
    s.dv = undefined;
    this.head = this.ringIndex(1);
    if (this.held > 0) this.held--;
    if (--this.count === 0) {
      this.head = 0;
      this.triggered = false;
    }
  }

  clearQueue(): void {
    while (this.count > 0) this.shift();
    this.triggered = false;
  }

  /** Forget the last reported value: the next sample is reported whatever it is. */
  resetLast(): void {
    this.lastKind = LastKind.None;
    this.lastDv = undefined;
  }

  /**
   * Applies a new queue size (ModifyMonitoredItems): keeps the newest notifications (the oldest
   * with discardOldest false), marking the first kept with Overflow when some were dropped.
   */
  resize(queueSize: number, discardOldest: boolean): void {
    if (queueSize === this.queueSize && discardOldest === this.discardOldest) return;
    const kept: QueueSlot[] = [];
    for (let i = 0; i < this.count; i++) kept.push(this.slots[this.ringIndex(i)]);
    const dropped = Math.max(0, kept.length - queueSize);
    const chosen = dropped === 0 ? kept : discardOldest ? kept.slice(dropped) : kept.slice(0, queueSize);
    if (dropped > 0 && queueSize > 1) chosen[discardOldest ? 0 : chosen.length - 1].overflow = true;
    if (queueSize === 1 && chosen.length === 1) chosen[0].overflow = false;
    // A cycle's part still to come takes what is kept: the new size applies to all of it.
    this.held = 0;
    this.heldIn = -1;
    this.slots = chosen;
    this.cap = queueSize;
    this.head = 0;
    this.count = chosen.length;
    this.queueSize = queueSize;
    this.discardOldest = discardOldest;
  }
}
