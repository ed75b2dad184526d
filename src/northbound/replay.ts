// Replay of stored changes once the edge node is born again (DESIGN: Northbound): oldest first,
// as DDATA whose metrics are flagged historical (Sparkplug 3.0 §6.4.6 is_historical: "store and
// forward ... should not be considered a real time value"), by the aliases of this session, at
// most `rate` metrics per second and at most `SLICE_ROWS` per task, so live data and polling go
// on beside it. Rows leave the store once MQTT has written the message that carries them.
//
// A stored change whose device is no longer in the map, or not born now (demoted), or whose tag
// is gone, cannot be sent as that device's DDATA: it is dropped and counted (Dropped).
import type { DeviceRecord } from "./device-records.js";
import { DeviceSession } from "./device-records.js";
import { writeHistorical } from "./device-data.js";
import type { ForwardStore, StoredRow } from "./forward-store.js";
import type { PayloadWriter } from "./sparkplug-codec.js";

/** Rows read and sent per task (~1-2 ms on a small board). */
export const SLICE_ROWS = 1000;
/** Metrics in one historical DDATA. */
const MAX_REPLAY_METRICS = 1000;

export interface ReplayHost {
  /** Whether the birth sequence this replay belongs to is still the current one, and online. */
  current(birth: number): boolean;
  record(device: string): DeviceRecord | undefined;
  /** The broker does not take data as fast as it is sent: wait before sending more. */
  congested(): boolean;
  /** Publishes a DDATA of `rec` (the writer holds its body; the host adds seq and copies it); false when not connected. */
  publishData(rec: DeviceRecord, w: PayloadWriter): boolean;
  now(): number;
  log(message: string): void;
}

export class Replayer {
  private timer: NodeJS.Timeout | undefined;
  private tokens = 0;
  private lastTick = 0;
  private cursor = 0;
  private sent = 0;
  private dropped = 0;
  private started = 0;
  private running = false;

  constructor(
    private readonly store: ForwardStore,
    private readonly host: ReplayHost,
    private readonly writer: PayloadWriter,
    private readonly rate: number,
  ) {}

  get active(): boolean {
    return this.running;
  }

  /** Starts replaying what the store holds, for the birth sequence `birth` (its aliases). */
  start(birth: number): void {
    if (this.running || (this.store.waiting === 0 && this.store.stagedRows === 0)) return;
    this.running = true;
    this.cursor = 0;
    this.sent = 0;
    this.dropped = 0;
    this.tokens = Math.min(this.rate, SLICE_ROWS);
    this.lastTick = performance.now();
    this.started = this.host.now();
    this.host.log(`store-and-forward: replaying ${this.store.waiting + this.store.stagedRows} stored change(s) at up to ${this.rate}/s`);
    this.schedule(birth, 0);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.running = false;
  }

  private schedule(birth: number, delay: number): void {
    this.timer = setTimeout(() => this.tick(birth), delay);
  }

  private tick(birth: number): void {
    this.timer = undefined;
    if (!this.host.current(birth)) {
      this.running = false;
      return;
    }
    if (this.host.congested()) {
      // Backpressure: stored changes wait on disk, not in the MQTT client's memory.
      this.schedule(birth, 20);
      return;
    }
    const t = performance.now();
    this.tokens = Math.min(this.tokens + ((t - this.lastTick) * this.rate) / 1000, Math.max(this.rate / 5, 1));
    this.lastTick = t;
    const n = Math.min(Math.floor(this.tokens), SLICE_ROWS);
    if (n < 1) {
      this.schedule(birth, Math.ceil(1000 / this.rate));
      return;
    }
    const rows = this.store.read(this.cursor, n);
    if (rows.length === 0) {
      if (this.store.stagedRows > 0) {
        this.schedule(birth, 20);
        return;
      }
      this.running = false;
      const s = Math.max(1, this.host.now() - this.started) / 1000;
      this.host.log(`store-and-forward: replay done: ${this.sent} change(s) sent in ${s.toFixed(1)} s${this.dropped > 0 ? `, ${this.dropped} dropped (device or tag gone or not online)` : ""}`);
      return;
    }
    this.tokens -= rows.length;
    if (!this.sendRows(rows)) {
      // The session ended under us: the rows stay for the next one.
      this.running = false;
      return;
    }
    this.cursor = rows[rows.length - 1]!.id + 1;
    this.schedule(birth, rows.length < n ? 20 : 0);
  }

  /** Sends `rows` as DDATA messages, one per run of rows of one device; false if the session is gone. */
  private sendRows(rows: readonly StoredRow[]): boolean {
    const w = this.writer;
    let rec: DeviceRecord | undefined;
    let metrics = 0;
    let dropped = 0;
    let ok = true;
    const lastId = rows[rows.length - 1]!.id;
    const flush = () => {
      if (rec === undefined || metrics === 0) return;
      if (this.host.publishData(rec, w)) this.sent += metrics;
      else ok = false;
      metrics = 0;
    };
    for (const row of rows) {
      if (rec === undefined || rec.name !== row.device || metrics >= MAX_REPLAY_METRICS) {
        flush();
        if (!ok) return false;
        rec = this.host.record(row.device);
        w.reset();
        w.timestamp(this.host.now());
      }
      const index = rec?.session === DeviceSession.Born ? rec.byName.get(row.tag) : undefined;
      if (rec === undefined || index === undefined) {
        dropped++;
        continue;
      }
      writeHistorical(w, rec.aliases[index]!, rec.type(index), row.time, row.quality, row.kind, row.num, row.obj);
      metrics++;
    }
    flush();
    if (!ok) return false;
    this.dropped += dropped;
    this.store.countDropped(dropped);
    // QoS 0 (§4.2.2.2): written to the broker's connection is as delivered as it gets.
    this.store.release(lastId, rows.length - dropped);
    return true;
  }
}
